#!/usr/bin/env bash
# CI smoke run of the fuzz target, so the harness cannot rot: builds the g++ ASan + UBSan
# replay driver (native/fuzz/build.sh --replay; rebuilt when a native source is newer),
# generates the seed corpus if missing, replays the fuzz regression corpus
# (test/fixtures/regressions) and then SECONDS (default 3) of seeded mutants per format.
# Leak detection is on, with the one upstream libvorbis leak suppressed (lsan.supp).
# Prints one line per run:  smoke <name> files=N mutants=N rc=N
# and exits non-zero if the build fails or any run finds something (the start of its log, the
# sanitizer report, is printed; the input that failed is kept in
# build/fuzz/artifacts/smoke-<name>.bin).
# Usage: native/fuzz/smoke.sh [SECONDS] [formats...]   (formats: wav flac mp3 opus other)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
secs="${1:-3}"; shift || true
formats=("$@"); [ ${#formats[@]} -eq 0 ] && formats=(wav flac mp3 opus other)
bin="$root/build/fuzz/replay_frontend"
if [ ! -x "$bin" ] || [ -n "$(find "$root/native" -newer "$bin" -type f \( -name "*.cc" -o -name "*.h" -o -name build.sh \) -print -quit)" ]; then
  "$root/native/fuzz/build.sh" --replay >/dev/null || { echo "smoke: build failed" >&2; exit 1; }
fi
[ -d "$root/build/fuzz/corpus" ] || "$root/native/fuzz/make-corpus.sh" >/dev/null 2>&1 \
  || { echo "smoke: seed corpus generation failed" >&2; exit 1; }
mkdir -p "$root/build/fuzz/artifacts"
# Logs per run (test runs may share the build folder); the log of a failure is printed.
logs="$(mktemp -d)"; trap 'rm -rf "$logs"' EXIT
export ASAN_OPTIONS="detect_leaks=1:handle_abort=1:allocator_may_return_null=0"
export LSAN_OPTIONS="suppressions=$root/native/fuzz/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=0
# smoke NAME SECONDS INPUTS...
smoke() {
  local name="$1" s="$2"; shift 2
  local log="$logs/$name.log"
  "$bin" -seconds="$s" -seed="${FUZZ_SEED:-1}" -artifact="$root/build/fuzz/artifacts/smoke-$name.bin" "$@" >"$log" 2>&1
  local rc=$?
  local counts; counts=$(grep -o 'files=[0-9]* mutants=[0-9]*' "$log" | tail -1)
  echo "smoke $name ${counts:-files=? mutants=?} rc=$rc"
  if [ $rc -ne 0 ]; then failed=1; head -n 80 "$log" >&2; fi
}
smoke regressions 0 "$root/test/fixtures/regressions"
for f in "${formats[@]}"; do smoke "$f" "$secs" "$root/build/fuzz/corpus/$f"; done
exit $failed
