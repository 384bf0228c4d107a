#!/usr/bin/env bash
# Builds the container image (Containerfile) and runs it, without any image registry:
#   1. the base image docker.io/library/debian:trixie-slim is made here from Debian's packages
#      (debootstrap of Debian 13, imported with buildah) unless it is already in local storage;
#   2. `buildah build --pull=never` builds the image from it;
#   3. the image runs `analyze` on the demo file (the results must name every model) and
#      `serve`, which must answer /readyz and its HEALTHCHECK and finish one job.
# Every failure exits non-zero with the step that failed. Needs root (debootstrap, buildah) and
# the host's node (for the checks); installs debootstrap and buildah from Debian when missing.
# Takes 10-15 minutes from nothing on a loaded 2-core machine (mostly apt in the build stage),
# so .ci/run does not call it yet (docs/deploy.md, "Container image").
# Usage: bash scripts/image-test.sh            (IMAGE_TEST_KEEP=1 keeps the images afterwards)
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=docker.io/library/debian:trixie-slim
IMAGE=localhost/auris:image-test
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PORT=${IMAGE_TEST_PORT:-18480}
GRPC_PORT=$((PORT + 1))
API_KEY=image-test-key
WORK=$(mktemp -d /tmp/auris-image-test.XXXXXX)
step() { echo "[image-test] $*" >&2; }
fail() { echo "[image-test] FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "must run as root (debootstrap and buildah need it)"
missing=()
for p in debootstrap buildah; do command -v "$p" >/dev/null || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  step "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

CTR=""
SERVE_PID=""
cleanup() {
  if [ -n "$SERVE_PID" ]; then kill -TERM "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
  if [ -n "$CTR" ]; then buildah rm "$CTR" >/dev/null 2>&1 || true; fi
  # The image and the build stage's layers go; the base image stays for the next run.
  if [ "${IMAGE_TEST_KEEP:-0}" != 1 ]; then buildah rmi "$IMAGE" >/dev/null 2>&1 || true; buildah rmi --prune >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap 'echo "[image-test] FAILED: line $LINENO: $BASH_COMMAND" >&2' ERR
trap cleanup EXIT

# 1. Base image from Debian packages (what `docker pull debian:trixie-slim` would give).
if ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
  step "making $BASE with debootstrap (Debian 13 trixie, minbase)"
  debootstrap --variant=minbase trixie "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -30 "$WORK/debootstrap.log" >&2; fail "debootstrap of trixie"; }
  rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*
  tar -C "$WORK/rootfs" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf "$WORK/rootfs.tar" .
  ctr=$(buildah from scratch)
  buildah add "$ctr" "$WORK/rootfs.tar" / >/dev/null
  buildah config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  buildah commit --quiet --rm "$ctr" "$BASE" >/dev/null || fail "importing the base image"
  rm -rf "$WORK/rootfs" "$WORK/rootfs.tar"
fi

# 2. The image. --format docker keeps HEALTHCHECK (the OCI format has no such field).
step "building $IMAGE (buildah build --isolation chroot --pull=never)"
# The host's CA bundle as the build secret "ca": npm ci then trusts what the host trusts (an
# intercepting proxy's CA included).
buildah build --isolation chroot --pull=never --format docker --layers --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt \
  -f Containerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log" >&2; fail "buildah build"; }
buildah inspect --type image --format '{{.Docker.Config.Healthcheck.Test}}' "$IMAGE" | grep -q readyz || fail "the image has no HEALTHCHECK"
[ "$(buildah inspect --type image --format '{{.Docker.Config.User}}' "$IMAGE")" = auris ] || fail "the image does not run as the auris user"

# 3. Run it. `buildah run --isolation chroot` needs no OCI runtime, cgroups or systemd (podman
# run fails in nested sandboxes: crun refuses hybrid cgroups and rlimits), and shares the host's
# network. It runs the image's ENTRYPOINT (read from the image) as its USER in its WORKDIR with
# its ENV, which is what `docker run` does; HOST is overridden to keep the ports on loopback.
CTR=$(buildah from --pull=never "$IMAGE")
read -r -a ENTRYPOINT <<<"$(buildah inspect --type image --format '{{range .Docker.Config.Entrypoint}}{{.}} {{end}}' "$IMAGE")"
read -r -a HEALTHCHECK <<<"$(buildah inspect --type image --format '{{range .Docker.Config.Healthcheck.Test}}{{.}} {{end}}' "$IMAGE")"
[ "${ENTRYPOINT[*]}" = "node /app/dist/src/cli/main.js" ] || fail "unexpected ENTRYPOINT: ${ENTRYPOINT[*]}"
RUN=(buildah run --isolation chroot)

# 3a. analyze on the demo file shipped in the image.
step "running: analyze test/fixtures/demo.flac"
"${RUN[@]}" "$CTR" -- "${ENTRYPOINT[@]}" analyze test/fixtures/demo.flac --models speech,arousal,gender,emotions --summary >"$WORK/envelope.json" 2>"$WORK/analyze.err" \
  || { cat "$WORK/analyze.err" >&2; fail "analyze in the image"; }
node -e '
  const env = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const channel = env.result.channels["0"];
  const steps = channel.time_series;
  for (const m of ["speech", "arousal", "gender", "emotions"]) if (!(m in steps[0].results)) throw new Error("no " + m + " in the results");
  if (!channel.summary) throw new Error("no summary");
  console.error("[image-test] analyze: " + steps.length + " steps, speech summary " + JSON.stringify(channel.summary.speech));
' "$WORK/envelope.json" || fail "analyze output"

# 3b. serve, answering /readyz, its own HEALTHCHECK command, and one job. (buildah run puts the
# image's VOLUME /data over any -v for it, so the volume is the container's own; it persists
# between runs of the container and is listed afterwards.)
step "running: serve on 127.0.0.1:$PORT"
"${RUN[@]}" -e HOST=127.0.0.1 -e PORT="$PORT" -e GRPC_PORT="$GRPC_PORT" -e API_KEYS="$API_KEY:image-test:image-test" \
  "$CTR" -- "${ENTRYPOINT[@]}" serve >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
node scripts/image-test-job.js "http://127.0.0.1:$PORT" "$API_KEY" test/fixtures/demo.flac \
  || { tail -30 "$WORK/serve.log" >&2; fail "serve in the image"; }
[ "${HEALTHCHECK[0]}" = CMD ] || fail "unexpected HEALTHCHECK: ${HEALTHCHECK[*]}"
# The HEALTHCHECK's own command (node -e "fetch(...)") inside the image, against the server.
"${RUN[@]}" -e PORT="$PORT" "$CTR" -- "${HEALTHCHECK[@]:1:2}" "$(buildah inspect --type image --format '{{index .Docker.Config.Healthcheck.Test 3}}' "$IMAGE")" \
  || fail "the HEALTHCHECK command fails against the running server"
# (buildah run does not pass SIGTERM on to the process: graceful shutdown is tested without the image.)
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=""
data=$("${RUN[@]}" "$CTR" -- ls /data/jobs) || fail "no /data/jobs in the container"
[ -n "$data" ] || fail "serve kept no job under /data/jobs"
step "ok: $(buildah inspect --type image --format '{{.FromImageID}}' "$IMAGE" | cut -c1-12) built and run"
