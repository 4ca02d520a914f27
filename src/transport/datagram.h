// The unreliable side of the transport layer: MTU-sized datagrams to and
// from the communicator's multicast group.
//
// Guarantees: none about delivery. A datagram may be lost, duplicated,
// reordered or corrupted; the protocol above copes. What a transport does
// guarantee is that it never blocks in send() or poll(), and that it reports
// itself truthfully through caps().
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>

#include "common/status.h"

namespace mccl::transport {

struct DatagramCaps {
  std::size_t mtu = 0;            // largest datagram, header included
  std::size_t max_in_flight = 0;  // sends that may be queued before kBusy
  bool loopback = false;          // the sender receives its own datagrams
  std::string name;               // "sim", "udp", "ibud"
};

// One outgoing datagram, gathered from two pieces so that payload can be
// sent straight from the user's buffer.
struct OutDatagram {
  std::span<const std::byte> header;
  std::span<const std::byte> payload;
};

// Received datagrams, each a view into the transport's receive buffers.
using DatagramBatch = std::span<const std::span<const std::byte>>;

// ---- Landing: one copy per byte on receive --------------------------------
// A handler that knows where the payloads of the next datagrams belong (the
// chunks a stream still lacks, in order) may say so; a transport that reads
// into memory it chooses (UDP) then has the kernel write each payload there
// directly, instead of into its own buffer and from there a second time. The
// transport checks every datagram's key against the one expected before it
// hands the datagram over as landed. One that is not the expected datagram
// is copied back into the transport's buffer and handed over as usual, so a
// wrong guess costs a copy, never a misplaced byte. Bytes a wrong datagram
// wrote at a landing stay there: a handler offers as landings only memory
// whose contents it will overwrite before anyone reads it.

inline constexpr std::size_t kLandingKeyBytes = 16;

// How a handler's datagrams are laid out; header_bytes 0: it takes no
// landings. Fixed for the handler's life.
struct LandingLayout {
  std::size_t header_bytes = 0;  // every datagram's bytes before its payload
  std::size_t key_offset = 0;    // where in the header its kLandingKeyBytes key lies
};

// Where one expected datagram's payload (`bytes` long) may be written, and
// the key that datagram carries.
struct Landing {
  std::byte* payload = nullptr;
  std::size_t bytes = 0;
  std::array<std::byte, kLandingKeyBytes> key{};
};

// A datagram read with its payload at its landing.
struct LandedDatagram {
  std::span<const std::byte> header;   // LandingLayout::header_bytes, in the transport's buffer
  std::span<const std::byte> payload;  // at Landing::payload
};

class DatagramHandler {
 public:
  virtual ~DatagramHandler() = default;
  // Called once per batch the transport read, not once per datagram: the
  // protocol validates and places a whole batch in one pass. `batch` and the
  // bytes it views are valid only during the call. Must not call back into
  // the transport.
  virtual void on_datagrams(DatagramBatch batch) = 0;
  // `count` datagrams the transport dropped unseen because of where they
  // came from (a UDP source that is no member), so that they are counted
  // with the other foreign ones. Same rules as on_datagrams.
  virtual void on_foreign_datagrams(std::size_t count) { (void)count; }

  // Landing (above). Transports that cannot land never call these.
  virtual LandingLayout landing_layout() const { return {}; }
  // Fills `out` with the landings of the datagrams expected from the one
  // whose header is `header` (header_bytes long) on, in the order they are
  // expected: that datagram's own first where `inclusive` (the transport
  // peeked at it and reads it next), else the ones after it (it was handed
  // over before). Returns how many it filled. Must not call back into the
  // transport.
  virtual std::size_t landings(std::span<const std::byte> header, bool inclusive,
                               std::span<Landing> out) {
    (void)header;
    (void)inclusive;
    (void)out;
    return 0;
  }
  // Datagrams of one read that landed; called before on_datagrams() hands
  // over the same read's others. Same rules as on_datagrams.
  virtual void on_landed(std::span<const LandedDatagram> batch) { (void)batch; }
  // Payload bytes the transport copied back out of landings it guessed
  // wrong (for the count of copies per byte).
  virtual void on_copied_back(std::size_t bytes) { (void)bytes; }
};

class DatagramTransport {
 public:
  virtual ~DatagramTransport() = default;

  virtual DatagramCaps caps() const = 0;

  // Must not block. Queues the datagrams of `batch` in order until the
  // transport is full; `accepted` says how many went. Fewer than
  // batch.size() means "busy": progress and retry the rest. A datagram
  // longer than caps().mtu fails with kInvalidArgument. Other failures are
  // fatal for the transport (kTransportError).
  virtual common::Status send(std::span<const OutDatagram> batch, std::size_t& accepted) = 0;

  // Must not block. Hands received datagrams to `handler`, in batches, and
  // sets `delivered` to how many. It stops once it has delivered `max` or
  // more: a transport that reads coalesced datagrams (UDP GRO) may deliver
  // the rest of its last read beyond `max` rather than drop it.
  virtual common::Status poll(DatagramHandler& handler, std::size_t max,
                              std::size_t& delivered) = 0;

  // `senders` roots inject at once and share the receivers' links: a
  // transport that paces itself to its link rate sends at 1/`senders` of
  // it from now on (1: the whole rate). Others ignore it. Cheap when
  // nothing changes; called before every send.
  virtual void share_link(unsigned senders) { (void)senders; }
  // What all roots injecting at once may burst into one receiver's port
  // (ProtocolConfig::incast_bytes; 0: no limit): a transport that paces
  // with a burst keeps its burst to transport::root_burst_bytes (burst.h)
  // of it. Others ignore it. Called once, before the first send.
  virtual void set_incast_budget(std::size_t bytes) { (void)bytes; }

  // True where the transport could pace to a link rate but cannot tell it
  // (an interface that reports no speed, and none was given): it sends
  // unpaced, and the protocol estimates the rate from loss instead
  // (protocol/rate_control.h) and hands the estimate to set_link_estimate().
  virtual bool link_rate_unknown() const { return false; }
  // True where the rate paced to is the one the device reports, which may
  // be wrong (a veth says 10 Gbit/s whatever its rate limiter allows); the
  // protocol may estimate it from loss there too (MCCL_PROTO_RATE_ADAPT=on).
  virtual bool link_rate_reported() const { return false; }
  // Only where link_rate_unknown() or link_rate_reported(): pace as if the
  // link ran at `bytes_per_s` (> 0) from now on; share_link() divides it as
  // it would a known rate. Cheap; called whenever the estimate changes.
  virtual void set_link_estimate(double bytes_per_s) { (void)bytes_per_s; }

  // A descriptor that turns readable when datagrams are waiting, for
  // engines that sleep; -1 when the transport has none.
  virtual int wait_fd() const { return -1; }
  // True when poll() can have nothing to do while wait_fd() is not
  // readable, so a caller may check the descriptor and skip the call
  // (protocol/poll_gate.h). False where poll() must run regardless.
  virtual bool wait_fd_gates_poll() const { return false; }
};

}  // namespace mccl::transport
