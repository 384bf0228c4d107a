#include "common.h"

#include <cmath>
#include <cstring>

namespace auris::binding {

Napi::Error makeError(Napi::Env env, ErrorCode code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, codeName(code)));
  return e;
}

Napi::Value rejected(Napi::Env env, ErrorCode code, const std::string& message) {
  auto d = Napi::Promise::Deferred::New(env);
  d.Reject(makeError(env, code, message).Value());
  return d.Promise();
}

// ---- promise workers -------------------------------------------------------------------

PromiseWorker::PromiseWorker(Napi::Env env, const char* name)
    : Napi::AsyncWorker(env, name), deferred_(Napi::Promise::Deferred::New(env)) {}

Napi::Promise PromiseWorker::start(PromiseWorker* worker) {
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

void PromiseWorker::Execute() { failure_ = capture([this] { run(); }); }

// node-addon-api turns a failing N-API call (as at environment teardown, when the process
// exits with a read in flight) into a C++ throw outside any handler: std::terminate. Nobody
// can observe the promise then, so swallow it and just free the worker.
void PromiseWorker::OnWorkComplete(Napi::Env env, napi_status status) {
  try {
    Napi::AsyncWorker::OnWorkComplete(env, status);  // settles the promise, then Destroy()
  } catch (...) {
    Destroy();
  }
}

void PromiseWorker::OnOK() {
  Napi::Env env = Env();
  Napi::HandleScope scope(env);
  try {
    settle(failure_);
    if (failure_) {
      deferred_.Reject(makeError(env, failure_->code, failure_->message).Value());
      return;
    }
    Napi::Value value;
    std::optional<Failure> f = capture([&] { value = result(env); });
    if (f)
      deferred_.Reject(makeError(env, f->code, f->message).Value());
    else
      deferred_.Resolve(value);
  } catch (const Napi::Error& e) {
    deferred_.Reject(e.Value());
  } catch (...) {
    deferred_.Reject(makeError(env, ErrorCode::IoError, "internal error").Value());
  }
}

void PromiseWorker::OnError(const Napi::Error& e) {  // not used (no SetError), kept for safety
  Napi::HandleScope scope(Env());
  settle(Failure{ErrorCode::IoError, e.Message()});
  deferred_.Reject(e.Value());
}

// ---- arguments -------------------------------------------------------------------------

// At environment teardown napi_delete_reference can fail; the reference dies with the env.
void SourceSpec::release() noexcept {
  try {
    if (!keep.IsEmpty()) keep.Reset();
  } catch (...) {
    keep.SuppressDestruct();
  }
}

bool isUint8Array(Napi::Value v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array;
}

bool isFloat32Array(Napi::Value v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_float32_array;
}

bool isInteger(Napi::Value v) {
  if (!v.IsNumber()) return false;
  const double d = v.As<Napi::Number>().DoubleValue();
  return std::isfinite(d) && std::floor(d) == d;
}

void parseSource(Napi::Value v, SourceSpec& spec) {
  if (!v.IsObject() || v.IsArray()) badArg("source must be an object: { path: string } or { buffer: Buffer }");
  Napi::Object o = v.As<Napi::Object>();
  Napi::Value path = o.Get("path"), buffer = o.Get("buffer");
  const bool hasPath = !path.IsUndefined(), hasBuffer = !buffer.IsUndefined();
  if (hasPath == hasBuffer) badArg("source must have exactly one of 'path' and 'buffer'");
  if (hasPath) {
    if (!path.IsString()) badArg("source.path must be a string");
    spec.path = path.As<Napi::String>().Utf8Value();
    if (spec.path.empty()) badArg("source.path must not be empty");
    if (spec.path.find('\0') != std::string::npos) badArg("source.path must not contain NUL characters");
    return;
  }
  if (!isUint8Array(buffer)) badArg("source.buffer must be a Buffer or Uint8Array");
  Napi::Uint8Array arr = buffer.As<Napi::Uint8Array>();
  spec.isBuffer = true;
  spec.data = arr.Data();
  spec.size = arr.ByteLength();
  spec.keep = Napi::Persistent(buffer);
}

// ---- results ---------------------------------------------------------------------------

Napi::Object infoObject(Napi::Env env, const DecodedInfo& in) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("sampleRate", Napi::Number::New(env, in.sampleRate));
  o.Set("channels", Napi::Number::New(env, in.channels));
  o.Set("frames", Napi::Number::New(env, static_cast<double>(in.frames)));
  o.Set("durationSec", Napi::Number::New(env, in.frames >= 0 ? static_cast<double>(in.frames) / in.sampleRate : -1.0));
  o.Set("format", Napi::String::New(env, in.format));
  o.Set("subtype", Napi::String::New(env, in.subtype));
  o.Set("truncated", Napi::Boolean::New(env, in.truncated));
  return o;
}

Napi::Float32Array float32Array(Napi::Env env, const float* data, size_t n) {
  Napi::Float32Array a = Napi::Float32Array::New(env, n);
  if (n) std::memcpy(a.Data(), data, n * sizeof(float));
  return a;
}

namespace {
Napi::Object chunkObject(Napi::Env env, int channel, int64_t startStep, const StepOutput& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("channel", Napi::Number::New(env, channel));
  o.Set("startStep", Napi::Number::New(env, static_cast<double>(startStep)));
  o.Set("steps", Napi::Number::New(env, static_cast<double>(s.steps())));
  o.Set("levels", float32Array(env, s.levels.data(), s.levels.size()));
  o.Set("features", float32Array(env, s.features.data(), s.features.size()));
  o.Set("pcm", float32Array(env, s.pcm.data(), s.pcm.size()));
  return o;
}
}  // namespace

Napi::Array chunkArray(Napi::Env env, const std::vector<int>& channels, int64_t startStep,
                       const std::vector<StepOutput>& out) {
  Napi::Array a = Napi::Array::New(env);
  if (out.empty() || out[0].steps() == 0) return a;
  for (size_t i = 0; i < out.size(); ++i) a.Set(static_cast<uint32_t>(i), chunkObject(env, channels[i], startStep, out[i]));
  return a;
}

}  // namespace auris::binding
