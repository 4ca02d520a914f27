// Decoding a stream while it arrives: a multicast stream fills its buffer
// front to back (mostly), so the blocks in the part that has arrived can be
// decoded while the rest is still on the wire, rather than all of them once
// the last datagram is in. codec::decode() is this decoder fed the whole
// stream at once, so both write the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/format.h"
#include "common/status.h"
#include "mccl/types.h"

namespace mccl::codec {

class PrefixDecoder {
 public:
  // Decodes into `out`, room for `count` elements of `type` (not owned).
  PrefixDecoder(DataType type, std::size_t count, std::byte* out);

  // `stream` is the whole encoded stream's buffer, of which the first
  // `available` bytes are final (they will not change). Decodes every
  // block (kBound) or element (kOff, kBf16) lying wholly in them that was
  // not decoded before; kZfp waits for finish(). kInvalidArgument, naming
  // the field, for a stream that is corrupt or not `count` elements of
  // `type`; after an error nothing more is decoded.
  common::Status advance(std::span<const std::byte> stream, std::size_t available);

  // The whole stream is `stream`: decodes what is left and checks that it
  // held exactly `count` elements and nothing after them.
  common::Status finish(std::span<const std::byte> stream);

  // Elements written to `out` so far.
  std::uint64_t decoded() const { return done_; }

 private:
  common::Status start(std::span<const std::byte> stream);
  common::Status advance_bound(std::span<const std::byte> stream, std::size_t available);
  common::Status fail(common::Status st);

  DataType type_;
  std::size_t count_;
  std::byte* out_;
  bool started_ = false;
  StreamHeader h_;
  std::size_t at_ = kHeaderBytes;  // stream bytes consumed
  std::uint64_t done_ = 0;         // elements decoded
  common::Status error_;
};

}  // namespace mccl::codec
