// The offload backend (MCCL_PROGRESS=offload): the collectives go to
// mccl_offloadd through offload::client::OffloadComm instead of to a protocol
// context here (docs/offload.md).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "api/backend.h"
#include "api/boundary.h"
#include "api/options.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/test_kill.h"
#include "mccl/error.h"
#include "offload/client/client.h"

namespace mccl::detail {

namespace {

offload::CollChoices choices_from(const ResolvedOptions& opt) {
  offload::CollChoices c;
  c.coll = opt.coll;
  c.authenticate = opt.authenticate ? (*opt.authenticate ? 1 : 0) : -1;
  c.setup_timeout_ms = static_cast<std::int32_t>(
      std::min<std::int64_t>(opt.setup_timeout.count(), std::numeric_limits<std::int32_t>::max()));
  return c;
}

class OffloadInFlight final : public InFlight {
 public:
  OffloadInFlight(std::shared_ptr<offload::client::OffloadOp> op,
                  offload::client::OffloadComm& comm)
      : op_(std::move(op)), comm_(comm) {}
  bool done() const override { return op_->done(); }
  bool test() override {
    if (!op_->done()) comm_.poll();
    if (!op_->done()) return false;
    throw_if_error(op_->status());
    return true;
  }
  void wait(std::chrono::milliseconds timeout) override {
    auto s = comm_.wait(*op_, common::Deadline::after(timeout));
    if (!s) {
      throw Error(ErrorCode::kTimeout, "rank " + std::to_string(comm_.rank()) + ": wait for " +
                                           op_->describe() + " timed out after " +
                                           std::to_string(timeout.count()) +
                                           " ms; it is still in flight in mccl_offloadd (pid " +
                                           std::to_string(comm_.daemon_pid()) + ")");
    }
    throw_if_error(op_->status());
  }

 private:
  std::shared_ptr<offload::client::OffloadOp> op_;
  offload::client::OffloadComm& comm_;
};

class OffloadBackend final : public Backend {
 public:
  explicit OffloadBackend(std::shared_ptr<offload::client::OffloadComm> comm)
      : comm_(std::move(comm)), epoch_(comm_->epoch()) {}

  std::shared_ptr<InFlight> broadcast(void* buffer, std::size_t bytes, int root) override {
    return wrap(live().broadcast(buffer, bytes, root));
  }
  std::shared_ptr<InFlight> allgatherv(const void* send, bool in_place, void* recv,
                                       std::span<const std::size_t> counts,
                                       std::span<const std::size_t> displacements) override {
    return wrap(live().allgatherv(send, in_place, recv, counts, displacements));
  }
  std::shared_ptr<InFlight> reduce_scatterv(const void* send, void* recv,
                                            std::span<const std::size_t> counts, DataType type,
                                            ReduceOp op, const codec::Settings&) override {
    return wrap(live().reduce_scatterv(send, recv, counts, type, op));
  }
  std::shared_ptr<InFlight> allreduce(const void* send, bool in_place, void* recv,
                                      std::size_t count, DataType type, ReduceOp op,
                                      const codec::Settings&) override {
    return wrap(live().allreduce(send, in_place, recv, count, type, op));
  }
  std::shared_ptr<InFlight> barrier() override { return wrap(live().barrier()); }
  // Not carried by the daemon's protocol (docs/offload.md): refused on every
  // rank alike, since every rank of a communicator runs under one engine.
  std::shared_ptr<InFlight> alltoallv(const void*, std::span<const std::size_t>,
                                      std::span<const std::size_t>, void*,
                                      std::span<const std::size_t>,
                                      std::span<const std::size_t>) override {
    not_served("alltoallv");
  }
  std::shared_ptr<InFlight> send(const void*, std::size_t, int, int) override {
    not_served("send");
  }
  std::shared_ptr<InFlight> recv(void*, std::size_t, int, int) override { not_served("recv"); }

  // The daemon owns the sequence; the error stays local.
  void refuse(const common::Status&) override {}
  void progress() override { comm_->poll(); }

  // The protocol's counters live in the daemon.
  Stats stats(std::chrono::milliseconds timeout) override {
    Stats out;
    auto s = live().stats(out, common::Deadline::after(timeout));
    if (!s)
      throw Error(s.code(), "rank " + std::to_string(comm_->rank()) + ": stats: " + s.message());
    return out;
  }

  // Shared with the daemon (zero copy).
  void* allocate(std::size_t bytes, common::Status& why) override {
    return comm_->allocate(bytes, why);
  }
  bool deallocate(void* p) override { return comm_->deallocate(p); }

  // The daemon picks the chunk size, so the bound assumes the smallest
  // chunk any network allows (creation refuses smaller).
  std::size_t max_bytes() const override { return coll::max_stream_bytes(65); }

  // The daemon runs them (docs/elastic.md). The survivors' communicator
  // takes over the daemon session; this one, revoked, refuses everything.
  std::uint32_t epoch() const override { return epoch_; }
  common::Placement placement() const override { return comm_->placement(); }
  void revoke() override { throw_if_error(live().revoke()); }
  std::unique_ptr<Backend> shrink(std::vector<int>& failed) override {
    const std::string who = "rank " + std::to_string(live().rank()) + ": ";
    throw_if_error(comm_->shrink(failed));
    superseded_ = who + "the communicator was revoked and shrunk; use the one shrink() returned";
    common::kill_here_if_asked("shrink-created");
    return std::make_unique<OffloadBackend>(comm_);
  }

 private:
  [[noreturn]] void not_served(const char* call) const {
    throw Error(ErrorCode::kUnavailable,
                "rank " + std::to_string(comm_->rank()) + ": " + call +
                    " is not served under the offload engine (MCCL_PROGRESS=offload); use the "
                    "thread or inline engine");
  }
  std::shared_ptr<InFlight> wrap(std::shared_ptr<offload::client::OffloadOp> op) {
    return std::make_shared<OffloadInFlight>(std::move(op), *comm_);
  }
  // The daemon session, unless a shrink handed it to the survivors'
  // communicator.
  offload::client::OffloadComm& live() const {
    if (!superseded_.empty()) throw Error(ErrorCode::kPeerFailure, superseded_);
    return *comm_;
  }

  // Shared with the communicators shrink() made: one daemon session.
  std::shared_ptr<offload::client::OffloadComm> comm_;
  std::uint32_t epoch_;     // the session's when this communicator got it
  std::string superseded_;  // why this communicator no longer runs anything
};

}  // namespace

std::unique_ptr<Backend> make_offload_backend(Bootstrap& bootstrap, const ResolvedOptions& opt) {
  // The daemon runs UDP multicast and TCP only: refuse other choices
  // rather than quietly ignore them.
  const int rank = bootstrap.rank();
  const std::string who = "rank " + std::to_string(rank) + ": ";
  if (opt.transport == TransportKind::kIb || opt.transport == TransportKind::kSim) {
    throw Error(ErrorCode::kInvalidArgument,
                who +
                    "MCCL_PROGRESS=offload runs over UDP multicast only; unset MCCL_TRANSPORT "
                    "(or set udp/auto), or choose another progress engine");
  }
  if (common::settings::kReliable.get() != "tcp") {
    throw Error(ErrorCode::kInvalidArgument,
                who +
                    "MCCL_PROGRESS=offload uses the TCP reliable transport only; unset "
                    "MCCL_RELIABLE (or set tcp), or choose another progress engine");
  }
  offload::client::OffloadOptions o;
  o.timeout = opt.timeout;
  o.coll = choices_from(opt);
  o.epoch = opt.epoch;
  o.udp_iface = common::settings::kUdpIface.from_env().value_or("");
  std::unique_ptr<offload::client::OffloadComm> comm;
  auto s = offload::client::OffloadComm::create(bootstrap, o, comm);
  if (!s) {
    const bool named = s.message().rfind("rank ", 0) == 0;
    throw Error(s.code(), (named ? "" : who) + "MCCL_PROGRESS=offload: " + s.message());
  }
  common::logf(common::LogLevel::kInfo, rank,
               "communicator of %d ranks offloaded to mccl_offloadd (pid %d)", bootstrap.size(),
               static_cast<int>(comm->daemon_pid()));
  return std::make_unique<OffloadBackend>(std::move(comm));
}

}  // namespace mccl::detail
