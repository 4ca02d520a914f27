// A collective in flight on one communicator, as the protocol context sees
// it: a resumable state machine keyed by its sequence number. Multicast
// collectives (mcast_collective.h) and the point-to-point fallbacks of the
// coll layer implement it alike, so the context can route every datagram
// and message to its collective and the engine can drive them all.
//
// All methods are called from the progress engine's thread only; done() and
// status() may be read from any thread once done() returned true.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "protocol/wire.h"

// Declares, in a class derived from Operation, the five handlers that every
// collective of coll/ writes for itself, so that the list is written once
// here; describe() and on_datagram() vary too much between them to share.
#define MCCL_OPERATION_HANDLERS                                                                \
  std::string describe_wait() const override;                                                  \
  void on_start(common::TimePoint now) override;                                               \
  void on_control(int peer, const protocol::ControlHeader& h, std::span<const std::byte> body, \
                  common::TimePoint now) override;                                             \
  void progress(common::TimePoint now) override;                                               \
  bool needs(int peer) const override

namespace mccl::protocol {

class Context;
class Operation;

// Has the transport stop writing every landing `op` took (context.cc).
void abandon_landings(Context& ctx, Operation& op);
// Has the transport copy whatever of `op`'s memory it was lent and has not
// written yet (Context::send_control_lent).
void reclaim_lent(Context& ctx, const Operation& op);

class Operation {
 public:
  explicit Operation(Context& ctx) : ctx_(ctx) {}
  virtual ~Operation() = default;
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  std::uint32_t seq() const { return seq_; }
  // A child of a composite operation (Context::adopt): it shares its
  // parent's sequence number, so it cannot complete eagerly.
  bool adopted() const { return adopted_; }
  // A send or receive between two ranks (protocol/p2p.h): it takes no
  // sequence number, and the context matches its messages by source and tag.
  virtual bool point_to_point() const { return false; }
  // A MembershipOp (protocol/membership.h): the context runs it beside the
  // collectives, not in their sequence. A virtual call rather than a
  // dynamic_cast, which every collective's start paid for (a type walk and
  // name comparisons across the shared library: 5% of a 2-rank 1-byte
  // broadcast's time in the library, bench/micro/collective_bench.cc).
  virtual bool membership() const { return false; }
  // Short description for messages: "broadcast of 4096 bytes from root 2".
  virtual std::string describe() const = 0;
  // What the operation is still waiting for, for timeout messages.
  virtual std::string describe_wait() const = 0;

  // Called once when the context registers the operation (after seq is set).
  virtual void on_start(common::TimePoint now) = 0;
  // A validated datagram of this collective (tag and layout checked).
  virtual void on_datagram(const DataHeader& h, std::span<const std::byte> payload,
                           common::TimePoint now) = 0;
  // Landings (transport/datagram.h) for the datagrams of `root`'s stream
  // expected next, chunk `first` onwards, into `out`; returns how many. An
  // operation that cannot tell offers none.
  virtual std::size_t landings(std::uint32_t root, std::uint64_t first,
                               std::span<transport::Landing> out) {
    (void)root;
    (void)first;
    (void)out;
    return 0;
  }
  // Where the body (`body_bytes` long) of a long message of this collective
  // from `peer`, header `h`, may be read straight from the transport
  // (transport/reliable.h): memory of exactly that size, or empty to take
  // it through on_control as usual. on_control later gets that message with
  // `body` at the memory returned; until then the transport may write it,
  // and finishing the operation stops that (Context::abandon_landings).
  virtual std::span<std::byte> landing(int peer, const ControlHeader& h, std::size_t body_bytes) {
    (void)peer;
    (void)h;
    (void)body_bytes;
    return {};
  }
  // A message of this collective from `peer` on the reliable transport.
  virtual void on_control(int peer, const ControlHeader& h, std::span<const std::byte> body,
                          common::TimePoint now) = 0;
  // Does whatever can be done without blocking.
  virtual void progress(common::TimePoint now) = 0;
  // Whether this collective may still need a message from `peer`. A peer
  // that has finished its part may exit; only a dead peer still needed is
  // a failure.
  virtual bool needs(int peer) const = 0;
  // Whether the collective's time is a few message latencies rather than
  // its bytes (a small point-to-point collective): a waiter then spins for
  // it even where it would otherwise sleep at once (progress/engine.h).
  virtual bool latency_bound() const { return false; }
  // What the collective moves to each rank, in bytes, where it knows (0
  // where it does not): a waiter spins through a short one where ranks
  // share cores (progress/engine.h, DriverSpin).
  virtual std::uint64_t moved_bytes() const { return 0; }

  // Called by finish() before done() turns true: whatever works on the
  // operation's buffers from other threads (McastCollective's sealing
  // helpers) stops, so that none touches them once the caller has them back.
  virtual void stop_helpers() {}

  bool done() const { return done_.load(std::memory_order_acquire); }
  // Valid once done(): ok, or why it failed.
  const common::Status& status() const { return status_; }

  // Finishes the operation; the first call wins. Landings still under way
  // are abandoned first, so nothing writes its buffers once done() is seen,
  // and sends that still read them are copied.
  void finish(common::Status s) {
    if (done()) return;
    if (landings_ > 0) abandon_landings(ctx_, *this);
    reclaim_lent(ctx_, *this);
    stop_helpers();
    status_ = std::move(s);
    done_.store(true, std::memory_order_release);
  }

 protected:
  Context& ctx_;

 private:
  friend class Context;
  friend void abandon_landings(Context& ctx, Operation& op);
  std::uint32_t seq_ = 0;
  bool adopted_ = false;
  common::TimePoint deadline_{};
  std::atomic<bool> done_{false};
  common::Status status_;
  int landings_ = 0;  // messages being read into this operation's memory
};

}  // namespace mccl::protocol
