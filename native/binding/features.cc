// Features binding: computeFeatures(samples16k: Float32Array) -> {levels, features, steps},
// the framer's output for a whole 16 kHz mono signal (tests and the features reference).
#include "../frontend.h"
#include "common.h"
#include "init.h"

namespace auris::binding {
namespace {

Napi::Value ComputeFeatures(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (!isFloat32Array(info[0])) badArg("computeFeatures() expects a Float32Array of 16 kHz samples");
    Napi::Float32Array x = info[0].As<Napi::Float32Array>();
    StepOutput out;
    computeFeatures(x.Data(), x.ElementLength(), out);
    Napi::Object o = Napi::Object::New(env);
    o.Set("levels", float32Array(env, out.levels.data(), out.levels.size()));
    o.Set("features", float32Array(env, out.features.data(), out.features.size()));
    o.Set("steps", Napi::Number::New(env, static_cast<double>(out.steps())));
    return o;
  });
}

}  // namespace

void InitFeatures(Napi::Env env, Napi::Object exports) {
  exports.Set("computeFeatures", Napi::Function::New(env, ComputeFeatures, "computeFeatures"));
}

}  // namespace auris::binding
