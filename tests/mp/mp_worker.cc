// One rank of a multi-process test: joins the job through the environment
// (MCCL_BOOTSTRAP_ADDR, MCCL_RANK, MCCL_WORLD_SIZE), runs the requested
// collectives over the real transports, checks every byte, and prints one
// "stats" line. Exit code 0 = all correct; 2 = wrong data; 3 = an MCCL
// error (its code and message are printed).
//
//   mp_worker sweep            broadcast from every root and allgather(v),
//                              sizes 0 .. 1 MiB around the datagram size
//   mp_worker die RANK         everyone starts an allgather; RANK exits
//                              mid-way; the others must fail, not hang
//   mp_worker expect-error     like die, for the survivors: exit 0 only if
//                              the collective failed with a peer failure
//   mp_worker setup-fails RANK RANK alone names an interface that does not
//                              exist (MCCL_UDP_IFACE=nosuch0): creating the
//                              communicator must fail on every rank with an
//                              error naming RANK and the interface; exit 0
//                              only then
//   mp_worker setup-timeout MS creation with CommOptions::setup_timeout = MS
//                              where no rank can hear the group (the test
//                              drops every datagram received): it must fail
//                              with kUnavailable saying "after MS ms"
//                              (not after MCCL_TRANSPORT_SETUP_TIMEOUT_MS);
//                              exit 0 only then
//   mp_worker kill RANK        after a barrier everyone starts an allgather;
//                              RANK drives it for 20 ms, prints "rank R
//                              killed at T" and sends itself SIGKILL; the
//                              survivors must fail with a peer failure and
//                              print "rank R error at T" (T: CLOCK_MONOTONIC seconds,
//                              one clock for every process of the host, so
//                              the launcher can compute the detection delay)
//
//   mp_worker reuse M ROUNDS   ROUNDS rounds of an allgather of M bytes per
//                              rank, a broadcast of M bytes, a reduce-
//                              scatter and an allreduce (out of place, then
//                              in place) of M-byte int32 blocks and (but
//                              under the offload engine) an alltoall of
//                              M-byte blocks, each rank
//                              overwriting its buffers with the next
//                              round's bytes as soon as a call returns;
//                              every byte checked. A send still reading a
//                              returned buffer (a lent send not reclaimed,
//                              transport/reliable.h) shows as wrong bytes.
//
// Modes for the namespace fabric (tests/fabric/), where each rank has a
// link of its own whose counters /sys/class/net/<MCCL_UDP_IFACE>/statistics
// show (ip netns exec remounts /sys):
//   mp_worker txbytes M        one allgather of M bytes per rank, bracketed
//                              by barriers; prints "txbytes rank=R bytes=D
//                              m=M ..." with D the growth of the link's
//                              tx_bytes, and "barrier=B", what one barrier
//                              alone put on it (part of D)
//   mp_worker txbytes-bcast M [ROOT]
//                              the same for a broadcast of M bytes from ROOT
//                              (default 0): "txbytes-bcast rank=R bytes=D ..."
//   mp_worker txbytes-allreduce S
//                              the same for an allreduce (int32 sum) of S bytes
//                              (algorithm from MCCL_COLL_ALLREDUCE_ALGO):
//                              "txbytes-allreduce rank=R bytes=D m=S ..."
//   mp_worker hang RANK        like die, but RANK stays alive, sockets open,
//                              and makes no call for MCCL_COLL_TIMEOUT_MS + 4 s
//                              (with MCCL_PROGRESS=thread its progress thread
//                              still finishes the allgather; it then misses the
//                              barrier), then exits; the others must fail
//                              (timeout or peer failure), not hang
//   mp_worker noise FILE ROUNDS
//                              prints "noise rank=R waiting", waits (up to
//                              60 s) until FILE exists, then runs ROUNDS
//                              rounds of broadcasts and allgather(v), each
//                              byte-checked, while a foreign sender sprays
//                              the group; prints "noise rank=R rounds=K
//                              seconds=S" and a "counters" line
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "mccl/mccl.hpp"
#include "mccl/tcp_bootstrap.h"
#include "mp_checks.h"
#include "mp_reuse.h"

namespace {

using mccl::mp::check;
using mccl::mp::pattern;

void print_stats(const mccl::Communicator& c) {
  mccl::Stats s = c.stats();
  std::printf(
      "stats rank=%d mcast_bytes_sent=%llu mcast_datagrams_sent=%llu repairs_requested=%llu "
      "repairs_served=%llu control=%llu invalid=%llu early=%llu mcast_datagrams_received=%llu "
      "stale=%llu duplicate=%llu early_dropped=%llu p2p_collectives=%llu\n",
      c.rank(), (unsigned long long)s.mcast_bytes_sent, (unsigned long long)s.mcast_datagrams_sent,
      (unsigned long long)s.repairs_requested, (unsigned long long)s.repairs_served,
      (unsigned long long)s.control_messages_sent, (unsigned long long)s.dropped_invalid,
      (unsigned long long)s.early_arrivals_stored, (unsigned long long)s.mcast_datagrams_received,
      (unsigned long long)s.dropped_stale, (unsigned long long)s.dropped_duplicate,
      (unsigned long long)s.early_arrivals_dropped, (unsigned long long)s.p2p_collectives);
}

int sweep(mccl::Communicator& c) {
  const int n = c.size(), me = c.rank();
  const std::size_t payload = 8972 - 40;  // the default largest datagram's payload
  std::vector<std::size_t> sizes = {0,           1,       1459,        1460,  1461,
                                    payload - 1, payload, payload + 1, 65536, 1 << 20};
  std::uint64_t salt = 1;
  for (std::size_t bytes : sizes) {
    for (int root = 0; root < n; ++root, ++salt) {
      std::vector<std::byte> buf(bytes);
      if (me == root) {
        for (std::size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, i, salt);
      }
      c.broadcast(buf.data(), bytes, root);
      if (!check(buf.data(), bytes, root, salt, "broadcast")) return 2;
    }
    ++salt;
    std::vector<std::byte> send(bytes), recv(bytes * n);
    for (std::size_t i = 0; i < bytes; ++i) send[i] = pattern(me, i, salt);
    c.allgather(send.data(), recv.data(), bytes);
    for (int r = 0; r < n; ++r) {
      if (!check(recv.data() + r * bytes, bytes, r, salt, "allgather")) return 2;
    }
  }
  // allgatherv with uneven counts, one of them zero.
  std::vector<std::size_t> counts(n), displs(n);
  std::size_t total = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = r == 1 ? 0 : 3000 * r + 11;
    displs[r] = total;
    total += counts[r];
  }
  ++salt;
  std::vector<std::byte> send(counts[me]), recv(total);
  for (std::size_t i = 0; i < counts[me]; ++i) send[i] = pattern(me, i, salt);
  c.allgatherv(send.data(), recv.data(), counts, displs);
  for (int r = 0; r < n; ++r) {
    if (!check(recv.data() + displs[r], counts[r], r, salt, "allgatherv")) return 2;
  }
  c.barrier();
  return 0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// steady_clock is CLOCK_MONOTONIC: the same clock in every process of a host.
double monotonic_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The survivors' side of `die` and `hang`: an allgather and a barrier that
// must fail, with `expected` or kPeerFailure. Prints how long the error took.
int survive(mccl::Communicator& c, std::size_t m, int victim, const char* fate,
            mccl::ErrorCode expected) {
  std::vector<std::byte> send(m), recv(m * c.size());
  auto t0 = std::chrono::steady_clock::now();
  try {
    c.allgather(send.data(), recv.data(), m);
    c.barrier();
  } catch (const mccl::Error& e) {
    const double at = monotonic_now();
    std::printf("rank %d failed after %.3f s with %s: %s\n", c.rank(), seconds_since(t0),
                mccl::to_string(e.code()), e.what());
    std::printf("rank %d error at %.6f\n", c.rank(), at);
    const bool ok = e.code() == expected || e.code() == mccl::ErrorCode::kPeerFailure;
    return ok ? 0 : 4;
  }
  std::printf("rank %d: the collective succeeded although rank %d %s\n", c.rank(), victim, fate);
  return 5;
}

int die(mccl::Communicator& c, int victim) {
  const std::size_t m = 4 << 20;
  if (c.rank() == victim) {
    std::vector<std::byte> send(m), recv(m * c.size());
    mccl::Request r = c.iallgather(send.data(), recv.data(), m);
    for (int i = 0; i < 3; ++i) c.progress();
    std::printf("rank %d exits mid-collective\n", c.rank());
    std::fflush(stdout);
    _exit(0);  // no goodbye: as a crash
  }
  return survive(c, m, victim, "died", mccl::ErrorCode::kPeerFailure);
}

// Like die, but the victim is killed while the data flows: everyone has
// entered the allgather (after a barrier) and the victim has driven it for
// a while. SIGKILL: nothing of the victim runs after it.
int kill_mid(mccl::Communicator& c, int victim) {
  const std::size_t m = 4 << 20;
  c.barrier();
  if (c.rank() == victim) {
    std::vector<std::byte> send(m), recv(m * c.size());
    mccl::Request r = c.iallgather(send.data(), recv.data(), m);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until && !r.test()) c.progress();
    std::printf("rank %d killed at %.6f\n", c.rank(), monotonic_now());
    std::fflush(stdout);
    ::raise(SIGKILL);
  }
  return survive(c, m, victim, "was killed", mccl::ErrorCode::kPeerFailure);
}

// ---- fabric modes ---------------------------------------------------------

void print_counters(const mccl::Communicator& c) {
  mccl::Stats s = c.stats();
  std::printf("counters rank=%d mcast_datagrams_sent=%" PRIu64 " mcast_datagrams_received=%" PRIu64
              " repairs_requested=%" PRIu64 " repair_bytes_requested=%" PRIu64
              " repairs_served=%" PRIu64 " repair_bytes_served=%" PRIu64 " control=%" PRIu64
              " p2p_bytes_sent=%" PRIu64 " invalid=%" PRIu64 " stale=%" PRIu64 " duplicate=%" PRIu64
              " early=%" PRIu64 " early_dropped=%" PRIu64 " completed=%" PRIu64 "\n",
              c.rank(), s.mcast_datagrams_sent, s.mcast_datagrams_received, s.repairs_requested,
              s.repair_bytes_requested, s.repairs_served, s.repair_bytes_served,
              s.control_messages_sent, s.p2p_bytes_sent, s.dropped_invalid, s.dropped_stale,
              s.dropped_duplicate, s.early_arrivals_stored, s.early_arrivals_dropped,
              s.collectives_completed);
}

// The interface MCCL sends on: the one named by MCCL_UDP_IFACE, else (auto)
// veth0 where it exists (a host of the namespace cluster, where MCCL picks
// it as the one subnet the hosts share), else lo (one host).
std::string counted_iface() {
  const char* iface = std::getenv("MCCL_UDP_IFACE");
  if (iface != nullptr && *iface != '\0' && std::string(iface) != "auto") return iface;
  std::ifstream veth("/sys/class/net/veth0/ifindex");
  return veth ? "veth0" : "lo";
}

// The link counter of the interface MCCL sends on; -1 when unreadable (an
// interface named by address, or no sysfs).
long long link_counter(const char* which) {
  std::string path = "/sys/class/net/" + counted_iface() + "/statistics/" + which;
  std::ifstream in(path);
  long long v = -1;
  if (!(in >> v)) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return -1;
  }
  return v;
}

// What one collective put on this rank's link. Every rank reads the counters
// between two barriers, so the window holds this rank's part of the
// collective plus one barrier (measured on its own first and printed as
// "barrier=", so a checker can take it out).
int txbytes(mccl::Communicator& c, std::size_t m, bool bcast, int root) {
  const int n = c.size(), me = c.rank();
  if (bcast && (root < 0 || root >= n)) {
    std::fprintf(stderr, "txbytes-bcast: root %d out of range\n", root);
    return 1;
  }
  const std::uint64_t salt = 77;
  std::vector<std::byte> send, recv;
  if (bcast) {
    recv.resize(m);
    if (me == root) {
      for (std::size_t i = 0; i < m; ++i) recv[i] = pattern(root, i, salt);
    }
  } else {
    send.resize(m);
    recv.resize(m * n);
    for (std::size_t i = 0; i < m; ++i) send[i] = pattern(me, i, salt);
  }
  c.barrier();  // connections up, everyone here
  const long long b0 = link_counter("tx_bytes");
  c.barrier();
  const long long b1 = link_counter("tx_bytes");
  c.barrier();
  const long long t0 = link_counter("tx_bytes"), r0 = link_counter("rx_bytes");
  const auto start = std::chrono::steady_clock::now();
  if (bcast) {
    c.broadcast(recv.data(), m, root);
  } else {
    c.allgather(send.data(), recv.data(), m);
  }
  const double secs = seconds_since(start);
  c.barrier();
  const long long t1 = link_counter("tx_bytes"), r1 = link_counter("rx_bytes");
  if (b0 < 0 || t0 < 0 || t1 < 0) return 1;
  std::printf("%s rank=%d bytes=%lld m=%zu n=%d root=%d barrier=%lld rx=%lld seconds=%.4f\n",
              bcast ? "txbytes-bcast" : "txbytes", me, t1 - t0, m, n, bcast ? root : -1, b1 - b0,
              r1 - r0, secs);
  print_counters(c);
  if (bcast) {
    if (!check(recv.data(), m, root, salt, "broadcast")) return 2;
  } else {
    for (int r = 0; r < n; ++r) {
      if (!check(recv.data() + r * m, m, r, salt, "allgather")) return 2;
    }
  }
  return 0;
}

// What one allreduce of `s` bytes (int32 sum, exact) put on this rank's link,
// measured like txbytes(). Values are small, so the sum is exact and the
// result is checked element by element.
int txbytes_allreduce(mccl::Communicator& c, std::size_t s) {
  const int n = c.size(), me = c.rank();
  const std::size_t count = s / 4;
  auto value = [](int rank, std::size_t i) {
    return std::to_integer<std::int32_t>(pattern(rank, i, 91)) & 0xFF;
  };
  std::vector<std::int32_t> send(count), recv(count);
  for (std::size_t i = 0; i < count; ++i) send[i] = value(me, i);
  c.barrier();
  const long long b0 = link_counter("tx_bytes");
  c.barrier();
  const long long b1 = link_counter("tx_bytes");
  c.barrier();
  const long long t0 = link_counter("tx_bytes"), r0 = link_counter("rx_bytes");
  const auto start = std::chrono::steady_clock::now();
  c.allreduce(send.data(), recv.data(), count, mccl::DataType::kInt32, mccl::ReduceOp::kSum);
  const double secs = seconds_since(start);
  c.barrier();
  const long long t1 = link_counter("tx_bytes"), r1 = link_counter("rx_bytes");
  if (b0 < 0 || t0 < 0 || t1 < 0) return 1;
  std::printf(
      "txbytes-allreduce rank=%d bytes=%lld m=%zu n=%d root=-1 barrier=%lld rx=%lld "
      "seconds=%.4f\n",
      me, t1 - t0, count * 4, n, b1 - b0, r1 - r0, secs);
  print_counters(c);
  for (std::size_t i = 0; i < count; ++i) {
    std::int32_t want = 0;
    for (int r = 0; r < n; ++r) want += value(r, i);
    if (recv[i] != want) {
      std::fprintf(stderr, "allreduce: element %zu is %d, expected %d\n", i, recv[i], want);
      return 2;
    }
  }
  return 0;
}

// A peer that stops answering without closing anything: only deadlines can
// find it. Survivors print how long the error took and exit 0 on a timeout
// or peer failure.
int hang(mccl::Communicator& c, int victim) {
  const std::size_t m = 4 << 20;
  if (c.rank() == victim) {
    std::vector<std::byte> send(m), recv(m * c.size());
    mccl::Request r = c.iallgather(send.data(), recv.data(), m);
    for (int i = 0; i < 3; ++i) c.progress();
    const char* t = std::getenv("MCCL_COLL_TIMEOUT_MS");
    const long ms = (t && *t ? std::atol(t) : 60000) + 4000;
    std::printf("rank %d stops answering for %ld ms\n", c.rank(), ms);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    _exit(0);  // no goodbye, the request never completed
  }
  return survive(c, m, victim, "hung", mccl::ErrorCode::kTimeout);
}

// Collectives while a stranger sprays the multicast group. The test reads
// the group from the info log, starts the sender, then creates FILE.
int noise(mccl::Communicator& c, const char* file, int rounds) {
  const int n = c.size(), me = c.rank();
  std::printf("noise rank=%d waiting for %s\n", me, file);
  std::fflush(stdout);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  struct stat st {};
  while (::stat(file, &st) != 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "noise: %s did not appear within 60 s\n", file);
      return 1;
    }
    c.progress();  // keep draining the socket (garbage may already arrive)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  c.barrier();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::size_t> bsizes = {1, 1431, 1432, 1433, 65536, 300000};
  std::uint64_t salt = 1000;
  int done = 0;
  for (; done < rounds; ++done) {
    for (std::size_t bytes : bsizes) {
      const int root = static_cast<int>((salt + static_cast<std::uint64_t>(done)) % n);
      ++salt;
      std::vector<std::byte> buf(bytes);
      if (me == root) {
        for (std::size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, i, salt);
      }
      c.broadcast(buf.data(), bytes, root);
      if (!check(buf.data(), bytes, root, salt, "noise broadcast")) return 2;
    }
    const std::size_t m = 100000 + 1000 * static_cast<std::size_t>(done);
    ++salt;
    std::vector<std::byte> send(m), recv(m * n);
    for (std::size_t i = 0; i < m; ++i) send[i] = pattern(me, i, salt);
    c.allgather(send.data(), recv.data(), m);
    for (int r = 0; r < n; ++r) {
      if (!check(recv.data() + r * m, m, r, salt, "noise allgather")) return 2;
    }
    std::vector<std::size_t> counts(n), displs(n);
    std::size_t total = 0;
    for (int r = 0; r < n; ++r) {
      counts[r] = (r + done) % 3 == 0 ? 0 : 20000 * static_cast<std::size_t>(r + 1) + 7;
      displs[r] = total;
      total += counts[r];
    }
    ++salt;
    std::vector<std::byte> vsend(counts[me]), vrecv(total);
    for (std::size_t i = 0; i < counts[me]; ++i) vsend[i] = pattern(me, i, salt);
    c.allgatherv(vsend.data(), vrecv.data(), counts, displs);
    for (int r = 0; r < n; ++r) {
      if (!check(vrecv.data() + displs[r], counts[r], r, salt, "noise allgatherv")) return 2;
    }
  }
  c.barrier();
  std::printf("noise rank=%d rounds=%d seconds=%.3f\n", me, done, seconds_since(start));
  print_counters(c);
  return 0;
}

}  // namespace

// The `setup-fails` mode: creation must fail everywhere, naming `victim`.
int setup_fails(int victim) {
  auto boot = mccl::make_bootstrap_from_env();
  const int me = boot->rank();
  if (me == victim) ::setenv("MCCL_UDP_IFACE", "nosuch0", 1);
  try {
    mccl::Communicator comm(*boot);
  } catch (const mccl::Error& e) {
    const std::string what = e.what();
    const bool named =
        what.find("on rank(s) " + std::to_string(victim) + ";") != std::string::npos &&
        what.find("nosuch0") != std::string::npos;
    std::printf("rank %d: creation failed (%s): %s\n", me, named ? "as expected" : "WRONG",
                e.what());
    return named ? 0 : 4;
  }
  std::printf("rank %d: the communicator was created although rank %d has no interface\n", me,
              victim);
  return 5;
}

// The `setup-timeout` mode: the option, not the environment, bounds the
// multicast probe that cannot succeed.
int setup_timeout(long ms) {
  auto boot = mccl::make_bootstrap_from_env();
  const int me = boot->rank();
  try {
    mccl::Communicator comm(*boot, {.setup_timeout = std::chrono::milliseconds(ms)});
  } catch (const mccl::Error& e) {
    const std::string what = e.what();
    const bool as_expected = e.code() == mccl::ErrorCode::kUnavailable &&
                             what.find("does not reach every rank after " + std::to_string(ms) +
                                       " ms") != std::string::npos;
    std::printf("rank %d: creation failed (%s, %s): %s\n", me,
                as_expected ? "as expected" : "WRONG", mccl::to_string(e.code()), e.what());
    return as_expected ? 0 : 4;
  }
  std::printf("rank %d: the communicator was created although no datagram arrives\n", me);
  return 5;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "sweep";
  if ((mode == "setup-fails" || mode == "setup-timeout") && argc > 2) {
    try {
      if (mode == "setup-timeout") return setup_timeout(std::atol(argv[2]));
      return setup_fails(std::atoi(argv[2]));
    } catch (const mccl::Error& e) {
      std::printf("error %s: %s\n", mccl::to_string(e.code()), e.what());
      return 3;
    }
  }
  try {
    auto boot = mccl::make_bootstrap_from_env();
    mccl::Communicator comm(*boot);
    int rc = 1;
    if (mode == "sweep") {
      rc = sweep(comm);
    } else if (mode == "die" && argc > 2) {
      rc = die(comm, std::atoi(argv[2]));
    } else if (mode == "kill" && argc > 2) {
      rc = kill_mid(comm, std::atoi(argv[2]));
    } else if (mode == "txbytes" && argc > 2) {
      rc = txbytes(comm, std::strtoull(argv[2], nullptr, 0), false, 0);
    } else if (mode == "txbytes-bcast" && argc > 2) {
      rc = txbytes(comm, std::strtoull(argv[2], nullptr, 0), true,
                   argc > 3 ? std::atoi(argv[3]) : 0);
    } else if (mode == "txbytes-allreduce" && argc > 2) {
      rc = txbytes_allreduce(comm, std::strtoull(argv[2], nullptr, 0));
    } else if (mode == "hang" && argc > 2) {
      rc = hang(comm, std::atoi(argv[2]));
    } else if (mode == "noise" && argc > 3) {
      rc = noise(comm, argv[2], std::atoi(argv[3]));
    } else if (mode == "reuse" && argc > 3) {
      rc = mccl::mp::reuse(comm, std::strtoull(argv[2], nullptr, 0), std::atoi(argv[3]));
    } else {
      std::fprintf(stderr,
                   "usage: mp_worker sweep | setup-fails RANK | setup-timeout MS | die RANK | kill "
                   "RANK | hang RANK | "
                   "txbytes M | "
                   "txbytes-bcast M [ROOT] | txbytes-allreduce S | noise FILE ROUNDS | reuse M "
                   "ROUNDS\n");
      return 1;
    }
    print_stats(comm);
    return rc;
  } catch (const mccl::Error& e) {
    std::printf("error %s: %s\n", mccl::to_string(e.code()), e.what());
    return 3;
  }
}
