// What every Communicator call does first (communicator.cc and
// typed_calls.cc): refuse a moved-from communicator, and refuse
// invalid arguments in a way the peers hear about.
#pragma once

#include <memory>

#include "api/backend.h"
#include "api/boundary.h"
#include "mccl/error.h"

namespace mccl::detail {

inline void check_usable(const std::shared_ptr<CommState>& st) {
  if (!st) {
    throw Error(ErrorCode::kInvalidArgument,
                "use of a moved-from mccl::Communicator; only assignment and destruction are "
                "allowed on it");
  }
}

// A call with invalid arguments throws here, but its peers have started (or
// will start) the same collective: the backend tells them why it refused
// (Backend::refuse), so they fail with this rank's reason instead of a
// timeout or an unrelated mismatch.
inline void refuse_if_invalid(CommState& st, const common::Status& why) {
  if (why.is_ok()) return;
  st.backend->refuse(why);
  throw_if_error(why);
}

// The call's compression, else the communicator's; checked (refused on
// every rank alike when invalid). kOff for types never compressed.
codec::Settings compression_for(CommState& st, DataType type, const CollOptions& options);

}  // namespace mccl::detail
