// The reliable transport over TCP: a full mesh of non-blocking TCP
// connections between the ranks of a communicator, MCCL's reliable
// transport for multi-process runs (UCX is the alternative to come).
//
// Setup (create_tcp_reliable, blocking, collective): each rank listens on
// an ephemeral port of `bind_address`, the ranks exchange (address, port,
// random nonce) through the injected out-of-band allgather, and every rank
// connects to each higher rank. The first 40 bytes on a connection are a
// handshake (transport/tcp/wire.h) that names both ranks and echoes both
// nonces, so a stray connection (a port scanner, another job) is closed
// instead of being taken for a rank. Sockets are non-blocking, TCP_NODELAY.
//
// Data: each message is a u32 length and the bytes (at most 1 GiB).
//  - send() never blocks: it writes header and parts with one sendmsg() as
//    far as the socket takes them and copies only the rest into the peer's
//    queue (so a large message is copied at most once, and not at all when
//    the socket has room). A send to self is queued and delivered by poll().
//  - poll() flushes the queues of sockets that became writable, reads what
//    the sockets have (partial reads are kept), and hands whole messages to
//    the handler in order; large messages are read straight into a buffer
//    of their own size. It reads at most about 8 MiB per peer per call, so
//    one busy peer cannot starve the others.
//  - A peer whose connection ends (EOF, reset, a write error, a frame over
//    the limit) is reported once through on_peer_failure, after the
//    messages it sent before are delivered, with a status naming the peer,
//    its address and the errno; sends to it return kPeerFailure from then
//    on, and what was queued for it is dropped.
//  - wait_fd() is an epoll descriptor that is readable when poll() has
//    work: a socket readable (or writable while its queue is not empty), or
//    messages already read but not yet delivered because of `max`.
//
// Threads: one thread at a time (the progress engine's). The destructor
// spends at most one second sending what is still queued, then closes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "transport/oob.h"
#include "transport/reliable.h"

namespace mccl::transport::tcp {

struct TcpReliableConfig {
  int rank = -1;
  int size = 0;
  // IPv4 address to listen on, published to the peers: the interface
  // address (or 127.0.0.1 for one host). Not 0.0.0.0: peers must reach it.
  std::string bind_address;
  // Deadline for the whole mesh to be connected, after the allgather.
  std::chrono::milliseconds connect_timeout{30000};
};

// Monotonic counters since creation.
struct TcpCounters {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;  // message bytes, without the length prefixes
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t sends_queued = 0;  // send() calls that left bytes in a queue
  std::uint64_t bytes_queued = 0;  // bytes copied into queues
  std::uint64_t write_calls = 0;   // sendmsg() calls
  std::uint64_t read_calls = 0;    // recv() calls
};

class TcpTransport : public ReliableTransport {
 public:
  virtual TcpCounters counters() const = 0;
  // Bytes queued for `peer` and not yet taken by its socket.
  virtual std::size_t queued_bytes(int peer) const = 0;
  // The port this rank listened on during setup (closed afterwards); 0 for
  // a world of one.
  virtual std::uint16_t listen_port() const = 0;
};

// Builds the mesh. Blocking and collective: calls `oob` once (except for a
// world of one, which opens no socket), then waits for the connections
// until config.connect_timeout.
// Errors: kInvalidArgument (bad config), kTimeout (names the ranks whose
// connection did not come up and why), kMismatch (an allgather
// contribution that is not a TCP address of this version), kTransportError
// (a socket call failed), or whatever `oob` threw.
common::Status create_tcp_reliable(const TcpReliableConfig& config, const OobAllgather& oob,
                                   std::unique_ptr<ReliableTransport>& out);

// The TCP-specific view of a transport made by create_tcp_reliable, or
// nullptr for any other transport.
inline TcpTransport* as_tcp(ReliableTransport* t) { return dynamic_cast<TcpTransport*>(t); }
inline const TcpTransport* as_tcp(const ReliableTransport* t) {
  return dynamic_cast<const TcpTransport*>(t);
}

}  // namespace mccl::transport::tcp
