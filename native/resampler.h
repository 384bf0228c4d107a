// Streaming mono resampler to 16 kHz (libsoxr, SOXR_HQ, float32 in/out).
//
// State is kept across process() calls and flush() drains the filter tail, so feeding a
// signal in any chunking gives exactly the samples of a one-shot conversion. An input
// already at the output rate is passed through untouched (bit-exact).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

typedef struct soxr* soxr_t;

namespace auris {

/** libsoxr version string. */
std::string soxrVersion();

class Resampler {
 public:
  Resampler(double inRate, double outRate);
  ~Resampler();
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;

  double inRate() const { return inRate_; }
  double outRate() const { return outRate_; }
  bool passthrough() const { return soxr_ == nullptr; }

  /** Resamples n input samples; calls sink(const float* out, size_t count) zero or more
   *  times with the output that became available. */
  template <class Sink>
  void process(const float* in, size_t n, Sink&& sink) {
    if (!soxr_) {
      if (n) sink(in, n);
      return;
    }
    size_t pos = 0;
    for (;;) {
      size_t idone = 0, odone = 0;
      run(in + pos, n - pos, &idone, &odone);
      pos += idone;
      if (odone) sink(out_.data(), odone);
      // Done when all input is taken and the output buffer was not filled up.
      if (pos >= n && odone < out_.size()) break;
      if (idone == 0 && odone == 0) break;  // no progress (cannot happen with libsoxr)
    }
  }

  /** Signals the end of the input and emits the rest of the output. */
  template <class Sink>
  void flush(Sink&& sink) {
    if (!soxr_ || flushed_) return;
    flushed_ = true;
    for (;;) {
      size_t odone = 0;
      runFlush(&odone);
      if (odone) sink(out_.data(), odone);
      if (odone == 0) break;
    }
  }

 private:
  void run(const float* in, size_t n, size_t* idone, size_t* odone);
  void runFlush(size_t* odone);

  double inRate_, outRate_;
  soxr_t soxr_ = nullptr;
  std::vector<float> out_;
  bool flushed_ = false;
};

}  // namespace auris
