// StreamFrontend binding: new StreamFrontend({sampleRate, channels, encoding, channel?});
// push(bytes) and end() run synchronously on the JS thread (small chunks) and return the
// feature chunks that became complete. close() frees the native state at once (no wait for
// GC); streamCount() counts the open ones.
#include <atomic>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "../frontend.h"
#include "common.h"
#include "init.h"

namespace auris::binding {
namespace {

std::atomic<int64_t> gLiveStreams{0};

SampleEncoding parseEncoding(Napi::Value enc) {
  if (!enc.IsString()) badArg("encoding must be 's16le' or 'f32le'");
  const std::string e = enc.As<Napi::String>().Utf8Value();
  if (e == "s16le") return SampleEncoding::S16LE;
  if (e == "f32le") return SampleEncoding::F32LE;
  badArg("encoding must be 's16le' or 'f32le'");
}

// -1 (every channel) when absent; INVALID_CHANNEL when the stream has no such channel.
int parseChannel(Napi::Value channel, int channels) {
  if (channel.IsUndefined()) return -1;
  if (!isInteger(channel)) badArg("channel must be an integer");
  const double v = channel.As<Napi::Number>().DoubleValue();
  if (v < 0 || v >= channels)
    fail(ErrorCode::InvalidChannel, "channel " + std::to_string(static_cast<long long>(v)) +
                                        " does not exist: the stream has " + std::to_string(channels) +
                                        " channel(s) (0-based)");
  return static_cast<int>(v);
}

class StreamFrontendWrap final : public Napi::ObjectWrap<StreamFrontendWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "StreamFrontend",
                       {InstanceMethod<&StreamFrontendWrap::Push>("push"), InstanceMethod<&StreamFrontendWrap::End>("end"),
                        InstanceMethod<&StreamFrontendWrap::Close>("close")});
  }
  ~StreamFrontendWrap() override { release(); }

  StreamFrontendWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<StreamFrontendWrap>(info) {
    guarded(info.Env(), [&]() -> Napi::Value {
      if (!info[0].IsObject()) badArg("StreamFrontend options must be an object");
      Napi::Object o = info[0].As<Napi::Object>();
      Napi::Value rate = o.Get("sampleRate"), channels = o.Get("channels");
      if (!isInteger(rate)) badArg("sampleRate must be an integer in 8000..384000 Hz");
      if (!isInteger(channels)) badArg("channels must be an integer in 1..32");
      const double r = rate.As<Napi::Number>().DoubleValue(), c = channels.As<Napi::Number>().DoubleValue();
      if (r < kMinSampleRate || r > kMaxSampleRate) badArg("sampleRate must be an integer in 8000..384000 Hz");
      if (c < 1 || c > kMaxChannels) badArg("channels must be an integer in 1..32");
      const SampleEncoding encoding = parseEncoding(o.Get("encoding"));
      const int channel = parseChannel(o.Get("channel"), static_cast<int>(c));
      core_ = std::make_unique<StreamFrontend>(static_cast<int>(r), static_cast<int>(c), encoding, channel);
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

// trimMemory() -> Promise<boolean>: gives the allocator's free memory back to the system
// (glibc malloc_trim(0), which also releases free pages inside the heap, not only at its
// top); false where the C library has no such call. On a pool thread: it walks the whole
// heap (tens of ms after a thousand streams). Called after a burst of closed streams
// (src/streaming/memory-trim.ts).
class TrimWorker final : public PromiseWorker {
 public:
  explicit TrimWorker(Napi::Env env) : PromiseWorker(env, "auris:trimMemory") {}

 private:
  void run() override {
#if defined(__GLIBC__)
    released_ = malloc_trim(0) != 0;
#endif
  }
  Napi::Value result(Napi::Env env) override { return Napi::Boolean::New(env, released_); }
  bool released_ = false;
};

Napi::Value TrimMemory(const Napi::CallbackInfo& info) { return PromiseWorker::start(new TrimWorker(info.Env())); }

}  // namespace

void InitStreamFrontend(Napi::Env env, Napi::Object exports) {
  exports.Set("StreamFrontend", StreamFrontendWrap::Define(env));
  exports.Set("streamCount", Napi::Function::New(env, StreamCount, "streamCount"));
  exports.Set("trimMemory", Napi::Function::New(env, TrimMemory, "trimMemory"));
}

}  // namespace auris::binding
