// Chunked audio decoding to interleaved float32 at the file's native rate.
//
// Containers are recognised from their first bytes (never from a file name); only the
// recognised ones reach a decoder:
//   WAV/RF64/W64/AIFF/AU/CAF/FLAC/OGG (Vorbis, Opus)  -> libsndfile (virtual I/O)
//   MPEG audio (MP3, also layer I/II)                 -> libmpg123 (the decoder libsndfile
//      wraps; used directly so that lengths are exact: libsndfile 1.2 trusts mpg123's
//      length estimate and silently truncates VBR files without a Xing header)
// Everything else is UNSUPPORTED_FORMAT. Headers are validated before anything is sized
// from them: 1..32 channels, 8 kHz..384 kHz, declared WAV data not beyond the end of file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "source.h"

namespace auris {

constexpr int kMaxChannels = 32;
constexpr int kMinSampleRate = 8000;
constexpr int kMaxSampleRate = 384000;

struct DecodedInfo {
  int sampleRate = 0;
  int channels = 0;
  /** Frames per channel declared by the container; -1 when it does not say (e.g. FLAC
   *  written to a pipe). */
  int64_t frames = -1;
  std::string format;   // "WAV", "FLAC", "MP3", "OGG", ...
  std::string subtype;  // "PCM_16", "FLOAT", "MPEG_LAYER_III", "VORBIS", ...
  /** The WAV data chunk is shorter than its header declares (a cut-off file): the audio
   *  that is there is decoded, as ffmpeg does, and `frames` counts only that. */
  bool truncated = false;
};

/** Versions of the decoding libraries, e.g. "libsndfile-1.2.0", "mpg123 API 48", "libopus 1.3.1". */
std::string sndfileVersion();
std::string mpg123Version();
std::string opusVersion();

class Decoder {
 public:
  /** Recognises the container and opens a decoder; throws AudioError (UNSUPPORTED_FORMAT,
   *  CORRUPT_AUDIO, EMPTY_AUDIO for a zero-byte input, IO_ERROR). A header that declares
   *  zero frames is *not* an error here (FileFrontend checks the samples, frontend.h). */
  static std::unique_ptr<Decoder> open(std::unique_ptr<ByteSource> src);

  virtual ~Decoder() = default;
  const DecodedInfo& info() const { return info_; }

  /** Decodes up to maxFrames frames into out (room for maxFrames * channels floats).
   *  Returns the number of frames, 0 once the stream has ended. Throws CORRUPT_AUDIO on a
   *  decoder error and when the stream ends before the length its header declares. */
  size_t read(float* out, size_t maxFrames);

  /** Frames returned by read() so far. */
  int64_t framesRead() const { return framesRead_; }

 protected:
  Decoder() = default;
  virtual size_t readImpl(float* out, size_t maxFrames) = 0;

  DecodedInfo info_;
  /** Accepted shortfall against info_.frames at the end of the stream. */
  int64_t lengthTolerance_ = 0;

 private:
  int64_t framesRead_ = 0;
  bool ended_ = false;
};

}  // namespace auris
