// Point-to-point messages between two ranks of a communicator: send and
// receive, matched by source and tag as in MPI, outside the collectives'
// sequence numbers (only the two ranks take part).
//
// A message travels over the reliable transport as kP2pMessage segments:
// seq = the sender's message number towards this receiver (0, 1, 2, ...),
// root = the tag, signature = the message's total bytes, arg0 = the segment
// index. The transport delivers a sender's messages in order, so segments
// of one message arrive back to back and are appended in order.
//
// Matching: a message goes to the first posted receive (in posting order)
// that names its source (or kAnySource) and its tag; a message that finds
// none is kept, whole or in part, until a receive takes it, and receives
// take kept messages in the order they began to arrive. A receive whose
// buffer is not the message's size fails with kInvalidArgument (the message
// is dropped). A send completes once its bytes are handed to the transport
// (buffered, like MPI_Bsend): it never waits for its receive.
//
// Deadlines: a receive that nothing matched within the communicator's
// timeout fails with kTimeout and is withdrawn; the communicator stays
// usable. One that a message began to fill and that stops short poisons
// the communicator (its buffer would hold half a message).
//
// Threading: everything here runs on the progress engine's thread.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "protocol/operation.h"
#include "protocol/wire.h"

namespace mccl::protocol {

// A receive from any rank.
inline constexpr int kAnySource = -1;

class P2pSend final : public Operation {
 public:
  // `data` must stay valid until on_start returns (the transport copies).
  P2pSend(Context& ctx, const std::byte* data, std::size_t bytes, int peer, std::uint32_t tag,
          std::size_t segment_bytes);
  bool point_to_point() const override { return true; }
  std::string describe() const override;
  std::string describe_wait() const override { return "nothing (a send is buffered)"; }
  void on_start(common::TimePoint now) override;
  void on_datagram(const DataHeader&, std::span<const std::byte>, common::TimePoint) override {}
  void on_control(int, const ControlHeader&, std::span<const std::byte>,
                  common::TimePoint) override {}
  void progress(common::TimePoint) override {}
  bool needs(int) const override { return false; }

 private:
  const std::byte* data_;
  std::size_t bytes_;
  int peer_;
  std::uint32_t tag_;
  std::size_t segment_bytes_;
};

class P2pRecv final : public Operation {
 public:
  P2pRecv(Context& ctx, std::byte* buffer, std::size_t bytes, int source, std::uint32_t tag);
  bool point_to_point() const override { return true; }
  std::string describe() const override;
  std::string describe_wait() const override;
  void on_start(common::TimePoint now) override;
  void on_datagram(const DataHeader&, std::span<const std::byte>, common::TimePoint) override {}
  void on_control(int, const ControlHeader&, std::span<const std::byte>,
                  common::TimePoint) override {}
  void progress(common::TimePoint) override {}
  bool needs(int peer) const override;

  // The rank whose message filled the buffer (valid once done() and ok).
  int matched_source() const { return matched_; }

 private:
  friend class P2pMailbox;
  bool accepts(int source, std::uint32_t tag) const {
    return tag == tag_ && (source_ == kAnySource || source == source_);
  }
  std::byte* buffer_;
  std::size_t bytes_;
  int source_;
  std::uint32_t tag_;
  int matched_ = kAnySource;  // set once a message is attached
  std::size_t received_ = 0;
  common::TimePoint expires_{};  // unmatched past this: kTimeout
};

// The receiving side: messages being filled, kept and the receives waiting
// for them. Owned by the Context, which hands it every kP2pMessage.
class P2pMailbox {
 public:
  explicit P2pMailbox(int rank) : rank_(rank) {}

  void post(const std::shared_ptr<P2pRecv>& recv, common::TimePoint deadline);
  // One segment from `source`; an error means the stream from `source` is
  // corrupt (segments out of order): the caller poisons the communicator.
  common::Status on_segment(int source, const ControlHeader& h, std::span<const std::byte> body);
  // Fails receives past their deadline; an error: one was half filled.
  common::Status check_deadlines(common::TimePoint now, std::chrono::milliseconds timeout);
  void fail_all(const common::Status& why);
  bool needs(int peer) const;
  // Receives not yet complete.
  std::size_t pending() const;

 private:
  struct Inbound {
    int source = 0;
    std::uint32_t tag = 0;
    std::size_t total = 0;
    std::size_t received = 0;
    std::vector<std::byte> kept;    // while no receive took it
    std::shared_ptr<P2pRecv> recv;  // once one did
    bool dropped = false;           // the receive refused it: bytes are skipped
  };
  void attach(Inbound& in, const std::shared_ptr<P2pRecv>& recv);
  void complete_if_full(Inbound& in);

  int rank_;
  // By source, only for the peers that sent point-to-point messages, so a
  // rank's state does not grow with the communicator (docs/scale.md).
  std::unordered_map<int, std::shared_ptr<Inbound>> filling_;  // the message arriving
  std::unordered_map<int, std::uint32_t> next_from_;           // its next message number
  std::list<std::shared_ptr<Inbound>> kept_;    // unmatched, in order of first arrival
  std::list<std::shared_ptr<P2pRecv>> posted_;  // unmatched, in posting order
};

}  // namespace mccl::protocol
