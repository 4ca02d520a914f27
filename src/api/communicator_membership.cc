// Communicator::revoke and Communicator::shrink (docs/elastic.md).
#include <algorithm>
#include <vector>

#include "api/backend.h"
#include "api/boundary.h"
#include "api/comm_checks.h"
#include "mccl/communicator.h"

namespace mccl {

Communicator::Communicator(std::shared_ptr<detail::CommState> state) : state_(std::move(state)) {}

void Communicator::revoke() {
  detail::check_usable(state_);
  detail::at_boundary(state_->rank, "revoke", [&] { state_->backend->revoke(); });
}

Communicator Communicator::shrink(std::vector<int>* failed) {
  detail::check_usable(state_);
  auto next = detail::at_boundary(state_->rank, "shrink", [&] {
    std::vector<int> gone;
    auto st = std::make_shared<detail::CommState>(detail::CommState{
        .rank = 0,
        .size = 0,
        .options = state_->options,
        .backend = state_->backend->shrink(gone),
    });
    const auto below = std::lower_bound(gone.begin(), gone.end(), state_->rank) - gone.begin();
    st->rank = state_->rank - static_cast<int>(below);
    st->size = state_->size - static_cast<int>(gone.size());
    if (failed != nullptr) *failed = std::move(gone);
    return st;
  });
  return Communicator(std::move(next));
}

Communicator Communicator::grow(Bootstrap& bootstrap) {
  detail::check_usable(state_);
  const int rank = state_->rank, size = state_->size;
  if (bootstrap.rank() != rank || bootstrap.size() < size) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(rank) + ": grow: the bootstrap gives this rank rank " +
                    std::to_string(bootstrap.rank()) + " of " + std::to_string(bootstrap.size()) +
                    "; a member keeps its rank, and the " + std::to_string(size) +
                    " members come first (the joiners take ranks " + std::to_string(size) +
                    " and up)");
  }
  detail::ResolvedOptions options = state_->options;
  options.epoch = state_->backend->epoch() + 1;
  return Communicator(detail::at_boundary(
      rank, "grow", [&] { return detail::create_comm_state(bootstrap, options); }));
}

std::uint32_t Communicator::epoch() const {
  detail::check_usable(state_);
  return state_->backend->epoch();
}

}  // namespace mccl
