// The front end assembled: decoder -> per-channel resampler (to 16 kHz) -> per-channel framer.
// FileAnalyzer (chunked, bounded memory) and StreamFrontend (raw PCM pushed by the caller)
// use the same ChannelFrontend, so both give identical features for identical samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "decoder.h"
#include "framer.h"
#include "resampler.h"

namespace auris {

constexpr double kOutputRate = 16000.0;

/** Resampler + framer for one channel. */
class ChannelFrontend {
 public:
  explicit ChannelFrontend(double inRate) : resampler_(inRate, kOutputRate) {}
  void push(const float* x, size_t n, StepOutput& out) {
    resampler_.process(x, n, [&](const float* y, size_t m) { framer_.push(y, m, out); });
  }
  void finish(StepOutput& out) {
    resampler_.flush([&](const float* y, size_t m) { framer_.push(y, m, out); });
    framer_.finish(out);
  }
  /** 16 kHz samples produced so far. */
  int64_t samples() const { return framer_.samples(); }

 private:
  Resampler resampler_;
  Framer framer_;
};

struct AnalyzerOptions {
  int channel = -1;            // -1: every channel
  double chunkSeconds = 30.0;  // audio decoded per next() call
  double maxDurationSec = 0;   // <= 0: no limit; combined over the analysed channels
};

/** Validates the options against the header (INVALID_CHANNEL, EMPTY_AUDIO,
 *  DURATION_LIMIT_EXCEEDED) and analyses the file chunk by chunk. Not thread-safe: one call
 *  at a time (the binding guarantees it). */
class FileAnalyzer {
 public:
  FileAnalyzer(std::unique_ptr<Decoder> decoder, const AnalyzerOptions& options);

  const DecodedInfo& info() const { return decoder_->info(); }
  const std::vector<int>& channels() const { return channels_; }

  /** Decodes about chunkSeconds of audio and fills out[i] (i = index into channels()) with the
   *  steps that became complete, at least one unless the file ended. Returns false when the
   *  file had already been fully delivered. startStep receives the index of the first step. */
  bool next(std::vector<StepOutput>& out, int64_t& startStep);

 private:
  void checkDuration(int64_t frames) const;

  std::unique_ptr<Decoder> decoder_;
  AnalyzerOptions options_;
  std::vector<int> channels_;
  std::vector<std::unique_ptr<ChannelFrontend>> frontends_;
  std::vector<float> interleaved_, mono_;
  size_t chunkFrames_ = 0;
  int64_t stepsDone_ = 0;
  bool finished_ = false;
};

enum class SampleEncoding { S16LE, F32LE };

/** Raw interleaved PCM pushed in arbitrary byte chunks (a chunk may end inside a frame). */
class StreamFrontend {
 public:
  StreamFrontend(int sampleRate, int channels, SampleEncoding encoding, int channel);
  const std::vector<int>& channels() const { return channels_; }
  void push(const uint8_t* data, size_t n, std::vector<StepOutput>& out);
  void end(std::vector<StepOutput>& out);
  int64_t stepsDone() const { return stepsDone_; }
  bool ended() const { return ended_; }

 private:
  void consumeFrames(const uint8_t* data, size_t frames, std::vector<StepOutput>& out);

  int inChannels_;
  SampleEncoding encoding_;
  size_t frameBytes_;
  std::vector<int> channels_;
  std::vector<std::unique_ptr<ChannelFrontend>> frontends_;
  std::vector<uint8_t> partial_;  // bytes of an incomplete frame
  std::vector<float> mono_;
  int64_t stepsDone_ = 0;
  bool ended_ = false;
};

/** Decodes a whole file (interleaved, native rate); refuses more than maxSeconds of audio,
 *  from the header and while decoding. */
std::vector<float> decodeAll(Decoder& decoder, double maxSeconds);

/** Mono resampling to 16 kHz, feeding chunkSize samples at a time (0: all at once). */
std::vector<float> resampleMono(const float* x, size_t n, double inRate, size_t chunkSize);

/** Front end of a whole 16 kHz mono signal. EMPTY_AUDIO for n == 0. */
void computeFeatures(const float* x, size_t n, StepOutput& out);

}  // namespace auris
