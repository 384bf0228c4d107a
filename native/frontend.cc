#include "frontend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>

#include "errors.h"

namespace auris {

namespace {

constexpr size_t kDecodeBlock = 8192;  // frames per decoder call (streams, decodeAll)
constexpr size_t kMaxBlockFrames = 131072;     // FileFrontend decode block, frames
constexpr size_t kBlockSamples = size_t(1) << 20;  // ... and at most this many samples
constexpr size_t kMinThreadedSamples = 32768;      // smaller blocks are processed inline
constexpr size_t kDecodeAllMaxSamples = size_t(1) << 27;

// Copies channel c of an interleaved block into dst; non-finite samples (NaN/Inf in float
// files) become 0 so that they cannot poison the filters and every later feature.
inline void deinterleave(const float* in, size_t frames, int channels, int c, float* dst) {
  const float* p = in + c;
  for (size_t i = 0; i < frames; ++i, p += channels) {
    const float v = *p;
    dst[i] = std::isfinite(v) ? v : 0.0f;
  }
}

std::string secondsText(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

}  // namespace

double ChannelFrontend::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

FileFrontend::FileFrontend(std::unique_ptr<Decoder> decoder, const FrontendOptions& options)
    : decoder_(std::move(decoder)), options_(options) {
  const DecodedInfo& in = decoder_->info();
  if (in.frames == 0) fail(ErrorCode::EmptyAudio, "the audio file contains no samples");
  if (options_.channel >= 0) {
    if (options_.channel >= in.channels)
      fail(ErrorCode::InvalidChannel, "channel " + std::to_string(options_.channel) + " does not exist: the file has " +
                                          std::to_string(in.channels) + " channel(s) (0-based)");
    channels_.push_back(options_.channel);
  } else {
    for (int c = 0; c < in.channels; ++c) channels_.push_back(c);
  }
  if (in.frames > 0) checkDuration(in.frames);
  if (!(options_.chunkSeconds > 0) || !std::isfinite(options_.chunkSeconds))
    fail(ErrorCode::InvalidArgument, "chunkSeconds must be a positive number");
  const double cf = std::ceil(options_.chunkSeconds * in.sampleRate);
  chunkFrames_ = cf < 1 ? 1 : static_cast<size_t>(cf);
  const size_t maxBlock = std::max<size_t>(1024, kBlockSamples / static_cast<size_t>(in.channels));
  blockFrames_ = std::min({kMaxBlockFrames, maxBlock, std::max<size_t>(chunkFrames_, 4096)});
  for (size_t i = 0; i < channels_.size(); ++i) {
    frontends_.push_back(std::make_unique<ChannelFrontend>(in.sampleRate));
    mono_.emplace_back(blockFrames_);
  }
  channelStats_.resize(channels_.size());
  out_.resize(channels_.size());
  const unsigned hw = std::thread::hardware_concurrency();
  helpers_ = hw <= 1 ? 0 : static_cast<unsigned>(std::min<size_t>(channels_.size(), std::min(hw, 8u)));
}

FrontendStats FileFrontend::stats() const {
  FrontendStats s = stats_;
  for (const auto& c : channelStats_) {
    s.resampleSec += c.resampleSec;
    s.featuresSec += c.featuresSec;
  }
  return s;
}

void FileFrontend::checkDuration(int64_t frames) const {
  if (options_.maxDurationSec <= 0) return;
  const DecodedInfo& in = decoder_->info();
  const double seconds = static_cast<double>(frames) / in.sampleRate * static_cast<double>(channels_.size());
  if (seconds > options_.maxDurationSec)
    fail(ErrorCode::DurationLimitExceeded,
         "audio is longer than the limit: " + (frames == in.frames ? std::string("") : std::string("at least ")) +
             secondsText(seconds) + " s over " + std::to_string(channels_.size()) +
             " analysed channel(s), the limit is " + secondsText(options_.maxDurationSec) + " s");
}

void FileFrontend::decodeBlock(Block& b, size_t frames) {
  const size_t nch = static_cast<size_t>(decoder_->info().channels);
  frames = std::min(frames, blockFrames_);
  if (b.data.size() < blockFrames_ * nch) b.data.resize(blockFrames_ * nch);
  const double t0 = ChannelFrontend::now();
  size_t got = 0;
  while (got < frames) {  // decoders may return short reads before the end
    const size_t n = decoder_->read(b.data.data() + got * nch, frames - got);
    if (n == 0) break;
    got += n;
  }
  stats_.decodeSec += ChannelFrontend::now() - t0;
  stats_.framesDecoded += static_cast<int64_t>(got);
  b.frames = got;
  b.ready = true;
  checkDuration(decoder_->framesRead());
}

void FileFrontend::processChannel(size_t i, const Block& b) {
  float* m = mono_[i].data();
  deinterleave(b.data.data(), b.frames, decoder_->info().channels, channels_[i], m);
  frontends_[i]->push(m, b.frames, out_[i], &channelStats_[i]);
}

// Processes `cur` (all channels) on helper threads while this thread decodes `next`.
void FileFrontend::processAndDecode(const Block& cur, Block& next, size_t nextFrames) {
  const size_t nch = channels_.size();
  // Small blocks (tiny chunkSeconds) are not worth a thread start.
  if (helpers_ == 0 || cur.frames * nch < kMinThreadedSamples) {
    for (size_t i = 0; i < nch; ++i) processChannel(i, cur);
    decodeBlock(next, nextFrames);
    return;
  }
  std::vector<std::exception_ptr> errors(helpers_ + 1);
  std::vector<std::thread> threads;
  threads.reserve(helpers_);
  size_t inlineFrom = helpers_;  // helper slots that could not be started run inline
  for (unsigned t = 0; t < helpers_; ++t) {
    try {
      threads.emplace_back([this, t, nch, &cur, &errors] {
        try {
          for (size_t i = t; i < nch; i += helpers_) processChannel(i, cur);
        } catch (...) {
          errors[t] = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      inlineFrom = t;
      break;
    }
  }
  try {
    decodeBlock(next, nextFrames);
  } catch (...) {
    errors[helpers_] = std::current_exception();
  }
  for (unsigned t = static_cast<unsigned>(inlineFrom); t < helpers_; ++t) {
    try {
      for (size_t i = t; i < nch; i += helpers_) processChannel(i, cur);
    } catch (...) {
      if (!errors[t]) errors[t] = std::current_exception();
    }
  }
  for (auto& th : threads) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

bool FileFrontend::next(int64_t& startStep) {
  for (auto& o : out_) o.clear();
  startStep = stepsDone_;
  if (finished_) return false;
  if (!cur_.ready) decodeBlock(cur_, chunkFrames_);
  size_t processed = 0;
  for (;;) {
    if (cur_.frames == 0) {  // end of stream
      for (size_t i = 0; i < channels_.size(); ++i) frontends_[i]->finish(out_[i]);
      finished_ = true;
      cur_ = Block();
      next_ = Block();
      if (frontends_[0]->samples() == 0) fail(ErrorCode::EmptyAudio, "the audio file contains no samples");
      break;
    }
    // Blocks end on chunk boundaries: the prefetched block completes this chunk or starts the next.
    const size_t after = processed + cur_.frames;
    const size_t nextFrames = after < chunkFrames_ ? chunkFrames_ - after : chunkFrames_;
    processAndDecode(cur_, next_, nextFrames);
    processed = after;
    std::swap(cur_, next_);
    if (processed >= chunkFrames_ && out_[0].steps() > 0) break;
  }
  stepsDone_ += static_cast<int64_t>(out_[0].steps());
  return true;
}

StreamFrontend::StreamFrontend(int sampleRate, int channels, SampleEncoding encoding, int channel)
    : sampleRate_(sampleRate), inChannels_(channels), encoding_(encoding) {
  if (sampleRate < kMinSampleRate || sampleRate > kMaxSampleRate)
    fail(ErrorCode::InvalidArgument, "sampleRate must be an integer in 8000..384000 Hz");
  if (channels < 1 || channels > kMaxChannels) fail(ErrorCode::InvalidArgument, "channels must be an integer in 1..32");
  if (channel >= channels)
    fail(ErrorCode::InvalidChannel, "channel " + std::to_string(channel) + " does not exist: the stream has " +
                                        std::to_string(channels) + " channel(s) (0-based)");
  frameBytes_ = static_cast<size_t>(channels) * (encoding == SampleEncoding::S16LE ? 2 : 4);
  if (channel >= 0) {
    channels_.push_back(channel);
  } else {
    for (int c = 0; c < channels; ++c) channels_.push_back(c);
  }
}

void StreamFrontend::start() {
  if (!frontends_.empty()) return;
  for (size_t i = 0; i < channels_.size(); ++i) frontends_.push_back(std::make_unique<ChannelFrontend>(sampleRate_));
}

void StreamFrontend::consumeFrames(const uint8_t* data, size_t frames, std::vector<StepOutput>& out) {
  start();
  if (mono_.size() < std::min(kDecodeBlock, frames)) mono_.resize(std::min(kDecodeBlock, frames));
  for (size_t i = 0; i < channels_.size(); ++i) {
    const int c = channels_[i];
    for (size_t done = 0; done < frames;) {
      const size_t n = std::min(kDecodeBlock, frames - done);
      const uint8_t* p = data + done * frameBytes_;
      float* m = mono_.data();
      if (encoding_ == SampleEncoding::S16LE) {
        for (size_t k = 0; k < n; ++k) {
          const uint8_t* s = p + k * frameBytes_ + 2 * c;
          const int16_t v = static_cast<int16_t>(s[0] | (s[1] << 8));
          m[k] = static_cast<float>(v) * (1.0f / 32768.0f);
        }
      } else {
        for (size_t k = 0; k < n; ++k) {
          float v;
          std::memcpy(&v, p + k * frameBytes_ + 4 * c, 4);  // little-endian host (x86-64/arm64)
          m[k] = std::isfinite(v) ? v : 0.0f;
        }
      }
      frontends_[i]->push(m, n, out[i]);
      done += n;
    }
  }
}

void StreamFrontend::push(const uint8_t* data, size_t n, std::vector<StepOutput>& out) {
  out.resize(channels_.size());
  for (auto& o : out) o.clear();
  if (ended_) fail(ErrorCode::InvalidArgument, "push() after end()");
  if (!partial_.empty()) {
    const size_t need = frameBytes_ - partial_.size();
    const size_t take = std::min(need, n);
    partial_.insert(partial_.end(), data, data + take);
    data += take;
    n -= take;
    if (partial_.size() == frameBytes_) {
      consumeFrames(partial_.data(), 1, out);
      partial_.clear();
    }
  }
  const size_t frames = n / frameBytes_;
  if (frames) consumeFrames(data, frames, out);
  const size_t rest = n - frames * frameBytes_;
  if (rest) partial_.assign(data + frames * frameBytes_, data + n);
  stepsDone_ += static_cast<int64_t>(out.empty() ? 0 : out[0].steps());
}

void StreamFrontend::end(std::vector<StepOutput>& out) {
  out.resize(channels_.size());
  for (auto& o : out) o.clear();
  if (ended_) return;
  ended_ = true;
  partial_.clear();  // an incomplete trailing frame is dropped
  for (size_t i = 0; i < frontends_.size(); ++i) frontends_[i]->finish(out[i]);  // none: no sample came
  stepsDone_ += static_cast<int64_t>(out[0].steps());
}

std::vector<float> decodeAll(Decoder& decoder, double maxSeconds) {
  const DecodedInfo& in = decoder.info();
  if (in.frames == 0) fail(ErrorCode::EmptyAudio, "the audio file contains no samples");
  // Bounded by time and by memory (2^27 samples = 512 MiB of float32, all channels).
  const double limitFrames = std::min(maxSeconds * in.sampleRate, static_cast<double>(kDecodeAllMaxSamples / in.channels));
  const std::string limitText = "decodeAll() is limited to " + secondsText(maxSeconds) + " s and " +
                                std::to_string(kDecodeAllMaxSamples) + " samples of audio";
  if (in.frames > 0 && static_cast<double>(in.frames) > limitFrames) fail(ErrorCode::DurationLimitExceeded, limitText);
  std::vector<float> out;
  if (in.frames > 0) out.reserve(static_cast<size_t>(in.frames) * in.channels);
  std::vector<float> block(kDecodeBlock * static_cast<size_t>(in.channels));
  for (;;) {
    const size_t n = decoder.read(block.data(), kDecodeBlock);
    if (n == 0) break;
    if (static_cast<double>(decoder.framesRead()) > limitFrames) fail(ErrorCode::DurationLimitExceeded, limitText);
    out.insert(out.end(), block.begin(), block.begin() + static_cast<ptrdiff_t>(n * in.channels));
  }
  if (out.empty()) fail(ErrorCode::EmptyAudio, "the audio file contains no samples");
  return out;
}

std::vector<float> resampleMono(const float* x, size_t n, double inRate, size_t chunkSize) {
  Resampler rs(inRate, kOutputRate);
  std::vector<float> out;
  out.reserve(static_cast<size_t>(std::ceil(static_cast<double>(n) * kOutputRate / inRate)) + 16);
  auto sink = [&](const float* y, size_t m) { out.insert(out.end(), y, y + m); };
  if (chunkSize == 0) chunkSize = n ? n : 1;
  for (size_t pos = 0; pos < n; pos += chunkSize) rs.process(x + pos, std::min(chunkSize, n - pos), sink);
  rs.flush(sink);
  return out;
}

void computeFeatures(const float* x, size_t n, StepOutput& out) {
  if (n == 0) fail(ErrorCode::EmptyAudio, "no samples");
  Framer framer;
  framer.push(x, n, out);
  framer.finish(out);
}

}  // namespace auris
