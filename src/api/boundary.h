// The public C++ API throws nothing but mccl::Error (include/mccl/error.h).
// Inside, the standard library may still throw: std::bad_alloc for a buffer
// or bitmap too large for memory, std::system_error when a thread cannot be
// started. `at_boundary` turns those into an Error that names the rank and
// the call, at the one place each public entry point passes through; and
// throw_if_error turns a Status of the layers below into an Error.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "common/status.h"
#include "mccl/error.h"

namespace mccl::detail {

// The public edge of a Status from the layers below (which do not throw).
inline void throw_if_error(const common::Status& s) {
  if (!s.is_ok()) throw Error(s.code(), s.message());
}

// The other way, for what the application's code throws into a layer that
// returns Status (its mccl::Bootstrap): an mccl::Error keeps its code,
// anything else is kInternal.
inline common::Status status_of(const std::exception& e) {
  if (const auto* me = dynamic_cast<const Error*>(&e)) return {me->code(), me->what()};
  return common::internal_error(e.what());
}

template <typename F>
decltype(auto) at_boundary(int rank, const char* call, F&& body) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kUnavailable,
                "rank " + std::to_string(rank) + ": " + call + ": out of memory");
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInternal, "rank " + std::to_string(rank) + ": " + call + ": " +
                                          e.what() + " (please report this)");
  }
}

}  // namespace mccl::detail
