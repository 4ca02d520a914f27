// Communicator::allocate/deallocate: shared with the offload daemon under
// MCCL_PROGRESS=offload (zero copy), plain aligned memory otherwise.
#include <new>
#include <string>

#include "api/comm_state.h"
#include "mccl/communicator.h"

namespace mccl {

namespace {
constexpr std::align_val_t kAlign{64};
}

void* Communicator::allocate(std::size_t bytes) {
  if (!state_) throw Error(ErrorCode::kInvalidArgument, "use of a moved-from mccl::Communicator");
  if (!state_->offload) return ::operator new(bytes == 0 ? 1 : bytes, kAlign);
  common::Status why;
  void* p = state_->offload->allocate(bytes, why);
  if (p == nullptr) throw Error(why.code(), why.message());
  return p;
}

void Communicator::deallocate(void* p) {
  if (!state_) throw Error(ErrorCode::kInvalidArgument, "use of a moved-from mccl::Communicator");
  if (p == nullptr) return;
  if (!state_->offload) {
    ::operator delete(p, kAlign);
    return;
  }
  if (!state_->offload->deallocate(p)) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(state_->rank) +
                    ": deallocate(p): p did not come from this communicator's allocate()");
  }
}

}  // namespace mccl
