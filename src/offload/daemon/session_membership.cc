// A Session's revoke and shrink (session.h): the client's kRevoke and
// kShrink, run here through the one shrink path the application's engines
// use (setup/shrink.h), on the session's own thread.
#include <poll.h>

#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "coll/collectives.h"
#include "offload/daemon/session.h"
#include "protocol/membership.h"
#include "setup/shrink.h"

namespace mccl::offload::daemon {

void Session::revoke() { (void)run_to_end(std::make_shared<protocol::Revoke>(*comm_.ctx)); }

common::Status Session::run_to_end(const std::shared_ptr<protocol::Operation>& op) {
  protocol::Context& ctx = *comm_.ctx;
  ctx.start(op);
  // The operation's own deadline ends it; this one only guards the loop.
  const auto guard = common::Deadline::after(ctx.config().op_timeout + std::chrono::seconds(1));
  std::vector<pollfd> fds;
  for (int fd : ctx.wait_fds()) fds.push_back({fd, POLLIN, 0});
  while (!op->done() && !guard.expired()) {
    if (protocol::progress_counting_sends(ctx) > 0) continue;
    (void)::poll(fds.data(), fds.size(), 1);  // 1 ms: the loss and exchange deadlines
  }
  if (!op->done()) {
    return common::timeout_error("rank " + std::to_string(ctx.rank()) + ": " + op->describe() +
                                 " did not end within its deadline (offload daemon)");
  }
  return op->status();
}

bool Session::shrink() {
  // What the client submitted before it asked is the old communicator's:
  // it fails (revoked) and its completions reach the client first.
  revoke();
  while (drain_submissions()) (void)complete_finished();
  (void)complete_finished();
  const CollChoices choices = hello_.coll;
  const auto timeout = std::chrono::milliseconds(hello_.timeout_ms);
  const std::string iface = hello_.udp_iface;
  std::vector<int> failed;
  setup::BroughtUp up;
  common::Status st = setup::shrink(
      *comm_.ctx, comm_.epoch, [this](const auto& op) { return run_to_end(op); },
      // The epoch is setup::shrink's to set.
      [&](int rank, int size) { return bring_up_request(rank, size, timeout, choices, iface, 0); },
      failed, up);
  ShrunkMsg reply{};
  if (st) {
    Comm survivors = comm_of(up, choices);
    reply.rank = survivors.ctx->rank();
    reply.size = survivors.ctx->size();
    reply.failed = static_cast<std::uint32_t>(failed.size());
    reply.epoch = survivors.epoch;
    reply.placement = survivors.coll.placement;
    std::swap(comm_, survivors);
    // Once it completes every survivor is done with the old communicator,
    // which goes; a survivor that dies meanwhile fails the survivors'
    // next collective, as after any death.
    (void)run_to_end(coll::make_barrier(*comm_.ctx, comm_.coll));
  } else {
    failed.clear();
  }
  reply.code = static_cast<std::int32_t>(st.code());
  std::vector<std::byte> head(sizeof reply + failed.size() * sizeof(std::int32_t));
  std::memcpy(head.data(), &reply, sizeof reply);
  for (std::size_t i = 0; i < failed.size(); ++i) {
    const auto r = static_cast<std::int32_t>(failed[i]);
    std::memcpy(head.data() + sizeof reply + i * sizeof r, &r, sizeof r);
  }
  return static_cast<bool>(
      send_msg(sock_, MsgType::kShrunk, with_text(head.data(), head.size(), st.message())));
}

}  // namespace mccl::offload::daemon
