// Errors thrown by the C++ API. Every failure a user can cause or observe
// surfaces as mccl::Error: it carries a coarse code for programs and a
// message for people that names the rank and, where relevant, the argument
// or peer involved.
#pragma once

#include <stdexcept>
#include <string>

#include "mccl/export.h"

namespace mccl {

// Numeric values are part of the C API (mccl.h mirrors them) and must not
// change.
enum class ErrorCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // bad input on this rank, or on the rank the message names
  kTimeout = 2,          // a deadline passed; the message says what was awaited
  kPeerFailure = 3,      // a peer died or stopped answering; names the peer
  kTransportError = 4,   // the network layer failed (socket, verbs, UCX)
  kMismatch = 5,         // ranks called a collective with disagreeing arguments
  kInternal = 6,         // a bug in MCCL: please report it
  kUnavailable = 7,      // a requested feature, transport or resource (memory) is absent here
};

// Stable lower-case name of a code, e.g. "invalid argument".
MCCL_API const char* to_string(ErrorCode code) noexcept;

class MCCL_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace mccl
