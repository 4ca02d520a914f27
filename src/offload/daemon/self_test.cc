// The daemon's self-tests (mccl_offloadd --self-test*), for smoke tests of
// a cross-built binary under qemu-user: the parts whose behaviour depends
// on the architecture (ring atomics and layouts, descriptor passing), the
// protocol and collectives over the in-memory fabric, and one rank over the
// real network transports.
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "coll/collectives.h"
#include "offload/daemon/comm_setup.h"
#include "offload/daemon/daemon.h"
#include "offload/wire.h"
#include "protocol/context.h"
#include "setup/protocol_settings.h"
#include "transport/sim/sim_transport.h"

namespace mccl::offload::daemon {

common::Status self_test() {
  Comm comm;
  transport::OobAllgather oob = [](std::span<const std::byte> mine, std::vector<std::byte>& all) {
    all.assign(mine.begin(), mine.end());
    return common::Status::ok();
  };
  auto st = build_comm(0, 1, std::chrono::milliseconds(10000), CollChoices{}, oob, comm);
  if (!st) return st;
  std::vector<std::byte> buf(1 << 20, std::byte{0x5a});
  auto b = coll::make_broadcast(*comm.ctx, comm.coll, buf.data(), buf.size(), 0);
  comm.ctx->start(b);
  auto bar = coll::make_barrier(*comm.ctx, comm.coll);
  comm.ctx->start(bar);
  auto deadline = common::Deadline::after(std::chrono::seconds(20));
  while (!(b->done() && bar->done()) && !deadline.expired()) comm.ctx->progress();
  if (!b->done() || !bar->done())
    return common::timeout_error("self-test: collectives never finished");
  if (!b->status()) return b->status();
  return bar->status();
}

common::Status self_test_rings() {
  const std::uint32_t slots = 4;
  const std::size_t bytes = SharedRings::bytes_for(slots);
  int fd = ::memfd_create("mccl-offload-selftest", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    return common::internal_error("self-test: memfd failed");
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    ::close(fd);
    return common::internal_error("self-test: socketpair failed");
  }
  common::Status st;
  const int fds[1] = {fd};
  const char hello[] = "hello";
  MsgType type{};
  std::vector<std::byte> body;
  std::vector<int> got;
  st = send_msg(sv[0], MsgType::kHello, std::as_bytes(std::span(hello)), fds);
  if (st) st = recv_msg(sv[1], type, body, &got, 1000);
  if (st && (type != MsgType::kHello || body.size() != sizeof hello || got.size() != 1)) {
    st = common::internal_error("self-test: the socket message came back wrong");
  }
  void* a = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  void* b = st ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, got[0], 0) : MAP_FAILED;
  if (st && (a == MAP_FAILED || b == MAP_FAILED)) st = common::internal_error("self-test: mmap");
  if (st) {
    SharedRings producer(a, slots, true), consumer(b, slots, false);
    for (std::uint64_t round = 0; round < 3 && st; ++round) {
      for (std::uint64_t i = 0; i < slots; ++i) {
        Submission s;
        s.id = round * 100 + i;
        if (!producer.push_submission(s)) st = common::internal_error("self-test: push failed");
      }
      Submission extra;
      if (st && producer.push_submission(extra)) st = common::internal_error("self-test: overfull");
      for (std::uint64_t i = 0; i < slots && st; ++i) {
        Submission s;
        if (consumer.pop_submission(s) != RingPop::kTaken || s.id != round * 100 + i) {
          st = common::internal_error("self-test: popped the wrong submission");
        }
        if (st && !consumer.push_completion(make_completion(s.id, common::timeout_error("x")))) {
          st = common::internal_error("self-test: completion push failed");
        }
        Completion c;
        if (st && (!producer.pop_completion(c) || c.id != s.id ||
                   completion_status(c).code() != ErrorCode::kTimeout)) {
          st = common::internal_error("self-test: completion came back wrong");
        }
      }
    }
  }
  if (a != MAP_FAILED) ::munmap(a, bytes);
  if (b != MAP_FAILED) ::munmap(b, bytes);
  for (int f : got) ::close(f);
  ::close(fd);
  ::close(sv[0]);
  ::close(sv[1]);
  return st;
}

// What self_test_sim's three ranks must each hold: rank 1's broadcast,
// every rank's block of `m` bytes, the sum of the three float vectors.
common::Status check_sim_results(const std::vector<std::byte>& bcast,
                                 const std::vector<std::byte>& gathered,
                                 const std::vector<float>& sum, std::size_t m) {
  for (std::size_t i = 0; i < bcast.size(); ++i) {
    if (bcast[i] != static_cast<std::byte>(i * 7 + 1)) {
      return common::internal_error("self-test-sim: broadcast wrong at byte " + std::to_string(i));
    }
  }
  for (std::size_t r = 0; r < gathered.size() / m; ++r) {
    for (std::size_t i = 0; i < m; ++i) {
      if (gathered[r * m + i] != static_cast<std::byte>(i + r * 31)) {
        return common::internal_error("self-test-sim: allgather wrong in block " +
                                      std::to_string(r));
      }
    }
  }
  for (std::size_t i = 0; i < sum.size(); ++i) {
    const float want = 3.0f * float(i % 97) + 0.5f * (0 + 1 + 2);
    if (std::fabs(sum[i] - want) > 1e-3f) {
      return common::internal_error("self-test-sim: allreduce wrong at element " +
                                    std::to_string(i));
    }
  }
  return common::Status::ok();
}

// Three ranks as threads over the in-memory fabric with 2% loss: a
// broadcast, an allgather and a float allreduce, checked element by
// element. Runs the protocol (loss detection, repair) and the reduction
// kernels as compiled for this architecture, with no network.
common::Status self_test_sim() {
  constexpr int kRanks = 3;
  transport::sim::FabricConfig fc;
  fc.loss = 0.02;
  fc.seed = 7;
  transport::sim::Fabric fabric(fc);
  std::vector<common::Status> results(kRanks);
  const protocol::AuthKey key = protocol::random_auth_key();
  auto rank_main = [&](int rank) -> common::Status {
    protocol::ProtocolConfig pc = setup::protocol_config_from_settings(fc.mtu);
    // Authenticated where this build can, as the daemon runs by default.
    if (protocol::auth_available()) protocol::enable_auth(pc, key);
    pc.op_timeout = std::chrono::seconds(30);
    protocol::Context ctx(rank, kRanks, 77, fabric.join_datagram(77, rank),
                          fabric.join_reliable(77, rank, kRanks), pc);
    coll::CollConfig cc;
    const std::size_t m = 100000;
    std::vector<std::byte> bcast(3 * m), send(m), gathered(kRanks * m);
    for (std::size_t i = 0; i < bcast.size(); ++i) {
      if (rank == 1) bcast[i] = static_cast<std::byte>(i * 7 + 1);
    }
    for (std::size_t i = 0; i < m; ++i) send[i] = static_cast<std::byte>(i + rank * 31);
    std::vector<float> vec(5000), sum(5000);
    for (std::size_t i = 0; i < vec.size(); ++i) vec[i] = float(i % 97) + 0.5f * rank;
    const std::size_t counts[kRanks] = {m, m, m};
    const std::size_t displs[kRanks] = {0, m, 2 * m};
    std::vector<std::shared_ptr<protocol::Operation>> ops = {
        coll::make_broadcast(ctx, cc, bcast.data(), bcast.size(), 1),
        coll::make_allgatherv(ctx, cc, send.data(), false, gathered.data(), counts, displs),
        coll::make_allreduce(ctx, cc, vec.data(), false, sum.data(), vec.size(), DataType::kFloat32,
                             ReduceOp::kSum)};
    for (auto& op : ops) ctx.start(op);
    const auto deadline = common::Deadline::after(std::chrono::seconds(60));
    auto all_done = [&] {
      for (auto& op : ops) {
        if (!op->done()) return false;
      }
      return true;
    };
    while (!all_done() && !deadline.expired()) ctx.progress();
    for (auto& op : ops) {
      if (!op->done()) return common::timeout_error("self-test-sim: " + op->describe_wait());
      if (!op->status()) return op->status();
    }
    return check_sim_results(bcast, gathered, sum, m);
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        results[r] = rank_main(r);
      } catch (const std::exception& e) {
        results[r] = common::internal_error(std::string("self-test-sim: ") + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    if (!results[r]) {
      return {results[r].code(), "rank " + std::to_string(r) + ": " + results[r].message()};
    }
  }
  return common::Status::ok();
}

}  // namespace mccl::offload::daemon
