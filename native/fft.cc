#include "fft.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
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

RealFft4Tables::RealFft4Tables(size_t size)
    : n(size), half(size / 2), twRe(size / 2), twIm(size / 2), splitRe(size / 2 + 1), splitIm(size / 2 + 1) {
  // Twiddles of the stage that combines blocks of half-length h: exp(-2 pi i k / (2h)), k < h.
  for (size_t h = 1; h < half; h <<= 1) {
    for (size_t k = 0; k < h; ++k) {
      const double a = -M_PI * static_cast<double>(k) / static_cast<double>(h);
      const double c = std::cos(a), s = std::sin(a);
      twRe[h - 1 + k] = v4d{c, c, c, c};
      twIm[h - 1 + k] = v4d{s, s, s, s};
    }
  }
  for (size_t k = 0; k <= half; ++k) {
    const double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n);
    const double c = std::cos(a), s = std::sin(a);
    splitRe[k] = v4d{c, c, c, c};
    splitIm[k] = v4d{s, s, s, s};
  }
  unsigned bits = 0;
  while ((size_t(1) << bits) < half) ++bits;
  bitrev.resize(half);
  for (size_t i = 0; i < half; ++i) {
    unsigned r = 0;
    for (unsigned b = 0; b < bits; ++b)
      if (i & (size_t(1) << b)) r |= 1u << (bits - 1 - b);
    bitrev[i] = r;
  }
}

namespace {

// One table set per size for the life of the process (a handful of sizes at most: the
// front end uses one). Built under a lock the first time a size is asked for.
const RealFft4Tables* sharedTables(size_t n) {
  static std::mutex mutex;
  static std::map<size_t, std::unique_ptr<const RealFft4Tables>> tables;
  std::lock_guard<std::mutex> lock(mutex);
  auto& t = tables[n];
  if (!t) t = std::make_unique<const RealFft4Tables>(n);
  return t.get();
}

// The transform's work buffers (N/2 complex v4d), one per thread, grown to the largest size
// used on it: the FFT runs on the JS thread (streams) and on FileFrontend's helper threads.
struct Scratch {
  V4Array re, im;
  size_t capacity = 0;
  void ensure(size_t half) {
    if (half <= capacity) return;
    re.allocate(half);
    im.allocate(half);
    capacity = half;
  }
};

Scratch& threadScratch(size_t half) {
  thread_local Scratch scratch;
  scratch.ensure(half);
  return scratch;
}

}  // namespace

RealFft4::RealFft4(size_t n) {
  if (n < 8 || (n & (n - 1)) != 0) fail(ErrorCode::InvalidArgument, "FFT size must be a power of two >= 8");
  t_ = sharedTables(n);
}

AURIS_SIMD_CLONES
void RealFft4::power(const float* const x[4], const double* window, double* P) const {
  // (the avx2 clone is chosen at load time on CPUs that have it; -ffp-contract=off keeps
  // both clones bit-identical: no fused multiply-add)
  const RealFft4Tables& t = *t_;
  Scratch& scratch = threadScratch(t.half);
  v4d* __restrict re = scratch.re.data();
  v4d* __restrict im = scratch.im.data();
  const size_t n = t.half;

  // Windowed load, packed (even -> real, odd -> imaginary), in bit-reversed order.
  for (size_t i = 0; i < n; ++i) {
    const double w0 = window[2 * i], w1 = window[2 * i + 1];
    const size_t j = t.bitrev[i];
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
    const v4d* wr = t.twRe.data() + h - 1;
    const v4d* wi = t.twIm.data() + h - 1;
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
    const v4d c = t.splitRe[k], s = t.splitIm[k];
    const v4d xr = er + (orr * c - oi * s);
    const v4d xi = ei + (orr * s + oi * c);
    const v4d p = xr * xr + xi * xi;
    __builtin_memcpy(P + 4 * k, &p, sizeof p);
  }
}

}  // namespace auris
