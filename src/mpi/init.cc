// MPI_Init, MPI_Init_thread and MPI_Finalize: libmccl_mpi's state is made
// after PMPI_Init and taken down before PMPI_Finalize.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "mpi/comm_cache.h"
#include "mpi/export.h"
#include "mpi/log.h"
#include "mpi/requests.h"
#include "mpi/state.h"

namespace mccl::mpi {

Global& global() {
  static Global g;
  return g;
}

std::recursive_mutex& tables_lock() {
  static auto* m = new std::recursive_mutex;  // never destroyed: MPI may call back late
  return *m;
}

constexpr common::EnumName<Kind> kKindNames[] = {
    {Kind::kBcast, "MPI_Bcast"},
    {Kind::kAllgather, "MPI_Allgather"},
    {Kind::kAllgatherv, "MPI_Allgatherv"},
    {Kind::kIbcast, "MPI_Ibcast"},
    {Kind::kIallgather, "MPI_Iallgather"},
    {Kind::kIallgatherv, "MPI_Iallgatherv"},
    {Kind::kAllreduce, "MPI_Allreduce"},
    {Kind::kReduceScatterBlock, "MPI_Reduce_scatter_block"},
    {Kind::kReduceScatter, "MPI_Reduce_scatter"}};

const char* kind_name(Kind k) { return common::name_of(k, kKindNames); }

bool is_nonblocking(Kind k) {
  return k == Kind::kIbcast || k == Kind::kIallgather || k == Kind::kIallgatherv;
}

namespace {

// What each rank proposes at MPI_Init; every rank computes the same result.
struct Proposal {
  std::int64_t enable;       // MCCL_MPI_ENABLE and a valid environment
  std::int64_t min_bytes;    // MCCL_MPI_MIN_BYTES, kMinBytesAuto for auto
  std::int64_t single_host;  // MCCL_MPI_SINGLE_HOST
  std::int64_t host_scheme;  // MCCL_MPI_HIERARCHY
  std::int64_t leaders_bcast_max_bytes;
};

std::string min_bytes_text(std::int64_t min_bytes) {
  return min_bytes == kMinBytesAuto ? "auto (measured per collective and team size)"
                                    : std::to_string(min_bytes);
}

void start(int provided) {
  Global& g = global();
  g.initialized = true;
  g.settings = read_settings();
  PMPI_Comm_rank(MPI_COMM_WORLD, &g.world_rank);
  if (!g.settings.error.empty()) {
    warnf("%s; MCCL is disabled on every rank", g.settings.error.c_str());
  }
  int size = 1;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  g.thread_multiple = provided == MPI_THREAD_MULTIPLE;
  Proposal mine{g.settings.enable && g.settings.error.empty() ? 1 : 0, g.settings.min_bytes,
                g.settings.single_host ? 1 : 0, static_cast<std::int64_t>(g.settings.host_scheme),
                g.settings.leaders_bcast_max_bytes};
  std::vector<Proposal> all(static_cast<std::size_t>(size));
  if (PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE,
                     MPI_COMM_WORLD) != MPI_SUCCESS) {
    g.inactive_reason = "MPI: MPI_Init's agreement failed";
    return;
  }
  bool enable = true, same_min = true;
  for (const Proposal& p : all) {
    enable = enable && p.enable != 0;
    same_min = same_min && p.min_bytes == all[0].min_bytes;
  }
  g.settings.min_bytes = all[0].min_bytes;  // rank 0's wins
  g.settings.single_host = all[0].single_host != 0;
  g.settings.host_scheme = static_cast<HostScheme>(all[0].host_scheme);
  g.settings.leaders_bcast_max_bytes = all[0].leaders_bcast_max_bytes;
  if (!same_min && g.world_rank == 0) {
    warnf("MCCL_MPI_MIN_BYTES differs between ranks; every rank uses rank 0's %s",
          min_bytes_text(g.settings.min_bytes).c_str());
  }
  if (!enable) {
    g.inactive_reason = "MPI: MCCL_MPI_ENABLE=0 (or an invalid MCCL_MPI_* value) on some rank";
  } else if (PMPI_Comm_dup(MPI_COMM_SELF, &g.self) != MPI_SUCCESS ||
             create_keyval() != MPI_SUCCESS) {
    g.inactive_reason = "MPI: could not create libmccl_mpi's MPI objects";
  } else {
    g.active = true;
  }
  if (g.world_rank == 0) {
    debugf("libmccl_mpi %s (%s); MCCL_MPI_MIN_BYTES=%s, %d ranks%s",
           g.active ? "active" : "inactive",
           g.active ? "MCCL serves eligible calls" : g.inactive_reason,
           min_bytes_text(g.settings.min_bytes).c_str(), size,
           g.thread_multiple ? ", MPI_THREAD_MULTIPLE" : "");
  }
  // Nonblocking calls never create MCCL state, so MPI_COMM_WORLD's is made
  // here (collective, like MPI_Init) unless MCCL_MPI_EAGER=0.
  if (g.active && g.settings.eager && size > 1) {
    if (CommEntry* e = entry_for(MPI_COMM_WORLD)) create_mccl(MPI_COMM_WORLD, *e);
  }
}

void print_stats() {
  const Global& g = global();
  const Counters& c = g.counters;
  std::uint64_t served = 0, fallback = 0;
  std::string per_kind;
  for (int k = 0; k < kKinds; ++k) {
    const std::uint64_t s = c.served[k], f = c.fallback[k];
    served += s;
    fallback += f;
    if (s + f == 0) continue;
    per_kind += std::string(" ") + kind_name(static_cast<Kind>(k)) + "=" + std::to_string(s) + "/" +
                std::to_string(f);
  }
  std::string sums;
  for (std::size_t k = 0; k < std::size(kStatCounters); ++k) {
    sums += std::string(" ") + kStatCounters[k].name + "=" + std::to_string(c.stats[k].load());
  }
  std::printf("mccl_mpi stats: rank=%d served=%" PRIu64 " fallback=%" PRIu64 " failed=%" PRIu64
              " served_bytes=%" PRIu64 " comms=%" PRIu64 " comms_failed=%" PRIu64 "%s%s\n",
              g.world_rank, served, fallback, c.failed_calls.load(), c.served_bytes.load(),
              c.comms_created.load(), c.comms_failed.load(), sums.c_str(), per_kind.c_str());
  std::fflush(stdout);
}

void stop() {
  Global& g = global();
  if (!g.initialized) return;
  drain_all();
  finalize_mccl();
  g.active = false;
  g.inactive_reason = "MPI: after MPI_Finalize";
  if (g.settings.stats) print_stats();
}

}  // namespace
}  // namespace mccl::mpi

using namespace mccl::mpi;

MCCL_MPI_EXPORT int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) start(MPI_THREAD_SINGLE);
  return rc;
}

MCCL_MPI_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) start(*provided);
  return rc;
}

MCCL_MPI_EXPORT int MPI_Finalize() {
  stop();
  return PMPI_Finalize();
}
