// The N-API module: registers one binding per wrapped native object (native/binding/*.cc,
// each with its InitX(env, exports)). No audio logic and no binding code here. Every entry
// point turns C++ exceptions into JS errors with a stable `.code` (errors.h); the heavy work
// (probe, open, read, decodeAll) runs on the libuv thread pool.
#include <napi.h>

#include "binding/init.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  using namespace auris::binding;
  InitDecoder(env, exports);
  InitFileFrontend(env, exports);
  InitStreamFrontend(env, exports);
  InitResampler(env, exports);
  InitFeatures(env, exports);
  InitStates(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(auris_native, Init)
