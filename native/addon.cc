// N-API bindings of the native front end (no audio logic here). Every entry point catches
// every C++ exception and turns it into a JS Error with a stable `.code` (errors.h); the
// heavy work (probe, open, read, decodeAll) runs on the libuv thread pool.
#include <napi.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "decoder.h"
#include "errors.h"
#include "framer.h"
#include "pipeline.h"
#include "resampler.h"
#include "source.h"

using namespace auris;

namespace {

Napi::Error makeError(Napi::Env env, ErrorCode code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, codeName(code)));
  return e;
}

struct Failure {
  ErrorCode code;
  std::string message;
};

// Runs f, translating C++ exceptions into a Failure.
template <class F>
std::optional<Failure> capture(F&& f) noexcept {
  try {
    f();
    return std::nullopt;
  } catch (const AudioError& e) {
    return Failure{e.code(), e.what()};
  } catch (const std::bad_alloc&) {
    return Failure{ErrorCode::IoError, "out of memory"};
  } catch (const std::exception& e) {
    return Failure{ErrorCode::IoError, std::string("internal error: ") + e.what()};
  } catch (...) {
    return Failure{ErrorCode::IoError, "internal error"};
  }
}

// For synchronous bindings: run f, rethrow C++ failures as JS errors with a code.
template <class F>
Napi::Value guarded(Napi::Env env, F&& f) {
  Napi::Value result;
  std::optional<Failure> failure;
  try {
    failure = capture([&] { result = f(); });
  } catch (...) {
    failure = Failure{ErrorCode::IoError, "internal error"};
  }
  if (failure) throw makeError(env, failure->code, failure->message);
  return result;
}

[[noreturn]] void badArg(const std::string& message) { fail(ErrorCode::InvalidArgument, message); }

// ---------------------------------------------------------------------------------------
// Argument parsing
// ---------------------------------------------------------------------------------------

// A {path} or {buffer} source. For a buffer, a strong reference keeps the JS object (and so
// its memory) alive until the source is released on the JS thread.
struct SourceSpec {
  std::string path;
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool isBuffer = false;
  Napi::Reference<Napi::Value> keep;

  std::unique_ptr<ByteSource> open() const { return isBuffer ? memorySource(data, size) : openFileSource(path); }
  // noexcept: also runs from destructors, where a throw would abort the process. At
  // environment teardown napi_delete_reference can fail; the reference dies with the env.
  void release() noexcept {
    try {
      if (!keep.IsEmpty()) keep.Reset();
    } catch (...) {
      keep.SuppressDestruct();
    }
  }
};

bool isUint8Array(Napi::Value v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array;
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

bool isInteger(Napi::Value v) {
  if (!v.IsNumber()) return false;
  const double d = v.As<Napi::Number>().DoubleValue();
  return std::isfinite(d) && std::floor(d) == d;
}

AnalyzerOptions parseOpenOptions(Napi::Value v) {
  AnalyzerOptions o;
  if (v.IsUndefined() || v.IsNull()) return o;
  if (!v.IsObject()) badArg("options must be an object");
  Napi::Object obj = v.As<Napi::Object>();
  Napi::Value channel = obj.Get("channel"), chunk = obj.Get("chunkSeconds"), maxDur = obj.Get("maxDurationSec");
  if (!channel.IsUndefined()) {
    if (!isInteger(channel)) badArg("options.channel must be an integer");
    const double c = channel.As<Napi::Number>().DoubleValue();
    if (c < 0) fail(ErrorCode::InvalidChannel, "channel " + std::to_string(static_cast<long long>(c)) + " does not exist");
    o.channel = c > 1e6 ? 1000000 : static_cast<int>(c);
  }
  if (!chunk.IsUndefined()) {
    const double s = chunk.IsNumber() ? chunk.As<Napi::Number>().DoubleValue() : NAN;
    if (!(s > 0 && s <= 600)) badArg("options.chunkSeconds must be a number in (0, 600]");
    o.chunkSeconds = s;
  }
  if (!maxDur.IsUndefined()) {
    const double s = maxDur.IsNumber() ? maxDur.As<Napi::Number>().DoubleValue() : NAN;
    if (!(s > 0)) badArg("options.maxDurationSec must be a positive number");
    o.maxDurationSec = std::isinf(s) ? 0 : s;
  }
  return o;
}

// ---------------------------------------------------------------------------------------
// Result objects
// ---------------------------------------------------------------------------------------

Napi::Object infoObject(Napi::Env env, const DecodedInfo& in) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("sampleRate", Napi::Number::New(env, in.sampleRate));
  o.Set("channels", Napi::Number::New(env, in.channels));
  o.Set("frames", Napi::Number::New(env, static_cast<double>(in.frames)));
  o.Set("durationSec", Napi::Number::New(env, in.frames >= 0 ? static_cast<double>(in.frames) / in.sampleRate : -1.0));
  o.Set("format", Napi::String::New(env, in.format));
  o.Set("subtype", Napi::String::New(env, in.subtype));
  return o;
}

Napi::Float32Array float32Array(Napi::Env env, const float* data, size_t n) {
  Napi::Float32Array a = Napi::Float32Array::New(env, n);
  if (n) std::memcpy(a.Data(), data, n * sizeof(float));
  return a;
}

Napi::Object chunkObject(Napi::Env env, int channel, int64_t startStep, const StepOutput& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("channel", Napi::Number::New(env, channel));
  o.Set("startStep", Napi::Number::New(env, static_cast<double>(startStep)));
  o.Set("steps", Napi::Number::New(env, static_cast<double>(s.steps())));
  o.Set("levels", float32Array(env, s.levels.data(), s.levels.size()));
  o.Set("features", float32Array(env, s.features.data(), s.features.size()));
  return o;
}

// Chunks for every channel, or an empty array when no step became complete.
Napi::Array chunkArray(Napi::Env env, const std::vector<int>& channels, int64_t startStep,
                       const std::vector<StepOutput>& out) {
  Napi::Array a = Napi::Array::New(env);
  if (out.empty() || out[0].steps() == 0) return a;
  for (size_t i = 0; i < out.size(); ++i) a.Set(static_cast<uint32_t>(i), chunkObject(env, channels[i], startStep, out[i]));
  return a;
}

// ---------------------------------------------------------------------------------------
// Promise-based workers
// ---------------------------------------------------------------------------------------

class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, const char* name) : Napi::AsyncWorker(env, name), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

 protected:
  virtual void run() = 0;                                      // worker thread
  virtual Napi::Value result(Napi::Env env) = 0;               // JS thread, on success
  virtual void settle(const std::optional<Failure>& failure) {}  // JS thread, always first

  void Execute() final { failure_ = capture([this] { run(); }); }

  // node-addon-api turns a failing N-API call (as at environment teardown, when the process
  // exits with a read in flight) into a C++ throw outside any handler: std::terminate. Nobody
  // can observe the promise then, so swallow it and just free the worker.
  void OnWorkComplete(Napi::Env env, napi_status status) final {
    try {
      Napi::AsyncWorker::OnWorkComplete(env, status);  // settles the promise, then Destroy()
    } catch (...) {
      Destroy();
    }
  }

  void OnOK() final {
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

  void OnError(const Napi::Error& e) final {  // not used (no SetError), kept for safety
    Napi::HandleScope scope(Env());
    settle(Failure{ErrorCode::IoError, e.Message()});
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::optional<Failure> failure_;
};

Napi::Value rejected(Napi::Env env, ErrorCode code, const std::string& message) {
  auto d = Napi::Promise::Deferred::New(env);
  d.Reject(makeError(env, code, message).Value());
  return d.Promise();
}

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

// ---------------------------------------------------------------------------------------
// FileAnalyzer binding: new Analyzer(source, options); open(); read(); close()
// ---------------------------------------------------------------------------------------

class AnalyzerWrap final : public Napi::ObjectWrap<AnalyzerWrap> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "Analyzer",
                       {InstanceMethod<&AnalyzerWrap::Open>("open"), InstanceMethod<&AnalyzerWrap::Read>("read"),
                        InstanceMethod<&AnalyzerWrap::Close>("close"), InstanceMethod<&AnalyzerWrap::Stats>("stats")});
  }

  AnalyzerWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AnalyzerWrap>(info) {
    guarded(info.Env(), [&]() -> Napi::Value {
      parseSource(info[0], source_);
      options_ = parseOpenOptions(info[1]);
      return info.Env().Undefined();
    });
  }

  ~AnalyzerWrap() override { source_.release(); }

  // Called by the workers on the JS thread.
  void workerDone() {
    busy_ = false;
    if (closed_) release();
  }
  void setCore(std::shared_ptr<FileAnalyzer> core) {
    core_ = std::move(core);
    if (closed_) release();
  }
  void setFailure(const Failure& f) { failure_ = f; }
  void setStats(const FrontendStats& s) { stats_ = s; }

 private:
  class OpenWorker;
  class ReadWorker;

  Napi::Value Open(const Napi::CallbackInfo& info);
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info) {
    closed_ = true;
    if (!busy_) release();
    return info.Env().Undefined();
  }
  void release() {
    core_.reset();
    source_.release();
  }
  // Stage timings, as of the last completed read (never touches the core while it works).
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("decodeSec", Napi::Number::New(env, stats_.decodeSec));
    o.Set("resampleSec", Napi::Number::New(env, stats_.resampleSec));
    o.Set("featuresSec", Napi::Number::New(env, stats_.featuresSec));
    o.Set("framesDecoded", Napi::Number::New(env, static_cast<double>(stats_.framesDecoded)));
    return o;
  }

  SourceSpec source_;
  FrontendStats stats_;
  AnalyzerOptions options_;
  std::shared_ptr<FileAnalyzer> core_;
  std::optional<Failure> failure_;
  bool busy_ = false, opened_ = false, closed_ = false;
};

class AnalyzerWrap::OpenWorker final : public PromiseWorker {
 public:
  OpenWorker(Napi::Env env, AnalyzerWrap* wrap)
      : PromiseWorker(env, "auris.open"), wrap_(wrap), self_(Napi::Persistent(wrap->Value())) {
    const SourceSpec& s = wrap->source_;
    isBuffer_ = s.isBuffer;
    path_ = s.path;
    data_ = s.data;
    size_ = s.size;
    options_ = wrap->options_;
  }

 protected:
  void run() override {
    auto src = isBuffer_ ? memorySource(data_, size_) : openFileSource(path_);
    core_ = std::make_shared<FileAnalyzer>(Decoder::open(std::move(src)), options_);
  }
  void settle(const std::optional<Failure>& failure) override {
    if (failure) wrap_->setFailure(*failure);
    else wrap_->setCore(core_);
    core_.reset();
    wrap_->workerDone();
  }
  Napi::Value result(Napi::Env env) override {
    if (!wrap_->core_) fail(ErrorCode::InvalidArgument, "FileAnalyzer was closed while opening");
    return infoObject(env, wrap_->core_->info());
  }

 private:
  AnalyzerWrap* wrap_;
  Napi::ObjectReference self_;  // keeps the wrapper (and its buffer) alive meanwhile
  bool isBuffer_ = false;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  AnalyzerOptions options_;
  std::shared_ptr<FileAnalyzer> core_;
};

class AnalyzerWrap::ReadWorker final : public PromiseWorker {
 public:
  ReadWorker(Napi::Env env, AnalyzerWrap* wrap)
      : PromiseWorker(env, "auris.read"), wrap_(wrap), self_(Napi::Persistent(wrap->Value())), core_(wrap->core_) {}

 protected:
  void run() override { more_ = core_->next(startStep_); }
  void settle(const std::optional<Failure>& failure) override {
    if (failure) wrap_->setFailure(*failure);
    wrap_->setStats(core_->stats());
    wrap_->workerDone();
  }
  // Runs right after settle() in the same JS turn: nothing can start another read in between,
  // so the core's output buffers are read without a copy of the vectors.
  Napi::Value result(Napi::Env env) override {
    std::shared_ptr<FileAnalyzer> core = std::move(core_);
    if (!more_) return env.Null();
    return chunkArray(env, core->channels(), startStep_, core->output());
  }

 private:
  AnalyzerWrap* wrap_;
  Napi::ObjectReference self_;
  std::shared_ptr<FileAnalyzer> core_;
  int64_t startStep_ = 0;
  bool more_ = false;
};

Napi::Value AnalyzerWrap::Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (closed_) return rejected(env, ErrorCode::InvalidArgument, "FileAnalyzer is closed");
  if (opened_) return rejected(env, ErrorCode::InvalidArgument, "open() may be called only once");
  opened_ = true;
  busy_ = true;
  auto* w = new OpenWorker(env, this);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value AnalyzerWrap::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (failure_) return rejected(env, failure_->code, failure_->message);
  if (closed_) return rejected(env, ErrorCode::InvalidArgument, "FileAnalyzer is closed");
  if (!core_) return rejected(env, ErrorCode::InvalidArgument, "FileAnalyzer is not open");
  if (busy_) return rejected(env, ErrorCode::InvalidArgument, "a read() is already in progress");
  busy_ = true;
  auto* w = new ReadWorker(env, this);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

// ---------------------------------------------------------------------------------------
// StreamFrontend binding: new StreamFrontend({sampleRate, channels, encoding, channel?})
// close() frees the native state at once (no wait for GC); streamCount() counts the open ones.
// ---------------------------------------------------------------------------------------

std::atomic<int64_t> gLiveStreams{0};

class StreamWrap final : public Napi::ObjectWrap<StreamWrap> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "StreamFrontend",
                       {InstanceMethod<&StreamWrap::Push>("push"), InstanceMethod<&StreamWrap::End>("end"),
                        InstanceMethod<&StreamWrap::Close>("close")});
  }
  ~StreamWrap() override { release(); }

  StreamWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<StreamWrap>(info) {
    guarded(info.Env(), [&]() -> Napi::Value {
      if (!info[0].IsObject()) badArg("StreamFrontend options must be an object");
      Napi::Object o = info[0].As<Napi::Object>();
      Napi::Value rate = o.Get("sampleRate"), channels = o.Get("channels"), enc = o.Get("encoding"),
                  channel = o.Get("channel");
      if (!isInteger(rate)) badArg("sampleRate must be an integer in 8000..384000 Hz");
      if (!isInteger(channels)) badArg("channels must be an integer in 1..32");
      const double r = rate.As<Napi::Number>().DoubleValue(), c = channels.As<Napi::Number>().DoubleValue();
      if (r < kMinSampleRate || r > kMaxSampleRate) badArg("sampleRate must be an integer in 8000..384000 Hz");
      if (c < 1 || c > kMaxChannels) badArg("channels must be an integer in 1..32");
      if (!enc.IsString()) badArg("encoding must be 's16le' or 'f32le'");
      const std::string e = enc.As<Napi::String>().Utf8Value();
      SampleEncoding encoding;
      if (e == "s16le")
        encoding = SampleEncoding::S16LE;
      else if (e == "f32le")
        encoding = SampleEncoding::F32LE;
      else
        badArg("encoding must be 's16le' or 'f32le'");
      int ch = -1;
      if (!channel.IsUndefined()) {
        if (!isInteger(channel)) badArg("channel must be an integer");
        const double v = channel.As<Napi::Number>().DoubleValue();
        if (v < 0 || v >= c)
          fail(ErrorCode::InvalidChannel, "channel " + std::to_string(static_cast<long long>(v)) +
                                              " does not exist: the stream has " + std::to_string(static_cast<int>(c)) +
                                              " channel(s) (0-based)");
        ch = static_cast<int>(v);
      }
      core_ = std::make_unique<StreamFrontend>(static_cast<int>(r), static_cast<int>(c), encoding, ch);
      ++gLiveStreams;
      return info.Env().Undefined();
    });
  }

 private:
  Napi::Value Push(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return guarded(env, [&]() -> Napi::Value {
      if (!core_) badArg("StreamFrontend is closed");
      if (!isUint8Array(info[0])) badArg("push() expects a Buffer or Uint8Array");
      Napi::Uint8Array a = info[0].As<Napi::Uint8Array>();
      const int64_t start = core_->stepsDone();
      core_->push(a.Data(), a.ByteLength(), out_);
      return chunkArray(env, core_->channels(), start, out_);
    });
  }
  Napi::Value End(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return guarded(env, [&]() -> Napi::Value {
      if (!core_) badArg("StreamFrontend is closed");
      const int64_t start = core_->stepsDone();
      core_->end(out_);
      if (core_->stepsDone() == 0) fail(ErrorCode::EmptyAudio, "the stream contained no samples");
      return chunkArray(env, core_->channels(), start, out_);
    });
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }
  void release() {
    if (!core_) return;
    core_.reset();
    std::vector<StepOutput>().swap(out_);
    --gLiveStreams;
  }

  std::unique_ptr<StreamFrontend> core_;
  std::vector<StepOutput> out_;
};

Napi::Value StreamCount(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(gLiveStreams.load()));
}

// ---------------------------------------------------------------------------------------
// Functions
// ---------------------------------------------------------------------------------------

Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SourceSpec spec;
  std::optional<Failure> f = capture([&] { parseSource(info[0], spec); });
  if (f) return rejected(env, f->code, f->message);
  auto* w = new ProbeWorker(env, std::move(spec));
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
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
  auto* w = new DecodeAllWorker(env, std::move(spec), maxSeconds);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value Resample(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
      badArg("resample() expects a Float32Array of samples");
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

Napi::Value ComputeFeatures(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
      badArg("computeFeatures() expects a Float32Array of 16 kHz samples");
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

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, Probe, "probe"));
  exports.Set("decodeAll", Napi::Function::New(env, DecodeAll, "decodeAll"));
  exports.Set("resample", Napi::Function::New(env, Resample, "resample"));
  exports.Set("computeFeatures", Napi::Function::New(env, ComputeFeatures, "computeFeatures"));
  exports.Set("Analyzer", AnalyzerWrap::Init(env));
  exports.Set("StreamFrontend", StreamWrap::Init(env));
  exports.Set("streamCount", Napi::Function::New(env, StreamCount, "streamCount"));
  exports.Set("versions", [&] {
    Napi::Object v = Napi::Object::New(env);
    v.Set("sndfile", sndfileVersion());
    v.Set("mpg123", mpg123Version());
    v.Set("opus", opusVersion());
    v.Set("soxr", soxrVersion());
    return v;
  }());
  return exports;
}

}  // namespace

NODE_API_MODULE(auris_native, Init)
