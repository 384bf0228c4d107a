// Power spectrum of a real signal of size N (a power of two >= 8) in double precision:
// one complex FFT of size N/2 (iterative radix-2, precomputed twiddles and bit reversal)
// plus the usual split of the even/odd half-spectra. All tables belong to the instance, so
// instances are independent (thread-safe) and reusable without allocation.
#pragma once

#include <complex>
#include <cstddef>
#include <vector>

namespace auris {

class RealFft {
 public:
  explicit RealFft(size_t n);
  size_t size() const { return n_; }
  /** P[b] = |sum_k x[k] exp(-2 pi i k b / N)|^2 for b = 0..N/2 (x: N values, P: N/2+1). */
  void power(const double* x, double* P);
  /** The complex spectrum X[b], b = 0..N/2 (for tests). */
  void spectrum(const double* x, std::complex<double>* X);

 private:
  void complexFft();  // in place on z_ (size N/2)

  size_t n_, half_;
  std::vector<std::complex<double>> z_;
  std::vector<std::complex<double>> twiddle_;  // exp(-2 pi i k / (N/2)), k < N/4
  std::vector<std::complex<double>> split_;    // exp(-2 pi i k / N), k <= N/2
  std::vector<unsigned> bitrev_;
};

}  // namespace auris
