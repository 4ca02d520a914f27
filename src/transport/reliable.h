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
#include <cstdint>
#include <span>

#include "common/status.h"

namespace mccl::transport {

// ---- Landing: a long message read straight into place ----------------------
// A handler that knows where a long message's body belongs (a segment of a
// collective's buffer) may say so when the message begins; a transport that
// reads a byte stream (TCP) then reads the rest of it there, instead of into
// a buffer of its own and from there a second time. The body's memory is the
// transport's to write from the handler's message_landing() until
// on_message_landed() or until the handler calls
// ReliableTransport::abandon_landing() for that peer, which it must do before
// it lets anyone else have that memory (a collective that ends early, its
// buffer going back to the caller).
struct MessageLanding {
  std::size_t head_bytes = 0;  // the message's first bytes (its header), kept apart
  std::span<std::byte> body;   // where the rest goes: exactly length - head_bytes bytes
};

class ReliableHandler {
 public:
  virtual ~ReliableHandler() = default;
  // `message` is valid only during the call. Must not call back into the
  // transport's poll() (sending is allowed).
  virtual void on_message(int peer, std::span<const std::byte> message) = 0;
  // `peer` died or became unreachable; no more messages will come from it.
  virtual void on_peer_failure(int peer, const common::Status& why) = 0;

  // A long message of `length` bytes from `peer` begins, every message
  // before it delivered; `head` holds its first bytes, at least the
  // transport's landing_head_bytes() (valid only during the call). A landing
  // with head_bytes <= head.size() and a body of exactly length - head_bytes
  // bytes has the transport fill the body and call on_message_landed() in the
  // message's place in the stream; anything else (the default) has the
  // message delivered by on_message(). Same rules as on_message().
  virtual MessageLanding message_landing(int peer, std::span<const std::byte> head,
                                         std::size_t length) {
    (void)peer;
    (void)head;
    (void)length;
    return {};
  }
  // The message whose message_landing() was taken: `head` is its first
  // head_bytes (valid only during the call), `body` the landing's body,
  // filled. Counts as a message delivered. Same rules as on_message().
  virtual void on_message_landed(int peer, std::span<const std::byte> head,
                                 std::span<const std::byte> body) {
    (void)peer;
    (void)head;
    (void)body;
  }
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

  // As send(), but the last part is lent rather than copied: what of it the
  // transport cannot write at once stays in the caller's memory and is
  // written from there, until reclaim(lender) copies what is left. The
  // caller must call reclaim(lender) before that memory changes or goes;
  // `lender` (not 0) names the caller's lent parts for it. By default the
  // transport copies, as send() does.
  virtual common::Status send_lent(int peer, std::span<const std::span<const std::byte>> parts,
                                   std::uint64_t lender) {
    (void)lender;
    return send(peer, parts);
  }
  // Copies whatever of `lender`'s lent parts is still to be written into
  // the transport's own memory. Must not block; may be called from a
  // handler callback.
  virtual void reclaim(std::uint64_t lender) { (void)lender; }

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
  // One readiness check for two transports: where supported, poll() also
  // asks the kernel about `fd` (another transport's exact wait_fd()) in the
  // same system call that finds this transport's readable sockets, and
  // shared_fd_readable() says whether `fd` was readable then. A caller that
  // polls both learns which has work from that one call, instead of a
  // gate's call and then this poll's own (protocol/poll_gate.h). One
  // descriptor at most, watched until this transport is destroyed. False
  // where unsupported or refused: the caller gates both itself. Must not
  // block.
  virtual bool share_wait(int fd) {
    (void)fd;
    return false;
  }
  // After poll(): whether share_wait()'s descriptor was readable at its check.
  virtual bool shared_fd_readable() const { return false; }
  // True while messages wait for a connection that only this rank's poll()
  // can make (connections on demand): a caller that stops polling then
  // holds them back, so an engine driven by the caller keeps polling until
  // this is false before it returns from a wait. Must not block.
  virtual bool awaiting_connection() const { return false; }

  // How many of a long message's first bytes a handler's message_landing()
  // sees; 0 where this transport never lands messages (it then never asks).
  virtual std::size_t landing_head_bytes() const { return 0; }
  // The landing of the message under way from `peer`, if any, is written no
  // more: the transport reads the rest of that message elsewhere, drops it
  // and calls neither on_message_landed() nor on_message() for it. Must not
  // block; may be called from a handler callback.
  virtual void abandon_landing(int peer) { (void)peer; }
};

}  // namespace mccl::transport
