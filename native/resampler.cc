#include "resampler.h"

#include <soxr.h>

#include <mutex>
#include <string>

#include "errors.h"

namespace auris {

namespace {
// soxr_create fills shared FFT/filter caches in some builds; creation is rare and cheap, so
// serialise it. soxr_process on distinct instances is independent.
std::mutex gSoxrCreateMutex;
constexpr size_t kOutBlock = 8192;
}  // namespace

std::string soxrVersion() { return soxr_version(); }

Resampler::Resampler(double inRate, double outRate) : inRate_(inRate), outRate_(outRate) {
  if (!(inRate > 0) || !(outRate > 0) || inRate > 1e7 || outRate > 1e7)
    fail(ErrorCode::InvalidArgument, "resampler rates must be positive and at most 10 MHz");
  if (inRate == outRate) return;
  soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
  soxr_runtime_spec_t rt = soxr_runtime_spec(1);
  soxr_error_t err = nullptr;
  {
    std::lock_guard<std::mutex> lock(gSoxrCreateMutex);
    soxr_ = soxr_create(inRate, outRate, 1, &err, &io, &q, &rt);
  }
  if (err || !soxr_) {
    if (soxr_) soxr_delete(soxr_);
    soxr_ = nullptr;
    fail(ErrorCode::InvalidArgument, std::string("cannot create resampler: ") + (err ? err : "unknown error"));
  }
  out_.resize(kOutBlock);
}

Resampler::~Resampler() {
  if (soxr_) soxr_delete(soxr_);
}

void Resampler::run(const float* in, size_t n, size_t* idone, size_t* odone) {
  soxr_error_t err = soxr_process(soxr_, in, n, idone, out_.data(), out_.size(), odone);
  if (err) fail(ErrorCode::CorruptAudio, std::string("resampler failed: ") + err);
}

void Resampler::runFlush(size_t* odone) {
  soxr_error_t err = soxr_process(soxr_, nullptr, 0, nullptr, out_.data(), out_.size(), odone);
  if (err) fail(ErrorCode::CorruptAudio, std::string("resampler failed: ") + err);
}

}  // namespace auris
