// The in-memory rig of the protocol tests (protocol_test.cc,
// protocol_loss_test.cc): N protocol::Contexts over the sim fabric in one
// thread, driven round-robin by calling progress() on every rank, and the
// broadcast and allgather operations they run.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "protocol/context.h"
#include "protocol/mcast_collective.h"
#include "protocol/wire.h"
#include "transport/sim/sim_transport.h"

namespace mccl::protocol::test {

using namespace std::chrono_literals;
using transport::sim::Fabric;
using transport::sim::FabricConfig;
using Bytes = std::vector<std::byte>;
using OpList = std::vector<std::shared_ptr<Operation>>;

inline constexpr std::uint32_t kTag = 0x5EED0001;

inline constexpr std::uint32_t kChunk = 1460;  // the sim's MTU of 1500 minus the header
inline constexpr auto kDeadline = 5s;          // wall time any one collective may take here
// What one round of the driver moves a fabric's virtual clock on
// (FabricConfig::virtual_time): under one datagram's time on a 1 Gbit/s
// link, so a round never lets a sender inject more than its link allows.
inline constexpr auto kVirtualTick = 10us;

inline Bytes pattern(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = std::byte(rng() & 0xFF);
  return b;
}

// Loss timers far longer than any pause of the round-robin driver, so a
// loss-free test never mistakes a slow machine for loss.
inline ProtocolConfig patient() {
  ProtocolConfig c;
  c.stall_min = 50ms;
  c.stall_max = 100ms;
  c.first_timeout = 100ms;
  return c;
}

// The production defaults: repair kicks in within a few milliseconds.
inline ProtocolConfig eager() { return ProtocolConfig{}; }

// Wraps rank r's datagram transport before its context gets it (a test
// double that watches what the protocol asks of the transport).
using DatagramWrap = std::function<std::unique_ptr<transport::DatagramTransport>(
    std::unique_ptr<transport::DatagramTransport>, int)>;

class Rig {
 public:
  // Over a fabric with a virtual clock the contexts read that clock too,
  // so their loss deadlines are measured in the links' time: a driver
  // descheduled on a loaded machine then looks like no time at all, not
  // like silence on the fabric.
  Rig(int n, const FabricConfig& fc, ProtocolConfig pc, const DatagramWrap& wrap = {})
      : fabric_(fc) {
    if (fc.virtual_time) pc.clock = [this] { return fabric_.now(); };
    for (int r = 0; r < n; ++r) {
      auto dgram = fabric_.join_datagram(kTag, r);
      if (wrap) dgram = wrap(std::move(dgram), r);
      ctx_.push_back(std::make_unique<Context>(r, n, kTag, std::move(dgram),
                                               fabric_.join_reliable(kTag, r, n), pc));
    }
  }

  int size() const { return static_cast<int>(ctx_.size()); }
  Context& ctx(int r) { return *ctx_[static_cast<std::size_t>(r)]; }
  Fabric& fabric() { return fabric_; }
  Stats stats(int r) const { return ctx_[static_cast<std::size_t>(r)]->counters().snapshot(); }

  // One round: every rank progresses once, then the fabric's virtual
  // clock (if it has one) moves on by kVirtualTick.
  void progress_all() {
    for (auto& c : ctx_) c->progress();
    if (fabric_.config().virtual_time) fabric_.advance(kVirtualTick);
  }
  void progress_all(int rounds) {
    for (int i = 0; i < rounds; ++i) progress_all();
  }

  // Drives every rank until every op is done; false when `limit` of wall
  // time passed first.
  bool run(const OpList& ops, common::Duration limit = kDeadline) {
    auto deadline = common::Deadline::after(limit);
    while (!deadline.expired()) {
      progress_all();
      bool all = true;
      for (const auto& op : ops) all = all && op->done();
      if (all) return true;
    }
    return false;
  }

 private:
  Fabric fabric_;
  std::vector<std::unique_ptr<Context>> ctx_;
};

// A test double's base: forwards every call to the transport it wraps; a
// double overrides what it watches or changes.
class ForwardingDatagram : public transport::DatagramTransport {
 public:
  explicit ForwardingDatagram(std::unique_ptr<DatagramTransport> inner)
      : inner_(std::move(inner)) {}
  transport::DatagramCaps caps() const override { return inner_->caps(); }
  common::Status send(std::span<const transport::OutDatagram> batch,
                      std::size_t& accepted) override {
    return inner_->send(batch, accepted);
  }
  common::Status poll(transport::DatagramHandler& h, std::size_t max,
                      std::size_t& delivered) override {
    return inner_->poll(h, max, delivered);
  }
  void share_link(unsigned senders) override { inner_->share_link(senders); }

 protected:
  std::unique_ptr<DatagramTransport> inner_;
};

// Records every share_link() call; passes the share on only when `forward`
// (so a test can also run roots that ignore it, each at the whole link rate).
class ShareRecorder final : public ForwardingDatagram {
 public:
  ShareRecorder(std::unique_ptr<DatagramTransport> inner, std::vector<unsigned>& shares,
                bool forward = false)
      : ForwardingDatagram(std::move(inner)), shares_(shares), forward_(forward) {}
  void share_link(unsigned senders) override {
    shares_.push_back(senders);
    if (forward_) inner_->share_link(senders);
  }

 private:
  std::vector<unsigned>& shares_;
  const bool forward_;
};

inline FabricConfig clean() { return FabricConfig{}; }

inline FabricConfig lossy(double loss, std::uint64_t seed) {
  FabricConfig f;
  f.loss = loss;
  f.seed = seed;
  return f;
}

// One broadcast across a rig: the buffers (the root's holds the data, the
// others a sentinel) and one op per rank, built but not started.
struct Broadcast {
  Broadcast(Rig& rig, std::size_t bytes, int root, std::uint64_t seed,
            std::uint64_t signature_salt = 0)
      : expect(pattern(bytes, seed)) {
    const int n = rig.size();
    bufs.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      bufs[r] = r == root ? expect : Bytes(bytes, std::byte{0xA5});
    }
    for (int r = 0; r < n; ++r) {
      McastSpec spec;
      spec.what =
          "broadcast of " + std::to_string(bytes) + " bytes from root " + std::to_string(root);
      spec.signature = 0xB000000000000000ull ^ (std::uint64_t{bytes} << 8) ^
                       static_cast<std::uint64_t>(root) ^ signature_salt;
      spec.streams.push_back({root, bufs[r].data(), bytes});
      ops.push_back(std::make_shared<McastCollective>(rig.ctx(r), std::move(spec)));
    }
  }

  void start(Rig& rig, int r) { rig.ctx(r).start(ops[static_cast<std::size_t>(r)]); }
  void start_all(Rig& rig) {
    for (int r = 0; r < rig.size(); ++r) start(rig, r);
  }

  void expect_exact() const {
    for (std::size_t r = 0; r < bufs.size(); ++r) {
      ASSERT_TRUE(ops[r]->done()) << "rank " << r;
      EXPECT_TRUE(ops[r]->status().is_ok()) << "rank " << r << ": " << ops[r]->status().message();
      EXPECT_TRUE(bufs[r] == expect) << "rank " << r << " holds other bytes than the root sent";
    }
  }

  Bytes expect;
  std::vector<Bytes> bufs;
  OpList ops;
};

// One allgather of `bytes` per rank: rank r's block is pattern(seed + r).
struct Allgather {
  Allgather(Rig& rig, std::size_t bytes, std::uint64_t seed, int concurrent_roots = 0) {
    const auto n = static_cast<std::size_t>(rig.size());
    for (std::size_t r = 0; r < n; ++r) {
      Bytes block = pattern(bytes, seed + r);
      expect.insert(expect.end(), block.begin(), block.end());
    }
    bufs.assign(n, Bytes(n * bytes, std::byte{0xA5}));
    for (std::size_t r = 0; r < n; ++r) {
      std::copy(expect.begin() + static_cast<std::ptrdiff_t>(r * bytes),
                expect.begin() + static_cast<std::ptrdiff_t>((r + 1) * bytes),
                bufs[r].begin() + static_cast<std::ptrdiff_t>(r * bytes));
    }
    for (std::size_t r = 0; r < n; ++r) {
      McastSpec spec;
      spec.what = "allgather of " + std::to_string(bytes) + " bytes from each rank";
      spec.signature = 0xA000000000000000ull ^ std::uint64_t{bytes};
      spec.concurrent_roots = concurrent_roots;
      for (std::size_t s = 0; s < n; ++s) {
        spec.streams.push_back({static_cast<int>(s), bufs[r].data() + s * bytes, bytes});
      }
      ops.push_back(
          std::make_shared<McastCollective>(rig.ctx(static_cast<int>(r)), std::move(spec)));
    }
  }

  void start_all(Rig& rig) {
    for (int r = 0; r < rig.size(); ++r) rig.ctx(r).start(ops[static_cast<std::size_t>(r)]);
  }

  void expect_exact() const {
    for (std::size_t r = 0; r < bufs.size(); ++r) {
      ASSERT_TRUE(ops[r]->done()) << "rank " << r;
      EXPECT_TRUE(ops[r]->status().is_ok()) << "rank " << r << ": " << ops[r]->status().message();
      EXPECT_TRUE(bufs[r] == expect) << "rank " << r << " holds other bytes than the roots sent";
    }
  }

  Bytes expect;
  std::vector<Bytes> bufs;
  OpList ops;
};

// A well-formed datagram of this communicator, cut in chunks of `chunk`
// bytes, under `auth` (without a MAC the checksum is right).
inline Bytes encode_datagram(const DataAuth& auth, std::uint32_t chunk, std::uint32_t seq,
                             std::uint32_t root, std::uint64_t total, std::uint32_t index,
                             std::uint32_t tag, std::byte fill) {
  DataHeader h;
  h.comm_tag = tag;
  h.seq = seq;
  h.root = root;
  h.chunk_index = index;
  h.chunk_bytes = chunk;
  h.total_bytes = total;
  h.payload_len = static_cast<std::uint16_t>(chunk_length(total, chunk, index));
  Bytes payload(h.payload_len, fill);
  const std::size_t hb = data_header_bytes(auth.mac != nullptr);
  Bytes d(hb + payload.size());
  encode_data_header(h, payload, true, auth, d.data());
  std::copy(payload.begin(), payload.end(), d.begin() + static_cast<std::ptrdiff_t>(hb));
  return d;
}

// The same without a MAC, in the rig's chunks.
inline Bytes datagram(std::uint32_t seq, std::uint32_t root, std::uint64_t total,
                      std::uint32_t index, std::uint32_t tag = kTag,
                      std::byte fill = std::byte{0xEE}) {
  return encode_datagram(DataAuth{}, kChunk, seq, root, total, index, tag, fill);
}

}  // namespace mccl::protocol::test
