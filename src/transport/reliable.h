// The reliable side of the transport layer: point-to-point messages between
// the ranks of a communicator, used for loss repair, control messages and
// point-to-point fallback algorithms.
//
// Guarantees: a message sent to a live peer is delivered exactly once, whole,
// and in order with respect to other messages from the same sender. A peer
// that dies is reported once through ReliableHandler::on_peer_failure.
// Nothing here blocks.
#pragma once

#include <cstddef>
#include <span>

#include "common/status.h"

namespace mccl::transport {

class ReliableHandler {
 public:
  virtual ~ReliableHandler() = default;
  // `message` is valid only during the call. Must not call back into the
  // transport's poll() (sending is allowed).
  virtual void on_message(int peer, std::span<const std::byte> message) = 0;
  // `peer` died or became unreachable; no more messages will come from it.
  virtual void on_peer_failure(int peer, const common::Status& why) = 0;
};

class ReliableTransport {
 public:
  virtual ~ReliableTransport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Must not block. The parts are concatenated into one message and copied
  // (or pinned until sent) before returning, so the caller may reuse them.
  // Sending to a dead peer returns kPeerFailure naming it.
  virtual common::Status send(int peer, std::span<const std::span<const std::byte>> parts) = 0;

  common::Status send(int peer, std::span<const std::byte> message) {
    std::span<const std::byte> one[1] = {message};
    return send(peer, std::span<const std::span<const std::byte>>(one));
  }

  // Must not block. Hands at most `max` messages (and any peer failures)
  // to `handler`; `delivered` counts the messages.
  virtual common::Status poll(ReliableHandler& handler, std::size_t max,
                              std::size_t& delivered) = 0;

  // A descriptor that turns readable when poll() has work, for engines
  // that sleep; -1 when the transport has none.
  virtual int wait_fd() const { return -1; }
  // True when poll() can have nothing to do while wait_fd() is not
  // readable, so a caller may check the descriptor and skip the call
  // (protocol/poll_gate.h). False where poll() must run regardless (to
  // advance sends, say).
  virtual bool wait_fd_gates_poll() const { return false; }
  // True while messages wait for a connection that only this rank's poll()
  // can make (connections on demand): a caller that stops polling then
  // holds them back, so an engine driven by the caller keeps polling until
  // this is false before it returns from a wait. Must not block.
  virtual bool awaiting_connection() const { return false; }
};

}  // namespace mccl::transport
