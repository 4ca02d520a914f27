// The reliable transport over TCP, with connections made on demand: a rank
// holds connections only to the peers it talks to, MCCL's reliable
// transport for multi-process runs (UCX is the alternative).
//
// Setup (create_tcp_reliable, blocking, collective): each rank listens on
// an ephemeral port of `bind_address` (for the transport's life), the ranks
// exchange (address, port, random nonce) through the injected out-of-band
// allgather, and each rank connects to its two ring neighbours ((rank ± 1)
// mod size: the lower of each pair dials), which the protocol's completion
// and repairs use, so a loss-free collective never waits for a connection.
// Any other peer is connected when a message is first sent to it. The first
// 40 bytes on a connection are a handshake (transport/tcp/wire.h) that
// names both ranks and echoes both nonces, so a stray connection (a port
// scanner, another job) is closed instead of being taken for a rank. When
// two ranks dial each other at once, the connection the lower rank opened
// wins and the other is closed; messages wait for the winner.
//
// The connection cache: at most `max_connections` connections (ring
// neighbours included, at least 3); beyond it the least recently used idle
// one, never a ring neighbour's, is closed by a handshake (kGoodbye both
// ways: each end says it after its last message, and a socket closes only
// once both said it), so no message in flight is lost; a later send opens a
// new connection. A connection that is not idle is not closed, so under
// load the cache may exceed the bound until one is.
//
// Data: each message is a u32 length and the bytes (at most 1 GiB).
//  - send() never blocks: it writes header and parts with one sendmsg() as
//    far as the socket takes them and copies only the rest into the peer's
//    queue (so a large message is copied at most once, and not at all when
//    the socket has room). A send to self is queued and delivered by poll(),
//    and so is a send to a peer not connected yet.
//  - poll() flushes the queues of sockets that became writable, reads what
//    the sockets have (partial reads are kept), and hands whole messages to
//    the handler in order; a message over 16 KiB is read where the
//    handler's message_landing() puts it (its first 64 bytes decide), or
//    else into a buffer of its own size. It reads at most about 8 MiB per
//    peer per call, so one busy peer cannot starve the others. It also
//    accepts and answers connections, and dials peers that messages wait
//    for.
//
// Failures:
//  - A peer whose connection ends without the handshake (EOF, reset, a
//    write error, a frame over the limit) is reported once through
//    on_peer_failure, after the messages it sent before are delivered, with
//    a status naming the peer, its address and the errno; sends to it
//    return kPeerFailure from then on, and what was queued for it is
//    dropped. A peer that cannot be connected within dial_timeout, or that
//    refuses the connection (its transport is gone), is reported the same
//    way.
//  - Every rank learns of every death, as it did with a full mesh: the ring
//    neighbours watch each other (their connections stay open), and a rank
//    that loses a peer without an orderly exit (a destroyed transport says
//    kLeaving first) tells its live ring neighbours (kPeerFailed), who tell
//    theirs, so the news goes around the ring both ways, 2·size messages.
//  - wait_fd() is an epoll descriptor that is readable when poll() has
//    work: a socket readable (or writable while its queue is not empty), a
//    connection attempt's retry or deadline due, messages already read
//    but not yet delivered because of `max`, or share_wait()'s descriptor
//    readable (the datagram socket, which this poll() then only reports).
//
// Threads: one thread at a time (the progress engine's). The destructor
// connects the peers that messages still wait for (for at most
// dial_timeout), says kLeaving, spends at most one second sending what is
// still queued, then closes.
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
  // Deadline for the ring neighbours to be connected, after the allgather.
  std::chrono::milliseconds connect_timeout{30000};
  // Deadline of a connection made later, on demand; 0: connect_timeout. It
  // may be made while multicast traffic fills the links, where a lost SYN
  // or answer costs the kernel's retransmission (1 s, then 2, 4 ...), so
  // callers give it the collective timeout. A peer whose listener is gone
  // (ECONNREFUSED after creation) is lost at once instead.
  std::chrono::milliseconds dial_timeout{0};
  // The connection cache's bound (see above; at least 3). Communicator
  // creation gives MCCL_TCP_MAX_CONNECTIONS, whose default this is.
  int max_connections = 8;
  // The congestion control of each connection (congestion.h): "auto"
  // (connections within one host do not pace; others keep the system's),
  // "system", or an algorithm every connection runs. MCCL_TCP_CONGESTION.
  std::string congestion = "auto";
};

// Monotonic counters since creation.
struct TcpCounters {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;  // message bytes, without the length prefixes
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t sends_queued = 0;           // send() calls that left bytes in a queue
  std::uint64_t bytes_queued = 0;           // bytes copied into queues
  std::uint64_t queue_chunks_made = 0;      // queue memory allocated (fresh pages), not reused
  std::uint64_t bytes_lent = 0;             // bytes queued where a lender lent them (send_lent)
  std::uint64_t lent_chunks_reclaimed = 0;  // lent chunks copied by reclaim() before they left
  std::uint64_t write_calls = 0;            // sendmsg() calls
  std::uint64_t read_calls = 0;             // recv() calls
  std::uint64_t connections_opened = 0;     // handshakes completed, both directions
  std::uint64_t connections_closed = 0;     // closed idle by the kGoodbye handshake
  std::uint64_t most_open = 0;              // the most connections open at once
  std::uint64_t failure_news_sent = 0;      // kPeerFailed frames sent
  std::uint64_t messages_landed = 0;        // long messages read where the handler said
  std::uint64_t landings_abandoned = 0;     // of those, dropped once the handler abandoned them
};

class TcpTransport : public ReliableTransport {
 public:
  virtual TcpCounters counters() const = 0;
  // Bytes queued for `peer` and not yet taken by its socket.
  virtual std::size_t queued_bytes(int peer) const = 0;
  // The port this rank listens on; 0 for a world of one.
  virtual std::uint16_t listen_port() const = 0;
  // Connections open now (or closing), ring neighbours included.
  virtual int open_connections() const = 0;
  // The congestion control `peer`'s connection runs ("cubic"), or "" while
  // none is open.
  virtual std::string congestion_control(int peer) const = 0;
};

// Blocking and collective: calls `oob` once (except for a world of one,
// which opens no socket), then waits for the ring neighbours' connections
// until config.connect_timeout.
// Errors: kInvalidArgument (bad config, a congestion control the kernel
// refuses), kTimeout (names the ranks whose
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
