// States binding: gatherStates(views, out) / scatterStates(src, views), the live streams' model states copied
// between their own buffers and one batch tensor with memcpy. The inference workers keep each stream's state in a
// SharedArrayBuffer they update in place; V8 copies a shared buffer's typed array element by element (about
// 2.5 GB/s here against 10 for a plain one: docs/streaming.md, session 51), which was 5-10 % of a loaded worker.
// The buffers are the caller's: a stream's state is never used by two calls at once (one call in flight per stream
// and graph), so there is no concurrent access to order.
#include <cstring>

#include "common.h"
#include "init.h"

namespace auris::binding {
namespace {

/** The elements of the array `v`, each a Float32Array (else an INVALID_ARGUMENT failure naming `fn`). */
std::vector<Napi::Float32Array> views(const Napi::Value& v, const char* fn) {
  if (!v.IsArray()) badArg(std::string(fn) + "() expects an array of Float32Arrays");
  Napi::Array arr = v.As<Napi::Array>();
  std::vector<Napi::Float32Array> out;
  out.reserve(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value x = arr.Get(i);
    if (!isFloat32Array(x)) badArg(std::string(fn) + "() expects an array of Float32Arrays");
    out.push_back(x.As<Napi::Float32Array>());
  }
  return out;
}

/** Checks that `parts` are equal in length and fill `whole` exactly; returns their length. */
size_t partLength(const std::vector<Napi::Float32Array>& parts, size_t whole, const char* fn) {
  if (parts.empty()) badArg(std::string(fn) + "() needs at least one state");
  size_t per = parts[0].ElementLength();
  for (const auto& p : parts) {
    if (p.ElementLength() != per) badArg(std::string(fn) + "(): states of different lengths");
  }
  if (per * parts.size() != whole) badArg(std::string(fn) + "(): the batch is not the states side by side");
  return per;
}

Napi::Value GatherStates(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    std::vector<Napi::Float32Array> parts = views(info[0], "gatherStates");
    if (!isFloat32Array(info[1])) badArg("gatherStates() expects a Float32Array to fill");
    Napi::Float32Array out = info[1].As<Napi::Float32Array>();
    size_t per = partLength(parts, out.ElementLength(), "gatherStates");
    for (size_t i = 0; i < parts.size(); i++) std::memcpy(out.Data() + i * per, parts[i].Data(), per * sizeof(float));
    return env.Undefined();
  });
}

Napi::Value ScatterStates(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (!isFloat32Array(info[0])) badArg("scatterStates() expects a Float32Array batch");
    Napi::Float32Array src = info[0].As<Napi::Float32Array>();
    std::vector<Napi::Float32Array> parts = views(info[1], "scatterStates");
    size_t per = partLength(parts, src.ElementLength(), "scatterStates");
    for (size_t i = 0; i < parts.size(); i++) std::memcpy(parts[i].Data(), src.Data() + i * per, per * sizeof(float));
    return env.Undefined();
  });
}

}  // namespace

void InitStates(Napi::Env env, Napi::Object exports) {
  exports.Set("gatherStates", Napi::Function::New(env, GatherStates, "gatherStates"));
  exports.Set("scatterStates", Napi::Function::New(env, ScatterStates, "scatterStates"));
}

}  // namespace auris::binding
