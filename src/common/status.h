// Status values: how failures travel inside MCCL, across every callback and
// thread boundary. Only the public API layer turns them into exceptions.
#pragma once

#include <string>
#include <utility>

#include "mccl/error.h"

namespace mccl::common {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {ErrorCode::kInvalidArgument, std::move(m)};
}
inline Status timeout_error(std::string m) { return {ErrorCode::kTimeout, std::move(m)}; }
inline Status peer_failure(std::string m) { return {ErrorCode::kPeerFailure, std::move(m)}; }
inline Status transport_error(std::string m) { return {ErrorCode::kTransportError, std::move(m)}; }
inline Status mismatch_error(std::string m) { return {ErrorCode::kMismatch, std::move(m)}; }
inline Status internal_error(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
inline Status unavailable_error(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }

}  // namespace mccl::common
