#include "framer.h"

#include <cmath>
#include <cstring>

namespace auris {

namespace {

struct MelBank {
  // Band m covers bins [first[m], first[m] + count[m]) with weights w[offset[m] + i].
  int first[kMels], count[kMels], offset[kMels];
  std::vector<double> w;
  V4Array wv;  // w broadcast to 4 lanes (one per frame of a step)
  double window[kFftSize];

  MelBank() {
    auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
    auto hz = [](double m) { return 700.0 * (std::pow(10.0, m / 2595.0) - 1.0); };
    // 66 edges equally spaced in mel (numpy.linspace: start + i * step, last one exact).
    double edges[kMels + 2];
    const double lo = mel(50.0), hi = mel(8000.0), step = (hi - lo) / (kMels + 1);
    for (int i = 0; i < kMels + 2; ++i) edges[i] = hz(i == kMels + 1 ? hi : lo + i * step);
    const int bins = kFftSize / 2 + 1;
    for (int m = 0; m < kMels; ++m) {
      const double l = edges[m], c = edges[m + 1], u = edges[m + 2];
      first[m] = -1;
      count[m] = 0;
      offset[m] = static_cast<int>(w.size());
      for (int b = 0; b < bins; ++b) {
        const double fb = b * (16000.0 / kFftSize);
        double weight = 0.0;
        if (fb > l && fb <= c)
          weight = (fb - l) / (c - l);
        else if (fb > c && fb < u)
          weight = (u - fb) / (u - c);
        if (weight == 0.0) continue;
        if (first[m] < 0) first[m] = b;
        // bins of a triangle are contiguous; fill any interior zero explicitly
        while (first[m] + count[m] < b) {
          w.push_back(0.0);
          ++count[m];
        }
        w.push_back(weight);
        ++count[m];
      }
      if (first[m] < 0) first[m] = 0;
    }
    for (int k = 0; k < kFftSize; ++k) window[k] = 0.5 - 0.5 * std::cos(2.0 * M_PI * k / kFftSize);
    wv.allocate(w.size());
    for (size_t i = 0; i < w.size(); ++i) wv[i] = v4d{w[i], w[i], w[i], w[i]};
  }
};

const MelBank& melBank() {
  static const MelBank bank;  // thread-safe initialisation (C++11 magic statics)
  return bank;
}

// Power spectra of the step being framed, [bin][frame of the step]: a per-thread work buffer,
// so that an idle framer holds nothing but its samples.
double* powerScratch() {
  thread_local std::vector<double> power(4 * (kFftSize / 2 + 1));
  return power.data();
}

}  // namespace

Framer::Framer() : fft_(kFftSize) {
  melBank();
  buf_.assign(kLookahead, 0.0f);  // the 128 samples before the signal are zeros
}

void Framer::push(const float* x, size_t n, StepOutput& out) {
  if (finished_ || n == 0) return;
  buf_.insert(buf_.end(), x, x + n);
  total_ += static_cast<int64_t>(n);
  while (buf_.size() - head_ >= static_cast<size_t>(kStepWindow)) {
    emitStep(buf_.data() + head_, kStepSamples, out);
    head_ += kStepSamples;
  }
  compact();
}

void Framer::finish(StepOutput& out) {
  if (finished_) return;
  finished_ = true;
  const int64_t totalSteps = (total_ + kStepSamples - 1) / kStepSamples;
  while (steps_ < totalSteps) {
    if (buf_.size() - head_ < static_cast<size_t>(kStepWindow)) buf_.resize(head_ + kStepWindow, 0.0f);
    const int64_t real = total_ - steps_ * kStepSamples;
    emitStep(buf_.data() + head_, static_cast<int>(real < kStepSamples ? real : kStepSamples), out);
    head_ += kStepSamples;
  }
  buf_.clear();
  buf_.shrink_to_fit();
  head_ = 0;
}

void Framer::compact() {
  if (head_ == 0) return;
  const size_t rest = buf_.size() - head_;
  std::memmove(buf_.data(), buf_.data() + head_, rest * sizeof(float));
  buf_.resize(rest);
  head_ = 0;
}

// w points at sample 1024 s - 128 and holds kStepWindow samples.
AURIS_SIMD_CLONES
void Framer::emitStep(const float* w, int realSamples, StepOutput& out) {
  static_assert(kFramesPerStep == 4, "RealFft4 computes the four frames of a step together");
  const MelBank& bank = melBank();
  const float* stepStart = w + kLookahead;
  out.pcm.insert(out.pcm.end(), stepStart, stepStart + kStepSamples);
  double e[4] = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= realSamples; i += 4)
    for (int l = 0; l < 4; ++l) e[l] += static_cast<double>(stepStart[i + l]) * stepStart[i + l];
  for (; i < realSamples; ++i) e[0] += static_cast<double>(stepStart[i]) * stepStart[i];
  const double energy = (e[0] + e[1]) + (e[2] + e[3]);
  const double mean = realSamples > 0 ? energy / realSamples : 0.0;
  out.levels.push_back(static_cast<float>(10.0 * std::log10(mean + 1e-12)));

  const float* frames[4] = {w, w + kHop, w + 2 * kHop, w + 3 * kHop};
  double* P = powerScratch();
  fft_.power(frames, bank.window, P);

  const size_t base = out.features.size();
  out.features.resize(base + kFeaturesPerStep);
  float* feat = out.features.data() + base;
  for (int m = 0; m < kMels; ++m) {
    const v4d* wm = bank.wv.data() + bank.offset[m];
    const double* pm = P + 4 * bank.first[m];
    v4d s = {0, 0, 0, 0};
    for (int k = 0; k < bank.count[m]; ++k) {
      v4d p;
      __builtin_memcpy(&p, pm + 4 * k, sizeof p);
      s += wm[k] * p;
    }
    for (int j = 0; j < kFramesPerStep; ++j) feat[j * kMels + m] = static_cast<float>(std::log(s[j] + 1e-8));
  }
  ++steps_;
}

}  // namespace auris
