// What every point-to-point collective shares: it never takes a multicast
// datagram (one that reaches it is counted invalid and dropped), its
// messages are kP2pData under its signature, and a message under another
// signature means a rank called the collective with other arguments, which
// fails the collective on every rank that sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "protocol/operation.h"

namespace mccl::coll {

// The longest message a point-to-point collective sends where nothing is
// forwarded before it has all arrived. A longer one is cut: a receiving
// connection buffers a message whole when no collective is there to take it
// (transport/reliable.h, MessageLanding), and this bounds that buffer.
inline constexpr std::size_t kWholeMessageMaxBytes = 4 << 20;

class P2pOperation : public protocol::Operation {
 public:
  // `bytes`: what the collective moves to each rank (its latency_bound()).
  P2pOperation(protocol::Context& ctx, std::uint64_t signature, std::size_t bytes)
      : Operation(ctx), signature_(signature), bytes_(bytes) {}

  void on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                   common::TimePoint) final;
  // Up to 64 KiB a point-to-point collective is a few round trips on any
  // transport; beyond, its bytes dominate.
  static constexpr std::size_t kLatencyBoundBytes = 64 << 10;
  bool latency_bound() const final { return bytes_ <= kLatencyBoundBytes; }
  std::uint64_t moved_bytes() const final { return bytes_; }

 protected:
  std::uint64_t signature() const { return signature_; }
  // A kP2pData header of this collective with the caller's arguments.
  protocol::ControlHeader p2p_header(std::uint32_t arg0, std::uint32_t arg1) const;
  // Sends `body` to `peer` and counts it; a failure fails the collective.
  // Returns whether it was sent. The transport copies what its socket does
  // not take at once.
  bool send_p2p(int peer, const protocol::ControlHeader& h, std::span<const std::byte> body);
  // The same for a `body` that lies in the collective's own buffers and
  // stays as it is until the collective finishes (final data, not a
  // scratch buffer): it is lent to the transport instead of copied
  // (Context::send_control_lent), and copied only if still unsent then.
  // A 2-rank Bruck allgather of 16 MiB a rank copied about 12 MiB of each
  // send into the connection's queue.
  bool send_p2p_lent(int peer, const protocol::ControlHeader& h, std::span<const std::byte> body);
  // Whether `h` carries this collective's signature; if not, fails the
  // collective with a message that names `peer` and ends with `must_match`
  // ("every rank must pass the same size and root").
  bool signature_matches(int peer, const protocol::ControlHeader& h, const char* must_match);
  // Fails the collective on every rank: "rank R: collective #S (what) " and
  // `differs`, which says how the arguments differ and on which rank.
  void fail_mismatch(const std::string& differs);
  // Counts a message that is malformed for this collective (wrong sender,
  // round, offset or length) and drops it.
  void drop_invalid();

 private:
  // A send's outcome: counted, or the collective failed with it.
  bool sent(const common::Status& st, std::size_t bytes);

  std::uint64_t signature_;
  std::size_t bytes_;
};

}  // namespace mccl::coll
