// One rank's end of its TCP connection to one peer: the queue of bytes the
// socket has not taken yet, and the reader that cuts the byte stream into
// messages (u32 length + bytes). Never blocks; one thread at a time.
//
// Invariants:
//  - bytes leave in send() order: a send writes directly only while the
//    queue is empty;
//  - the read buffer holds at most one partial message no longer than
//    kBigMessageBytes; a longer one is read where the handler's
//    message_landing() says (reliable.h) or else into a buffer of its own
//    size;
//  - after broken() nothing is written; what was already read is still
//    delivered, in order, until has_ready_message() turns false;
//  - control frames (wire.h) go to the ControlSink in stream order with
//    the messages; after the peer's kGoodbye its EOF is an orderly end
//    (ended()), not a failure.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <span>
#include <string>

#include "common/kept_buffers.h"
#include "transport/reliable.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {

// Where a connection hands the control frames it reads (the endpoint).
class ControlSink {
 public:
  virtual ~ControlSink() = default;
  virtual void on_control(int peer, wire::ControlKind kind, std::uint32_t arg) = 0;
};

class Connection {
 public:
  // Sizes, chosen for meshes of hundreds of peers: 64 KiB of read buffer
  // per peer holds hundreds of small messages per recv().
  static constexpr std::size_t kReadBufferBytes = 64 * 1024;
  static constexpr std::size_t kBigMessageBytes = 16 * 1024;
  static constexpr std::size_t kQueueChunkBytes = 64 * 1024;        // small messages share chunks
  static constexpr std::size_t kReadBudgetBytes = 8 * 1024 * 1024;  // per receive() call
  // The buffers of large messages, read or queued, are kept for the next
  // ones (common/kept_buffers.h) up to this many bytes each way per
  // connection: fresh pages cost more than the copy into them (a 16 MiB
  // queue chunk mapped and faulted in per send took a 2-rank 16 MiB
  // allgather from 7 to 17-24 ms on loopback). Two queue chunks, since a
  // collective's send may start while the last one's still drains.
  static constexpr std::size_t kKeepBigBytes = 64 * 1024 * 1024;
  static constexpr std::size_t kKeptQueueChunks = 2;
  // A queue chunk of its own for a large remainder is rounded up to this,
  // so the next remainder of about the same size fits the kept one.
  static constexpr std::size_t kQueueRoundBytes = 1024 * 1024;
  static constexpr std::size_t kMaxIov = 64;
  // What a handler's message_landing() sees of a long message before it
  // decides (a protocol header fits), and the most of it a landing may keep
  // apart.
  static constexpr std::size_t kLandingHeadBytes = 64;

  Connection(int peer, Fd fd, TcpCounters& counters, ControlSink& sink);

  int peer() const { return peer_; }
  int fd() const { return fd_.get(); }

  // Writes the message (length + parts, `total` bytes of parts) as far as
  // the socket takes it and queues a copy of the rest; with a `lender`
  // (not 0), the rest of the last part is queued where it lies instead,
  // until it is written or reclaim(lender) copies it
  // (ReliableTransport::send_lent). False when the connection is or
  // becomes broken.
  bool send(std::span<const std::span<const std::byte>> parts, std::size_t total,
            std::uint64_t lender = 0);
  // Copies what is still queued of `lender`'s lent bytes into queue memory
  // of the connection's own. Leaves the queue's order and length as they
  // are.
  void reclaim(std::uint64_t lender);
  // Bytes queued where a lender lent them.
  std::size_t lent_bytes() const { return lent_bytes_; }
  // Writes queued bytes until the queue is empty or the socket is full.
  // False when the connection is or becomes broken.
  bool flush();
  // Queues a control frame behind everything sent before; false when the
  // connection is broken.
  bool send_control(wire::ControlKind kind, std::uint32_t arg);
  bool has_queued() const { return !queue_.empty(); }
  std::size_t queued_bytes() const { return queued_; }
  // Cleared when the socket refuses bytes; set again when epoll says it
  // takes more. While clear, send() only queues.
  void set_writable() { writable_ = true; }

  // Reads what the socket has (up to kReadBudgetBytes) and hands whole
  // messages to `handler` while delivered < max.
  void receive(ReliableHandler& handler, std::size_t max, std::size_t& delivered);
  // A whole message is in memory, waiting for a receive() with room.
  bool has_ready_message() const;
  // Nothing queued to write and no partial frame read: a close now loses
  // nothing this end holds.
  bool idle() const { return queue_.empty() && !in_big_ && !in_land_ && rbeg_ == rend_; }
  // The landing under way, if any, is written no more: the rest of its
  // message is read into a buffer of the connection's own and dropped.
  void abandon_landing();
  // The peer said kGoodbye and then closed: an orderly end.
  bool ended() const { return ended_; }

  bool broken() const { return !failure_.empty(); }
  // Why it broke: "closed by the peer", an errno text, a protocol error.
  const std::string& failure() const { return failure_; }
  // Closes the socket (draining unread input first, so the close is a FIN
  // and not a reset) and frees the buffers.
  void close();

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> data;
    std::size_t size = 0;
    std::size_t cap = 0;
    std::size_t off = 0;  // bytes already written
    // Where the bytes lie when a lender lent them (data is then null, cap
    // 0, and nothing is appended to the chunk).
    const std::byte* lent = nullptr;
    std::uint64_t lender = 0;
    const std::byte* bytes() const { return lent != nullptr ? lent : data.get(); }
  };

  void fail(std::string why);
  // Copies `rest` bytes of header+parts, after the first `skip`, to the
  // queue; with a `lender`, what is left of the last part is queued lent.
  void enqueue(std::span<const std::byte> header, std::span<const std::span<const std::byte>> parts,
               std::size_t skip, std::size_t rest, std::uint64_t lender);
  // Delivers whole messages already in memory; false when it must stop
  // (max reached, or the stream is corrupt).
  bool deliver_ready(ReliableHandler& handler, std::size_t max, std::size_t& delivered);
  // Writes (or queues) one frame: `word` (a length or a control word) and
  // the parts, `total` bytes of them.
  bool send_frame(std::uint32_t word, std::span<const std::span<const std::byte>> parts,
                  std::size_t total, std::uint64_t lender = 0);
  void make_room();
  // Hands over the long message under way (in big_ or at its landing),
  // whole; an abandoned landing's is dropped.
  void deliver_long(ReliableHandler& handler);
  // Starts reading a long message (`len` bytes, `have` of them at `body`)
  // where the handler lands it; false when it does not.
  bool begin_landing(ReliableHandler& handler, const std::byte* body, std::size_t have,
                     std::size_t len);

  const int peer_;
  Fd fd_;
  TcpCounters& counters_;
  ControlSink& sink_;
  std::string failure_;
  bool got_goodbye_ = false;
  bool ended_ = false;

  // A queue chunk of its own for a large remainder (see enqueue()).
  Chunk take_chunk(std::size_t rest);
  // A written chunk, kept in spares_ where it is large.
  void retire_chunk(Chunk&& c);

  std::deque<Chunk> queue_;
  std::size_t queued_ = 0;
  std::size_t lent_bytes_ = 0;                                   // of queued_, in lent chunks
  common::KeptBuffers spares_{kKeptQueueChunks, kKeepBigBytes};  // large chunks written
  bool writable_ = true;

  std::unique_ptr<std::byte[]> rbuf_;  // allocated at the first read
  std::size_t rbeg_ = 0;
  std::size_t rend_ = 0;
  std::unique_ptr<std::byte[]> big_;  // a message longer than kBigMessageBytes
  std::size_t big_cap_ = 0;
  std::size_t big_len_ = 0;
  std::size_t big_got_ = 0;
  bool in_big_ = false;
  // A long message read where the handler's message_landing() said: its head
  // apart, the rest at land_ (into big_ once abandoned, then dropped).
  std::array<std::byte, kLandingHeadBytes> land_head_{};
  std::size_t land_head_len_ = 0;
  std::byte* land_ = nullptr;
  std::size_t land_len_ = 0;
  std::size_t land_got_ = 0;
  bool in_land_ = false;
  bool land_abandoned_ = false;
  bool landed_before_ = false;  // the last message delivered had landed
  bool read_done_ = false;      // EOF, a read error or a corrupt stream: nothing more to read
};

}  // namespace mccl::transport::tcp
