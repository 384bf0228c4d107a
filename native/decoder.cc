#include "decoder.h"

#include <mpg123.h>
#include <opusfile.h>
#include <sndfile.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "errors.h"

namespace auris {

namespace {

// ---------------------------------------------------------------------------------------
// Container recognition
// ---------------------------------------------------------------------------------------

enum class Container { Unknown, Wav, Rifx, Rf64, W64, Aiff, Au, Caf, Flac, Ogg, OggOpus, Mpeg };

const char* containerName(Container c) {
  switch (c) {
    case Container::Wav: case Container::Rifx: return "WAV";
    case Container::Rf64: return "RF64";
    case Container::W64: return "W64";
    case Container::Aiff: return "AIFF";
    case Container::Au: return "AU";
    case Container::Caf: return "CAF";
    case Container::Flac: return "FLAC";
    case Container::Ogg: case Container::OggOpus: return "OGG";
    case Container::Mpeg: return "MP3";
    default: return "unknown";
  }
}

inline uint32_t le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t(p[3]) << 24); }
inline uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint64_t le64(const uint8_t* p) { return le32(p) | (uint64_t(le32(p + 4)) << 32); }

// Length in bytes of the MPEG audio frame whose 4-byte header is at p, 0 if p is not a valid
// header (free-format frames count as invalid here: their length is not in the header).
size_t mpegFrameLength(const uint8_t* p) {
  if (p[0] != 0xFF || (p[1] & 0xE0) != 0xE0) return 0;
  const int version = (p[1] >> 3) & 3;  // 0: MPEG 2.5, 1: reserved, 2: MPEG 2, 3: MPEG 1
  const int layer = (p[1] >> 1) & 3;    // 1: III, 2: II, 3: I, 0: reserved
  const int bitrateIndex = p[2] >> 4;
  const int rateIndex = (p[2] >> 2) & 3;
  const int padding = (p[2] >> 1) & 1;
  if (version == 1 || layer == 0 || bitrateIndex == 0 || bitrateIndex == 15 || rateIndex == 3) return 0;
  if ((p[3] & 3) == 2) return 0;  // reserved emphasis
  static const int kBitrates[2][3][15] = {
      // MPEG 1: layer I, II, III
      {{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
       {0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
       {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}},
      // MPEG 2 / 2.5: layer I, II, III
      {{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
       {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
       {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}}};
  static const int kRates[3] = {44100, 48000, 32000};
  const bool mpeg1 = version == 3;
  const int layerIdx = 3 - layer;  // 0: I, 1: II, 2: III
  const int bitrate = kBitrates[mpeg1 ? 0 : 1][layerIdx][bitrateIndex] * 1000;
  int rate = kRates[rateIndex];
  if (version == 2) rate /= 2;
  if (version == 0) rate /= 4;
  if (layerIdx == 0) return static_cast<size_t>((12 * bitrate / rate + padding) * 4);
  const int coef = (layerIdx == 2 && !mpeg1) ? 72 : 144;
  return static_cast<size_t>(coef * bitrate / rate + padding);
}

// True if `count` consecutive valid MPEG audio frame headers start at off.
bool mpegFramesAt(ByteSource& src, int64_t off, int count) {
  uint8_t h[4];
  for (int i = 0; i < count; ++i) {
    if (src.readAt(off, h, 4) != 4) return i > 0 && off >= src.size();  // a one-frame file ends here
    size_t len = mpegFrameLength(h);
    if (len == 0) return false;
    off += static_cast<int64_t>(len);
  }
  return true;
}

Container sniff(ByteSource& src) {
  uint8_t h[36] = {0};
  const size_t n = src.readAt(0, h, sizeof h);
  auto is = [&](size_t off, const char* magic) {
    size_t len = std::strlen(magic);
    return off + len <= n && std::memcmp(h + off, magic, len) == 0;
  };
  if ((is(0, "RIFF") && is(8, "WAVE"))) return Container::Wav;
  if ((is(0, "RIFX") && is(8, "WAVE"))) return Container::Rifx;
  if ((is(0, "RF64") || is(0, "BW64")) && is(8, "WAVE")) return Container::Rf64;
  if (is(0, "riff") && is(24, "wave")) return Container::W64;
  if (is(0, "FORM") && (is(8, "AIFF") || is(8, "AIFC"))) return Container::Aiff;
  if (is(0, ".snd") || is(0, "dns.")) return Container::Au;
  if (is(0, "caff")) return Container::Caf;
  if (is(0, "fLaC")) return Container::Flac;
  // Opus's identification header starts the first page's only packet (27-byte page header + 1 lacing byte)
  if (is(0, "OggS")) return is(28, "OpusHead") ? Container::OggOpus : Container::Ogg;
  if (is(0, "ID3") && n >= 10) {
    // ID3v2 tag (MP3, sometimes FLAC): syncsafe size, +10 header, +10 if a footer is present.
    int64_t size = ((h[6] & 0x7F) << 21) | ((h[7] & 0x7F) << 14) | ((h[8] & 0x7F) << 7) | (h[9] & 0x7F);
    int64_t after = 10 + size + ((h[5] & 0x10) ? 10 : 0);
    uint8_t m[4] = {0};
    if (src.readAt(after, m, 4) == 4 && std::memcmp(m, "fLaC", 4) == 0) return Container::Flac;
    return Container::Mpeg;
  }
  // Raw MPEG audio: two consecutive frame headers at the start, or three a little later
  // (some files begin with a few bytes of junk or zeros).
  if (n >= 4 && mpegFramesAt(src, 0, 2)) return Container::Mpeg;
  {
    uint8_t buf[4096];
    size_t got = src.readAt(0, buf, sizeof buf);
    for (size_t i = 1; i + 4 <= got; ++i)
      if (buf[i] == 0xFF && mpegFrameLength(buf + i) && mpegFramesAt(src, static_cast<int64_t>(i), 3))
        return Container::Mpeg;
  }
  return Container::Unknown;
}

// Is a short prefix of a known container (a header cut off before it could be recognised)?
bool truncatedMagic(ByteSource& src) {
  uint8_t h[12] = {0};
  size_t n = src.readAt(0, h, sizeof h);
  if (n >= 12 || n < 3) return false;  // 1-2 bytes: too little to call it a broken header
  static const char* kMagics[] = {"RIFF", "RIFX", "RF64", "BW64", "riff", "FORM", "fLaC", "OggS", "ID3", "caff", ".snd"};
  for (const char* m : kMagics) {
    size_t len = std::strlen(m);
    size_t k = n < len ? n : len;
    if (k > 0 && std::memcmp(h, m, k) == 0) return true;
  }
  return false;
}

void checkChannelsAndRate(const char* what, int64_t channels, int64_t rate) {
  if (channels <= 0) fail(ErrorCode::CorruptAudio, std::string(what) + " header declares zero channels");
  if (channels > kMaxChannels)
    fail(ErrorCode::UnsupportedFormat, std::string(what) + " header declares " + std::to_string(channels) +
                                           " channels; at most " + std::to_string(kMaxChannels) + " are supported");
  if (rate <= 0) fail(ErrorCode::CorruptAudio, std::string(what) + " header declares a sample rate of 0 Hz");
  if (rate < kMinSampleRate || rate > kMaxSampleRate)
    fail(ErrorCode::UnsupportedFormat, std::string(what) + " sample rate " + std::to_string(rate) +
                                           " Hz is outside the supported 8000..384000 Hz");
}

// Walks the chunks of a RIFF/RF64 WAVE header before libsndfile sees it: validates the fmt
// chunk. Returns true when the data chunk claims more bytes than the file holds (a truncated
// file): the audio that is there is then decoded and flagged. The streaming placeholders 0
// and 0xFFFFFFFF are accepted: libsndfile then decodes up to the end of the file.
bool checkWavHeader(ByteSource& src, bool rf64) {
  const int64_t fileSize = src.size();
  int64_t pos = 12;
  bool haveFmt = false;
  uint64_t ds64Data = 0;
  bool haveDs64 = false;
  for (int iter = 0; iter < 100000; ++iter) {
    uint8_t ch[8];
    if (src.readAt(pos, ch, 8) != 8) {
      fail(ErrorCode::CorruptAudio, haveFmt ? "WAV file has no 'data' chunk (truncated header)"
                                            : "WAV header is truncated (no complete 'fmt ' chunk)");
    }
    const uint32_t size = le32(ch + 4);
    const int64_t body = pos + 8;
    if (std::memcmp(ch, "ds64", 4) == 0 && rf64) {
      uint8_t d[16];
      if (size < 16 || src.readAt(body, d, 16) != 16) fail(ErrorCode::CorruptAudio, "RF64 'ds64' chunk is truncated");
      ds64Data = le64(d + 8);
      haveDs64 = true;
    } else if (std::memcmp(ch, "fmt ", 4) == 0) {
      uint8_t f[40] = {0};
      if (size < 16) fail(ErrorCode::CorruptAudio, "WAV 'fmt ' chunk is too short");
      size_t want = size < 40 ? size : 40;
      if (src.readAt(body, f, want) != want) fail(ErrorCode::CorruptAudio, "WAV header is truncated inside the 'fmt ' chunk");
      uint16_t tag = le16(f);
      const uint16_t channels = le16(f + 2);
      const uint32_t rate = le32(f + 4);
      const uint16_t bits = le16(f + 14);
      checkChannelsAndRate("WAV", channels, rate);
      if (tag == 0xFFFE) {
        if (size < 40) fail(ErrorCode::CorruptAudio, "WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk is too short");
        tag = le16(f + 24);  // first two bytes of the sub-format GUID
      }
      switch (tag) {
        case 0x0001: case 0x0003: case 0x0006: case 0x0007:  // PCM, IEEE float, A-law, mu-law
        case 0x0002: case 0x0011: case 0x0031:                // MS ADPCM, IMA ADPCM, GSM 6.10
          break;
        default: {
          char buf[96];
          std::snprintf(buf, sizeof buf, "WAV encoding 0x%04X is not supported (PCM, float, A-law, mu-law, ADPCM only)", tag);
          fail(ErrorCode::UnsupportedFormat, buf);
        }
      }
      if (bits == 0 && (tag == 0x0001 || tag == 0x0003)) fail(ErrorCode::CorruptAudio, "WAV header declares 0 bits per sample");
      haveFmt = true;
    } else if (std::memcmp(ch, "data", 4) == 0) {
      if (!haveFmt) fail(ErrorCode::CorruptAudio, "WAV 'data' chunk comes before the 'fmt ' chunk");
      uint64_t declared = size;
      bool placeholder = size == 0 || size == 0xFFFFFFFFu;
      if (rf64 && size == 0xFFFFFFFFu) {
        if (!haveDs64) fail(ErrorCode::CorruptAudio, "RF64 file has no 'ds64' chunk");
        declared = ds64Data;
        placeholder = false;
      }
      const uint64_t available = static_cast<uint64_t>(fileSize - body > 0 ? fileSize - body : 0);
      // A data chunk cut short (an interrupted upload or copy): decode what is there, flagged truncated.
      // With no audio at all there is nothing to decode: that stays an error.
      if (!placeholder && declared > available) {
        if (available == 0) {
          fail(ErrorCode::CorruptAudio, "WAV header declares " + std::to_string(declared) +
                                            " bytes of audio but the file holds none (truncated file or corrupt header)");
        }
        return true;
      }
      return false;
    }
    pos = body + static_cast<int64_t>(size) + (size & 1);
    if (pos > fileSize) {
      fail(ErrorCode::CorruptAudio, haveFmt ? "WAV file has no 'data' chunk (truncated header)"
                                            : "WAV header is truncated (no complete 'fmt ' chunk)");
    }
  }
  fail(ErrorCode::CorruptAudio, "WAV header has too many chunks");
}

// Thrown inside C callbacks must never unwind through C code: callbacks store it here.
struct PendingError {
  std::optional<AudioError> error;
  void rethrow() {
    if (error) {
      AudioError e = *error;
      error.reset();
      throw e;
    }
  }
};

// A decoder library's read callback: reads from the cursor; an exception is kept in `pending`
// (rethrown after the library call returns) and reported to the library as -1.
int64_t readForCallback(Cursor& cur, PendingError& pending, void* dst, size_t n) {
  try {
    return static_cast<int64_t>(cur.read(dst, n));
  } catch (const AudioError& e) {
    pending.error = e;
  } catch (...) {
    pending.error = AudioError(ErrorCode::IoError, "read failed");
  }
  return -1;
}

// ---------------------------------------------------------------------------------------
// libsndfile backend
// ---------------------------------------------------------------------------------------

// sf_open's error state (sf_error(NULL)/sf_strerror(NULL)) is a process-wide global.
std::mutex gSndfileOpenMutex;

const char* sndfileSubtype(int format) {
  switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8: return "PCM_S8";
    case SF_FORMAT_PCM_U8: return "PCM_U8";
    case SF_FORMAT_PCM_16: return "PCM_16";
    case SF_FORMAT_PCM_24: return "PCM_24";
    case SF_FORMAT_PCM_32: return "PCM_32";
    case SF_FORMAT_FLOAT: return "FLOAT";
    case SF_FORMAT_DOUBLE: return "DOUBLE";
    case SF_FORMAT_ULAW: return "ULAW";
    case SF_FORMAT_ALAW: return "ALAW";
    case SF_FORMAT_IMA_ADPCM: return "IMA_ADPCM";
    case SF_FORMAT_MS_ADPCM: return "MS_ADPCM";
    case SF_FORMAT_GSM610: return "GSM610";
    case SF_FORMAT_VORBIS: return "VORBIS";
    case SF_FORMAT_OPUS: return "OPUS";
    case SF_FORMAT_ALAC_16: return "ALAC_16";
    case SF_FORMAT_ALAC_20: return "ALAC_20";
    case SF_FORMAT_ALAC_24: return "ALAC_24";
    case SF_FORMAT_ALAC_32: return "ALAC_32";
    default: return "OTHER";
  }
}

// The libsndfile major formats we accept, matched against what the first bytes said.
bool sndfileMajorMatches(int format, Container c) {
  switch (format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV: case SF_FORMAT_WAVEX: return c == Container::Wav || c == Container::Rifx;
    case SF_FORMAT_RF64: return c == Container::Rf64 || c == Container::Wav;
    case SF_FORMAT_W64: return c == Container::W64;
    case SF_FORMAT_AIFF: return c == Container::Aiff;
    case SF_FORMAT_AU: return c == Container::Au;
    case SF_FORMAT_CAF: return c == Container::Caf;
    case SF_FORMAT_FLAC: return c == Container::Flac;
    case SF_FORMAT_OGG: return c == Container::Ogg;
    default: return false;
  }
}

class SndfileDecoder final : public Decoder {
 public:
  /** The WAV data chunk was cut short (checkWavHeader): libsndfile reads what is there. */
  void markTruncated() {
    info_.truncated = true;
    lengthTolerance_ = info_.frames >= 0 ? info_.frames : 0;  // the declared length is not reached
  }

  SndfileDecoder(std::unique_ptr<ByteSource> src, Container container) : src_(std::move(src)), cur_(src_.get()) {
    vio_.get_filelen = &SndfileDecoder::vioLength;
    vio_.seek = &SndfileDecoder::vioSeek;
    vio_.read = &SndfileDecoder::vioRead;
    vio_.write = &SndfileDecoder::vioWrite;
    vio_.tell = &SndfileDecoder::vioTell;
    SF_INFO sfi;
    std::memset(&sfi, 0, sizeof sfi);
    {
      std::lock_guard<std::mutex> lock(gSndfileOpenMutex);
      sf_ = sf_open_virtual(&vio_, SFM_READ, &sfi, this);
      if (!sf_) {
        const int err = sf_error(nullptr);
        const std::string msg = sf_strerror(nullptr);
        pending_.rethrow();
        fail(err == SF_ERR_UNSUPPORTED_ENCODING ? ErrorCode::UnsupportedFormat : ErrorCode::CorruptAudio,
             std::string(containerName(container)) + " file cannot be decoded: " + msg);
      }
    }
    if (!sndfileMajorMatches(sfi.format, container)) {
      sf_close(sf_);
      sf_ = nullptr;
      fail(ErrorCode::UnsupportedFormat, "unsupported audio container");
    }
    try {
      checkChannelsAndRate(containerName(container), sfi.channels, sfi.samplerate);
    } catch (...) {
      sf_close(sf_);
      sf_ = nullptr;
      throw;
    }
    info_.sampleRate = sfi.samplerate;
    info_.channels = sfi.channels;
    info_.frames = (sfi.frames < 0 || sfi.frames == SF_COUNT_MAX) ? -1 : static_cast<int64_t>(sfi.frames);
    switch (sfi.format & SF_FORMAT_TYPEMASK) {
      case SF_FORMAT_WAV: case SF_FORMAT_WAVEX: info_.format = "WAV"; break;
      case SF_FORMAT_RF64: info_.format = "RF64"; break;
      case SF_FORMAT_W64: info_.format = "W64"; break;
      case SF_FORMAT_AIFF: info_.format = "AIFF"; break;
      case SF_FORMAT_AU: info_.format = "AU"; break;
      case SF_FORMAT_CAF: info_.format = "CAF"; break;
      case SF_FORMAT_FLAC: info_.format = "FLAC"; break;
      case SF_FORMAT_OGG: info_.format = "OGG"; break;
      default: info_.format = "OTHER"; break;
    }
    info_.subtype = sndfileSubtype(sfi.format);
  }

  ~SndfileDecoder() override {
    if (sf_) sf_close(sf_);
  }

 protected:
  size_t readImpl(float* out, size_t maxFrames) override {
    sf_count_t n = sf_readf_float(sf_, out, static_cast<sf_count_t>(maxFrames));
    pending_.rethrow();
    if (sf_error(sf_) != SF_ERR_NO_ERROR)
      fail(ErrorCode::CorruptAudio, info_.format + " stream is damaged: " + sf_strerror(sf_));
    return n > 0 ? static_cast<size_t>(n) : 0;
  }

 private:
  static SndfileDecoder* self(void* u) { return static_cast<SndfileDecoder*>(u); }
  static sf_count_t vioLength(void* u) { return self(u)->cur_.size(); }
  static sf_count_t vioSeek(sf_count_t off, int whence, void* u) { return self(u)->cur_.seek(off, whence); }
  static sf_count_t vioTell(void* u) { return self(u)->cur_.tell(); }
  static sf_count_t vioWrite(const void*, sf_count_t, void*) { return 0; }
  static sf_count_t vioRead(void* ptr, sf_count_t count, void* u) {
    if (count <= 0) return 0;
    const int64_t got = readForCallback(self(u)->cur_, self(u)->pending_, ptr, static_cast<size_t>(count));
    return got < 0 ? 0 : static_cast<sf_count_t>(got);  // libsndfile reads 0 as the end
  }

  std::unique_ptr<ByteSource> src_;
  Cursor cur_;
  SF_VIRTUAL_IO vio_{};
  SNDFILE* sf_ = nullptr;
  PendingError pending_;
};

// ---------------------------------------------------------------------------------------
// libmpg123 backend (MPEG audio)
// ---------------------------------------------------------------------------------------

std::once_flag gMpg123Init;

class Mpg123Decoder final : public Decoder {
 public:
  explicit Mpg123Decoder(std::unique_ptr<ByteSource> src) : src_(std::move(src)), cur_(src_.get()) {
    std::call_once(gMpg123Init, [] { mpg123_init(); });
    int err = MPG123_OK;
    mh_ = mpg123_new(nullptr, &err);
    if (!mh_) fail(ErrorCode::IoError, std::string("cannot create an MP3 decoder: ") + mpg123_plain_strerror(err));
    try {
      setup();
    } catch (...) {
      mpg123_delete(mh_);
      mh_ = nullptr;
      throw;
    }
  }

  ~Mpg123Decoder() override {
    if (mh_) {
      mpg123_close(mh_);
      mpg123_delete(mh_);
    }
  }

 protected:
  size_t readImpl(float* out, size_t maxFrames) override {
    const size_t frameBytes = static_cast<size_t>(info_.channels) * sizeof(float);
    unsigned char* dst = reinterpret_cast<unsigned char*>(out);
    size_t want = maxFrames * frameBytes, have = 0;
    while (have < want && !done_) {
      size_t got = 0;
      int r = mpg123_read(mh_, dst + have, want - have, &got);
      pending_.rethrow();
      have += got;
      if (r == MPG123_OK) {
        if (got == 0) done_ = true;  // defensive: no progress
      } else if (r == MPG123_DONE || r == MPG123_NEED_MORE) {
        done_ = true;
      } else if (r == MPG123_NEW_FORMAT) {
        long rate = 0;
        int channels = 0, enc = 0;
        if (mpg123_getformat(mh_, &rate, &channels, &enc) != MPG123_OK || rate != info_.sampleRate ||
            channels != info_.channels)
          fail(ErrorCode::CorruptAudio, "MP3 stream changes its sample rate or channel count midway");
      } else {
        fail(ErrorCode::CorruptAudio, std::string("MP3 stream is damaged: ") + mpg123_strerror(mh_));
      }
    }
    // mpg123 never splits a frame (whole samples of every channel), but stay on frame bounds.
    return have / frameBytes;
  }

 private:
  void setup() {
    mpg123_param(mh_, MPG123_REMOVE_FLAGS, MPG123_AUTO_RESAMPLE, 0.0);
    long flags = MPG123_FORCE_FLOAT | MPG123_GAPLESS | MPG123_QUIET;
#ifdef MPG123_NO_FRANKENSTEIN
    flags |= MPG123_NO_FRANKENSTEIN;
#endif
    mpg123_param(mh_, MPG123_ADD_FLAGS, flags, 0.0);
    mpg123_replace_reader_handle(mh_, &Mpg123Decoder::ioRead, &Mpg123Decoder::ioSeek, nullptr);
    if (mpg123_open_handle(mh_, this) != MPG123_OK) {
      pending_.rethrow();
      fail(ErrorCode::CorruptAudio, std::string("MP3 file cannot be opened: ") + mpg123_strerror(mh_));
    }
    long rate = 0;
    int channels = 0, enc = 0;
    if (mpg123_getformat(mh_, &rate, &channels, &enc) != MPG123_OK) {
      pending_.rethrow();
      fail(ErrorCode::CorruptAudio, std::string("MP3 file has no decodable frame: ") + mpg123_strerror(mh_));
    }
    checkChannelsAndRate("MP3", channels, rate);
    // Float output at any rate and channel count: a (damaged) stream that changes format
    // midway then reports MPG123_NEW_FORMAT (-> CORRUPT_AUDIO) instead of making libmpg123
    // print "Unable to set up output format" on stderr (it ignores MPG123_QUIET there).
    mpg123_format_none(mh_);
    if (mpg123_format2(mh_, 0, MPG123_MONO | MPG123_STEREO, MPG123_ENC_FLOAT_32) != MPG123_OK)
      fail(ErrorCode::UnsupportedFormat, "MP3 output format not available");
    // mpg123_length() is exact when a Xing/Info frame counts the frames; without one it is
    // only a guess from the file size and bitrate (and libsndfile truncates VBR files to
    // that guess). A LAME tag (known encoder delay) sits inside such a counting frame; for
    // anything else, parse every frame header once (fast, no decoding) for the exact length.
    // A file truncated after encoding is detected by comparing against the tagged length.
    long encDelay = -1;
    double unused = 0;
    if (mpg123_getstate(mh_, MPG123_ENC_DELAY, &encDelay, &unused) != MPG123_OK || encDelay < 0) {
      if (mpg123_scan(mh_) != MPG123_OK) {
        pending_.rethrow();
        fail(ErrorCode::CorruptAudio, std::string("MP3 file cannot be scanned: ") + mpg123_strerror(mh_));
      }
    }
    pending_.rethrow();
    off_t length = mpg123_length(mh_);
    struct mpg123_frameinfo fi;
    std::memset(&fi, 0, sizeof fi);
    mpg123_info(mh_, &fi);
    info_.sampleRate = static_cast<int>(rate);
    info_.channels = channels;
    info_.frames = length >= 0 ? static_cast<int64_t>(length) : -1;
    info_.format = fi.layer == 3 ? "MP3" : "MPEG";
    info_.subtype = fi.layer == 1 ? "MPEG_LAYER_I" : fi.layer == 2 ? "MPEG_LAYER_II" : "MPEG_LAYER_III";
    // Encoders disagree on whether the Xing frame counts itself; accept two frames short.
    lengthTolerance_ = 2 * 1152;
  }

  static Mpg123Decoder* self(void* h) { return static_cast<Mpg123Decoder*>(h); }
  static ssize_t ioRead(void* h, void* buf, size_t n) {
    return static_cast<ssize_t>(readForCallback(self(h)->cur_, self(h)->pending_, buf, n));
  }
  static off_t ioSeek(void* h, off_t off, int whence) {
    return static_cast<off_t>(self(h)->cur_.seek(static_cast<int64_t>(off), whence));
  }

  std::unique_ptr<ByteSource> src_;
  Cursor cur_;
  mpg123_handle* mh_ = nullptr;
  PendingError pending_;
  bool done_ = false;
};

// ---------------------------------------------------------------------------------------
// libopusfile backend (Ogg Opus)
// ---------------------------------------------------------------------------------------

// Ogg Opus is decoded with libopusfile directly: libsndfile 1.2 rejects some valid files as
// "malformed" (about 2.5 % of our Opus corpus; ffmpeg and opusfile read them) and counts end-
// trimmed streams as truncated. Output is always 48 kHz (Opus's decoding rate).
class OpusfileDecoder final : public Decoder {
 public:
  explicit OpusfileDecoder(std::unique_ptr<ByteSource> src) : src_(std::move(src)), cur_(src_.get()) {
    OpusFileCallbacks cb{&OpusfileDecoder::ioRead, &OpusfileDecoder::ioSeek, &OpusfileDecoder::ioTell, nullptr};
    int err = 0;
    of_ = op_open_callbacks(this, &cb, nullptr, 0, &err);
    pending_.rethrow();
    if (!of_) fail(ErrorCode::CorruptAudio, std::string("OGG Opus file cannot be decoded: ") + opusError(err));
    try {
      checkChannelsAndRate("OGG", op_channel_count(of_, -1), 48000);
    } catch (...) {
      op_free(of_);
      of_ = nullptr;
      throw;
    }
    info_.sampleRate = 48000;
    info_.channels = op_channel_count(of_, -1);
    const ogg_int64_t total = op_pcm_total(of_, -1);  // exact (pre-skip and end trimming applied); < 0 if unknown
    info_.frames = total >= 0 ? static_cast<int64_t>(total) : -1;
    info_.format = "OGG";
    info_.subtype = "OPUS";
    // Some encoders put a last granule position a little past their last packet (ffmpeg decodes
    // the same shorter length); accept up to one maximal Opus packet (120 ms) short.
    lengthTolerance_ = 5760;
  }

  ~OpusfileDecoder() override {
    if (of_) op_free(of_);
  }

 protected:
  size_t readImpl(float* out, size_t maxFrames) override {
    const int C = info_.channels;
    size_t have = 0;
    // op_read_float returns at most one Opus packet (<= 120 ms) per call; fill what was asked.
    while (have < maxFrames) {
      const size_t room = std::min<size_t>((maxFrames - have) * static_cast<size_t>(C), 1 << 20);
      int li = 0;
      const int n = op_read_float(of_, out + have * C, static_cast<int>(room), &li);
      pending_.rethrow();
      if (n == 0) break;
      if (n == OP_HOLE) continue;  // a gap (lost or corrupt pages): decoding resumes after it, as ffmpeg does
      if (n < 0) fail(ErrorCode::CorruptAudio, std::string("OGG Opus stream is damaged: ") + opusError(n));
      if (op_channel_count(of_, li) != C)
        fail(ErrorCode::CorruptAudio, "OGG Opus stream changes its channel count midway (chained streams)");
      have += static_cast<size_t>(n);
    }
    return have;
  }

 private:
  static const char* opusError(int e) {
    switch (e) {
      case OP_EREAD: return "read error";
      case OP_EFAULT: return "internal error";
      case OP_EIMPL: return "feature not supported";
      case OP_EINVAL: return "invalid parameter";
      case OP_ENOTFORMAT: return "not an Ogg Opus stream";
      case OP_EBADHEADER: return "bad Opus header";
      case OP_EVERSION: return "unsupported Opus header version";
      case OP_EBADPACKET: return "bad Opus packet";
      case OP_EBADLINK: return "bad link in the Ogg stream";
      case OP_EBADTIMESTAMP: return "inconsistent granule positions (timestamps) between pages";
      case OP_HOLE: return "gap in the stream";
      default: return "malformed file";
    }
  }
  static OpusfileDecoder* self(void* s) { return static_cast<OpusfileDecoder*>(s); }
  static int ioRead(void* s, unsigned char* ptr, int n) {
    if (n <= 0) return 0;
    return static_cast<int>(readForCallback(self(s)->cur_, self(s)->pending_, ptr, static_cast<size_t>(n)));
  }
  static int ioSeek(void* s, opus_int64 off, int whence) {
    return self(s)->cur_.seek(static_cast<int64_t>(off), whence) < 0 ? -1 : 0;
  }
  static opus_int64 ioTell(void* s) { return static_cast<opus_int64>(self(s)->cur_.tell()); }

  std::unique_ptr<ByteSource> src_;
  Cursor cur_;
  OggOpusFile* of_ = nullptr;
  PendingError pending_;
};

}  // namespace

std::string sndfileVersion() { return sf_version_string(); }
std::string mpg123Version() { return "mpg123 API " + std::to_string(MPG123_API_VERSION); }
std::string opusVersion() { return opus_get_version_string(); }  // libopus, under libopusfile

std::unique_ptr<Decoder> Decoder::open(std::unique_ptr<ByteSource> src) {
  if (!src) fail(ErrorCode::InvalidArgument, "no audio source");
  if (src->size() == 0) fail(ErrorCode::EmptyAudio, "the audio input is empty (0 bytes)");
  const Container c = sniff(*src);
  switch (c) {
    case Container::Unknown:
      if (truncatedMagic(*src)) fail(ErrorCode::CorruptAudio, "the audio header is truncated");
      fail(ErrorCode::UnsupportedFormat,
           "not a supported audio file (expected WAV, FLAC, MP3, Ogg Vorbis/Opus, AIFF, AU, CAF, W64 or RF64)");  // = src/audio/formats.ts
    case Container::Wav:
    case Container::Rf64: {
      const bool truncated = checkWavHeader(*src, c == Container::Rf64);
      auto d = std::make_unique<SndfileDecoder>(std::move(src), c);
      if (truncated) d->markTruncated();
      return d;
    }
    case Container::Mpeg:
      return std::make_unique<Mpg123Decoder>(std::move(src));
    case Container::OggOpus:
      return std::make_unique<OpusfileDecoder>(std::move(src));
    default:
      break;
  }
  return std::make_unique<SndfileDecoder>(std::move(src), c);
}

size_t Decoder::read(float* out, size_t maxFrames) {
  if (ended_ || maxFrames == 0) return 0;
  const size_t n = readImpl(out, maxFrames);
  if (n == 0) {
    ended_ = true;
    if (info_.frames >= 0 && framesRead_ + lengthTolerance_ < info_.frames) {
      fail(ErrorCode::CorruptAudio, info_.format + " stream ends after " + std::to_string(framesRead_) + " of the " +
                                        std::to_string(info_.frames) +
                                        " frames its header declares (truncated or damaged file)");
    }
    return 0;
  }
  framesRead_ += static_cast<int64_t>(n);
  return n;
}

}  // namespace auris
