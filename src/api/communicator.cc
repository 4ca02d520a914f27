#include "mccl/communicator.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "api/comm_state.h"
#include "api/options.h"
#include "api/world_state.h"
#include "coll/validate.h"
#include "common/log.h"
#include "topo/placement.h"

namespace mccl {

namespace {

// What every rank contributes when a communicator is created.
struct Hello {
  std::uint32_t tag;        // only rank 0's is used
  std::uint32_t transport;  // must agree
  std::uint32_t mtu;        // the smallest wins
  std::uint32_t reserved;
};

std::uint32_t random_tag() {
  std::random_device rd;
  std::uint32_t t = 0;
  while (t == 0) t = rd();
  return t;
}

const char* transport_name(TransportKind k) {
  switch (k) {
    case TransportKind::kAuto: return "auto";
    case TransportKind::kSim: return "sim";
    case TransportKind::kUdp: return "udp";
    case TransportKind::kIb: return "ib";
  }
  return "?";
}

std::unique_ptr<progress::Engine> make_engine(const detail::ResolvedOptions& opt,
                                              protocol::Context& ctx, const std::string& iface) {
  if (opt.progress == ProgressKind::kInline) return progress::make_inline_engine(ctx);
  progress::ThreadEngineConfig cfg;
  topo::Placement where = topo::choose_progress_cpu(opt.progress_cpu, iface);
  cfg.cpu = where.cpu;
  cfg.spin = opt.progress_spin;
  common::logf(common::LogLevel::kInfo, ctx.rank(), "progress thread on CPU %d (%s)", where.cpu,
               where.reason.c_str());
  return progress::make_thread_engine(ctx, cfg);
}

}  // namespace

Communicator::Communicator(Bootstrap& bootstrap, const CommOptions& options) {
  auto st = std::make_shared<detail::CommState>();
  st->rank = bootstrap.rank();
  st->size = bootstrap.size();
  const std::string who = "rank " + std::to_string(st->rank) + ": ";
  detail::ResolvedOptions opt = detail::resolve_options(options, st->rank);
  st->timeout = opt.timeout;

  auto* inproc = dynamic_cast<detail::InProcessBootstrap*>(&bootstrap);
  TransportKind transport = opt.transport;
  if (transport == TransportKind::kAuto) {
    if (inproc == nullptr) {
      throw Error(ErrorCode::kUnavailable,
                  who + "no datagram transport for a multi-process bootstrap is built yet "
                        "(only the in-memory fabric, MCCL_TRANSPORT=sim, with InProcessWorld)");
    }
    transport = TransportKind::kSim;
  }
  if (transport != TransportKind::kSim) {
    throw Error(ErrorCode::kUnavailable, who + "transport '" + transport_name(transport) +
                                             "' is not built into this MCCL");
  }
  if (inproc == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                who + "transport 'sim' needs an in-process bootstrap (mccl::InProcessWorld)");
  }
  if (opt.progress == ProgressKind::kOffload) {
    throw Error(ErrorCode::kUnavailable,
                who + "the offload progress engine is not built into this MCCL (MCCL_PROGRESS)");
  }

  const auto mtu = static_cast<std::uint32_t>(inproc->world().fabric().config().mtu);
  Hello mine{random_tag(), static_cast<std::uint32_t>(transport), mtu, 0};
  auto all = bootstrap.allgather(std::as_bytes(std::span(&mine, 1)), opt.timeout);
  std::vector<Hello> hellos(st->size);
  std::memcpy(hellos.data(), all.data(), all.size());
  std::uint32_t agreed_mtu = mtu;
  for (int r = 0; r < st->size; ++r) {
    if (hellos[r].transport != mine.transport) {
      throw Error(ErrorCode::kMismatch, who + "rank " + std::to_string(r) +
                                            " chose another transport; every rank must use the same");
    }
    agreed_mtu = std::min(agreed_mtu, hellos[r].mtu);
  }
  const std::uint32_t tag = hellos[0].tag;

  auto& fabric = inproc->world().fabric();
  // Each communicator gets its own group; the tag keeps any stray datagram
  // of another communicator out even if groups were shared.
  auto dgram = fabric.join_datagram(tag, st->rank);
  auto reliable = fabric.join_reliable(tag, st->rank, st->size);
  protocol::ProtocolConfig pc = protocol::protocol_config_from_settings(agreed_mtu);
  pc.op_timeout = opt.timeout;
  st->ctx = std::make_unique<protocol::Context>(st->rank, st->size, tag, std::move(dgram),
                                                std::move(reliable), pc);
  st->engine = make_engine(opt, *st->ctx, "");
  st->coll.allgather = opt.allgather;
  st->coll.broadcast = opt.broadcast;
  st->coll.concurrent_roots = opt.concurrent_roots;
  st->coll.segment_bytes = opt.segment_bytes;
  st->coll.multicast = true;
  state_ = std::move(st);
}

Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

int Communicator::rank() const { return state_->rank; }
int Communicator::size() const { return state_->size; }

namespace {
void check_usable(const std::shared_ptr<detail::CommState>& st) {
  if (!st) throw Error(ErrorCode::kInvalidArgument, "use of a moved-from mccl::Communicator");
}
}  // namespace

Request Communicator::ibroadcast(void* buffer, std::size_t bytes, int root) {
  check_usable(state_);
  coll::validate_broadcast(state_->rank, state_->size, buffer, bytes, root).throw_if_error();
  auto op = coll::make_broadcast(*state_->ctx, state_->coll, buffer, bytes, root);
  state_->engine->start(op);
  return Request(state_, std::make_shared<detail::Operation>(std::move(op)));
}

void Communicator::broadcast(void* buffer, std::size_t bytes, int root) {
  ibroadcast(buffer, bytes, root).wait();
}

Request Communicator::iallgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                                  std::span<const std::size_t> displacements) {
  check_usable(state_);
  const bool in_place = send == kInPlace;
  coll::validate_allgatherv(state_->rank, state_->size, send, in_place, recv, counts,
                            displacements)
      .throw_if_error();
  auto op = coll::make_allgatherv(*state_->ctx, state_->coll, send, in_place, recv, counts,
                                  displacements);
  state_->engine->start(op);
  return Request(state_, std::make_shared<detail::Operation>(std::move(op)));
}

void Communicator::allgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                              std::span<const std::size_t> displacements) {
  iallgatherv(send, recv, counts, displacements).wait();
}

Request Communicator::iallgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  check_usable(state_);
  std::vector<std::size_t> counts(state_->size, bytes_per_rank), displs(state_->size);
  for (int r = 0; r < state_->size; ++r) displs[r] = static_cast<std::size_t>(r) * bytes_per_rank;
  return iallgatherv(send, recv, counts, displs);
}

void Communicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  iallgather(send, recv, bytes_per_rank).wait();
}

Request Communicator::ibarrier() {
  check_usable(state_);
  auto op = coll::make_barrier(*state_->ctx);
  state_->engine->start(op);
  return Request(state_, std::make_shared<detail::Operation>(std::move(op)));
}

void Communicator::barrier() { ibarrier().wait(); }

void Communicator::progress() {
  check_usable(state_);
  state_->engine->poll();
}

Stats Communicator::stats() const {
  check_usable(state_);
  return state_->ctx->counters().snapshot();
}

}  // namespace mccl
