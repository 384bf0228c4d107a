// Resampler binding: resample(samples: Float32Array, inRate, chunkSize?) -> 16 kHz mono,
// fed chunkSize samples at a time (tests compare chunked with whole-signal resampling).
#include <cmath>

#include "../frontend.h"
#include "common.h"
#include "init.h"

namespace auris::binding {
namespace {

Napi::Value Resample(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (!isFloat32Array(info[0])) badArg("resample() expects a Float32Array of samples");
    Napi::Float32Array x = info[0].As<Napi::Float32Array>();
    const double rate = info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : NAN;
    if (!(rate >= kMinSampleRate && rate <= kMaxSampleRate)) badArg("inRate must be a number in 8000..384000 Hz");
    size_t chunk = 0;
    if (!info[2].IsUndefined()) {
      if (!isInteger(info[2]) || info[2].As<Napi::Number>().DoubleValue() < 1) badArg("chunkSize must be a positive integer");
      chunk = static_cast<size_t>(info[2].As<Napi::Number>().DoubleValue());
    }
    std::vector<float> y = resampleMono(x.Data(), x.ElementLength(), rate, chunk);
    return float32Array(env, y.data(), y.size());
  });
}

}  // namespace

void InitResampler(Napi::Env env, Napi::Object exports) {
  exports.Set("resample", Napi::Function::New(env, Resample, "resample"));
}

}  // namespace auris::binding
