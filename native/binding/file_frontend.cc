// FileFrontend binding, the JS class `FileFrontend` (src/audio wraps it under the same name):
//   new FileFrontend(source, options); open(); read(); close(); stats()
// open() and read() run on the thread pool, one at a time; close() during either frees the
// native state when that worker finishes.
#include <cmath>

#include "../frontend.h"
#include "common.h"
#include "init.h"

namespace auris::binding {
namespace {

FrontendOptions parseOpenOptions(Napi::Value v) {
  FrontendOptions o;
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

class FileFrontendWrap final : public Napi::ObjectWrap<FileFrontendWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "FileFrontend",
                       {InstanceMethod<&FileFrontendWrap::Open>("open"), InstanceMethod<&FileFrontendWrap::Read>("read"),
                        InstanceMethod<&FileFrontendWrap::Close>("close"),
                        InstanceMethod<&FileFrontendWrap::Stats>("stats")});
  }

  FileFrontendWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<FileFrontendWrap>(info) {
    guarded(info.Env(), [&]() -> Napi::Value {
      parseSource(info[0], source_);
      options_ = parseOpenOptions(info[1]);
      return info.Env().Undefined();
    });
  }

  ~FileFrontendWrap() override { source_.release(); }

  // Called by the workers on the JS thread.
  void workerDone() {
    busy_ = false;
    if (closed_) release();
  }
  void setCore(std::shared_ptr<FileFrontend> core) {
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
  FrontendOptions options_;
  std::shared_ptr<FileFrontend> core_;
  std::optional<Failure> failure_;
  bool busy_ = false, opened_ = false, closed_ = false;
};

class FileFrontendWrap::OpenWorker final : public PromiseWorker {
 public:
  OpenWorker(Napi::Env env, FileFrontendWrap* wrap)
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
    core_ = std::make_shared<FileFrontend>(Decoder::open(std::move(src)), options_);
  }
  void settle(const std::optional<Failure>& failure) override {
    if (failure) wrap_->setFailure(*failure);
    else wrap_->setCore(core_);
    core_.reset();
    wrap_->workerDone();
  }
  Napi::Value result(Napi::Env env) override {
    if (!wrap_->core_) fail(ErrorCode::InvalidArgument, "FileFrontend was closed while opening");
    return infoObject(env, wrap_->core_->info());
  }

 private:
  FileFrontendWrap* wrap_;
  Napi::ObjectReference self_;  // keeps the wrapper (and its buffer) alive meanwhile
  bool isBuffer_ = false;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  FrontendOptions options_;
  std::shared_ptr<FileFrontend> core_;
};

class FileFrontendWrap::ReadWorker final : public PromiseWorker {
 public:
  ReadWorker(Napi::Env env, FileFrontendWrap* wrap)
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
    std::shared_ptr<FileFrontend> core = std::move(core_);
    if (!more_) return env.Null();
    return chunkArray(env, core->channels(), startStep_, core->output());
  }

 private:
  FileFrontendWrap* wrap_;
  Napi::ObjectReference self_;
  std::shared_ptr<FileFrontend> core_;
  int64_t startStep_ = 0;
  bool more_ = false;
};

// The error messages name FileFrontend: the class callers see (src/audio) and the core it wraps.
Napi::Value FileFrontendWrap::Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (closed_) return rejected(env, ErrorCode::InvalidArgument, "FileFrontend is closed");
  if (opened_) return rejected(env, ErrorCode::InvalidArgument, "open() may be called only once");
  opened_ = true;
  busy_ = true;
  return PromiseWorker::start(new OpenWorker(env, this));
}

Napi::Value FileFrontendWrap::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (failure_) return rejected(env, failure_->code, failure_->message);
  if (closed_) return rejected(env, ErrorCode::InvalidArgument, "FileFrontend is closed");
  if (!core_) return rejected(env, ErrorCode::InvalidArgument, "FileFrontend is not open");
  if (busy_) return rejected(env, ErrorCode::InvalidArgument, "a read() is already in progress");
  busy_ = true;
  return PromiseWorker::start(new ReadWorker(env, this));
}

}  // namespace

void InitFileFrontend(Napi::Env env, Napi::Object exports) {
  exports.Set("FileFrontend", FileFrontendWrap::Define(env));
}

}  // namespace auris::binding
