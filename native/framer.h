// Streaming front end at 16 kHz, exactly per docs/features.md:
//   step s = samples [1024 s, 1024 (s+1)), level = 10 log10(mean x^2 + 1e-12) dBFS over the
//   real samples of the step; 4 log-mel frames per step, frame f = periodic-Hann-windowed
//   x[256 f - 128 + k], k < 512 (zeros outside the signal), 64 HTK mel bands 50..8000 Hz,
//   F = ln(sum_b W[m][b] |X[b]|^2 + 1e-8). Computed in double, stored as float32.
// Samples arrive in chunks of any size; a step is emitted as soon as its last frame's
// 128-sample lookahead is available, and finish() zero-pads the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fft.h"

namespace auris {

constexpr int kStepSamples = 1024;
constexpr int kHop = 256;
constexpr int kFftSize = 512;
constexpr int kMels = 64;
constexpr int kFramesPerStep = 4;
constexpr int kLookahead = 128;                                    // kFftSize/2 - kHop/2
constexpr int kStepWindow = kStepSamples + 2 * kLookahead;         // 1280 samples per step
constexpr int kFeaturesPerStep = kFramesPerStep * kMels;           // 256 floats

/** Output of the framer: appended to, cleared by the owner. */
struct StepOutput {
  std::vector<float> levels;    // one per step
  std::vector<float> features;  // kFeaturesPerStep per step, time-major [frame][mel]
  // kStepSamples per step: the step's 16 kHz samples (zeros past the signal end), for the
  // pretrained encoders whose own front ends run inside their ONNX graphs (docs/features.md).
  std::vector<float> pcm;
  size_t steps() const { return levels.size(); }
  void clear() {
    levels.clear();
    features.clear();
    pcm.clear();
  }
};

class Framer {
 public:
  Framer();
  /** Feeds n samples (16 kHz, mono); appends every step that became complete. */
  void push(const float* x, size_t n, StepOutput& out);
  /** End of signal: appends the remaining ceil(n/1024) - emitted steps. Idempotent. */
  void finish(StepOutput& out);

  int64_t samples() const { return total_; }
  int64_t steps() const { return steps_; }

 private:
  void emitStep(const float* w, int realSamples, StepOutput& out);
  void compact();

  std::vector<float> buf_;  // buf_[head_] is sample 1024 * steps_ - 128
  size_t head_ = 0;
  int64_t total_ = 0;
  int64_t steps_ = 0;
  bool finished_ = false;
  RealFft4 fft_;  // shared tables: a framer owns only its samples (buf_)
};

}  // namespace auris
