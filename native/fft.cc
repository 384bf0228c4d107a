#include "fft.h"

#include <cmath>

#include "errors.h"

namespace auris {

RealFft::RealFft(size_t n) : n_(n), half_(n / 2) {
  if (n < 8 || (n & (n - 1)) != 0) fail(ErrorCode::InvalidArgument, "FFT size must be a power of two >= 8");
  z_.resize(half_);
  twiddle_.resize(half_ / 2);
  for (size_t k = 0; k < half_ / 2; ++k) {
    const double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(half_);
    twiddle_[k] = {std::cos(a), std::sin(a)};
  }
  split_.resize(half_ + 1);
  for (size_t k = 0; k <= half_; ++k) {
    const double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n_);
    split_[k] = {std::cos(a), std::sin(a)};
  }
  unsigned bits = 0;
  while ((size_t(1) << bits) < half_) ++bits;
  bitrev_.resize(half_);
  for (size_t i = 0; i < half_; ++i) {
    unsigned r = 0;
    for (unsigned b = 0; b < bits; ++b)
      if (i & (size_t(1) << b)) r |= 1u << (bits - 1 - b);
    bitrev_[i] = r;
  }
}

void RealFft::complexFft() {
  std::complex<double>* z = z_.data();
  const size_t n = half_;
  for (size_t i = 0; i < n; ++i) {
    const size_t j = bitrev_[i];
    if (i < j) std::swap(z[i], z[j]);
  }
  // First stage (len 2) without multiplications.
  for (size_t i = 0; i < n; i += 2) {
    const std::complex<double> a = z[i], b = z[i + 1];
    z[i] = a + b;
    z[i + 1] = a - b;
  }
  for (size_t len = 4; len <= n; len <<= 1) {
    const size_t halfLen = len >> 1, stride = n / len;
    for (size_t i = 0; i < n; i += len) {
      for (size_t k = 0; k < halfLen; ++k) {
        const std::complex<double> w = twiddle_[k * stride];
        const std::complex<double> a = z[i + k];
        const std::complex<double> b = z[i + k + halfLen];
        // b * w written out: std::complex operator* checks for NaN/inf (slow path).
        const double br = b.real() * w.real() - b.imag() * w.imag();
        const double bi = b.real() * w.imag() + b.imag() * w.real();
        z[i + k] = {a.real() + br, a.imag() + bi};
        z[i + k + halfLen] = {a.real() - br, a.imag() - bi};
      }
    }
  }
}

void RealFft::spectrum(const double* x, std::complex<double>* X) {
  for (size_t i = 0; i < half_; ++i) z_[i] = {x[2 * i], x[2 * i + 1]};
  complexFft();
  const std::complex<double>* Z = z_.data();
  X[0] = {Z[0].real() + Z[0].imag(), 0.0};
  X[half_] = {Z[0].real() - Z[0].imag(), 0.0};
  for (size_t k = 1; k < half_; ++k) {
    const std::complex<double> a = Z[k], b = std::conj(Z[half_ - k]);
    // even part E = (a + b) / 2, odd part O = (a - b) / (2i), X = E + W^k O
    const double er = 0.5 * (a.real() + b.real()), ei = 0.5 * (a.imag() + b.imag());
    const double dr = a.real() - b.real(), di = a.imag() - b.imag();
    const double orr = 0.5 * di, oi = -0.5 * dr;
    const std::complex<double> w = split_[k];
    X[k] = {er + orr * w.real() - oi * w.imag(), ei + orr * w.imag() + oi * w.real()};
  }
}

void RealFft::power(const double* x, double* P) {
  for (size_t i = 0; i < half_; ++i) z_[i] = {x[2 * i], x[2 * i + 1]};
  complexFft();
  const std::complex<double>* Z = z_.data();
  const double r0 = Z[0].real() + Z[0].imag(), rN = Z[0].real() - Z[0].imag();
  P[0] = r0 * r0;
  P[half_] = rN * rN;
  for (size_t k = 1; k < half_; ++k) {
    const std::complex<double> a = Z[k], b = std::conj(Z[half_ - k]);
    const double er = 0.5 * (a.real() + b.real()), ei = 0.5 * (a.imag() + b.imag());
    const double orr = 0.5 * (a.imag() - b.imag()), oi = -0.5 * (a.real() - b.real());
    const std::complex<double> w = split_[k];
    const double xr = er + orr * w.real() - oi * w.imag();
    const double xi = ei + orr * w.imag() + oi * w.real();
    P[k] = xr * xr + xi * xi;
  }
}

}  // namespace auris
