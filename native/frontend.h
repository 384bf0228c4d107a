// The front end assembled: decoder -> per-channel resampler (to 16 kHz) -> per-channel framer.
// FileFrontend (chunked, bounded memory) and StreamFrontend (raw PCM pushed by the caller)
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

/** Cumulative wall time per stage (seconds), for benchmarks. */
struct FrontendStats {
  double decodeSec = 0, resampleSec = 0, featuresSec = 0;
  int64_t framesDecoded = 0;
};

/** Resampler + framer for one channel. */
class ChannelFrontend {
 public:
  explicit ChannelFrontend(double inRate) : resampler_(inRate, kOutputRate) {}
  void push(const float* x, size_t n, StepOutput& out, FrontendStats* stats = nullptr) {
    if (!stats) {
      resampler_.process(x, n, [&](const float* y, size_t m) { framer_.push(y, m, out); });
      return;
    }
    const double t0 = now();
    double features = 0;
    resampler_.process(x, n, [&](const float* y, size_t m) {
      const double t1 = now();
      framer_.push(y, m, out);
      features += now() - t1;
    });
    stats->featuresSec += features;
    stats->resampleSec += now() - t0 - features;
  }
  void finish(StepOutput& out) {
    resampler_.flush([&](const float* y, size_t m) { framer_.push(y, m, out); });
    framer_.finish(out);
  }
  static double now();
  /** 16 kHz samples produced so far. */
  int64_t samples() const { return framer_.samples(); }

 private:
  Resampler resampler_;
  Framer framer_;
};

struct FrontendOptions {
  int channel = -1;            // -1: every channel
  double chunkSeconds = 30.0;  // audio decoded per next() call
  double maxDurationSec = 0;   // <= 0: no limit; combined over the analysed channels
};

/** Validates the options against the header (INVALID_CHANNEL, EMPTY_AUDIO,
 *  DURATION_LIMIT_EXCEEDED) and analyses the file chunk by chunk. Not thread-safe: one call
 *  at a time (the binding guarantees it).
 *
 *  Inside next(), decoding is pipelined with the per-channel work: while helper threads
 *  resample and frame block k (one channel per thread, round robin), the calling thread
 *  decodes block k+1. Each channel is still processed strictly in order by one thread at a
 *  time, so the output does not depend on the threading. Memory: two decode blocks of at
 *  most 2^20 interleaved samples, one mono block per analysed channel, and the features of
 *  the current chunk. */
class FileFrontend {
 public:
  FileFrontend(std::unique_ptr<Decoder> decoder, const FrontendOptions& options);

  const DecodedInfo& info() const { return decoder_->info(); }
  const std::vector<int>& channels() const { return channels_; }
  /** Stage timings (seconds summed over threads). */
  FrontendStats stats() const;

  /** Decodes about chunkSeconds of audio; output()[i] (i = index into channels()) then holds
   *  the steps that became complete, at least one unless the file ended. Returns false when
   *  the file had already been fully delivered. startStep receives the index of the first
   *  step. The output buffers are reused by the next call. */
  bool next(int64_t& startStep);
  const std::vector<StepOutput>& output() const { return out_; }

 private:
  struct Block {
    std::vector<float> data;  // interleaved, every channel of the file
    size_t frames = 0;        // 0: end of stream
    bool ready = false;
  };
  void checkDuration(int64_t frames) const;
  void decodeBlock(Block& b, size_t frames);
  void processChannel(size_t i, const Block& b);
  void processAndDecode(const Block& cur, Block& next, size_t nextFrames);

  std::unique_ptr<Decoder> decoder_;
  FrontendOptions options_;
  std::vector<int> channels_;
  std::vector<std::unique_ptr<ChannelFrontend>> frontends_;
  std::vector<std::vector<float>> mono_;
  std::vector<FrontendStats> channelStats_;
  std::vector<StepOutput> out_;
  Block cur_, next_;
  size_t blockFrames_ = 0;
  size_t chunkFrames_ = 0;
  unsigned helpers_ = 0;  // threads for the channel work (0: everything on the caller)
  int64_t stepsDone_ = 0;
  bool finished_ = false;
  FrontendStats stats_;  // decode part
};

enum class SampleEncoding { S16LE, F32LE };

/** Raw interleaved PCM pushed in arbitrary byte chunks (a chunk may end inside a frame).
 *  The constructor only validates: the per-channel resamplers and framers are made by the
 *  first push(), so a stream that never sends audio costs a few bytes. */
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
  void start();

  int sampleRate_;
  int inChannels_;
  SampleEncoding encoding_;
  size_t frameBytes_;
  std::vector<int> channels_;
  std::vector<std::unique_ptr<ChannelFrontend>> frontends_;  // empty until the first push()
  std::vector<uint8_t> partial_;  // bytes of an incomplete frame
  std::vector<float> mono_;       // grown to the largest block pushed (at most kDecodeBlock)
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
