#!/usr/bin/env bash
# Runs the fuzzer for SECONDS per format (default 150) over each seed-corpus folder in turn,
# one process (the machine is shared), and prints a summary line per format:
#   format seconds executions exec/s new-coverage crash?
# Crashing inputs land in build/fuzz/artifacts/; the grown corpus in build/fuzz/work/<format>.
# Usage: native/fuzz/run.sh [SECONDS] [formats...]   (formats: wav flac mp3 opus other)
# LeakSanitizer is on, with the one known upstream leak (libsndfile/libvorbis on a damaged Ogg
# Vorbis header, docs/reliability.md) suppressed by native/fuzz/lsan.supp. DETECT_LEAKS=0 turns
# leak detection off altogether.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
secs="${1:-150}"; shift || true
formats=("$@"); [ ${#formats[@]} -eq 0 ] && formats=(wav flac mp3 opus other)
bin="$root/build/fuzz/fuzz_frontend"
[ -x "$bin" ] || "$root/native/fuzz/build.sh" >/dev/null
[ -d "$root/build/fuzz/corpus" ] || "$root/native/fuzz/make-corpus.sh" >/dev/null
mkdir -p "$root/build/fuzz/artifacts" "$root/build/fuzz/logs"
for f in "${formats[@]}"; do
  work="$root/build/fuzz/work/$f"; mkdir -p "$work"
  log="$root/build/fuzz/logs/$f.log"
  start=$(date +%s)
  ASAN_OPTIONS=detect_leaks=${DETECT_LEAKS:-1}:allocator_may_return_null=0 \
  LSAN_OPTIONS=suppressions="$root/native/fuzz/lsan.supp":print_suppressions=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" "$work" "$root/build/fuzz/corpus/$f" \
    -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=32768 \
    -print_final_stats=1 -artifact_prefix="$root/build/fuzz/artifacts/$f-" >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  echo "$f $((end - start))s execs=${execs:-?} exec/s=$(( ${execs:-0} / ( (end - start) > 0 ? (end - start) : 1 ) )) cov=${cov:-?} rc=$rc corpus=$(ls "$work" | wc -l)"
done
