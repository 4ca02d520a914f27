// N protocol::Contexts in one thread with an ibud datagram transport each
// (over the fake verbs in tests/unit, over a real HCA in tests/ib) and the
// sim fabric's reliable endpoints for repair, driven round-robin as
// tests/unit/protocol_test.cc drives its contexts. Collectives are built by
// the coll layer (coll::make_broadcast, coll::make_allgatherv) with the
// multicast algorithms pinned.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "coll/collectives.h"
#include "common/clock.h"
#include "protocol/context.h"
#include "protocol/wire.h"
#include "transport/ibud/ibud_transport.h"
#include "transport/sim/sim_transport.h"

namespace mccl::testing::ibud {

using Bytes = std::vector<std::byte>;
using OpList = std::vector<std::shared_ptr<protocol::Operation>>;
using DgramFactory = std::function<std::unique_ptr<transport::DatagramTransport>(int rank)>;

inline Bytes pattern(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = std::byte(rng() & 0xFF);
  return b;
}

class ContextRig {
 public:
  // `make(r)` returns rank r's datagram transport (nullptr: the test has
  // failed already). The chunk size is the smallest MTU minus the header.
  ContextRig(int n, std::uint32_t tag, const DgramFactory& make,
             protocol::ProtocolConfig pc = protocol::ProtocolConfig{})
      : sim_(transport::sim::FabricConfig{}) {
    std::vector<std::unique_ptr<transport::DatagramTransport>> dgrams;
    std::size_t mtu = SIZE_MAX;
    for (int r = 0; r < n; ++r) {
      dgrams.push_back(make(r));
      if (!dgrams.back()) return;
      mtu = std::min(mtu, dgrams.back()->caps().mtu);
    }
    pc.chunk_bytes = static_cast<std::uint32_t>(mtu - protocol::kDataHeaderBytes);
    chunk_ = pc.chunk_bytes;
    for (int r = 0; r < n; ++r) {
      ctx_.push_back(std::make_unique<protocol::Context>(
          r, n, tag, std::move(dgrams[static_cast<std::size_t>(r)]), sim_.join_reliable(tag, r, n),
          pc));
    }
  }

  bool ok() const { return !ctx_.empty(); }
  int size() const { return static_cast<int>(ctx_.size()); }
  std::size_t chunk() const { return chunk_; }
  protocol::Context& ctx(int r) { return *ctx_[static_cast<std::size_t>(r)]; }

  // Drives every rank until every op is done; false when `limit` passed first.
  bool run(const OpList& ops, common::Duration limit) {
    auto deadline = common::Deadline::after(limit);
    while (!deadline.expired()) {
      for (auto& c : ctx_) c->progress();
      if (std::all_of(ops.begin(), ops.end(), [](const auto& op) { return op->done(); })) {
        return true;
      }
    }
    return false;
  }

  // A multicast broadcast of `bytes` from `root`; byte-exact on every rank.
  void broadcast(std::size_t bytes, int root, std::uint64_t seed, common::Duration limit) {
    SCOPED_TRACE("broadcast of " + std::to_string(bytes) + " bytes from root " +
                 std::to_string(root));
    const Bytes expect = pattern(bytes, seed);
    std::vector<Bytes> bufs;
    OpList ops;
    coll::CollConfig cfg;
    cfg.broadcast = BroadcastAlgorithm::kMulticast;
    for (int r = 0; r < size(); ++r)
      bufs.push_back(r == root ? expect : Bytes(bytes, std::byte{0xA5}));
    for (int r = 0; r < size(); ++r) {
      ops.push_back(
          coll::make_broadcast(ctx(r), cfg, bufs[static_cast<std::size_t>(r)].data(), bytes, root));
      ctx(r).start(ops.back());
    }
    ASSERT_TRUE(run(ops, limit)) << "deadline passed";
    check(ops, [&](int r) { return bufs[static_cast<std::size_t>(r)] == expect; });
  }

  // A multicast allgather of `bytes` per rank (allgatherv with equal counts).
  void allgather(std::size_t bytes, std::uint64_t seed, common::Duration limit) {
    SCOPED_TRACE("allgather of " + std::to_string(bytes) + " bytes per rank");
    const auto n = static_cast<std::size_t>(size());
    Bytes expect;
    for (std::size_t r = 0; r < n; ++r) {
      Bytes block = pattern(bytes, seed + r);
      expect.insert(expect.end(), block.begin(), block.end());
    }
    std::vector<std::size_t> counts(n, bytes), displs(n);
    for (std::size_t r = 0; r < n; ++r) displs[r] = r * bytes;
    std::vector<Bytes> send(n), recv(n, Bytes(n * bytes, std::byte{0xA5}));
    OpList ops;
    coll::CollConfig cfg;
    cfg.allgather = AllgatherAlgorithm::kMulticast;
    for (std::size_t r = 0; r < n; ++r) {
      send[r] = Bytes(expect.begin() + static_cast<std::ptrdiff_t>(r * bytes),
                      expect.begin() + static_cast<std::ptrdiff_t>((r + 1) * bytes));
      ops.push_back(coll::make_allgatherv(ctx(static_cast<int>(r)), cfg, send[r].data(), false,
                                          recv[r].data(), counts, displs));
      ctx(static_cast<int>(r)).start(ops.back());
    }
    ASSERT_TRUE(run(ops, limit)) << "deadline passed";
    check(ops, [&](int r) { return recv[static_cast<std::size_t>(r)] == expect; });
  }

  Stats stats(int r) const { return ctx_[static_cast<std::size_t>(r)]->counters().snapshot(); }

 private:
  template <typename Exact>
  void check(const OpList& ops, Exact exact) {
    for (int r = 0; r < size(); ++r) {
      const auto& op = ops[static_cast<std::size_t>(r)];
      EXPECT_TRUE(op->status().is_ok()) << "rank " << r << ": " << op->status().message();
      EXPECT_TRUE(exact(r)) << "rank " << r << " holds other bytes than the roots sent";
    }
  }

  transport::sim::Fabric sim_;
  std::vector<std::unique_ptr<protocol::Context>> ctx_;
  std::size_t chunk_ = 0;
};

}  // namespace mccl::testing::ibud
