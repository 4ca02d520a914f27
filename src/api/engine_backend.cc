// The in-process backend: a protocol context in this process, driven by an
// engine (inline: the caller's thread; thread: a host progress thread).
#include <new>
#include <string>
#include <vector>

#include "api/backend.h"
#include "api/bootstrap.h"
#include "api/boundary.h"
#include "api/options.h"
#include "bootstrap/inprocess.h"
#include "coll/collectives.h"
#include "coll/compress_choice.h"
#include "coll/compressed.h"
#include "coll/refused_call.h"
#include "common/host.h"
#include "common/log.h"
#include "common/test_kill.h"
#include "mccl/error.h"
#include "progress/engine.h"
#include "progress/linger.h"
#include "progress/shared_thread.h"
#include "protocol/context.h"
#include "setup/bring_up.h"
#include "setup/shrink.h"
#include "topo/placement.h"

namespace mccl::detail {

namespace {

constexpr std::align_val_t kAlign{64};

class EngineInFlight final : public InFlight {
 public:
  EngineInFlight(std::shared_ptr<protocol::Operation> op, progress::Engine& engine, int rank)
      : op_(std::move(op)), engine_(engine), rank_(rank) {}
  bool done() const override { return op_->done(); }
  bool test() override {
    if (!op_->done()) engine_.poll();
    if (!op_->done()) return false;
    throw_if_error(op_->status());
    return true;
  }
  void wait(std::chrono::milliseconds timeout) override {
    common::Status st = engine_.wait(*op_, common::Deadline::after(timeout));
    if (!st.is_ok()) {
      const std::string what = op_->point_to_point() ? "the " + op_->describe()
                                                     : "collective #" + std::to_string(op_->seq()) +
                                                           " (" + op_->describe() + ")";
      throw Error(ErrorCode::kTimeout, "rank " + std::to_string(rank_) + ": wait for " + what +
                                           " timed out after " + std::to_string(timeout.count()) +
                                           " ms waiting for " + op_->describe_wait() +
                                           "; it is still in flight");
    }
    throw_if_error(op_->status());
  }
  int source() const override {
    const auto* recv = dynamic_cast<const protocol::P2pRecv*>(op_.get());
    return recv != nullptr && op_->done() && op_->status().is_ok() ? recv->matched_source() : -1;
  }

 private:
  std::shared_ptr<protocol::Operation> op_;
  progress::Engine& engine_;
  int rank_;
};

std::unique_ptr<progress::Engine> make_engine(const ResolvedOptions& opt, protocol::Context& ctx,
                                              const std::string& iface, int local_index,
                                              int local_ranks) {
  const int cores = common::usable_cores();
  if (opt.progress == ProgressKind::kInline) {
    const auto spin =
        progress::driver_spin(opt.progress_spin, opt.progress_spin_set, local_ranks, cores);
    return progress::make_inline_engine(
        ctx, spin, progress::latency_bound_spin(opt.progress_spin, opt.progress_spin_set));
  }
  // Each rank's caller waits beside its progress thread: two threads a rank.
  const auto wait_spin = progress::waiter_spin(opt.progress_wait_spin, opt.progress_wait_spin_set,
                                               2 * local_ranks, cores);
  if (opt.shared_progress) {
    return progress::make_shared_thread_engine(ctx, opt.shared_progress, wait_spin);
  }
  progress::ThreadEngineConfig cfg;
  topo::Placement where = topo::choose_progress_cpu(opt.progress_cpu, iface, local_index);
  cfg.cpu = where.cpu;
  // The thread's own spin after its last event: where the ranks outnumber
  // the cores, a spinning progress thread takes the core from a rank with
  // work (4 ranks on 2 cores: an 8-byte broadcast 230 -> 129 us, 64 KiB
  // 373 -> 200 us, 16 MiB 14.3 -> 11.2 ms). Counted by ranks, not threads:
  // at 2 ranks on 2 cores the spinning thread is what answers first (an
  // 8-byte broadcast took 32 us with it, 60 without).
  cfg.spin = progress::waiter_spin(opt.progress_spin, opt.progress_spin_set, local_ranks, cores);
  cfg.driver_spin =
      progress::driver_spin(opt.progress_spin, opt.progress_spin_set, local_ranks, cores);
  cfg.latency_spin = progress::latency_bound_spin(opt.progress_spin, opt.progress_spin_set);
  common::logf(common::LogLevel::kInfo, ctx.rank(), "progress thread on CPU %d (%s)", where.cpu,
               where.reason.c_str());
  return progress::make_thread_engine(ctx, cfg, wait_spin);
}

// `fabric`, `sim_node`: an in-process world's fabric and this rank's place
// in it (null, -1 for processes).
setup::BringUpRequest bring_up_request(const ResolvedOptions& opt, int rank, int size,
                                       transport::sim::Fabric* fabric, int sim_node) {
  setup::BringUpRequest req;
  req.rank = rank;
  req.size = size;
  req.proposal.transport = opt.transport;
  req.proposal.machine = topo::machine_id();
  // An in-process world's ranks are no hosts: their fabric is no kernel's
  // TCP, and they share this process's cores with whatever drives them.
  // Unknown (0) picks the shared-cores table, so that they choose the same
  // algorithms on every machine.
  req.proposal.cores = fabric != nullptr ? 0 : static_cast<std::uint32_t>(common::usable_cores());
  req.proposal.authenticate = opt.authenticate;
  req.proposal.epoch = opt.epoch;
  req.timeout = opt.timeout;
  req.setup_timeout = opt.setup_timeout;
  req.fabric = fabric;
  req.sim_node = sim_node;
  // Under the inline engine a rank moves only inside its own calls: one that
  // completed eagerly and then blocks elsewhere (an MPI receive, a barrier
  // of another library) would starve its neighbour's repairs. Eager
  // completion needs an engine that serves on its own.
  req.eager_completion = opt.progress != ProgressKind::kInline;
  return req;
}

class EngineBackend final : public Backend {
 public:
  // Over the context `up` brought up, with its engine. `fabric`: an
  // in-process world's, for a shrink's communicator (null for processes).
  EngineBackend(setup::BroughtUp up, const ResolvedOptions& opt, transport::sim::Fabric* fabric,
                int sim_node)
      : ctx_(std::move(up.ctx)),
        epoch_(up.agreed.epoch),
        coll_(opt.coll),
        max_bytes_(coll::max_stream_bytes(ctx_->config().chunk_bytes)),
        timeout_(opt.timeout),
        opt_(opt),
        fabric_(fabric),
        sim_node_(sim_node) {
    coll_.placement = up.agreed.placement();
    link_mbit_ = up.agreed.slowest_link_mbit;
    core_share_ = up.agreed.core_share;
    engine_ = make_engine(opt, *ctx_, up.iface, up.agreed.local_index, up.agreed.local_ranks);
  }

  ~EngineBackend() override {
    // A rank that completed small collectives eagerly is still its right
    // neighbour's repair source until that neighbour releases it: its
    // engine keeps serving from the reaper, and destruction does not block.
    if (ctx_ && engine_ && ctx_->serving() > 0) {
      progress::linger(std::move(engine_), std::move(ctx_), common::Deadline::after(timeout_));
    }
    engine_.reset();  // before the context it drives
  }

  std::shared_ptr<InFlight> broadcast(void* buffer, std::size_t bytes, int root) override {
    return start(coll::make_broadcast(*ctx_, coll_, buffer, bytes, root));
  }
  std::shared_ptr<InFlight> allgatherv(const void* send, bool in_place, void* recv,
                                       std::span<const std::size_t> counts,
                                       std::span<const std::size_t> displacements) override {
    return start(coll::make_allgatherv(*ctx_, coll_, send, in_place, recv, counts, displacements));
  }
  std::shared_ptr<InFlight> reduce_scatterv(const void* send, void* recv,
                                            std::span<const std::size_t> counts, DataType type,
                                            ReduceOp op, const codec::Settings& compress) override {
    if (coll::compressible_sum(ctx_->size(), type, op, compress) &&
        paying(compress, coll::CompressedShape::kSum)) {
      return start(
          coll::make_compressed_reduce_scatterv(*ctx_, coll_, send, recv, counts, type, compress));
    }
    return start(coll::make_reduce_scatterv(*ctx_, coll_, send, recv, counts, type, op));
  }
  std::shared_ptr<InFlight> allreduce(const void* send, bool in_place, void* recv,
                                      std::size_t count, DataType type, ReduceOp op,
                                      const codec::Settings& compress) override {
    if (coll::compressible_sum(ctx_->size(), type, op, compress) && coll_.multicast &&
        paying(compress, coll::CompressedShape::kSum)) {
      return start(coll::make_compressed_allreduce(*ctx_, coll_, send, in_place, recv, count, type,
                                                   compress));
    }
    return start(coll::make_allreduce(*ctx_, coll_, send, in_place, recv, count, type, op));
  }
  std::shared_ptr<InFlight> barrier() override { return start(coll::make_barrier(*ctx_, coll_)); }
  std::shared_ptr<InFlight> alltoallv(const void* send, std::span<const std::size_t> send_counts,
                                      std::span<const std::size_t> send_displs, void* recv,
                                      std::span<const std::size_t> recv_counts,
                                      std::span<const std::size_t> recv_displs) override {
    return start(coll::make_alltoallv(*ctx_, coll_, send, send_counts, send_displs, recv,
                                      recv_counts, recv_displs));
  }
  std::shared_ptr<InFlight> send(const void* buffer, std::size_t bytes, int peer,
                                 int tag) override {
    return start(std::make_shared<protocol::P2pSend>(*ctx_, static_cast<const std::byte*>(buffer),
                                                     bytes, peer, static_cast<std::uint32_t>(tag),
                                                     coll_.segment_bytes));
  }
  std::shared_ptr<InFlight> recv(void* buffer, std::size_t bytes, int source, int tag) override {
    return start(std::make_shared<protocol::P2pRecv>(*ctx_, static_cast<std::byte*>(buffer), bytes,
                                                     source, static_cast<std::uint32_t>(tag)));
  }
  std::shared_ptr<InFlight> broadcast_typed(void* buffer, std::size_t count, DataType type,
                                            int root, const codec::Settings& compress) override {
    if (compress.mode == codec::Mode::kOff || !codec::compressible(type) ||
        !paying(compress, coll::CompressedShape::kBroadcast)) {
      return Backend::broadcast_typed(buffer, count, type, root, compress);
    }
    return start(
        coll::make_compressed_broadcast(*ctx_, coll_, buffer, count, type, root, compress));
  }
  std::shared_ptr<InFlight> allgatherv_typed(const void* send, bool in_place, void* recv,
                                             std::span<const std::size_t> counts,
                                             std::span<const std::size_t> displacements,
                                             DataType type,
                                             const codec::Settings& compress) override {
    if (compress.mode == codec::Mode::kOff || !codec::compressible(type) ||
        !paying(compress, coll::CompressedShape::kAllgather)) {
      return Backend::allgatherv_typed(send, in_place, recv, counts, displacements, type, compress);
    }
    return start(coll::make_compressed_allgatherv(*ctx_, coll_, send, in_place, recv, counts,
                                                  displacements, type, compress));
  }

  // Whether a collective asked to compress as `asked` does, or runs exact
  // because the link is faster than the codec pays for (counted).
  bool paying(const codec::Settings& asked, coll::CompressedShape shape) {
    if (coll::compression_pays(asked, shape, link_mbit_, core_share_)) return true;
    protocol::Counters::add(ctx_->counters().compress_fast_link_skips);
    return false;
  }

  void refuse(const common::Status& why) override {
    engine_->start(std::make_shared<coll::RefusedCall>(*ctx_, why));
  }
  void progress() override { engine_->poll(); }
  Stats stats(std::chrono::milliseconds) override { return ctx_->counters().snapshot(); }

  // Plain aligned memory: nothing to share with anyone.
  void* allocate(std::size_t bytes, common::Status&) override {
    return ::operator new(bytes == 0 ? 1 : bytes, kAlign);
  }
  bool deallocate(void* p) override {
    ::operator delete(p, kAlign);
    return true;
  }
  std::size_t max_bytes() const override { return max_bytes_; }

  protocol::Context& context() { return *ctx_; }

  std::uint32_t epoch() const override { return epoch_; }
  common::Placement placement() const override { return coll_.placement; }
  // Poisons the context on the engine's thread and tells every rank.
  void revoke() override { (void)finish(std::make_shared<protocol::Revoke>(*ctx_)); }

  std::unique_ptr<Backend> shrink(std::vector<int>& failed) override {
    setup::BroughtUp up;
    throw_if_error(setup::shrink(
        *ctx_, epoch_, [this](const auto& op) { return finish(op); },
        [this](int rank, int size) {
          return bring_up_request(opt_, rank, size, fabric_, sim_node_);
        },
        failed, up));
    auto next = std::make_unique<EngineBackend>(std::move(up), opt_, fabric_, sim_node_);
    common::kill_here_if_asked("shrink-created");
    // Once it completes every survivor is done with this communicator's
    // transport, which its owner may then close. A survivor that dies
    // meanwhile fails it: every survivor still gets the communicator,
    // whose next collective fails, as after any death, and is shrunk.
    try {
      next->barrier()->wait(timeout_);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kPeerFailure) throw;
    }
    return next;
  }

 private:
  std::shared_ptr<InFlight> start(std::shared_ptr<protocol::Operation> op) {
    engine_->start(op);
    return std::make_shared<EngineInFlight>(std::move(op), *engine_, ctx_->rank());
  }

  // Runs a membership operation to its end: ok, or its failure.
  common::Status finish(const std::shared_ptr<protocol::MembershipOp>& op) {
    const progress::CallerWaits caller_waits;
    engine_->start(op);
    // The operation has the collective timeout itself (protocol/membership.h).
    const auto slack = std::chrono::seconds(1);
    common::Status st = engine_->wait(*op, common::Deadline::after(timeout_ + slack));
    if (st.is_ok()) st = op->status();
    return st;
  }

  // Destroyed in reverse order: the engine before the context it drives.
  std::unique_ptr<protocol::Context> ctx_;
  std::uint32_t epoch_;
  coll::CollConfig coll_;
  std::uint32_t link_mbit_ = 0;  // the slowest link any rank knows; 0 unknown
  double core_share_ = 0;        // the fewest cores any rank has to itself; 0 unknown
  std::size_t max_bytes_;
  std::chrono::milliseconds timeout_;
  ResolvedOptions opt_;                       // for the communicators shrink() creates
  transport::sim::Fabric* fabric_ = nullptr;  // the in-process world's, or null
  int sim_node_ = -1;                         // this rank's node in that world
  std::unique_ptr<progress::Engine> engine_;
};

}  // namespace

std::unique_ptr<Backend> make_engine_backend(Bootstrap& bootstrap, const ResolvedOptions& opt) {
  const int rank = bootstrap.rank(), size = bootstrap.size();
  // The application's bootstrap throws (mccl::Bootstrap's contract); the
  // layers below take its failure as a Status.
  auto oob = [&](std::span<const std::byte> mine, std::vector<std::byte>& all) {
    try {
      all = bootstrap.allgather(mine, opt.timeout);
    } catch (const std::exception& e) {
      return status_of(e);
    }
    return transport::check_gathered(all.size(), static_cast<std::size_t>(size), mine.size());
  };
  // Ranks in one process share the in-memory fabric; real processes use
  // the network (setup/bring_up.h).
  const auto* inproc = mccl::bootstrap::as_in_process(rendezvous_of(bootstrap));
  const setup::BringUpRequest req =
      bring_up_request(opt, rank, size, inproc != nullptr ? &inproc->fabric() : nullptr,
                       inproc != nullptr ? rank : -1);
  setup::BroughtUp up;
  throw_if_error(setup::bring_up(req, oob, "rank " + std::to_string(rank) + ": ", up));
  return std::make_unique<EngineBackend>(std::move(up), opt, req.fabric, req.sim_node);
}

}  // namespace mccl::detail
