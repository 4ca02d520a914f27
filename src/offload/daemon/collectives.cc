// Session's collectives (session.h): a submission becomes a coll operation,
// on staging buffers filled from the client's memory or, zero copy, on the
// client's shared buffers; a finished one's result is moved into the
// client.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "coll/validate.h"
#include "offload/daemon/session.h"

namespace mccl::offload::daemon {

namespace {

// A reduction's element size, 0 when the client sent an unknown data type
// or operation.
std::size_t reduction_element_size(const Submission& s) {
  if (s.redop > static_cast<std::uint32_t>(ReduceOp::kMax)) return 0;
  return size_of(static_cast<DataType>(s.dtype));
}

}  // namespace

common::Status Session::start(const Submission& s, Pending& p) {
  protocol::Context& ctx = *comm_.ctx;
  const int rank = ctx.rank(), size = ctx.size();
  p.sub = s;
  // As Communicator::broadcast checks it: a client that skipped the check
  // must not size a staging buffer, nor a stream past the wire's 2^32
  // chunks (its chunk count would wrap).
  if (static_cast<OpKind>(s.kind) == OpKind::kBroadcast) {
    auto st = coll::validate_broadcast(rank, size, reinterpret_cast<const void*>(s.buffer), s.bytes,
                                       s.root, max_stream_bytes());
    if (!st) return st;
  }
  if (start_direct(s, p)) {
    ctx.start(p.op);
    return common::Status::ok();
  }
  common::Status st = common::Status::ok();
  switch (static_cast<OpKind>(s.kind)) {
    case OpKind::kBarrier:
      p.op = coll::make_barrier(ctx, comm_.coll);
      break;
    case OpKind::kBroadcast:
      st = stage_broadcast(s, p);
      break;
    case OpKind::kAllgatherv:
      st = stage_allgatherv(s, p);
      break;
    case OpKind::kReduceScatterv:
      st = stage_reduce_scatterv(s, p);
      break;
    case OpKind::kAllreduce:
      st = stage_allreduce(s, p);
      break;
    default:
      return common::invalid_argument("unknown offloaded operation kind");
  }
  if (!st) return st;
  ctx.start(p.op);
  return st;
}

// The root's bytes are read from the client as they are sent, a receiver's
// written back while the session is idle (staged_blocks.h).
common::Status Session::stage_broadcast(const Submission& s, Pending& p) {
  p.staging = pool_.take(s.bytes);
  const int rank = comm_.ctx->rank();
  const auto size = static_cast<std::size_t>(comm_.ctx->size());
  std::vector<std::size_t> counts(size, 0), displs(size, 0);
  counts[s.root] = s.bytes;
  p.blocks = std::make_shared<StagedBlocks>(hello_.pid, p.staging.data(), s.buffer,
                                            std::move(counts), std::move(displs), rank,
                                            rank == static_cast<int>(s.root), s.buffer);
  p.op = coll::make_broadcast(*comm_.ctx, comm_.coll, p.staging.data(), s.bytes, s.root,
                              StagedBlocks::hooks(p.blocks));
  return common::Status::ok();
}

common::Status Session::stage_allgatherv(const Submission& s, Pending& p) {
  auto st = read_layout(s, p);
  if (!st) return st;
  const int rank = comm_.ctx->rank(), size = comm_.ctx->size();
  std::size_t total = 0;
  for (int r = 0; r < size; ++r) {
    if (p.counts[r] > 0) total = std::max(total, p.displs[r] + p.counts[r]);
  }
  p.staging = pool_.take(total);
  const std::size_t mine = p.counts[rank], at = mine > 0 ? p.displs[rank] : 0;
  // This rank's block is read from the client as it is sent, the received
  // ones written back while the session is idle (staged_blocks.h), this
  // rank's at the end unless the client holds it.
  p.blocks =
      std::make_shared<StagedBlocks>(hello_.pid, p.staging.data(), s.buffer, p.counts, p.displs,
                                     rank, s.in_place != 0, s.in_place ? s.buffer + at : s.send);
  p.op = coll::make_allgatherv(*comm_.ctx, comm_.coll, p.staging.data() + at, true,
                               p.staging.data(), p.counts, p.displs, StagedBlocks::hooks(p.blocks));
  return st;
}

common::Status Session::stage_reduce_scatterv(const Submission& s, Pending& p) {
  const auto type = static_cast<DataType>(s.dtype);
  const std::size_t es = reduction_element_size(s);
  if (es == 0) return common::invalid_argument("reduce-scatter: unknown data type or operation");
  auto st = read_counts(s, p);
  if (!st) return st;
  std::size_t total = 0;
  for (std::size_t c : p.counts) {
    if (c > SIZE_MAX / es - total) {
      return common::invalid_argument("reduce-scatter: the counts overflow a size_t");
    }
    total += c;
  }
  p.input = pool_.take(total * es);
  p.staging = pool_.take(p.counts[comm_.ctx->rank()] * es);
  if (!p.input.empty()) {
    st = client_io(hello_.pid, false, s.send, p.input.data(), p.input.size());
    if (!st) return st;
  }
  p.op = coll::make_reduce_scatterv(*comm_.ctx, comm_.coll, p.input.data(), p.staging.data(),
                                    p.counts, type, static_cast<ReduceOp>(s.redop));
  return st;
}

common::Status Session::stage_allreduce(const Submission& s, Pending& p) {
  const auto type = static_cast<DataType>(s.dtype);
  const std::size_t es = reduction_element_size(s);
  if (es == 0) return common::invalid_argument("allreduce: unknown data type or operation");
  if (s.bytes > SIZE_MAX / es) {
    return common::invalid_argument("allreduce: count " + std::to_string(s.bytes) +
                                    " overflows a size_t in bytes");
  }
  p.staging = pool_.take(s.bytes * es);
  if (!p.staging.empty()) {
    auto st = client_io(hello_.pid, false, s.in_place ? s.buffer : s.send, p.staging.data(),
                        p.staging.size());
    if (!st) return st;
  }
  p.op = coll::make_allreduce(*comm_.ctx, comm_.coll, nullptr, true, p.staging.data(), s.bytes,
                              type, static_cast<ReduceOp>(s.redop));
  return common::Status::ok();
}

common::Status Session::read_counts(const Submission& s, Pending& p) {
  std::vector<std::uint64_t> raw(static_cast<std::size_t>(comm_.ctx->size()));
  auto st = client_io(hello_.pid, false, s.counts, reinterpret_cast<std::byte*>(raw.data()),
                      sizeof(std::uint64_t) * raw.size());
  if (st) p.counts.assign(raw.begin(), raw.end());
  return st;
}

common::Status Session::read_layout(const Submission& s, Pending& p) {
  const int rank = comm_.ctx->rank(), size = comm_.ctx->size();
  std::vector<std::uint64_t> raw(2 * static_cast<std::size_t>(size));
  const std::size_t half = sizeof(std::uint64_t) * static_cast<std::size_t>(size);
  auto st = client_io(hello_.pid, false, s.counts, reinterpret_cast<std::byte*>(raw.data()), half);
  if (st) {
    st = client_io(hello_.pid, false, s.displs, reinterpret_cast<std::byte*>(raw.data() + size),
                   half);
  }
  if (!st) return st;
  p.counts.assign(raw.begin(), raw.begin() + size);
  p.displs.assign(raw.begin() + size, raw.end());
  // The client's own addresses: checked for null and for wrapping, never used.
  return coll::validate_allgatherv(rank, size, reinterpret_cast<const void*>(s.send),
                                   s.in_place != 0, reinterpret_cast<const void*>(s.buffer),
                                   p.counts, p.displs, max_stream_bytes());
}

std::size_t Session::max_stream_bytes() const {
  return coll::max_stream_bytes(comm_.ctx->config().chunk_bytes);
}

// Zero copy: when every buffer of `s` lies in the client's shared regions,
// the operation runs on them in place. False: take the staging path.
bool Session::start_direct(const Submission& s, Pending& p) {
  protocol::Context& ctx = *comm_.ctx;
  const int rank = ctx.rank(), size = ctx.size();
  const auto kind = static_cast<OpKind>(s.kind);
  if (kind == OpKind::kBroadcast) {
    std::byte* buf = regions_.find(s.buffer, s.bytes);  // arguments checked by start()
    if (buf == nullptr) return false;
    p.op = coll::make_broadcast(ctx, comm_.coll, buf, s.bytes, s.root);
  } else if (kind == OpKind::kAllgatherv) {
    if (!read_layout(s, p)) return false;  // the staging path reports it
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (int r = 0; r < size; ++r) {
      if (p.counts[r] == 0) continue;
      lo = std::min<std::uint64_t>(lo, p.displs[r]);
      hi = std::max<std::uint64_t>(hi, p.displs[r] + p.counts[r]);
    }
    if (hi == 0) return false;
    std::byte* recv = regions_.find(s.buffer + lo, hi - lo);
    const std::size_t mine = p.counts[rank];
    std::byte* send = s.in_place || mine == 0 ? nullptr : regions_.find(s.send, mine);
    if (recv == nullptr || (!s.in_place && mine > 0 && send == nullptr)) return false;
    p.op = coll::make_allgatherv(ctx, comm_.coll, send, s.in_place != 0 || mine == 0, recv - lo,
                                 p.counts, p.displs);
  } else if (kind == OpKind::kAllreduce) {
    const std::size_t es = reduction_element_size(s);
    if (es == 0 || s.bytes > SIZE_MAX / es) return false;  // the staging path reports it
    const std::size_t bytes = s.bytes * es;
    std::byte* recv = regions_.find(s.buffer, bytes);
    std::byte* send = s.in_place ? nullptr : regions_.find(s.send, bytes);
    if (bytes == 0 || recv == nullptr || (!s.in_place && send == nullptr)) return false;
    p.op = coll::make_allreduce(ctx, comm_.coll, send, s.in_place != 0, recv, s.bytes,
                                static_cast<DataType>(s.dtype), static_cast<ReduceOp>(s.redop));
  } else if (kind == OpKind::kReduceScatterv) {
    const std::size_t es = reduction_element_size(s);
    if (es == 0 || !read_counts(s, p)) return false;  // the staging path reports it
    std::size_t total = 0;
    for (std::size_t c : p.counts) total += c;
    std::byte* send = regions_.find(s.send, total * es);
    std::byte* recv = regions_.find(s.buffer, p.counts[rank] * es);
    if (send == nullptr || (p.counts[rank] > 0 && recv == nullptr)) return false;
    p.op =
        coll::make_reduce_scatterv(ctx, comm_.coll, send, recv, p.counts,
                                   static_cast<DataType>(s.dtype), static_cast<ReduceOp>(s.redop));
  } else {
    return false;  // a barrier has no buffers
  }
  p.direct = true;
  return true;
}

// Moves the result into the client's buffers.
common::Status Session::deliver(Pending& p) {
  if (p.direct) return common::Status::ok();
  const pid_t pid = hello_.pid;
  const Submission& s = p.sub;
  if (p.blocks != nullptr) return p.blocks->deliver_rest();  // a broadcast or an allgather
  if (static_cast<OpKind>(s.kind) == OpKind::kReduceScatterv ||
      static_cast<OpKind>(s.kind) == OpKind::kAllreduce) {
    if (p.staging.empty()) return common::Status::ok();
    return client_io(pid, true, s.buffer, p.staging.data(), p.staging.size());
  }
  return common::Status::ok();
}

}  // namespace mccl::offload::daemon
