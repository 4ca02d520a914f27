#include "mccl/communicator.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "api/boundary.h"
#include "api/comm_state.h"
#include "api/offload_api.h"
#include "api/options.h"
#include "api/progress_thread_state.h"
#include "api/transports.h"
#include "api/world_state.h"
#include "coll/refused_call.h"
#include "coll/validate.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "topo/placement.h"

namespace mccl {

namespace {

// What every rank contributes when a communicator is created. Only rank
// 0's tag, salt and key are used; the transport must agree everywhere.
struct Hello {
  std::uint32_t tag;
  std::uint32_t transport;
  std::uint64_t salt;
  std::uint32_t checksum;    // a rank that checks CRCs would drop a non-checking root's data
  std::uint32_t ib_usable;   // auto picks InfiniBand only when every rank has it
  std::uint64_t machine;     // ranks on one machine spread their progress threads
  std::uint32_t auth_mode;   // protocol::AuthMode: a MAC-less root's data would be dropped
  std::uint32_t auth_built;  // with libsodium ("auto" is off without)
  protocol::AuthKey key;     // the datagrams' MAC key (protocol/auth.h)
};

// How many lower ranks run on the same machine as `rank`.
int local_index(const std::vector<Hello>& hellos, int rank) {
  int below = 0;
  for (int r = 0; r < rank; ++r) {
    if (hellos[r].machine != 0 && hellos[r].machine == hellos[rank].machine) ++below;
  }
  return below;
}

std::uint32_t random_tag() {
  std::random_device rd;
  std::uint32_t t = 0;
  while (t == 0) t = rd();
  return t;
}

std::uint64_t random_salt() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) | rd();
}

const char* transport_name(TransportKind k) {
  switch (k) {
    case TransportKind::kAuto:
      return "auto";
    case TransportKind::kSim:
      return "sim";
    case TransportKind::kUdp:
      return "udp";
    case TransportKind::kIb:
      return "ib";
  }
  return "?";
}

std::unique_ptr<progress::Engine> make_engine(const detail::ResolvedOptions& opt,
                                              protocol::Context& ctx, const std::string& iface,
                                              int local_index) {
  if (opt.progress == ProgressKind::kInline) return progress::make_inline_engine(ctx);
  if (opt.shared_progress) {
    return progress::make_shared_thread_engine(ctx, opt.shared_progress->thread);
  }
  progress::ThreadEngineConfig cfg;
  topo::Placement where = topo::choose_progress_cpu(opt.progress_cpu, iface, local_index);
  cfg.cpu = where.cpu;
  cfg.spin = opt.progress_spin;
  common::logf(common::LogLevel::kInfo, ctx.rank(), "progress thread on CPU %d (%s)", where.cpu,
               where.reason.c_str());
  return progress::make_thread_engine(ctx, cfg);
}

std::shared_ptr<detail::CommState> create(Bootstrap& bootstrap, const CommOptions& options) {
  auto st = std::make_shared<detail::CommState>();
  st->rank = bootstrap.rank();
  st->size = bootstrap.size();
  const std::string who = "rank " + std::to_string(st->rank) + ": ";
  detail::ResolvedOptions opt = detail::resolve_options(options, st->rank);
  st->timeout = opt.timeout;
  if (opt.progress == ProgressKind::kOffload) {
    detail::create_offloaded(*st, bootstrap, opt);
    return st;
  }
  TransportKind transport = opt.transport;
  std::uint32_t ib_here = 0;
  if (transport == TransportKind::kAuto) {
    // Ranks in one process share the in-memory fabric; real processes use
    // the network: InfiniBand where every rank has it, else UDP.
    if (dynamic_cast<detail::InProcessBootstrap*>(&bootstrap) != nullptr) {
      transport = TransportKind::kSim;
    } else {
      std::string why;
      ib_here = detail::ib_usable(why) ? 1 : 0;
      common::logf(common::LogLevel::kInfo, st->rank, "InfiniBand %s (%s)",
                   ib_here ? "usable" : "not usable", why.c_str());
    }
  }

  // 1. Agree on the tag (and the salt that keeps two jobs' groups apart)
  //    and on the key that authenticates the group's datagrams.
  protocol::AuthMode auth_mode = protocol::AuthMode::kAuto;
  if (common::Status s = protocol::auth_mode(st->rank, opt.authenticate, auth_mode); !s.is_ok()) {
    throw Error(s.code(), s.message());
  }
  Hello mine{random_tag(),
             static_cast<std::uint32_t>(transport),
             random_salt(),
             common::settings::kProtoChecksum.get_bool() ? 1u : 0u,
             ib_here,
             topo::machine_id(),
             static_cast<std::uint32_t>(auth_mode),
             protocol::auth_available() ? 1u : 0u,
             protocol::random_auth_key()};
  auto all = bootstrap.allgather(std::as_bytes(std::span(&mine, 1)), opt.timeout);
  std::vector<Hello> hellos(st->size);
  std::memcpy(hellos.data(), all.data(), all.size());
  for (int r = 0; r < st->size; ++r) {
    if (hellos[r].transport != mine.transport) {
      throw Error(ErrorCode::kMismatch,
                  who + "rank " + std::to_string(r) + " chose transport '" +
                      transport_name(static_cast<TransportKind>(hellos[r].transport)) +
                      "' and this rank '" + transport_name(transport) +
                      "': every rank must use the same (MCCL_TRANSPORT)");
    }
    if (hellos[r].checksum != mine.checksum) {
      throw Error(ErrorCode::kMismatch, who + "rank " + std::to_string(r) +
                                            " disagrees on MCCL_PROTO_CHECKSUM; every rank must "
                                            "set it the same");
    }
  }
  const std::uint32_t tag = hellos[0].tag;
  if (transport == TransportKind::kAuto) {
    bool everyone = true;
    for (const Hello& h : hellos) everyone = everyone && h.ib_usable != 0;
    transport = everyone ? TransportKind::kIb : TransportKind::kUdp;
  }
  // Authentication, now that the transport is known ("auto" is off on InfiniBand).
  auto auth_of = [&](const Hello& h) {
    return protocol::auth_resolved(static_cast<protocol::AuthMode>(h.auth_mode), h.auth_built != 0,
                                   transport != TransportKind::kIb);
  };
  const bool auth = auth_of(mine);
  for (int r = 0; r < st->size; ++r) {
    if (auth_of(hellos[r]) != auth) {
      throw Error(ErrorCode::kMismatch, who + protocol::auth_mismatch(r, auth_of(hellos[r]), auth));
    }
  }
  if (auth_mode == protocol::AuthMode::kAuto) {
    common::logf(common::LogLevel::kInfo, st->rank, "multicast datagrams %s (MCCL_PROTO_AUTH=auto)",
                 auth ? "authenticated (Poly1305)" : "not authenticated");
  }

  // 2. The transports (the reliable side exchanges its addresses itself).
  detail::Transports net =
      detail::make_transports(transport, bootstrap, tag, hellos[0].salt, opt.timeout);

  // 3. The chunk size: every rank must cut streams the same way, so the
  //    smallest datagram any rank's network carries wins.
  std::uint32_t my_mtu = static_cast<std::uint32_t>(net.dgram->caps().mtu);
  auto mtus = bootstrap.allgather(std::as_bytes(std::span(&my_mtu, 1)), opt.timeout);
  std::uint32_t mtu = my_mtu;
  for (int r = 0; r < st->size; ++r) {
    std::uint32_t v;
    std::memcpy(&v, mtus.data() + r * sizeof v, sizeof v);
    mtu = std::min(mtu, v);
  }
  if (mtu <= protocol::data_header_bytes(auth) + 64) {
    throw Error(ErrorCode::kUnavailable,
                who + "the network's datagrams are too small (" + std::to_string(mtu) + " bytes)");
  }
  common::logf(common::LogLevel::kInfo, st->rank, "communicator of %d ranks on %s, mtu %u",
               st->size, net.description.c_str(), mtu);

  protocol::ProtocolConfig pc = protocol::protocol_config_from_settings(mtu);
  if (auth) protocol::enable_auth(pc, hellos[0].key);
  pc.op_timeout = common::saturating_duration(opt.timeout);
  st->max_bytes = coll::max_stream_bytes(pc.chunk_bytes);
  // Under the inline engine a rank moves only inside its own calls: one that
  // completed eagerly and then blocks elsewhere (an MPI receive, a barrier
  // of another library) would starve its neighbour's repairs. Eager
  // completion needs an engine that serves on its own.
  if (opt.progress == ProgressKind::kInline) pc.eager_bytes = 0;
  st->ctx = std::make_unique<protocol::Context>(st->rank, st->size, tag, std::move(net.dgram),
                                                std::move(net.reliable), pc);
  st->engine = make_engine(opt, *st->ctx, net.iface, local_index(hellos, st->rank));
  st->coll.allgather = opt.allgather;
  st->coll.broadcast = opt.broadcast;
  st->coll.concurrent_roots = opt.concurrent_roots;
  st->coll.segment_bytes = opt.segment_bytes;
  st->coll.multicast = true;
  st->coll.allreduce = opt.allreduce;
  st->coll.reduce_segment_bytes = opt.reduce_segment_bytes;
  st->coll.allreduce_small_bytes = opt.allreduce_small_bytes;
  st->coll.rs_share = opt.rs_share;
  return st;
}

}  // namespace

Communicator::Communicator(Bootstrap& bootstrap, const CommOptions& options)
    : state_(detail::at_boundary(bootstrap.rank(), "communicator creation",
                                 [&] { return create(bootstrap, options); })) {}

Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

namespace {
void check_usable(const std::shared_ptr<detail::CommState>& st) {
  if (!st) {
    throw Error(ErrorCode::kInvalidArgument,
                "use of a moved-from mccl::Communicator; only assignment and destruction are "
                "allowed on it");
  }
}

// A call with invalid arguments throws here, but its peers have started (or
// will start) the same collective: it takes its sequence number anyway and
// tells them why it refused (coll/refused_call.h), so they fail with this
// rank's reason instead of a timeout or an unrelated mismatch. Under the
// offload engine the daemon owns the sequence; the error stays local there.
void refuse_if_invalid(detail::CommState& st, const common::Status& why) {
  if (why.is_ok()) return;
  if (st.ctx) st.engine->start(std::make_shared<coll::RefusedCall>(*st.ctx, why));
  why.throw_if_error();
}

// Hands `op` to the engine; the result is what a Request holds.
std::shared_ptr<detail::Operation> start(detail::CommState& st,
                                         std::shared_ptr<protocol::Operation> op) {
  st.engine->start(op);
  return std::make_shared<detail::Operation>(std::move(op));
}
}  // namespace

int Communicator::rank() const {
  check_usable(state_);
  return state_->rank;
}
int Communicator::size() const {
  check_usable(state_);
  return state_->size;
}

Request Communicator::ibroadcast(void* buffer, std::size_t bytes, int root) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "broadcast", [&] {
    refuse_if_invalid(*state_, coll::validate_broadcast(state_->rank, state_->size, buffer, bytes,
                                                        root, state_->max_bytes));
    if (state_->offload) {
      return Request(state_, detail::offload_broadcast(*state_, buffer, bytes, root));
    }
    return Request(state_, start(*state_, coll::make_broadcast(*state_->ctx, state_->coll, buffer,
                                                               bytes, root)));
  });
}

void Communicator::broadcast(void* buffer, std::size_t bytes, int root) {
  ibroadcast(buffer, bytes, root).wait();
}

Request Communicator::iallgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                                  std::span<const std::size_t> displacements) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "allgatherv", [&] {
    const bool in_place = send == kInPlace;
    refuse_if_invalid(
        *state_, coll::validate_allgatherv(state_->rank, state_->size, send, in_place, recv, counts,
                                           displacements, state_->max_bytes));
    if (state_->offload) {
      return Request(
          state_, detail::offload_allgatherv(*state_, send, in_place, recv, counts, displacements));
    }
    return Request(state_,
                   start(*state_, coll::make_allgatherv(*state_->ctx, state_->coll, send, in_place,
                                                        recv, counts, displacements)));
  });
}

void Communicator::allgatherv(const void* send, void* recv, std::span<const std::size_t> counts,
                              std::span<const std::size_t> displacements) {
  iallgatherv(send, recv, counts, displacements).wait();
}

Request Communicator::iallgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "allgather", [&] {
    // Checked before the displacements r * bytes_per_rank are computed: a
    // product that wraps would be reported as overlapping buffers.
    refuse_if_invalid(*state_, coll::validate_allgather_size(state_->rank, state_->size,
                                                             bytes_per_rank, state_->max_bytes));
    std::vector<std::size_t> counts(state_->size, bytes_per_rank), displs(state_->size);
    for (int r = 0; r < state_->size; ++r) {
      displs[r] = static_cast<std::size_t>(r) * bytes_per_rank;
    }
    return iallgatherv(send, recv, counts, displs);
  });
}

void Communicator::allgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  iallgather(send, recv, bytes_per_rank).wait();
}

Request Communicator::ireduce_scatterv(const void* send, void* recv,
                                       std::span<const std::size_t> counts, DataType type,
                                       ReduceOp op) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "reduce_scatterv", [&] {
    refuse_if_invalid(
        *state_, coll::validate_reduce_scatterv(state_->rank, state_->size, send, send == kInPlace,
                                                recv, counts, type, op));
    if (state_->offload) {
      return Request(state_,
                     detail::offload_reduce_scatterv(*state_, send, recv, counts, type, op));
    }
    return Request(state_,
                   start(*state_, coll::make_reduce_scatterv(*state_->ctx, state_->coll, send, recv,
                                                             counts, type, op)));
  });
}

void Communicator::reduce_scatterv(const void* send, void* recv,
                                   std::span<const std::size_t> counts, DataType type,
                                   ReduceOp op) {
  ireduce_scatterv(send, recv, counts, type, op).wait();
}

Request Communicator::ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank,
                                      DataType type, ReduceOp op) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "reduce_scatter", [&] {
    std::vector<std::size_t> counts(state_->size, count_per_rank);
    return ireduce_scatterv(send, recv, counts, type, op);
  });
}

void Communicator::reduce_scatter(const void* send, void* recv, std::size_t count_per_rank,
                                  DataType type, ReduceOp op) {
  ireduce_scatter(send, recv, count_per_rank, type, op).wait();
}

Request Communicator::iallreduce(const void* send, void* recv, std::size_t count, DataType type,
                                 ReduceOp op) {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "allreduce", [&] {
    const bool in_place = send == kInPlace;
    refuse_if_invalid(
        *state_, coll::validate_allreduce(state_->rank, send, in_place, recv, count, type, op));
    if (state_->offload) {
      return Request(state_, detail::offload_allreduce(*state_, send, in_place || send == recv,
                                                       recv, count, type, op));
    }
    return Request(state_, start(*state_, coll::make_allreduce(*state_->ctx, state_->coll, send,
                                                               in_place || send == recv, recv,
                                                               count, type, op)));
  });
}

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type,
                             ReduceOp op) {
  iallreduce(send, recv, count, type, op).wait();
}

Request Communicator::ibarrier() {
  check_usable(state_);
  return detail::at_boundary(state_->rank, "barrier", [&] {
    if (state_->offload) return Request(state_, detail::offload_barrier(*state_));
    return Request(state_, start(*state_, coll::make_barrier(*state_->ctx)));
  });
}

void Communicator::barrier() { ibarrier().wait(); }

void Communicator::progress() {
  check_usable(state_);
  if (state_->offload) return state_->offload->poll();
  state_->engine->poll();
}

Stats Communicator::stats() const {
  check_usable(state_);
  // The protocol's counters live in the daemon under the offload engine.
  if (state_->offload) return detail::offload_stats(*state_);
  return state_->ctx->counters().snapshot();
}

}  // namespace mccl
