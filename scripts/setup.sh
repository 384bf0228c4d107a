#!/usr/bin/env bash
# Idempotent setup for a fresh Debian bookworm machine (run as root, or with sudo available):
# Debian packages -> npm ci -> native addon (cmake-js, against node-api-headers) -> TypeScript.
# Each step is skipped when already up to date, so the README commands can call it every time.
set -euo pipefail
cd "$(dirname "$0")/.."

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

echo "[setup] compiling TypeScript" >&2
npx tsc -p tsconfig.json >&2

echo "[setup] building the web console (web/dist)" >&2
node web/build.mjs >&2
echo "[setup] ready" >&2
