#include "cases.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "protocol/context.h"

namespace mccl::bench::scale {
namespace {

using Ops = std::vector<std::shared_ptr<protocol::Operation>>;

// The byte rank r holds at `i` of its input: distinct per rank and place.
std::byte pattern(int r, std::size_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(r) << 32) ^ i;
  x ^= x >> 17;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<std::byte>(x >> 56);
}

// The buffers of one case and the check of its results.
struct Buffers {
  std::vector<std::vector<std::byte>> in, out;
};

Ops make_ops(simworld::World& w, const CaseSpec& spec, Buffers& b) {
  const int n = w.size();
  const std::size_t m = spec.bytes;
  Ops ops;
  b.out.assign(static_cast<std::size_t>(n), {});
  for (int r = 0; r < n; ++r) {
    auto& out = b.out[static_cast<std::size_t>(r)];
    protocol::Context& ctx = w.context(r);
    if (spec.bench == Bench::kBroadcast) {
      out.resize(m);
      for (std::size_t i = 0; i < m; ++i) out[i] = r == 0 ? pattern(0, i) : std::byte{0};
      ops.push_back(coll::make_broadcast(ctx, spec.coll, out.data(), m, 0));
    } else if (spec.bench == Bench::kAllgather) {
      out.assign(m * static_cast<std::size_t>(n), std::byte{0});
      for (std::size_t i = 0; i < m; ++i) out[r * m + i] = pattern(r, i);
      std::vector<std::size_t> counts(static_cast<std::size_t>(n), m), displs(counts.size());
      for (std::size_t i = 0; i < displs.size(); ++i) displs[i] = i * m;
      ops.push_back(
          coll::make_allgatherv(ctx, spec.coll, nullptr, true, out.data(), counts, displs));
    } else {
      // int32 sums: rank r's element e is (r + 1) * (e + 1), exact in int32.
      const std::size_t elems = m / 4;
      auto& in = b.in.emplace_back(elems * static_cast<std::size_t>(n) * 4);
      for (std::size_t e = 0; e < elems * static_cast<std::size_t>(n); ++e) {
        const auto v = static_cast<std::int32_t>((r + 1) * static_cast<std::int64_t>(e + 1));
        std::memcpy(in.data() + 4 * e, &v, 4);
      }
      out.assign(elems * 4, std::byte{0});
      std::vector<std::size_t> counts(static_cast<std::size_t>(n), elems);
      ops.push_back(coll::make_reduce_scatterv(ctx, spec.coll, in.data(), out.data(), counts,
                                               DataType::kInt32, ReduceOp::kSum));
    }
  }
  return ops;
}

bool exact(const CaseSpec& spec, const Buffers& b) {
  const auto n = static_cast<int>(b.out.size());
  const std::size_t m = spec.bytes;
  for (int r = 0; r < n; ++r) {
    const auto& out = b.out[static_cast<std::size_t>(r)];
    if (spec.bench == Bench::kBroadcast) {
      for (std::size_t i = 0; i < m; ++i) {
        if (out[i] != pattern(0, i)) return false;
      }
    } else if (spec.bench == Bench::kAllgather) {
      for (int s = 0; s < n; ++s) {
        for (std::size_t i = 0; i < m; ++i) {
          if (out[s * m + i] != pattern(s, i)) return false;
        }
      }
    } else {
      const std::size_t elems = m / 4;
      const std::int64_t ranks_sum = static_cast<std::int64_t>(n) * (n + 1) / 2;
      for (std::size_t e = 0; e < elems; ++e) {
        const std::size_t global = static_cast<std::size_t>(r) * elems + e;
        const auto want = static_cast<std::int32_t>(
            static_cast<std::uint32_t>(ranks_sum * static_cast<std::int64_t>(global + 1)));
        std::int32_t got;
        std::memcpy(&got, out.data() + 4 * e, 4);
        if (got != want) return false;
      }
    }
  }
  return true;
}

double bound_bytes(const CaseSpec& spec, int n) {
  // Broadcast: every receiver takes m in; allgather and reduce-scatter:
  // every rank takes in (N - 1) blocks of m, whatever the algorithm.
  if (spec.bench == Bench::kBroadcast) return static_cast<double>(spec.bytes);
  return static_cast<double>(spec.bytes) * (n - 1);
}

void collect(simworld::World& w, const CaseSpec& spec, CaseResult& res) {
  const int n = w.size();
  const double m = static_cast<double>(std::max<std::size_t>(spec.bytes, 1));
  for (int r = 0; r < n; ++r) {
    const Stats s = w.context(r).counters().snapshot();
    const transport::sim::RankCounters f = w.fabric().rank_counters(r);
    const auto repair = static_cast<double>(s.repair_bytes_requested);
    const auto lost = static_cast<double>(f.lost_bytes + f.port_drop_bytes);
    res.repair_bytes_mean += repair / n;
    res.repair_bytes_max = std::max(res.repair_bytes_max, repair);
    res.lost_bytes_max = std::max(res.lost_bytes_max, lost);
    // Datagram bytes include headers; repairs are payload: allow for it.
    res.excess_repair_max = std::max(res.excess_repair_max, repair - lost);
    res.control_mean += static_cast<double>(s.control_messages_sent) / n;
    res.control_max = std::max(res.control_max, static_cast<double>(s.control_messages_sent));
    res.peers_mean += static_cast<double>(f.reliable_peers) / n;
    res.peers_max = std::max(res.peers_max, static_cast<double>(f.reliable_peers));
    res.port_drops += f.port_drops;
    res.port_drops_max = std::max(res.port_drops_max, f.port_drops);
    res.port_peak_bytes = std::max(res.port_peak_bytes, f.port_peak_bytes);
    res.injected_max = std::max(res.injected_max, static_cast<double>(s.mcast_bytes_sent) / m);
  }
}

}  // namespace

const char* bench_name(Bench b) {
  switch (b) {
    case Bench::kBroadcast:
      return "bcast";
    case Bench::kAllgather:
      return "allgather";
    case Bench::kReduceScatter:
      return "reduce_scatter";
  }
  return "?";
}

CaseResult run_case(simworld::World& world, const CaseSpec& spec, double link_bytes_per_s,
                    common::Duration wall_limit) {
  CaseResult res;
  Buffers buffers;
  Ops ops = make_ops(world, spec, buffers);
  const auto t0 = std::chrono::steady_clock::now();
  simworld::RunResult run;
  const common::Status st = world.run(ops, wall_limit, run);
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.rounds = run.rounds;
  res.time_us = std::chrono::duration<double, std::micro>(run.elapsed).count();
  res.bound_us = bound_bytes(spec, world.size()) / link_bytes_per_s * 1e6;
  if (!st.is_ok()) {
    res.error = st.message();
    return res;
  }
  res.exact = exact(spec, buffers);
  collect(world, spec, res);
  return res;
}

}  // namespace mccl::bench::scale
