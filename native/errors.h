// The one error type of the native front end. Every failure that can reach JavaScript is an
// AudioError with a stable code; the bindings (binding/common.h) turn it into a JS Error with
// `.code` set to codeName(code): NATIVE_CODES of the error catalogue, src/errors.ts (a new code
// is added there too; test/errors/catalogue.test.ts compares the two).
#pragma once

#include <stdexcept>
#include <string>

namespace auris {

enum class ErrorCode {
  UnsupportedFormat,      // not audio, or a container/encoding/layout we do not decode
  CorruptAudio,           // a known container whose header or data is broken or truncated
  EmptyAudio,             // zero frames (or a zero-byte input)
  InvalidChannel,         // OpenOptions.channel out of range
  DurationLimitExceeded,  // longer than the caller's limit (header or while decoding)
  InvalidArgument,        // bad arguments from JavaScript
  IoError,                // the file could not be opened/read
};

inline const char* codeName(ErrorCode c) {
  switch (c) {
    case ErrorCode::UnsupportedFormat: return "UNSUPPORTED_FORMAT";
    case ErrorCode::CorruptAudio: return "CORRUPT_AUDIO";
    case ErrorCode::EmptyAudio: return "EMPTY_AUDIO";
    case ErrorCode::InvalidChannel: return "INVALID_CHANNEL";
    case ErrorCode::DurationLimitExceeded: return "DURATION_LIMIT_EXCEEDED";
    case ErrorCode::InvalidArgument: return "INVALID_ARGUMENT";
    case ErrorCode::IoError: return "IO_ERROR";
  }
  return "IO_ERROR";
}

class AudioError : public std::runtime_error {
 public:
  AudioError(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void fail(ErrorCode code, const std::string& message) { throw AudioError(code, message); }

}  // namespace auris
