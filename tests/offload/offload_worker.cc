// One rank of a multi-process offload test: joins the job through the
// environment (MCCL_BOOTSTRAP_ADDR, MCCL_RANK, MCCL_WORLD_SIZE) and runs
// collectives through offload::client::OffloadComm, i.e. in mccl_offloadd (found via
// MCCL_OFFLOAD_DAEMON, socket MCCL_OFFLOAD_SOCKET). Prints
// "daemon_pid=P". Exit 0 = all correct; 2 = wrong data; 3 = an error; 4 =
// the wrong error; 5 = success where a failure was expected.
//
//   offload_worker sweep            broadcast from every root, allgather,
//                                   allgatherv (in place), barrier; sizes 0
//                                   .. 3 MiB around the datagram size
//   offload_worker sweep-shm        the same on buffers from
//                                   OffloadComm::allocate (zero copy)
//   offload_worker api-shm          mccl::Communicator (MCCL_PROGRESS from
//                                   the environment) on allocate() buffers
//   offload_worker kill-daemon      one allgather; ranks > 0 leave a
//                                   broadcast in flight; rank 0 SIGKILLs
//                                   the daemon; the outstanding broadcasts
//                                   and rank 0's next one must fail with
//                                   kPeerFailure within 10 s
//   offload_worker stop-daemon      rank 0 SIGSTOPs the daemon: a wait
//                                   with a 0.5 s deadline must give
//                                   kTimeout; then rank 0 SIGKILLs it and
//                                   the same op must fail (kPeerFailure)
//   offload_worker die RANK         one allgather; the others leave a
//                                   second in flight; RANK exits without a
//                                   goodbye; the second must fail
// (The CPU measurement is bench/offload/offload_cpu.)
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "mccl/mccl.hpp"
#include "mccl/tcp_bootstrap.h"
#include "offload/client/client.h"

namespace {

using mccl::offload::client::OffloadComm;
using mccl::offload::client::OffloadOp;

std::byte pattern(int rank, std::size_t i, std::uint64_t salt) {
  std::uint64_t x = (std::uint64_t(rank) << 40) ^ i ^ (salt * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<std::byte>(x);
}

struct Failed {
  mccl::common::Status st;
};

void run(OffloadComm& c, const std::shared_ptr<OffloadOp>& op, std::chrono::seconds limit) {
  auto st = c.wait(*op, mccl::common::Deadline::after(limit));
  if (!st) throw Failed{st};
  if (!op->status()) throw Failed{op->status()};
}

// A buffer of the sweep: a std::vector, or with `shm` a block from
// OffloadComm::allocate, which the daemon uses in place (zero copy).
class Buf {
 public:
  Buf(OffloadComm* shm, std::size_t n, std::byte fill = std::byte{0}) : shm_(shm), n_(n) {
    if (shm_ != nullptr) {
      mccl::common::Status why;
      p_ = static_cast<std::byte*>(shm_->allocate(n, why));
      if (p_ == nullptr) throw Failed{why};
    } else {
      v_.resize(n);
      p_ = v_.data();
    }
    std::fill(p_, p_ + n, fill);
  }
  ~Buf() {
    if (shm_ != nullptr) shm_->deallocate(p_);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  std::byte* data() { return p_; }
  std::size_t size() const { return n_; }
  std::byte& operator[](std::size_t i) { return p_[i]; }

 private:
  OffloadComm* shm_;
  std::size_t n_;
  std::vector<std::byte> v_;
  std::byte* p_ = nullptr;
};

int sweep(OffloadComm& c, bool use_shm) {
  OffloadComm* shm = use_shm ? &c : nullptr;
  const int n = c.size(), me = c.rank();
  const std::size_t sizes[] = {0, 1, 1000, 1459, 1460, 1461, 65536, 1 << 20, 3 << 20};
  std::uint64_t salt = 1;
  for (std::size_t m : sizes) {
    for (int root = 0; root < n; ++root, ++salt) {
      Buf buf(shm, m);
      if (me == root) {
        for (std::size_t i = 0; i < m; ++i) buf[i] = pattern(root, i, salt);
      }
      run(c, c.broadcast(buf.data(), m, root), std::chrono::seconds(60));
      for (std::size_t i = 0; i < m; ++i) {
        if (buf[i] != pattern(root, i, salt)) {
          std::printf("rank %d: broadcast of %zu from %d wrong at byte %zu\n", me, m, root, i);
          return 2;
        }
      }
    }
    // allgather, not in place
    ++salt;
    Buf send(shm, m), recv(shm, m * n);
    for (std::size_t i = 0; i < m; ++i) send[i] = pattern(me, i, salt);
    std::vector<std::size_t> counts(n, m), displs(n);
    for (int r = 0; r < n; ++r) displs[r] = r * m;
    run(c, c.allgatherv(send.data(), false, recv.data(), counts, displs), std::chrono::seconds(60));
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < m; ++i) {
        if (recv[r * m + i] != pattern(r, i, salt)) {
          std::printf("rank %d: allgather of %zu wrong in block %d byte %zu\n", me, m, r, i);
          return 2;
        }
      }
    }
    // allgatherv in place, uneven counts, a gap between blocks
    ++salt;
    std::size_t at = 0;
    for (int r = 0; r < n; ++r) {
      counts[r] = (m * (r + 1)) / n;
      displs[r] = at;
      at += counts[r] + 7;
    }
    Buf v(shm, at, std::byte{0xee});
    for (std::size_t i = 0; i < counts[me]; ++i) v[displs[me] + i] = pattern(me, i, salt);
    run(c, c.allgatherv(nullptr, true, v.data(), counts, displs), std::chrono::seconds(60));
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < counts[r]; ++i) {
        if (v[displs[r] + i] != pattern(r, i, salt)) {
          std::printf("rank %d: allgatherv of %zu wrong in block %d byte %zu\n", me, m, r, i);
          return 2;
        }
      }
      for (std::size_t i = 0; i < 7; ++i) {
        if (v[displs[r] + counts[r] + i] != std::byte{0xee}) {
          std::printf("rank %d: allgatherv wrote into the gap after block %d\n", me, r);
          return 2;
        }
      }
    }
    run(c, c.barrier(), std::chrono::seconds(60));
  }
  // Several in flight at once.
  std::vector<std::unique_ptr<Buf>> owned;
  for (int k = 0; k < 8; ++k) owned.push_back(std::make_unique<Buf>(shm, 100000));
  auto bufs = [&](int k) -> Buf& { return *owned[k]; };
  std::vector<std::shared_ptr<OffloadOp>> ops;
  for (int k = 0; k < 8; ++k) {
    if (me == k % n) {
      for (std::size_t i = 0; i < bufs(k).size(); ++i) bufs(k)[i] = pattern(k, i, 999);
    }
    ops.push_back(c.broadcast(bufs(k).data(), bufs(k).size(), k % n));
  }
  for (int k = 0; k < 8; ++k) {
    run(c, ops[k], std::chrono::seconds(60));
    for (std::size_t i = 0; i < bufs(k).size(); ++i) {
      if (bufs(k)[i] != pattern(k, i, 999)) {
        std::printf("rank %d: concurrent broadcast %d wrong at byte %zu\n", me, k, i);
        return 2;
      }
    }
  }
  // As with every engine, a rank that leaves right after its last
  // collective may still be some peer's repair source: meet first.
  run(c, c.barrier(), std::chrono::seconds(60));
  std::printf("rank %d: sweep ok\n", me);
  return 0;
}

int expect_failure(OffloadComm& c, const std::shared_ptr<OffloadOp>& op, const char* what) {
  auto t0 = std::chrono::steady_clock::now();
  auto st = c.wait(*op, mccl::common::Deadline::after(std::chrono::seconds(10)));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st) {
    std::printf("rank %d: %s: no error within 10 s (%s)\n", c.rank(), what, st.message().c_str());
    return 4;
  }
  if (op->status().is_ok()) {
    std::printf("rank %d: %s: the collective succeeded\n", c.rank(), what);
    return 5;
  }
  std::printf("rank %d: %s: failed after %.3f s with %s: %s\n", c.rank(), what, s,
              mccl::to_string(op->status().code()), op->status().message().c_str());
  return op->status().code() == mccl::ErrorCode::kPeerFailure ? 0 : 4;
}

int kill_daemon(OffloadComm& c, mccl::Bootstrap& boot) {
  std::vector<std::byte> send(1000), recv(1000 * c.size());
  std::vector<std::size_t> counts(c.size(), 1000), displs(c.size());
  for (int r = 0; r < c.size(); ++r) displs[r] = r * 1000;
  run(c, c.allgatherv(send.data(), false, recv.data(), counts, displs), std::chrono::seconds(30));
  // Every rank but 0 leaves a broadcast from root 0 in flight (rank 0 never
  // starts it, so it cannot finish), then all meet through the
  // application's own runtime, which does not depend on the daemon.
  std::vector<std::byte> buf(1 << 20);
  std::shared_ptr<OffloadOp> outstanding;
  if (c.rank() != 0) outstanding = c.broadcast(buf.data(), buf.size(), 0);
  std::byte one{1};
  (void)boot.allgather(std::span(&one, 1), std::chrono::seconds(30));
  if (c.rank() == 0) {
    std::printf("rank 0 kills the daemon %d\n", c.daemon_pid());
    ::kill(c.daemon_pid(), SIGKILL);
    return expect_failure(c, c.broadcast(buf.data(), buf.size(), 0),
                          "new op after the daemon died");
  }
  return expect_failure(c, outstanding, "op in flight when the daemon died");
}

// Whether every thread of `pid` is stopped ('T' in /proc/PID/task/*/stat).
bool all_stopped(int pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool all = true;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/stat");
    std::string line;
    std::getline(f, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'T') {
      all = false;
    }
  }
  ::closedir(d);
  return all;
}

// A daemon that stops answering (SIGSTOP) must not hang the application:
// wait() returns kTimeout at its deadline. Rank 0 then kills it and the
// same operation fails with kPeerFailure.
int stop_daemon(OffloadComm& c, mccl::Bootstrap& boot) {
  // Rank 0 stopped the daemon, so rank 0 kills it on every way out (a
  // stopped daemon never exits by itself).
  struct KillAtExit {
    int pid = -1;
    ~KillAtExit() {
      if (pid > 0) ::kill(pid, SIGKILL);
    }
  } killer;
  std::byte one{1};
  (void)boot.allgather(std::span(&one, 1), std::chrono::seconds(30));
  if (c.rank() == 0) {
    killer.pid = c.daemon_pid();
    std::printf("rank 0 stops the daemon %d\n", c.daemon_pid());
    ::kill(c.daemon_pid(), SIGSTOP);
    // kill() returns before every thread has stopped: wait for the state
    // to say so, or the daemon might still finish the next broadcast.
    for (int i = 0; i < 500 && !all_stopped(c.daemon_pid()); ++i) ::usleep(10000);
  }
  (void)boot.allgather(std::span(&one, 1), std::chrono::seconds(30));
  std::vector<std::byte> buf(1000);
  auto op = c.broadcast(buf.data(), buf.size(), 0);
  auto st = c.wait(*op, mccl::common::Deadline::after(std::chrono::milliseconds(500)));
  if (st.code() != mccl::ErrorCode::kTimeout || op->done()) {
    std::printf("rank %d: wait on a stopped daemon: expected a timeout, got %s\n", c.rank(),
                st.is_ok() ? "ok" : st.message().c_str());
    return 4;
  }
  std::printf("rank %d: wait on a stopped daemon timed out: %s\n", c.rank(), st.message().c_str());
  (void)boot.allgather(std::span(&one, 1), std::chrono::seconds(30));
  if (c.rank() == 0) {
    ::kill(c.daemon_pid(), SIGKILL);
    killer.pid = -1;
  }
  return expect_failure(c, op, "op on a stopped daemon, then killed");
}

int die(OffloadComm& c, mccl::Bootstrap& boot, int victim) {
  const std::size_t m = 1 << 20;
  std::vector<std::byte> send(m), recv(m * c.size());
  std::vector<std::size_t> counts(c.size(), m), displs(c.size());
  for (int r = 0; r < c.size(); ++r) displs[r] = r * m;
  run(c, c.allgatherv(send.data(), false, recv.data(), counts, displs), std::chrono::seconds(30));
  // Meet through the application's runtime: everyone's first allgather is
  // done (a rank leaving earlier may fail its peers' first one, rightly).
  // Then the others leave a second one in flight, which the victim's exit
  // must fail rather than leave hanging.
  std::byte one{1};
  (void)boot.allgather(std::span(&one, 1), std::chrono::seconds(30));
  std::shared_ptr<OffloadOp> outstanding;
  if (c.rank() != victim)
    outstanding = c.allgatherv(send.data(), false, recv.data(), counts, displs);
  (void)boot.allgather(std::span(&one, 1), std::chrono::seconds(30));
  if (c.rank() == victim) {
    std::printf("rank %d exits without a goodbye\n", c.rank());
    std::fflush(stdout);
    _exit(0);
  }
  return expect_failure(c, outstanding, "allgather in flight when a client died");
}

}  // namespace

// The public API under MCCL_PROGRESS=offload on Communicator::allocate
// buffers (the daemon's zero-copy path): an allgather, an in-place
// allreduce and a reduce_scatter, checked; a pointer not from allocate() is
// refused with a clear error.
int api_shm(mccl::Bootstrap& boot) {
  mccl::Communicator comm(boot);
  const int n = comm.size(), me = comm.rank();
  const std::size_t m = 300001, count = 50000;
  auto* send = static_cast<std::byte*>(comm.allocate(m));
  auto* recv = static_cast<std::byte*>(comm.allocate(m * n));
  for (std::size_t i = 0; i < m; ++i) send[i] = pattern(me, i, 5);
  comm.allgather(send, recv, m);
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < m; ++i) {
      if (recv[r * m + i] != pattern(r, i, 5)) {
        std::printf("rank %d: api allgather wrong in block %d byte %zu\n", me, r, i);
        return 2;
      }
    }
  }
  auto* vec = static_cast<std::int64_t*>(comm.allocate(count * n * sizeof(std::int64_t)));
  for (std::size_t i = 0; i < count * n; ++i) vec[i] = std::int64_t(i) * (me + 1);
  comm.allreduce(mccl::kInPlace, vec, count * n, mccl::DataType::kInt64, mccl::ReduceOp::kSum);
  const std::int64_t ranks_sum = std::int64_t(n) * (n + 1) / 2;
  for (std::size_t i = 0; i < count * n; ++i) {
    if (vec[i] != std::int64_t(i) * ranks_sum) {
      std::printf("rank %d: api allreduce wrong at %zu\n", me, i);
      return 2;
    }
  }
  auto* out = static_cast<std::int64_t*>(comm.allocate(count * sizeof(std::int64_t)));
  comm.reduce_scatter(vec, out, count, mccl::DataType::kInt64, mccl::ReduceOp::kMax);
  for (std::size_t i = 0; i < count; ++i) {
    if (out[i] != std::int64_t(me * count + i) * ranks_sum) {
      std::printf("rank %d: api reduce_scatter wrong at %zu\n", me, i);
      return 2;
    }
  }
  int not_ours = 0;
  try {
    comm.deallocate(&not_ours);
    std::printf("rank %d: deallocate of a foreign pointer was accepted\n", me);
    return 5;
  } catch (const mccl::Error& e) {
    if (e.code() != mccl::ErrorCode::kInvalidArgument) return 4;
  }
  comm.deallocate(out);
  comm.deallocate(vec);
  comm.deallocate(recv);
  comm.deallocate(send);
  comm.barrier();
  std::printf("rank %d: api-shm ok\n", me);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: offload_worker sweep | sweep-shm | api-shm | kill-daemon | stop-daemon | "
                 "die RANK\n");
    return 1;
  }
  const std::string mode = argv[1];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    auto boot = mccl::make_bootstrap_from_env();
    if (mode == "api-shm") return api_shm(*boot);
    mccl::offload::client::OffloadOptions opt;
    opt.timeout = std::chrono::milliseconds(30000);
    std::unique_ptr<OffloadComm> comm;
    auto st = OffloadComm::create(*boot, opt, comm);
    if (!st) throw Failed{st};
    std::printf("rank %d daemon_pid=%d\n", comm->rank(), comm->daemon_pid());
    if (mode == "sweep") return sweep(*comm, false);
    if (mode == "sweep-shm") return sweep(*comm, true);
    if (mode == "kill-daemon") return kill_daemon(*comm, *boot);
    if (mode == "stop-daemon") return stop_daemon(*comm, *boot);
    if (mode == "die" && argc > 2) return die(*comm, *boot, std::atoi(argv[2]));
    std::fprintf(stderr, "offload_worker: unknown mode %s\n", mode.c_str());
    return 1;
  } catch (const Failed& f) {
    std::printf("error %s: %s\n", mccl::to_string(f.st.code()), f.st.message().c_str());
    return 3;
  } catch (const mccl::Error& e) {
    std::printf("error %s: %s\n", mccl::to_string(e.code()), e.what());
    return 3;
  }
}
