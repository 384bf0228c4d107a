// One Init per wrapped native object; addon.cc calls each to build the module's exports.
#pragma once

#include <napi.h>

namespace auris::binding {

/** probe(source), decodeAll(source, maxSeconds?), versions: the decoder (decoder.h). */
void InitDecoder(Napi::Env env, Napi::Object exports);
/** class FileFrontend(source, options): open(), read(), close(), stats() (frontend.h). */
void InitFileFrontend(Napi::Env env, Napi::Object exports);
/** class StreamFrontend(options): push(), end(), close(); streamCount() (frontend.h). */
void InitStreamFrontend(Napi::Env env, Napi::Object exports);
/** resample(samples, inRate, chunkSize?): the resampler (resampler.h). */
void InitResampler(Napi::Env env, Napi::Object exports);
/** computeFeatures(samples16k): the framer's features of a whole signal (framer.h). */
void InitFeatures(Napi::Env env, Napi::Object exports);
/** gatherStates(views, out), scatterStates(src, views): live streams' model states to and from a batch (memcpy). */
void InitStates(Napi::Env env, Napi::Object exports);

}  // namespace auris::binding
