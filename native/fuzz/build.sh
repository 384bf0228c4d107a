#!/usr/bin/env bash
# Builds the fuzz target (native/fuzz/fuzz_frontend.cc) with ASan + UBSan. Not part of the
# normal build.
#   native/fuzz/build.sh            libFuzzer binary build/fuzz/fuzz_frontend (needs clang:
#                                   Debian bookworm `apt-get install clang libclang-rt-14-dev`)
#   native/fuzz/build.sh --replay   replay driver build/fuzz/replay_frontend (g++ is enough;
#                                   what CI builds and native/fuzz/smoke.sh runs)
# Prints the path of the binary.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/build/fuzz"
mkdir -p "$out"
sources=(native/fuzz/fuzz_frontend.cc native/source.cc native/decoder.cc native/resampler.cc
         native/fft.cc native/framer.cc native/frontend.cc)
# The decoder links opusfile and calls libopus itself (opus_get_version_string).
libs=(sndfile soxr libmpg123 opusfile opus)
if [ "${1:-}" = "--replay" ]; then
  CXX="${CXX:-g++}"
  bin="$out/replay_frontend"
  sources+=(native/fuzz/replay_main.cc)
  flags=(-fsanitize=address,undefined)
else
  CXX="${CXX:-clang++}"
  bin="$out/fuzz_frontend"
  # AURIS_NO_TARGET_CLONES: clang 14 refuses target_clones on a function declared earlier.
  flags=(-fsanitize=fuzzer,address,undefined -DAURIS_NO_TARGET_CLONES)
fi
cd "$root"
# shellcheck disable=SC2046
"$CXX" -std=c++17 -g -O1 -fno-omit-frame-pointer "${flags[@]}" -fno-sanitize-recover=undefined \
  -ffp-contract=off -D_FILE_OFFSET_BITS=64 \
  $(pkg-config --cflags "${libs[@]}") "${sources[@]}" \
  $(pkg-config --libs "${libs[@]}") -lpthread -o "$bin.tmp.$$"
# Renamed into place: a test run sharing this build folder never executes a half-linked file.
mv -f "$bin.tmp.$$" "$bin"
echo "$bin"
