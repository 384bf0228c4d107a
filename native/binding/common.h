// Shared by every binding file: C++ exceptions -> JS errors with a stable `.code` (errors.h),
// promise-returning workers on the libuv thread pool, the {path} | {buffer} source argument,
// and the result objects (info, Float32Array, feature chunks).
#pragma once

#include <napi.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "../decoder.h"
#include "../errors.h"
#include "../framer.h"
#include "../source.h"

namespace auris::binding {

// ---- errors ----------------------------------------------------------------------------

struct Failure {
  ErrorCode code;
  std::string message;
};

Napi::Error makeError(Napi::Env env, ErrorCode code, const std::string& message);

/** A promise already rejected with a coded error. */
Napi::Value rejected(Napi::Env env, ErrorCode code, const std::string& message);

[[noreturn]] inline void badArg(const std::string& message) { fail(ErrorCode::InvalidArgument, message); }

/** Runs f, translating any C++ exception into a Failure. */
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

/** For synchronous bindings: runs f, rethrows C++ failures as JS errors with a code. */
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

// ---- promise workers -------------------------------------------------------------------

/** An AsyncWorker that settles a promise: run() on a pool thread, then settle() and
 *  result() on the JS thread. A failure of either becomes a rejection with a code. */
class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, const char* name);
  Napi::Promise promise() { return deferred_.Promise(); }

  /** Queues the worker (which frees itself when done) and returns its promise. */
  static Napi::Promise start(PromiseWorker* worker);

 protected:
  virtual void run() = 0;                                        // worker thread
  virtual Napi::Value result(Napi::Env env) = 0;                 // JS thread, on success
  virtual void settle(const std::optional<Failure>& failure) {}  // JS thread, always first

  void Execute() final;
  void OnWorkComplete(Napi::Env env, napi_status status) final;
  void OnOK() final;
  void OnError(const Napi::Error& e) final;

 private:
  Napi::Promise::Deferred deferred_;
  std::optional<Failure> failure_;
};

// ---- arguments -------------------------------------------------------------------------

/** A {path} or {buffer} source. For a buffer, a strong reference keeps the JS object (and so
 *  its memory) alive until the source is released on the JS thread. */
struct SourceSpec {
  std::string path;
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool isBuffer = false;
  Napi::Reference<Napi::Value> keep;

  std::unique_ptr<ByteSource> open() const { return isBuffer ? memorySource(data, size) : openFileSource(path); }
  /** noexcept: also runs from destructors, where a throw would abort the process. */
  void release() noexcept;
};

void parseSource(Napi::Value v, SourceSpec& spec);
bool isUint8Array(Napi::Value v);
bool isFloat32Array(Napi::Value v);
bool isInteger(Napi::Value v);

// ---- results ---------------------------------------------------------------------------

Napi::Object infoObject(Napi::Env env, const DecodedInfo& in);
Napi::Float32Array float32Array(Napi::Env env, const float* data, size_t n);
/** Chunks for every channel, or an empty array when no step became complete. */
Napi::Array chunkArray(Napi::Env env, const std::vector<int>& channels, int64_t startStep,
                       const std::vector<StepOutput>& out);

}  // namespace auris::binding
