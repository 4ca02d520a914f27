#include "common/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "mccl/error.h"

namespace mccl::common {

namespace settings {
using T = SettingType;
// clang-format off
const Setting kLogLevel{"MCCL_LOG_LEVEL", T::kString, "warn",
    "Least severe message printed to stderr.", "error|warn|info|debug"};
const Setting kTransport{"MCCL_TRANSPORT", T::kString, "auto",
    "Datagram transport: auto picks sim for in-process worlds, else the best present.",
    "auto|sim|udp|ib"};
const Setting kReliable{"MCCL_RELIABLE", T::kString, "tcp",
    "Reliable transport of multi-process runs (repairs, control, fallbacks): tcp or ucx.",
    "tcp|ucx"};
const Setting kTransportSetupTimeoutMs{"MCCL_TRANSPORT_SETUP_TIMEOUT_MS", T::kInt, "5000",
    "How long creating a communicator waits for the reliable mesh (TCP or UCX) to connect and for every rank to hear the multicast group, in milliseconds; then every rank fails with an error naming the unreachable ranks and addresses."};
// transport/udp
const Setting kUdpIface{"MCCL_UDP_IFACE", T::kString, "auto",
    "Interface of the UDP multicast transport (and the address TCP repairs bind to), by name (eth0) or by IPv4 address; auto: the ranks agree on it, loopback when all share one host, else the IPv4 subnet every rank has an up, multicast-capable interface in (the launcher's network first), else an error listing each rank's candidates."};
const Setting kUdpRateMbit{"MCCL_UDP_RATE_MBIT", T::kDouble, "0",
    "Link rate the UDP senders pace to, in Mbit/s of IP bytes; allgather roots sending at once share it. 0 takes the interface's speed (/sys/class/net/IF/speed; unpaced where it reports none, as lo); negative sends unpaced."};
const Setting kUdpRcvbuf{"MCCL_UDP_RCVBUF", T::kInt, "33554432",
    "Receive buffer of a UDP multicast socket, in bytes; above net.core.rmem_max it needs root."};
const Setting kUdpMaxDatagram{"MCCL_UDP_MAX_DATAGRAM", T::kInt, "8972",
    "Largest UDP datagram sent, in bytes; the interface MTU minus 28 caps it. Same on all ranks."};
const Setting kUdpGso{"MCCL_UDP_GSO", T::kString, "auto",
    "Send runs of equal-size UDP datagrams as one UDP_SEGMENT (GSO) send of up to 64 KB: auto uses it when the kernel accepts it (and falls back, saying so once, when it refuses), on requires it, off never.",
    "auto|on|off"};
const Setting kUdpGro{"MCCL_UDP_GRO", T::kString, "auto",
    "Read coalesced runs of UDP datagrams (UDP_GRO) in one read of up to 64 KB and split them by the segment size: auto uses it when the kernel accepts it, on requires it, off never.",
    "auto|on|off"};
const Setting kUdpTestDropPermille{"MCCL_UDP_TEST_DROP_PERMILLE", T::kInt, "0",
    "Test hook: drop this many of every 1000 received UDP datagrams at random; 0 is off."};
// transport/ibud
const Setting kIbDev{"MCCL_IB_DEV", T::kString, "",
    "HCA port of the InfiniBand transport: mlx5_0:1, or mlx5_0 for its first active port; empty picks the first active InfiniBand port."};
const Setting kIbMgid{"MCCL_IB_MGID", T::kString, "",
    "Join this multicast GID (e.g. ff12:401b:ffff::1, pre-created by the SM) instead of a group derived per communicator."};
const Setting kIbIpoibIface{"MCCL_IB_IPOIB_IFACE", T::kString, "",
    "IPoIB interface rdma_cm joins multicast groups through; empty finds the one on the chosen port."};
const Setting kIbRxDepth{"MCCL_IB_RX_DEPTH", T::kInt, "4096",
    "Receive buffers kept posted per InfiniBand communicator; a datagram arriving when none is posted is lost."};
const Setting kIbSignalEvery{"MCCL_IB_SIGNAL_EVERY", T::kInt, "64",
    "Request a completion for one InfiniBand send in this many; it frees the send slots of all before it."};
const Setting kProtoEarlyBytes{"MCCL_PROTO_EARLY_BYTES", T::kInt, "8388608",
    "Bytes of datagrams kept per communicator for collectives not yet started; overflow is repaired later."};
const Setting kProtoReorderWindow{"MCCL_PROTO_REORDER_WINDOW", T::kInt, "64",
    "A missing chunk this many chunks behind the newest one received is taken as lost."};
const Setting kProtoStallFactor{"MCCL_PROTO_STALL_FACTOR", T::kDouble, "16",
    "Silence longer than this many observed inter-arrival gaps means the rest was lost."};
const Setting kProtoStallMinUs{"MCCL_PROTO_STALL_MIN_US", T::kInt, "1000",
    "Lower bound of the observed-rate loss deadline, in microseconds."};
const Setting kProtoStallMaxUs{"MCCL_PROTO_STALL_MAX_US", T::kInt, "20000",
    "Upper bound of the observed-rate loss deadline, in microseconds."};
const Setting kProtoFirstTimeoutUs{"MCCL_PROTO_FIRST_TIMEOUT_US", T::kInt, "2000",
    "Wait before repairing a stream of which nothing at all has arrived, in microseconds."};
const Setting kProtoRepairMaxBytes{"MCCL_PROTO_REPAIR_MAX_BYTES", T::kInt, "65536",
    "Largest payload of one repair message over the reliable transport."};
const Setting kProtoSendBatch{"MCCL_PROTO_SEND_BATCH", T::kInt, "0",
    "Datagrams a root injects per progress call before it lets receives run; 0 = about 384 KiB' worth (64 to 1024 datagrams, by the MTU)."};
const Setting kProtoEagerBytes{"MCCL_PROTO_EAGER_BYTES", T::kInt, "65536",
    "A broadcast or allgather whose right neighbour may still ask for at most this many bytes completes as soon as this rank holds everything, keeping a copy to serve that neighbour until it releases it; 0 turns eager completion off. Thread and offload engines only: under the inline engine a rank moves only inside its own calls, so it always waits for the release."};
const Setting kProtoEagerBudget{"MCCL_PROTO_EAGER_BUDGET", T::kInt, "8388608",
    "Bytes of eager copies one communicator keeps at most; beyond it a collective waits for its neighbour's release."};
const Setting kProtoChecksum{"MCCL_PROTO_CHECKSUM", T::kBool, "1",
    "Protect every datagram with CRC32C (header and payload); unused while MCCL_PROTO_AUTH is on."};
const Setting kProtoAuth{"MCCL_PROTO_AUTH", T::kString, "auto",
    "Authenticate every multicast datagram with a 16-byte Poly1305 tag under a per-communicator "
    "key (docs/security.md); auto is on when built with libsodium, except over InfiniBand UD. "
    "Every rank must agree.",
    "auto|on|off"};
const Setting kCollTimeoutMs{"MCCL_COLL_TIMEOUT_MS", T::kInt, "60000",
    "Deadline of a collective and of every blocking wait, in milliseconds; a value past "
    "the clock's range (~292 years, e.g. 9223372036854775807) means no deadline."};
const Setting kCollAllgatherAlgo{"MCCL_COLL_ALLGATHER_ALGO", T::kString, "auto",
    "Allgather algorithm: multicast broadcasts or the point-to-point ring.", "auto|multicast|ring"};
const Setting kCollAllgatherRoots{"MCCL_COLL_ALLGATHER_ROOTS", T::kInt, "0",
    "Roots of an allgather injecting at once; 0 means all of them."};
const Setting kCollBcastAlgo{"MCCL_COLL_BCAST_ALGO", T::kString, "auto",
    "Broadcast algorithm: multicast or the pipelined point-to-point chain.", "auto|multicast|chain"};
const Setting kCollChainSegmentBytes{"MCCL_COLL_CHAIN_SEGMENT_BYTES", T::kInt, "131072",
    "Segment size of the point-to-point chain broadcast and ring allgather."};
// coll/reduce
const Setting kCollReduceSegmentBytes{"MCCL_COLL_REDUCE_SEGMENT_BYTES", T::kInt, "65536",
    "Segment size of the ring reduce-scatter and recursive-doubling allreduce (rounded down to whole elements)."};
const Setting kCollRsShare{"MCCL_COLL_RS_SHARE", T::kDouble, "0.5",
    "Share (0, 1] of the send rate a reduce-scatter's ring (also inside an allreduce) gets against multicast collectives running beside it: per progress step it sends at most share/(1-share) x MCCL_PROTO_SEND_BATCH datagrams' worth (at least one segment); 1 means no limit. CommOptions::reduce_scatter_send_share overrides it."};
const Setting kCollAllreduceAlgo{"MCCL_COLL_ALLREDUCE_ALGO", T::kString, "auto",
    "Allreduce algorithm: reduce-scatter + multicast allgather, point-to-point ring, or recursive doubling.",
    "auto|rs_mcast|ring|recursive_doubling"};
const Setting kCollAllreduceSmallBytes{"MCCL_COLL_ALLREDUCE_SMALL_BYTES", T::kInt, "16384",
    "auto uses recursive doubling for allreduces smaller than this many bytes. Same on all ranks."};
const Setting kProgress{"MCCL_PROGRESS", T::kString, "inline",
    "Progress engine: inline (the caller's thread), thread (a pinned host thread), offload.",
    "inline|thread|offload"};
const Setting kProgressCpu{"MCCL_PROGRESS_CPU", T::kInt, "-1",
    "CPU of the progress thread; -1 picks the last core near the network interface."};
const Setting kProgressSpinUs{"MCCL_PROGRESS_SPIN_US", T::kInt, "50",
    "How long the progress thread spins after the last event before it sleeps, in microseconds."};
const Setting kOffloadSocket{"MCCL_OFFLOAD_SOCKET", T::kString, "",
    "Unix socket of mccl_offloadd (MCCL_PROGRESS=offload); empty: mccl-offload-<job>-<netns>.sock in $XDG_RUNTIME_DIR when private, else in /tmp/mccl-<uid> (mode 0700)."};
const Setting kOffloadDaemon{"MCCL_OFFLOAD_DAEMON", T::kString, "",
    "The mccl_offloadd binary started when no daemon answers; empty: beside libmccl, the executable, the install bindir, else $PATH."};
const Setting kOffloadJob{"MCCL_OFFLOAD_JOB", T::kString, "",
    "Job name in the default offload socket path (one daemon per host and job); empty: derived from MCCL_BOOTSTRAP_ADDR."};
const Setting kOffloadLog{"MCCL_OFFLOAD_LOG", T::kString, "",
    "Log file of a daemon started by the library; empty: the socket path with .log appended."};
// bootstrap
const Setting kBootstrapAddr{"MCCL_BOOTSTRAP_ADDR", T::kString, "",
    "host:port (a name or IPv4) of the TCP bootstrap store that rank 0 serves; not needed under a PMIx launcher."};
const Setting kRank{"MCCL_RANK", T::kInt, "-1",
    "This process's rank for the TCP bootstrap; -1 (unset) takes it from the launcher (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK)."};
const Setting kWorldSize{"MCCL_WORLD_SIZE", T::kInt, "-1",
    "Number of ranks for the TCP bootstrap; -1 (unset) takes it from the launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE)."};
const Setting kBootstrapSecret{"MCCL_BOOTSTRAP_SECRET", T::kString, "",
    "Job secret every rank sends in its TCP-store hello (mccl_run sets a random one); empty: derived from the uid, the store port and the launcher's job id (docs/security.md)."};
const Setting kBootstrapTimeoutMs{"MCCL_BOOTSTRAP_TIMEOUT_MS", T::kInt, "30000",
    "How long every rank may take to reach the bootstrap (TCP store or PMIx fence), in milliseconds."};
const Setting kMpiEnable{"MCCL_MPI_ENABLE", T::kBool, "1",
    "libmccl_mpi: 0 sends every intercepted call to MPI unchanged (on all ranks when any rank sets it)."};
const Setting kMpiMinBytes{"MCCL_MPI_MIN_BYTES", T::kInt, "8192",
    "libmccl_mpi: messages smaller than this go to MPI; rank 0's value is used on every rank."};
const Setting kMpiDebug{"MCCL_MPI_DEBUG", T::kBool, "0",
    "libmccl_mpi: log each serve-or-fall-back decision with its reason, once per communicator, call kind and reason."};
const Setting kMpiStats{"MCCL_MPI_STATS", T::kBool, "0",
    "libmccl_mpi: print one statistics line per rank at MPI_Finalize."};
const Setting kMpiSingleHost{"MCCL_MPI_SINGLE_HOST", T::kBool, "0",
    "libmccl_mpi: 1 serves communicators whose ranks all share one host (one kernel and network namespace) with MCCL too; by default they are left to MPI, whose shared memory serves them better. Rank 0's value is used on every rank (tests set it)."};
const Setting kMpiEager{"MCCL_MPI_EAGER", T::kBool, "1",
    "libmccl_mpi: create MPI_COMM_WORLD's MCCL state in MPI_Init, so its nonblocking calls are served from the start."};
// clang-format on
}  // namespace settings

const std::vector<const Setting*>& all_settings() {
  using namespace settings;
  static const std::vector<const Setting*> all = {
      &kLogLevel,
      &kTransport,
      &kReliable,
      &kTransportSetupTimeoutMs,
      &kProtoEarlyBytes,
      &kProtoReorderWindow,
      &kProtoStallFactor,
      &kProtoStallMinUs,
      &kProtoStallMaxUs,
      &kProtoFirstTimeoutUs,
      &kProtoRepairMaxBytes,
      &kProtoEagerBytes,
      &kProtoEagerBudget,
      &kProtoSendBatch,
      &kProtoChecksum,
      &kProtoAuth,
      &kCollTimeoutMs,
      &kCollAllgatherAlgo,
      &kCollAllgatherRoots,
      &kCollBcastAlgo,
      &kCollChainSegmentBytes,
      &kCollReduceSegmentBytes,
      &kCollRsShare,
      &kCollAllreduceAlgo,
      &kCollAllreduceSmallBytes,
      &kProgress,
      &kProgressCpu,
      &kProgressSpinUs,
      &kOffloadSocket,
      &kOffloadDaemon,
      &kOffloadJob,
      &kOffloadLog,
      &kUdpIface,
      &kUdpRateMbit,
      &kUdpRcvbuf,
      &kUdpMaxDatagram,
      &kUdpGso,
      &kUdpGro,
      &kUdpTestDropPermille,
      &kIbDev,
      &kIbMgid,
      &kIbIpoibIface,
      &kIbRxDepth,
      &kIbSignalEvery,
      &kBootstrapAddr,
      &kRank,
      &kWorldSize,
      &kBootstrapTimeoutMs,
      &kBootstrapSecret,
      &kMpiEnable,
      &kMpiMinBytes,
      &kMpiDebug,
      &kMpiStats,
      &kMpiSingleHost,
      &kMpiEager,
  };
  return all;
}

std::optional<std::string> Setting::from_env() const {
  const char* v = std::getenv(name_);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

const char* Setting::source() const { return from_env() ? "environment" : "default"; }

std::string Setting::raw() const { return from_env().value_or(default_); }

namespace {
[[noreturn]] void bad_value(const Setting& s, const std::string& value, const char* expected) {
  throw Error(ErrorCode::kInvalidArgument,
              std::string(s.name()) + "=\"" + value + "\" is not valid: expected " + expected);
}
}  // namespace

std::int64_t Setting::get_int(std::int64_t min, std::int64_t max) const {
  const std::string v = raw();
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(v.c_str(), &end, 0);
  if (errno != 0 || end == v.c_str() || *end != '\0') bad_value(*this, v, "an integer");
  if (parsed < min || parsed > max) {
    bad_value(*this, v,
              ("an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]").c_str());
  }
  return parsed;
}

bool Setting::get_bool() const {
  const std::string v = raw();
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  bad_value(*this, v, "1/0, true/false, yes/no or on/off");
}

double Setting::get_double() const {
  const std::string v = raw();
  char* end = nullptr;
  errno = 0;
  double parsed = std::strtod(v.c_str(), &end);
  // strtod also accepts "nan" and "inf", which no setting can mean.
  if (errno != 0 || end == v.c_str() || *end != '\0' || !std::isfinite(parsed)) {
    bad_value(*this, v, "a finite number");
  }
  return parsed;
}

std::string Setting::get() const {
  std::string v = raw();
  if (allowed_ == nullptr) return v;
  std::string_view rest(allowed_);
  while (!rest.empty()) {
    auto bar = rest.find('|');
    if (rest.substr(0, bar) == v) return v;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  bad_value(*this, v, (std::string("one of ") + allowed_).c_str());
}

}  // namespace mccl::common
