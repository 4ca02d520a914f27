#include "setup/shrink.h"

#include <algorithm>
#include <string>

#include "common/log.h"
#include "common/test_kill.h"

namespace mccl::setup {

common::Status shrink(protocol::Context& old, std::uint32_t epoch, const RunMembership& run,
                      const SurvivorRequest& request, std::vector<int>& failed, BroughtUp& out) {
  const int rank = old.rank(), size = old.size();
  // Whatever is in flight fails on every rank, and nobody starts more.
  (void)run(std::make_shared<protocol::Revoke>(old));
  for (int attempt = 1;; ++attempt) {
    const auto try_number = static_cast<std::uint32_t>(attempt);
    common::Status st = run(std::make_shared<protocol::AgreeOnFailed>(old, try_number, failed));
    if (!st.is_ok()) return st;
    common::kill_here_if_asked("shrink-agreed");
    std::vector<int> members;
    for (int r = 0; r < size; ++r) {
      if (!std::binary_search(failed.begin(), failed.end(), r)) members.push_back(r);
    }
    const int new_rank =
        static_cast<int>(std::lower_bound(members.begin(), members.end(), rank) - members.begin());
    auto oob = [&](std::span<const std::byte> mine, std::vector<std::byte>& all) {
      return run(std::make_shared<protocol::SurvivorExchange>(old, try_number, members, mine, all));
    };
    const std::string who = "rank " + std::to_string(new_rank) + " (rank " + std::to_string(rank) +
                            " before the shrink): ";
    BringUpRequest req = request(new_rank, static_cast<int>(members.size()));
    req.proposal.epoch = epoch + 1;
    st = bring_up(req, oob, who, out);
    // A survivor died after the agreement: agree again, without it.
    if (st.is_ok() || st.code() != ErrorCode::kPeerFailure || attempt == kShrinkAttempts) {
      return st;
    }
    common::logf(common::LogLevel::kInfo, rank, "shrink attempt %d failed (%s); agreeing again",
                 attempt, st.message().c_str());
  }
}

}  // namespace mccl::setup
