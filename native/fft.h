// Power spectra of four real signals of size N (a power of two >= 8) at once, in double
// precision. The four signals travel in the four lanes of a small vector type, so every
// butterfly serves four frames (the four log-mel frames of a 64 ms step) and compiles to
// SIMD code on any x86-64/arm64 target. Algorithm: each real signal is packed into a complex
// one of size N/2 (even samples real, odd samples imaginary), transformed by an iterative
// radix-2 FFT (bit reversal folded into the load, precomputed per-stage twiddles), then split
// into the spectrum of the real signal. The tables (twiddles, bit reversal) are immutable and
// shared by every instance of a size (built once, thread-safe); the work buffers are per
// thread. An instance is a pointer: a live stream's front end costs no FFT memory of its own,
// instances may be used from any thread, and nothing is allocated per call.
#pragma once

#include <cstddef>
#include <vector>

namespace auris {

typedef double v4d __attribute__((vector_size(32)));

// Hot functions get an AVX2 clone on x86-64, picked at load time (ifunc) on CPUs that have
// it; with -ffp-contract=off both clones compute bit-identical results.
#if defined(__x86_64__) && !defined(AURIS_NO_TARGET_CLONES)
#define AURIS_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AURIS_SIMD_CLONES
#endif

/** A fixed array of v4d, 32-byte aligned (std::vector does not honour vector-type alignment). */
class V4Array {
 public:
  V4Array() = default;
  explicit V4Array(size_t n) { allocate(n); }
  ~V4Array();
  /** (Re)allocates n zeroed elements. */
  void allocate(size_t n);
  V4Array(const V4Array&) = delete;
  V4Array& operator=(const V4Array&) = delete;
  v4d* data() { return p_; }
  const v4d* data() const { return p_; }
  v4d& operator[](size_t i) { return p_[i]; }
  const v4d& operator[](size_t i) const { return p_[i]; }

 private:
  v4d* p_ = nullptr;
};

/** The immutable tables of one FFT size (shared, see RealFft4). */
struct RealFft4Tables {
  explicit RealFft4Tables(size_t n);
  size_t n, half;
  // Twiddles are stored broadcast to all four lanes: multiplying a vector by a scalar makes
  // compilers for baseline x86-64 spill the scalar through the stack.
  V4Array twRe, twIm;        // stage with half-length h at offset h - 1
  V4Array splitRe, splitIm;  // exp(-2 pi i k / N), k <= N/2
  std::vector<unsigned> bitrev;
};

class RealFft4 {
 public:
  explicit RealFft4(size_t n);
  size_t size() const { return t_->n; }

  /** For lane j < 4: P[4 b + j] = |sum_k window[k] x[j][k] exp(-2 pi i k b / N)|^2 for
   *  b = 0..N/2 (x[j]: N floats each, window: N doubles, P: 4 (N/2 + 1) doubles). */
  void power(const float* const x[4], const double* window, double* P) const;

 private:
  const RealFft4Tables* t_;  // shared, lives as long as the process
};

}  // namespace auris
