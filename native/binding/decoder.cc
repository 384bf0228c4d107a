// Decoder bindings: probe(source) and decodeAll(source, maxSeconds?) on the thread pool, and
// the versions of the decoding libraries.
#include <cmath>

#include "../frontend.h"
#include "../resampler.h"
#include "common.h"
#include "init.h"

namespace auris::binding {
namespace {

class ProbeWorker final : public PromiseWorker {
 public:
  ProbeWorker(Napi::Env env, SourceSpec&& spec) : PromiseWorker(env, "auris.probe"), spec_(std::move(spec)) {}

 protected:
  void run() override {
    auto decoder = Decoder::open(spec_.open());
    info_ = decoder->info();
    if (info_.frames == 0) fail(ErrorCode::EmptyAudio, "the audio file contains no samples");
  }
  Napi::Value result(Napi::Env env) override { return infoObject(env, info_); }
  void settle(const std::optional<Failure>&) override { spec_.release(); }

 private:
  SourceSpec spec_;
  DecodedInfo info_;
};

class DecodeAllWorker final : public PromiseWorker {
 public:
  DecodeAllWorker(Napi::Env env, SourceSpec&& spec, double maxSeconds)
      : PromiseWorker(env, "auris.decodeAll"), spec_(std::move(spec)), maxSeconds_(maxSeconds) {}

 protected:
  void run() override {
    auto decoder = Decoder::open(spec_.open());
    info_ = decoder->info();
    samples_ = std::make_unique<std::vector<float>>(decodeAll(*decoder, maxSeconds_));
    if (info_.frames < 0) info_.frames = decoder->framesRead();
  }
  Napi::Value result(Napi::Env env) override {
    Napi::Object o = Napi::Object::New(env);
    o.Set("info", infoObject(env, info_));
    // Hand the vector's memory to an external ArrayBuffer (no copy of a possibly big block).
    std::vector<float>* vec = samples_.release();
    Napi::ArrayBuffer ab;
    try {
      ab = Napi::ArrayBuffer::New(
          env, vec->data(), vec->size() * sizeof(float), [](Napi::Env, void*, std::vector<float>* v) { delete v; }, vec);
    } catch (...) {
      delete vec;
      throw;
    }
    o.Set("samples", Napi::Float32Array::New(env, vec->size(), ab, 0));
    return o;
  }
  void settle(const std::optional<Failure>&) override { spec_.release(); }

 private:
  SourceSpec spec_;
  double maxSeconds_;
  DecodedInfo info_;
  std::unique_ptr<std::vector<float>> samples_;
};

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SourceSpec spec;
  std::optional<Failure> f = capture([&] { parseSource(info[0], spec); });
  if (f) return rejected(env, f->code, f->message);
  return PromiseWorker::start(new ProbeWorker(env, std::move(spec)));
}

Napi::Value DecodeAll(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SourceSpec spec;
  double maxSeconds = 600;
  std::optional<Failure> f = capture([&] {
    parseSource(info[0], spec);
    if (!info[1].IsUndefined()) {
      const double s = info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : NAN;
      if (!(s > 0 && s <= 600)) badArg("maxSeconds must be a number in (0, 600]");
      maxSeconds = s;
    }
  });
  if (f) return rejected(env, f->code, f->message);
  return PromiseWorker::start(new DecodeAllWorker(env, std::move(spec), maxSeconds));
}

Napi::Object Versions(Napi::Env env) {
  Napi::Object v = Napi::Object::New(env);
  v.Set("sndfile", sndfileVersion());
  v.Set("mpg123", mpg123Version());
  v.Set("opus", opusVersion());
  v.Set("soxr", soxrVersion());
  return v;
}

}  // namespace

void InitDecoder(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, Probe, "probe"));
  exports.Set("decodeAll", Napi::Function::New(env, DecodeAll, "decodeAll"));
  exports.Set("versions", Versions(env));
}

}  // namespace auris::binding
