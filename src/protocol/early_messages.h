// Reliable-transport messages of collectives this rank has not started yet
// (a faster rank's blocks in an allgather or an alltoall), kept whole until
// the collective starts and then handed to it in arrival order.
//
// A long one is read straight into memory of its own (land(): the
// transport's message landing, transport/reliable.h) instead of through the
// connection's buffer and a copy, and that memory is kept for the next ones
// (common/kept_buffers.h; freed after kKeepIdle unused): in a loop of 1 MiB
// alltoalls at 4 ranks on one host, where ranks leave the barrier before it
// at different times, 40% of the bytes a rank received came early, each
// read, copied and copied again into fresh pages. One thread (the
// context's).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/kept_buffers.h"

namespace mccl::protocol {

class EarlyMessages {
 public:
  // A message: header and body, contiguous.
  struct Message {
    int peer = -1;
    common::KeptBuffers::Buffer memory;
    std::size_t size = 0;
    std::span<const std::byte> bytes() const { return {memory.bytes.get(), size}; }
  };

  // Messages from this long on are landed, and their memory kept.
  static constexpr std::size_t kLandFromBytes = 64 << 10;

  // Keeps a copy of the message `first` then `rest` for collective `seq`.
  void keep(std::uint32_t seq, int peer, std::span<const std::byte> first,
            std::span<const std::byte> rest = {});

  // Memory for a message of `length` bytes from `peer` whose first
  // `head_bytes` arrive apart (the transport keeps them): the span the rest
  // is to be read into. One landing per peer at a time, as a connection
  // reads in order.
  std::span<std::byte> land(int peer, std::size_t head_bytes, std::size_t length);
  bool landing_from(int peer) const;
  // `peer`'s landing is complete: the message, `head` copied before the
  // body. The caller hands it to a collective already started, keep()s it
  // with adopt(), or gives it back with recycle().
  Message landed(int peer, std::span<const std::byte> head);
  // The peers whose landings are still being written, each forgotten: the
  // caller has the transport abandon them before this memory goes.
  std::vector<int> stop_landings();

  void adopt(std::uint32_t seq, Message m);
  // Removes and returns everything kept for `seq`, in arrival order; each
  // goes back through recycle() once handled.
  std::vector<Message> take(std::uint32_t seq);
  void recycle(Message m);

  std::size_t kept_bytes() const { return pool_.bytes(); }

  // Frees the kept memory once no long message has used it for
  // kKeepIdle: a communicator whose peers stopped running ahead gives
  // it back. Called from every progress pass; cheap.
  static constexpr std::chrono::seconds kKeepIdle{10};
  void release_idle(common::TimePoint now);

 private:
  Message fresh(int peer, std::size_t size);

  std::map<std::uint32_t, std::vector<Message>> by_seq_;
  std::vector<Message> landing_;  // being written, by peer
  // Up to 8 buffers and 64 MiB: a few collectives' blocks from a few peers.
  common::KeptBuffers pool_{8, 64 << 20};
  bool used_ = false;  // the pool served or took memory since the last release_idle
  common::TimePoint idle_since_{};
};

}  // namespace mccl::protocol
