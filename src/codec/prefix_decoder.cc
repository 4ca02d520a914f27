#include "codec/prefix_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "codec/bf16.h"
#include "codec/codec.h"
#include "codec/quantize.h"
#include "codec/zfp_codec.h"

namespace mccl::codec {

namespace {

// The payload a fixed-size mode must have; the message as decode() gave it.
common::Status expect_payload(std::size_t payload, std::size_t bytes) {
  if (payload == bytes) return common::Status::ok();
  return common::invalid_argument("compressed stream: payload of " + std::to_string(payload) +
                                  " bytes where " + std::to_string(bytes) + " belong");
}

// Bytes of one element on the wire in a fixed-size mode (kOff, kBf16).
std::size_t wire_element_bytes(const StreamHeader& h) {
  return h.mode == Mode::kBf16 ? 2 : size_of(h.type);
}

}  // namespace

PrefixDecoder::PrefixDecoder(DataType type, std::size_t count, std::byte* out)
    : type_(type), count_(count), out_(out) {}

common::Status PrefixDecoder::fail(common::Status st) {
  error_ = st;
  return st;
}

common::Status PrefixDecoder::start(std::span<const std::byte> stream) {
  common::Status st = read_header(stream, h_);
  if (!st.is_ok()) return fail(st);
  if (h_.type != type_ || h_.count != count_) {
    return fail(common::invalid_argument(
        "compressed stream holds " + std::to_string(h_.count) + " " + mccl::to_string(h_.type) +
        " where " + std::to_string(count_) + " " + mccl::to_string(type_) + " were expected"));
  }
  if (!mode_serves(h_.mode, type_)) {
    return fail(common::invalid_argument(std::string("compressed stream: mode ") +
                                         to_string(h_.mode) + " cannot carry " +
                                         mccl::to_string(type_)));
  }
  if (h_.mode == Mode::kBound && (h_.block_elems == 0 || h_.block_elems > kBlockElems ||
                                  !(h_.param > 0) || !std::isfinite(h_.param))) {
    return fail(common::invalid_argument("compressed stream: bad block size or bound"));
  }
  if (h_.mode == Mode::kZfp && !(h_.param >= 1 && h_.param <= 64)) {
    return fail(common::invalid_argument("compressed stream: bad zfp rate"));
  }
  started_ = true;
  return common::Status::ok();
}

common::Status PrefixDecoder::advance_bound(std::span<const std::byte> stream,
                                            std::size_t available) {
  const std::size_t es = size_of(type_);
  while (done_ < count_ && available - at_ >= kBlockHeaderBytes) {
    const auto n =
        static_cast<std::size_t>(std::min<std::uint64_t>(h_.block_elems, count_ - done_));
    std::size_t bytes = 0;
    common::Status st =
        bound_block_bytes(type_, stream.subspan(at_).first<kBlockHeaderBytes>(), n, bytes);
    if (!st.is_ok()) return fail(st);
    if (available - at_ < bytes) break;  // the rest of the block is still on the way
    std::size_t used = 0;
    st =
        bound_decode_block(type_, stream.subspan(at_, bytes), n, h_.param, out_ + done_ * es, used);
    if (!st.is_ok()) return fail(st);
    at_ += used;
    done_ += n;
  }
  return common::Status::ok();
}

common::Status PrefixDecoder::advance(std::span<const std::byte> stream, std::size_t available) {
  if (!error_.is_ok()) return error_;
  available = std::min(available, stream.size());
  if (!started_) {
    if (available < kHeaderBytes) return common::Status::ok();
    if (common::Status st = start(stream); !st.is_ok()) return st;
  }
  available = std::max(available, at_);  // a prefix never shrinks: nothing new then
  if (h_.mode == Mode::kBound) return advance_bound(stream, available);
  if (h_.mode == Mode::kZfp) return common::Status::ok();  // at finish()
  // kOff and kBf16: every element has the same size on the wire.
  const std::size_t wire = wire_element_bytes(h_);
  const std::uint64_t n = std::min<std::uint64_t>(count_ - done_, (available - at_) / wire);
  if (n == 0) return common::Status::ok();
  std::byte* to = out_ + done_ * size_of(type_);
  if (h_.mode == Mode::kBf16) {
    bf16_decode(stream.data() + at_, n, to);
  } else {
    std::memcpy(to, stream.data() + at_, n * wire);
  }
  at_ += n * wire;
  done_ += n;
  return common::Status::ok();
}

common::Status PrefixDecoder::finish(std::span<const std::byte> stream) {
  if (common::Status st = advance(stream, stream.size()); !st.is_ok()) return st;
  if (!started_) return fail(read_header(stream, h_));  // too short for a header
  const std::size_t payload = stream.size() - kHeaderBytes;
  switch (h_.mode) {
    case Mode::kOff:
    case Mode::kBf16: {
      common::Status st = expect_payload(payload, count_ * wire_element_bytes(h_));
      return st.is_ok() ? st : fail(st);
    }
    case Mode::kBound:
      if (done_ < count_)
        return fail(common::invalid_argument("compressed stream: block truncated"));
      if (at_ != stream.size()) {
        return fail(common::invalid_argument("compressed stream: trailing bytes"));
      }
      return common::Status::ok();
    case Mode::kZfp: {
      common::Status st = expect_payload(payload, zfp_max_bytes(type_, count_, h_.param));
      if (st.is_ok()) st = zfp_decode(type_, stream.subspan(kHeaderBytes), count_, h_.param, out_);
      if (!st.is_ok()) return fail(st);
      done_ = count_;
      return st;
    }
  }
  return fail(common::invalid_argument("compressed stream: unknown mode"));
}

}  // namespace mccl::codec
