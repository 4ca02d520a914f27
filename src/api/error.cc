#include "mccl/error.h"

#include "common/enum_names.h"
#include "mccl/version.h"

namespace mccl {

namespace {
constexpr common::EnumName<ErrorCode> kErrorNames[] = {
    {ErrorCode::kOk, "ok"},
    {ErrorCode::kInvalidArgument, "invalid argument"},
    {ErrorCode::kTimeout, "timeout"},
    {ErrorCode::kPeerFailure, "peer failure"},
    {ErrorCode::kTransportError, "transport error"},
    {ErrorCode::kMismatch, "mismatch between ranks"},
    {ErrorCode::kInternal, "internal error"},
    {ErrorCode::kUnavailable, "unavailable"}};
}  // namespace

const char* to_string(ErrorCode code) noexcept {
  return common::name_of(code, kErrorNames, "unknown error");
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
