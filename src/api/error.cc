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

#define MCCL_STR_(x) #x
#define MCCL_XSTR_(x) MCCL_STR_(x)
const char* version_string() noexcept {
  return MCCL_XSTR_(MCCL_VERSION_MAJOR) "." MCCL_XSTR_(MCCL_VERSION_MINOR) "." MCCL_XSTR_(
      MCCL_VERSION_PATCH);
}
#undef MCCL_XSTR_
#undef MCCL_STR_

}  // namespace mccl
