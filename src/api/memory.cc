// Communicator::allocate/deallocate: the backend's memory, shared with the
// offload daemon under MCCL_PROGRESS=offload (zero copy), plain aligned
// memory otherwise.
#include <string>

#include "api/backend.h"
#include "mccl/communicator.h"

namespace mccl {

void* Communicator::allocate(std::size_t bytes) {
  if (!state_) throw Error(ErrorCode::kInvalidArgument, "use of a moved-from mccl::Communicator");
  common::Status why;
  void* p = state_->backend->allocate(bytes, why);
  if (p == nullptr) throw Error(why.code(), why.message());
  return p;
}

void Communicator::deallocate(void* p) {
  if (!state_) throw Error(ErrorCode::kInvalidArgument, "use of a moved-from mccl::Communicator");
  if (p == nullptr) return;
  if (!state_->backend->deallocate(p)) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(state_->rank) +
                    ": deallocate(p): p did not come from this communicator's allocate()");
  }
}

}  // namespace mccl
