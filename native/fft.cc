#include "fft.h"

#include <cmath>
#include <cstdlib>
#include <new>

#include "errors.h"

namespace auris {

void V4Array::allocate(size_t n) {
  std::free(p_);
  p_ = static_cast<v4d*>(std::aligned_alloc(32, (n ? n : 1) * sizeof(v4d)));
  if (!p_) throw std::bad_alloc();
  for (size_t i = 0; i < n; ++i) p_[i] = v4d{0, 0, 0, 0};
}

V4Array::~V4Array() { std::free(p_); }

RealFft4::RealFft4(size_t n)
    : n_(n), half_(n / 2), re_(n / 2), im_(n / 2), twRe_(n / 2), twIm_(n / 2), splitRe_(n / 2 + 1), splitIm_(n / 2 + 1) {
  if (n < 8 || (n & (n - 1)) != 0) fail(ErrorCode::InvalidArgument, "FFT size must be a power of two >= 8");
  // Twiddles of the stage that combines blocks of half-length h: exp(-2 pi i k / (2h)), k < h.
  for (size_t h = 1; h < half_; h <<= 1) {
    for (size_t k = 0; k < h; ++k) {
      const double a = -M_PI * static_cast<double>(k) / static_cast<double>(h);
      const double c = std::cos(a), s = std::sin(a);
      twRe_[h - 1 + k] = v4d{c, c, c, c};
      twIm_[h - 1 + k] = v4d{s, s, s, s};
    }
  }
  for (size_t k = 0; k <= half_; ++k) {
    const double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n_);
    const double c = std::cos(a), s = std::sin(a);
    splitRe_[k] = v4d{c, c, c, c};
    splitIm_[k] = v4d{s, s, s, s};
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

AURIS_SIMD_CLONES
void RealFft4::power(const float* const x[4], const double* window, double* P) {
  // (the avx2 clone is chosen at load time on CPUs that have it; -ffp-contract=off keeps
  // both clones bit-identical: no fused multiply-add)
  v4d* __restrict re = re_.data();
  v4d* __restrict im = im_.data();
  const size_t n = half_;

  // Windowed load, packed (even -> real, odd -> imaginary), in bit-reversed order.
  for (size_t i = 0; i < n; ++i) {
    const double w0 = window[2 * i], w1 = window[2 * i + 1];
    const size_t j = bitrev_[i];
    re[j] = v4d{w0 * x[0][2 * i], w0 * x[1][2 * i], w0 * x[2][2 * i], w0 * x[3][2 * i]};
    im[j] = v4d{w1 * x[0][2 * i + 1], w1 * x[1][2 * i + 1], w1 * x[2][2 * i + 1], w1 * x[3][2 * i + 1]};
  }

  // Stage h = 1 (twiddle 1) and h = 2 (twiddles 1, -i) without multiplications.
  for (size_t i = 0; i < n; i += 2) {
    const v4d ar = re[i], ai = im[i], br = re[i + 1], bi = im[i + 1];
    re[i] = ar + br;
    im[i] = ai + bi;
    re[i + 1] = ar - br;
    im[i + 1] = ai - bi;
  }
  for (size_t i = 0; i < n; i += 4) {
    v4d ar = re[i], ai = im[i], br = re[i + 2], bi = im[i + 2];
    re[i] = ar + br;
    im[i] = ai + bi;
    re[i + 2] = ar - br;
    im[i + 2] = ai - bi;
    // b * (-i) = (b.im, -b.re)
    ar = re[i + 1];
    ai = im[i + 1];
    br = im[i + 3];
    bi = -re[i + 3];
    re[i + 1] = ar + br;
    im[i + 1] = ai + bi;
    re[i + 3] = ar - br;
    im[i + 3] = ai - bi;
  }
  for (size_t h = 4; h < n; h <<= 1) {
    const v4d* wr = twRe_.data() + h - 1;
    const v4d* wi = twIm_.data() + h - 1;
    for (size_t i = 0; i < n; i += 2 * h) {
      v4d* __restrict ar = re + i;
      v4d* __restrict ai = im + i;
      v4d* __restrict br = re + i + h;
      v4d* __restrict bi = im + i + h;
      for (size_t k = 0; k < h; ++k) {
        const v4d c = wr[k], s = wi[k];
        const v4d tr = br[k] * c - bi[k] * s;
        const v4d ti = br[k] * s + bi[k] * c;
        const v4d xr = ar[k], xi = ai[k];
        ar[k] = xr + tr;
        ai[k] = xi + ti;
        br[k] = xr - tr;
        bi[k] = xi - ti;
      }
    }
  }

  // Split: X[k] = E[k] + W^k O[k], E = (Z[k] + conj Z[n-k]) / 2, O = (Z[k] - conj Z[n-k]) / 2i.
  {
    const v4d r0 = re[0] + im[0], rn = re[0] - im[0];
    const v4d p0 = r0 * r0, pn = rn * rn;
    __builtin_memcpy(P, &p0, sizeof p0);
    __builtin_memcpy(P + 4 * n, &pn, sizeof pn);
  }
  for (size_t k = 1; k < n; ++k) {
    const v4d ar = re[k], ai = im[k], br = re[n - k], bi = -im[n - k];
    const v4d er = 0.5 * (ar + br), ei = 0.5 * (ai + bi);
    const v4d orr = 0.5 * (ai - bi), oi = -0.5 * (ar - br);
    const v4d c = splitRe_[k], s = splitIm_[k];
    const v4d xr = er + (orr * c - oi * s);
    const v4d xi = ei + (orr * s + oi * c);
    const v4d p = xr * xr + xi * xi;
    __builtin_memcpy(P + 4 * k, &p, sizeof p);
  }
}

}  // namespace auris
