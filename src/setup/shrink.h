// The survivors' communicator after a death, written once: the
// application's engines (src/api/engine_backend.cc) and the offload daemon
// (src/offload/daemon/session_membership.cc) both call shrink(), which revokes the
// old communicator, agrees with every survivor on the failed ranks over
// its context, and creates the survivors' communicator through bring_up()
// with that context carrying the creation's exchanges (docs/elastic.md).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "common/status.h"
#include "protocol/context.h"
#include "protocol/membership.h"
#include "setup/bring_up.h"

namespace mccl::setup {

// Runs one membership operation on the old context to its end (the
// caller's engine drives that context): ok, or the operation's failure.
// The operation carries the collective timeout itself.
using RunMembership = std::function<common::Status(const std::shared_ptr<protocol::MembershipOp>&)>;

// What bring_up() gets for the survivors' communicator, given this rank's
// rank in it and their number.
using SurvivorRequest = std::function<BringUpRequest(int rank, int size)>;

// Creations of the survivors' communicator that a failure may interrupt
// before shrink() gives up.
inline constexpr int kShrinkAttempts = 4;

// Blocking and collective over the survivors of `old`; never throws. On
// success `failed` holds the old ranks that died, ascending and the same
// on every survivor, and `out` the survivors' communicator, in which a
// survivor's rank is its old rank minus the failed ranks below it, and
// whose epoch is `epoch` (the old communicator's) plus 1. A
// survivor that dies after an agreement fails that creation: the others
// agree again, without it, up to kShrinkAttempts times. Reaching the kill
// points "shrink-agreed" (common/test_kill.h) kills this process.
common::Status shrink(protocol::Context& old, std::uint32_t epoch, const RunMembership& run,
                      const SurvivorRequest& request, std::vector<int>& failed, BroughtUp& out);

}  // namespace mccl::setup
