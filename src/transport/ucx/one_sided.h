// One-sided reads: an optional extension of a reliable transport, kept out
// of transport/reliable.h because not every transport has it. A rank
// registers a buffer and publishes (address, key) to its peers over the
// reliable channel; a peer then reads ranges of it without the owner's
// protocol taking part. The protocol does not use it yet (loss repair
// pulls ranges through messages); it is here so that a transport with RDMA
// can serve repairs by reads later.
//
// The interface has no UCX type in it, so it can move up to transport/
// when a second transport implements it.
//
// Progress: where UCX has no hardware RMA for a peer (tcp, and shared
// memory without cma/knem) it emulates a read with active messages, so the
// owner must keep calling poll() for reads of its memory to complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/status.h"

namespace mccl::transport::ucx {

// What register_buffer() hands back: `id` stays with the owner (for
// deregister_buffer), `address` and `key` go to the peers that will read.
struct RegisteredBuffer {
  std::uint64_t id = 0;
  std::uint64_t address = 0;
  std::vector<std::byte> key;  // packed remote key, opaque to MCCL
};

class OneSided {
 public:
  virtual ~OneSided() = default;

  // Called once per get(), from a later poll() of the reader (never from
  // inside get() or a UCX callback): ok, or kPeerFailure / kTransportError.
  using Completion = std::function<void(const common::Status&)>;

  // Makes [buffer, buffer + len) readable by every peer. The memory must
  // stay valid until deregister_buffer(id) or the transport's destruction,
  // whichever comes first. len must be > 0.
  virtual common::Status register_buffer(const void* buffer, std::size_t len,
                                         RegisteredBuffer& out) = 0;
  // Peers must have finished their reads of it. kInvalidArgument for an
  // unknown id.
  virtual common::Status deregister_buffer(std::uint64_t id) = 0;

  // Reads `len` bytes at `remote_address` of `peer` (inside a buffer that
  // peer registered; `key` is its packed key) into `local`, which must stay
  // valid until `done` runs. Never blocks. Errors returned here mean `done`
  // will not be called: kInvalidArgument, kPeerFailure (the peer is known
  // dead), kTransportError (UCX refused the key or the read). Reads still
  // in flight when the transport is destroyed never complete.
  virtual common::Status get(int peer, std::uint64_t remote_address, std::span<const std::byte> key,
                             void* local, std::size_t len, Completion done) = 0;
};

}  // namespace mccl::transport::ucx
