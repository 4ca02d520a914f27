// The reliable transport over UCX (UCP): MCCL's alternative to the TCP
// mesh (transport/tcp), for fabrics where UCX knows a faster path (shared
// memory, RDMA) or simply to let UCX pick one.
//
// Setup (create_ucx_reliable, blocking, collective): one ucp_context and
// one ucp_worker per transport (features AM, and WAKEUP
// unless disabled; thread mode SERIALIZED: one thread at a time, not always
// the same one). The ranks exchange their worker addresses through the
// injected out-of-band allgather (two rounds: fixed-size headers with the
// address lengths, then the addresses padded to the longest), create an
// endpoint to every peer with UCP_ERR_HANDLING_MODE_PEER (unless
// config.detect_peer_failures is false: see there), and then prove
// every path with a hello/acknowledgement exchange over UCX itself (and a
// worker flush) before config.connect_timeout, so that an unreachable peer
// is an error of create, naming it, rather than a failure later.
// UCX reads its own UCX_* variables (UCX_TLS, UCX_NET_DEVICES, ...); MCCL
// adds none. Between network namespaces use UCX_TLS=tcp and
// UCX_NET_DEVICES=<iface> (shared memory crosses namespaces: see
// FABRIC.md); on one host UCX_TLS=tcp wants UCX_NET_DEVICES=lo.
//
// Data: each message is one active message (AM id kAmId) whose 24-byte
// header names the session (a hash of every rank's random nonce), the
// sender and a per-(sender, receiver) sequence number; the payload is the
// concatenated parts.
//  - send() never blocks. A message of up to 8 KiB is first offered to
//    UCX's immediate path (UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL), straight from
//    the caller's part (several parts are gathered into a scratch buffer);
//    UCX copies it before returning. Anything else is copied once into a
//    buffer owned by the transport until UCX completes the send. The bytes
//    so owned (outstanding_bytes()) are bounded by
//    config.max_outstanding_bytes: a send that would pass the bound returns
//    kUnavailable (back-pressure: poll() and retry) and sends nothing. A
//    send to self is queued and delivered by poll().
//    A rendezvous send completes only while both sides poll: a rank that
//    stops polling with outstanding_bytes() > 0 stalls its peers' receives.
//  - Receiving: eager messages are copied out of the AM callback (or held
//    in UCX's buffer, UCP_AM_RECV_ATTR_FLAG_DATA, when larger than 1 KiB);
//    rendezvous messages (UCP_AM_RECV_ATTR_FLAG_RNDV) are fetched with
//    ucp_am_recv_data_nbx, posted from poll() after the callback, into a
//    buffer of their own. Completions can finish out of order, so messages
//    are put back in order by sequence number before delivery.
//  - poll() runs ucp_worker_progress (never from inside a UCX callback),
//    then hands ready messages to the handler in order per sender, round
//    robin over senders, at most `max`. It stops progressing UCX while more
//    than config.max_buffered_bytes of received messages wait for delivery.
//  - A peer is failed when UCX calls its endpoint's error callback, when a
//    send or a rendezvous receive to or from it fails, or when it sends a
//    sequence number far outside the window. poll() (never a callback)
//    reports it once through on_peer_failure, after delivering every
//    message of it that arrived whole and in order (waiting at most one
//    second for its rendezvous receives to resolve). From the moment the
//    failure is known sends to it return kPeerFailure, and the next poll()
//    force-closes its endpoint. A process that dies is seen within tens of
//    milliseconds over tcp (the socket closes).
//    Without detect_peer_failures none of this happens (see the config).
//  - wait_fd() is UCX's worker event descriptor (ucp_worker_get_efd), or -1
//    when wake-up is disabled. poll() keeps it honest: when poll() leaves
//    work in memory (messages held back by `max`, a failure to report) it calls ucp_worker_signal
//    so the fd is readable; when it leaves nothing it arms the worker (ucp_worker_arm, retried
//    after progress while UCX says busy, and signalled when it stays busy). So the engine's rule is
//    the usual one: call poll() until it delivers nothing, then sleep on wait_fd() (with a timeout,
//    as ever). Do not read or drain the fd yourself: poll() does.
//
// Threads: one thread at a time (the progress engine's). The destructor
// spends at most config.close_timeout letting outstanding sends finish,
// then closes every endpoint (flush mode; force mode for failed peers or
// once the time is up), then destroys the worker and the context. A
// flush-mode close needs the peer to progress too: when ranks are torn
// down together (each in its own destructor) it takes milliseconds; a rank
// torn down while its peers do not poll spends the whole close_timeout.
// Peers see a closed rank as a peer failure.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "transport/oob.h"
#include "transport/reliable.h"

namespace mccl::transport::ucx {

struct UcxReliableConfig {
  int rank = -1;
  int size = 0;
  // Deadline for every endpoint to be proven (hello, acknowledgement and
  // flush), after the address exchange.
  std::chrono::milliseconds connect_timeout{30000};
  // The network device UCX may use ("veth0", "lo"): the interface the ranks
  // agreed on for multicast, so repairs cross the same links. Applied as
  // UCX's NET_DEVICES unless UCX_NET_DEVICES is set; empty: UCX's choice.
  std::string net_device;
  // How long the destructor lets outstanding sends and endpoint closes run.
  std::chrono::milliseconds close_timeout{1000};
  // Bound on message bytes copied by send() and not yet completed by UCX.
  std::size_t max_outstanding_bytes = std::size_t{1} << 30;
  // poll() stops progressing UCX while more received bytes than this wait
  // for delivery (it still delivers them).
  std::size_t max_buffered_bytes = std::size_t{256} << 20;
  // Endpoints with UCP_ERR_HANDLING_MODE_PEER: a dead peer is reported
  // (on_peer_failure) and its endpoint force-closed. UCX 1.13 then refuses
  // every transport without peer-failure support, which includes all the
  // shared-memory ones (posix, sysv, cma, self): ranks on one host talk
  // over tcp. false allows shared memory, but a dead peer is then never
  // detected (messages from it just stop; sends to it may stall in UCX)
  // and endpoints are only ever flush-closed. Every rank must agree.
  bool detect_peer_failures = true;
  // UCP_FEATURE_WAKEUP and wait_fd(). Without it wait_fd() is -1 and poll()
  // never arms the worker (slightly cheaper for an engine that only spins).
  bool wait_fd = true;
};

// Monotonic counters since creation, except where marked "now".
struct UcxCounters {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;  // message bytes, without headers
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t sends_immediate = 0;      // completed by UCX inside send(), nothing owned
  std::uint64_t sends_copied = 0;         // copied and handed to UCX with a callback
  std::uint64_t sends_backpressured = 0;  // refused with kUnavailable
  std::uint64_t received_eager_copied = 0;
  std::uint64_t received_eager_held = 0;  // UCX's buffer kept until delivery
  std::uint64_t received_rndv = 0;
  // Messages that became whole after a later message of the same sender
  // (a rendezvous overtaken by eager ones): what the reorder window undid.
  std::uint64_t completed_out_of_order = 0;
  std::uint64_t dropped_foreign = 0;  // bad header, wrong session, unknown sender
  std::uint64_t dropped_after_failure = 0;
  std::uint64_t outstanding_bytes = 0;       // now: owned by unfinished sends
  std::uint64_t peak_outstanding_bytes = 0;  // highest outstanding_bytes seen
  std::uint64_t buffered_bytes = 0;          // now: received, not yet delivered
};

class UcxTransport : public ReliableTransport {
 public:
  virtual UcxCounters counters() const = 0;
  // Bytes owned by unfinished sends to `peer`, or to all peers for -1.
  virtual std::size_t outstanding_bytes(int peer) const = 0;
  std::size_t outstanding_bytes() const { return outstanding_bytes(-1); }
  // UCX's description of the transports an endpoint uses, e.g. "tcp/lo"
  // lanes, for logs and tests; empty for self or a bad peer.
  virtual std::string describe_peer(int peer) const = 0;
};

// Builds the transport. Blocking and collective: calls `oob` twice (not at
// all for a world of one, which creates no endpoint), then proves every
// endpoint until config.connect_timeout.
// Errors: kInvalidArgument (bad config), kUnavailable (UCX could not be
// initialised here), kTimeout (names the ranks that did not answer),
// kMismatch (an allgather contribution that is not a UCX address of this
// version, or disagreeing configurations), kTransportError (a UCX call
// failed), kPeerFailure (an endpoint failed during setup), or whatever
// `oob` threw.
common::Status create_ucx_reliable(const UcxReliableConfig& config, const OobAllgather& oob,
                                   std::unique_ptr<ReliableTransport>& out);

// The UCX-specific view of a transport made by create_ucx_reliable, or
// nullptr for any other transport.
inline UcxTransport* as_ucx(ReliableTransport* t) { return dynamic_cast<UcxTransport*>(t); }
inline const UcxTransport* as_ucx(const ReliableTransport* t) {
  return dynamic_cast<const UcxTransport*>(t);
}

}  // namespace mccl::transport::ucx
