// mccl_scale_sim: broadcast, allgather and reduce-scatter at N = 2 ... 1,024
// (or more) ranks on the in-memory fabric with a switch model, in virtual
// time (bench/scale/README.md). Prints a table and appends JSON lines.
//
//   mccl_scale_sim [--ranks 2,4,...] [--benches bcast,allgather,reduce_scatter]
//       [--loss 0,0.01] [--bcast-bytes 1m] [--ag-total 2m] [--ag-max 64k]
//       [--rs-total 1m] [--link-gbit 1] [--port-buffer 512k]
//       [--sender-burst 256k] [--incast-budget 0] [--roots 0|auto|K]
//       [--latency-us 2] [--tick-us T] [--seed S] [--wall-limit-s 300]
//       [--label NAME] [--json FILE]
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cases.h"
#include "options.h"
#include "setup/protocol_settings.h"

namespace mccl::bench::scale {
namespace {

// Heap bytes in use (glibc): exact where the resident set is not, since
// freed buffers stay resident in the allocator's arenas.
double heap_bytes() {
  const struct mallinfo2 mi = ::mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd);
}

// Every rank's link rate, which the setting's incast budget follows where
// it is auto, as the ranks of a real communicator agree on it.
std::uint32_t link_mbit(const Options& o) { return static_cast<std::uint32_t>(o.link_gbit * 1e3); }

// The incast budget the roots run under: the option's, else the setting's.
std::size_t budget(const Options& o) {
  return o.incast_budget ? *o.incast_budget
                         : setup::protocol_config_from_settings(1500, link_mbit(o)).incast_bytes;
}

simworld::WorldConfig world_config(const Options& o, int n, double loss) {
  simworld::WorldConfig w;
  w.ranks = n;
  w.fabric.loss = loss;
  w.fabric.seed = o.seed;
  w.fabric.link_gbit_per_s = o.link_gbit;
  w.fabric.port_buffer_bytes = o.port_buffer;
  w.fabric.sender_burst_bytes = o.sender_burst;
  w.fabric.timed_reliable = true;
  w.fabric.latency = std::chrono::nanoseconds(static_cast<std::int64_t>(o.latency_us * 1e3));
  w.fabric.receive_depth = 1 << 20;  // the socket: the port model drops first
  // A step of one datagram's time on the link: no sender can book more
  // than its link allows between two looks at its receivers.
  const double tick_us =
      o.tick_us > 0 ? o.tick_us : static_cast<double>(w.fabric.mtu) * 8e-3 / o.link_gbit;
  w.tick = std::chrono::nanoseconds(static_cast<std::int64_t>(tick_us * 1e3));
  w.idle_step = std::max(w.idle_step, 4 * w.tick);
  w.protocol = setup::protocol_config_from_settings(w.fabric.mtu, link_mbit(o));
  if (o.incast_budget) w.protocol.incast_bytes = *o.incast_budget;
  return w;
}

CaseSpec case_spec(const Options& o, Bench b, int n) {
  CaseSpec s;
  s.bench = b;
  s.coll.allgather = AllgatherAlgorithm::kMulticast;
  s.coll.broadcast = BroadcastAlgorithm::kMulticast;
  s.coll.concurrent_roots = o.roots;
  const auto ranks = static_cast<std::size_t>(n);
  if (b == Bench::kBroadcast) s.bytes = o.bcast_bytes;
  if (b == Bench::kAllgather)
    s.bytes = std::max<std::size_t>(1, std::min(o.ag_max, o.ag_total / ranks));
  if (b == Bench::kReduceScatter) s.bytes = std::max<std::size_t>(4, o.rs_total / ranks / 4 * 4);
  return s;
}

void report(const Options& o, const CaseSpec& s, int n, double loss, const CaseResult& r,
            double state_per_rank, std::FILE* json) {
  const double m = static_cast<double>(s.bytes);
  std::printf("%-14s %5d %9zu %5.2f %11.1f %11.1f %6.3f %8.4f %8.4f %7.1f %6.1f %9llu %9.0f %s\n",
              bench_name(s.bench), n, s.bytes, loss * 100, r.time_us, r.bound_us,
              r.time_us / r.bound_us, r.repair_bytes_max / m, r.excess_repair_max / m,
              r.control_max, r.peers_max, static_cast<unsigned long long>(r.port_drops),
              state_per_rank, r.error.empty() ? (r.exact ? "ok" : "WRONG") : r.error.c_str());
  std::fflush(stdout);
  if (json == nullptr) return;
  std::fprintf(
      json,
      "{\"bench\":\"%s\",\"label\":\"%s\",\"ranks\":%d,\"bytes\":%zu,\"loss\":%g,"
      "\"link_gbit\":%g,\"port_buffer\":%zu,\"sender_burst\":%zu,\"incast_budget\":%zu,"
      "\"roots\":%d,\"time_us\":%.3f,\"bound_us\":%.3f,\"ratio\":%.4f,\"exact\":%s,"
      "\"error\":\"%s\",\"repair_bytes_mean\":%.1f,\"repair_bytes_max\":%.1f,"
      "\"repairs_per_m_max\":%.5f,\"excess_repair_per_m_max\":%.5f,\"lost_bytes_max\":%.1f,"
      "\"control_msgs_mean\":%.2f,\"control_msgs_max\":%.0f,\"peers_mean\":%.2f,"
      "\"peers_max\":%.0f,\"port_drops\":%llu,\"port_drops_max\":%llu,"
      "\"port_peak_bytes\":%llu,\"injected_max_m\":%.4f,\"state_bytes_per_rank\":%.0f,"
      "\"state_after_bytes_per_rank\":%.0f,"
      "\"rounds\":%llu,\"wall_s\":%.2f}\n",
      bench_name(s.bench), o.label.c_str(), n, s.bytes, loss, o.link_gbit, o.port_buffer,
      o.sender_burst, budget(o), o.roots, r.time_us, r.bound_us, r.time_us / r.bound_us,
      r.exact ? "true" : "false", r.error.c_str(), r.repair_bytes_mean, r.repair_bytes_max,
      r.repair_bytes_max / m, r.excess_repair_max / m, r.lost_bytes_max, r.control_mean,
      r.control_max, r.peers_mean, r.peers_max, static_cast<unsigned long long>(r.port_drops),
      static_cast<unsigned long long>(r.port_drops_max),
      static_cast<unsigned long long>(r.port_peak_bytes), r.injected_max, state_per_rank,
      r.state_after_bytes, static_cast<unsigned long long>(r.rounds), r.wall_s);
  std::fflush(json);
}

int run(const Options& o) {
  std::FILE* json = o.json.empty() ? nullptr : std::fopen(o.json.c_str(), "a");
  if (!o.json.empty() && json == nullptr) {
    std::fprintf(stderr, "mccl_scale_sim: cannot open %s\n", o.json.c_str());
    return 1;
  }
  std::printf(
      "# link %g Gbit/s, port buffer %zu B, sender burst %zu B, incast budget %zu B, "
      "roots %d, latency %g us (virtual time)\n",
      o.link_gbit, o.port_buffer, o.sender_burst, budget(o), o.roots, o.latency_us);
  std::printf("%-14s %5s %9s %5s %11s %11s %6s %8s %8s %7s %6s %9s %9s %s\n", "# bench", "ranks",
              "bytes", "loss%", "time_us", "bound_us", "ratio", "repair/m", "excess/m", "ctl_max",
              "peers", "portdrops", "state_B", "result");
  int failures = 0;
  for (double loss : o.losses) {
    for (Bench b : o.benches) {
      for (int n : o.ranks) {
        const double heap0 = heap_bytes();
        simworld::World world(world_config(o, n, loss));
        const double created = (heap_bytes() - heap0) / n;
        const CaseSpec spec = case_spec(o, b, n);
        CaseResult r = run_case(world, spec, o.link_gbit * 1e9 / 8, o.wall_limit);
        r.state_after_bytes = (heap_bytes() - heap0) / n;
        report(o, spec, n, loss, r, created, json);
        if (!r.error.empty() || !r.exact) ++failures;
      }
    }
  }
  if (json != nullptr) std::fclose(json);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace mccl::bench::scale

int main(int argc, char** argv) {
  mccl::bench::scale::Options o;
  if (!mccl::bench::scale::parse(argc, argv, o)) return 2;
  return mccl::bench::scale::run(o);
}
