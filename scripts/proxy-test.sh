#!/usr/bin/env bash
# Runs deploy/nginx.conf for real in front of `auris serve` on this machine (docs/deploy.md
# "TLS and a reverse proxy"): a self-signed certificate, nginx on 127.0.0.1:$PORT with TLS, and
# through it the REST API (readyz, one job with `auris jobs submit`), the web console, a
# WebSocket live stream (`auris stream --transport ws`) and a gRPC live stream over TLS.
# Needs nginx and openssl (Debian: apt-get install nginx) and a built tree (scripts/setup.sh).
# Not part of CI. Usage: bash scripts/proxy-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PROXY_TEST_PORT:-18443}
REST=$((PORT + 1)) GRPC=$((PORT + 2))
KEY=proxy-test-key-0001
WORK=$(mktemp -d /tmp/auris-proxy-test.XXXXXX)
CLI="node dist/src/cli/main.js"
step() { echo "[proxy-test] $*" >&2; }
AURIS_PID="" NGINX_STARTED=""
cleanup() {
  [ -n "$NGINX_STARTED" ] && nginx -p "$WORK" -c "$WORK/nginx.conf" -s stop 2>/dev/null
  [ -n "$AURIS_PID" ] && kill "$AURIS_PID" 2>/dev/null && wait "$AURIS_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
# The shipped site file with this test's ports, certificate and logs.
sed -e "s|listen 443 ssl http2;|listen 127.0.0.1:$PORT ssl http2;|; /listen \[::\]:443/d" \
    -e "s|127.0.0.1:8080|127.0.0.1:$REST|; s|127.0.0.1:50051|127.0.0.1:$GRPC|" \
    -e "s|/etc/ssl/auris/fullchain.pem|$WORK/cert.pem|; s|/etc/ssl/auris/privkey.pem|$WORK/key.pem|" \
    deploy/nginx.conf > "$WORK/site.conf"
cat > "$WORK/nginx.conf" <<CONF
daemon on;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
events {}
http {
  access_log $WORK/access.log;
  client_body_temp_path $WORK/body;
  proxy_temp_path $WORK/proxy;
  include $WORK/site.conf;
}
CONF
nginx -p "$WORK" -c "$WORK/nginx.conf" -t 2>&1 | grep -q "test is successful" || { nginx -p "$WORK" -c "$WORK/nginx.conf" -t; exit 1; }
nginx -p "$WORK" -c "$WORK/nginx.conf" && NGINX_STARTED=1

step "auris serve on 127.0.0.1:$REST (REST) and :$GRPC (gRPC), nginx TLS on 127.0.0.1:$PORT"
$CLI serve --port "$REST" --grpc-port "$GRPC" --data-dir "$WORK/data" --api-keys "$KEY:proxy:test" --log-level warn >"$WORK/auris.log" 2>&1 &
AURIS_PID=$!
export NODE_EXTRA_CA_CERTS="$WORK/cert.pem" AURIS_API_KEY=$KEY
BASE=https://localhost:$PORT
for _ in $(seq 60); do curl -sf --cacert "$WORK/cert.pem" "$BASE/readyz" >/dev/null && break; sleep 1; done
step "REST: $(curl -sf --cacert "$WORK/cert.pem" "$BASE/readyz")"
curl -sf --cacert "$WORK/cert.pem" "$BASE/" | grep -q '<title>' || { echo "console not served" >&2; exit 1; }
step "console: GET / ok"
$CLI jobs submit test/fixtures/demo.flac --url "$BASE" --models speech --summary | node -e '
  const env = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.error("[proxy-test] REST job: speech summary " + JSON.stringify(env.result.channels["0"].summary.speech));'
$CLI stream test/fixtures/demo.flac --transport ws --url "$BASE" --models speech --summary | tail -1 | sed 's/^/[proxy-test] WebSocket stream: /' >&2
node -e '
  const fs = require("fs"), grpc = require("@grpc/grpc-js");
  const { clientConstructor } = require("./dist/src/grpc/proto");
  const { streamFile } = require("./dist/src/client/file");
  const Ctor = clientConstructor();
  const client = new Ctor(process.argv[1], grpc.credentials.createSsl(fs.readFileSync(process.argv[2])));
  (async () => {
    const stream = await streamFile({ transport: "grpc", address: process.argv[1], apiKey: process.argv[3], client }, "test/fixtures/demo.flac", { models: ["speech"], outputPeriodMs: 1024, includeSummary: true });
    let steps = 0, summary;
    for await (const m of stream) { if (m.type === "step") steps++; else if (m.type === "summary") summary = m.summary; }
    console.error("[proxy-test] gRPC stream over TLS: " + steps + " steps, summary " + JSON.stringify(summary.speech));
    client.close();
  })().catch((e) => { console.error(e); process.exit(1); });
' "localhost:$PORT" "$WORK/cert.pem" "$KEY"
grep -c ' 200 \| 101 ' "$WORK/access.log" | sed 's/^/[proxy-test] nginx access log: /;s/$/ requests answered 200 or 101/' >&2
step "ok"
