#include "mccl/error.h"

#include "mccl/version.h"

namespace mccl {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kPeerFailure:
      return "peer failure";
    case ErrorCode::kTransportError:
      return "transport error";
    case ErrorCode::kMismatch:
      return "mismatch between ranks";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kUnavailable:
      return "unavailable";
  }
  return "unknown error";
}

const char* version_string() noexcept { return "0.1.0"; }

}  // namespace mccl
