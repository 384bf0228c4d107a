#!/usr/bin/env bash
# Builds the libFuzzer harness (ASan + UBSan) into build/fuzz/fuzz_frontend. Not part of
# the normal build; needs clang (Debian bookworm: apt-get install clang libclang-rt-14-dev).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/build/fuzz"
mkdir -p "$out"
CXX="${CXX:-clang++}"
# AURIS_NO_TARGET_CLONES: clang 14 refuses target_clones on a function declared earlier.
# shellcheck disable=SC2046
"$CXX" -std=c++17 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -ffp-contract=off -D_FILE_OFFSET_BITS=64 -DAURIS_NO_TARGET_CLONES \
  $(pkg-config --cflags sndfile soxr libmpg123 opusfile) \
  "$root/native/fuzz/fuzz_frontend.cc" \
  "$root/native/source.cc" "$root/native/decoder.cc" "$root/native/resampler.cc" \
  "$root/native/fft.cc" "$root/native/framer.cc" "$root/native/pipeline.cc" \
  $(pkg-config --libs sndfile soxr libmpg123 opusfile) -lpthread \
  -o "$out/fuzz_frontend"
echo "$out/fuzz_frontend"
