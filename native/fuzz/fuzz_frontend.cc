// libFuzzer harness over the native front end from a memory buffer:
//   Decoder::open(memorySource) -> FileFrontend (decode + resample to 16 kHz + framing/log-mel)
// and, on the same bytes, decodeAll() with a small limit. Any AudioError is an accepted
// outcome (the binding turns it into a coded JS error); anything else -- a sanitizer report,
// another exception type, a crash, a timeout or an RSS blow-up -- is a finding.
// Built only by native/fuzz/build.sh (clang -fsanitize=fuzzer,address,undefined); not part of
// the normal build.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "../decoder.h"
#include "../errors.h"
#include "../frontend.h"
#include "../source.h"

using namespace auris;

namespace {
// Small budgets keep every execution short: at most ~20 s of audio per input.
constexpr double kMaxDurationSec = 20.0;
constexpr double kChunkSeconds = 2.0;
constexpr int kMaxChunks = 64;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    FrontendOptions opts;
    opts.chunkSeconds = kChunkSeconds;
    opts.maxDurationSec = kMaxDurationSec;
    // Odd sizes pick a single channel (exercises INVALID_CHANNEL and per-channel paths).
    if (size & 1) opts.channel = static_cast<int>(size % 3);
    FileFrontend fa(Decoder::open(memorySource(data, size)), opts);
    int64_t start = 0;
    for (int i = 0; i < kMaxChunks && fa.next(start); ++i) {
      for (const auto& o : fa.output()) {
        if (o.features.size() != o.levels.size() * kFeaturesPerStep) std::abort();
      }
    }
  } catch (const AudioError&) {
  }
  try {
    std::vector<float> all = decodeAll(*Decoder::open(memorySource(data, size)), 5.0);
    (void)all;
  } catch (const AudioError&) {
  }
  return 0;
}
