#!/usr/bin/env bash
# Idempotent setup for a fresh Debian bookworm machine (run as root, or with sudo available):
# Node.js check -> Debian packages -> npm ci -> native addon (cmake-js, against node-api-headers)
# -> TypeScript -> web console. Each step is skipped when already up to date, so the README
# commands can call it every time.
set -euo pipefail
cd "$(dirname "$0")/.."

# Node.js is a prerequisite, not installed here: Debian 12's own nodejs is 18, too old (README
# "Prerequisites"). The range is package.json's "engines" (what every dependency supports).
if ! command -v node >/dev/null 2>&1; then
  echo "[setup] Node.js is not installed: auris needs Node.js 20.17 or later (20 LTS, 22 or 24; README, Prerequisites)" >&2
  exit 1
fi
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit((a === 20 && b >= 17) || (a === 22 && b >= 9) || a > 22 ? 0 : 1)'; then
  echo "[setup] Node.js $(node --version) is not supported: auris needs Node.js 20.17 or later (20 LTS, 22.9+ or 24; README, Prerequisites)" >&2
  exit 1
fi

# Build and run-time libraries of the addon, plus the tools the tests use as references
# (sox/ffmpeg decode reference files, espeak-ng speaks test sentences, lame makes MP3s).
# python3-grpcio and python3-grpc-tools: the Python gRPC client example and its test (test/grpc).
# chromium: the headless browser the web console tests drive with playwright-core (test/console).
# nats-server (JetStream): distributed-mode tests and benchmark (test/nats, bench/nats).
# These are what `AURIS_TEST_STRICT=1 npm test` (.ci/run) needs: there a missing one fails the
# tests that use it instead of skipping them (test/README.md). The disk-full test also mounts a
# tmpfs, which needs root or passwordless sudo.
# g++ brings its ASan/UBSan/LSan runtimes (libasan8, libubsan1): the fuzz smoke run
# (test/hardening/fuzz-smoke.test.ts) needs nothing else; clang is only for long libFuzzer runs.
DEB_PACKAGES=(pkg-config cmake g++ libsndfile1-dev libsoxr-dev libmpg123-dev libopusfile-dev sox ffmpeg espeak-ng lame python3-grpcio python3-grpc-tools chromium nats-server)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# npm ci only when package-lock.json changed since the last install.
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.auris-lock-hash ] || [ "$(cat node_modules/.auris-lock-hash)" != "$lock_hash" ]; then
  echo "[setup] npm ci" >&2
  # onnxruntime-node bundles its CPU binaries; skip its optional CUDA download (see .npmrc).
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund >&2
  echo "$lock_hash" > node_modules/.auris-lock-hash
fi

# Native addon: cmake-js uses node-api-headers (package.json "binary.napi_versions"), no header download.
echo "[setup] building native addon" >&2
npx cmake-js compile --CDCMAKE_BUILD_TYPE=Release >/tmp/auris-native-build.log 2>&1 || { cat /tmp/auris-native-build.log >&2; exit 1; }

# TypeScript and the console only when a source changed since their last build: a stamp file
# holds the hash of the inputs (tsc -p has no cheap up-to-date check of its own).
inputs_hash() { find "$@" -type f \( -name '*.ts' -o -name '*.json' -o -name '*.html' -o -name '*.css' -o -name '*.mjs' \) -not -path '*/dist/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1; }
build_step() {  # build_step <stamp> <what> <command...>, inputs from $INPUTS
  local stamp=$1 what=$2 h; shift 2
  h=$(inputs_hash "${INPUTS[@]}")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$h" ]; then echo "[setup] $what: up to date" >&2; return; fi
  echo "[setup] $what" >&2
  "$@" >&2
  echo "$h" > "$stamp"
}
INPUTS=(src test bench examples tsconfig.json package-lock.json)
build_step dist/.auris-build-hash "compiling TypeScript" npx tsc -p tsconfig.json
INPUTS=(web package-lock.json)
build_step web/dist/.auris-build-hash "building the web console (web/dist)" node web/build.mjs
echo "[setup] ready" >&2
