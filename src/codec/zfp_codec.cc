#include "codec/zfp_codec.h"

#include <cstring>
#include <string>

#ifdef MCCL_HAVE_ZFP
#include <zfp.h>
#endif

namespace mccl::codec {

#ifdef MCCL_HAVE_ZFP

namespace {

zfp_type zfp_type_of(DataType type) {
  return type == DataType::kFloat64 ? zfp_type_double : zfp_type_float;
}

// A zfp stream over `buffer` with the fixed rate set, and its field; both
// freed on destruction.
class ZfpSession {
 public:
  ZfpSession(DataType type, void* data, std::size_t count, double rate, void* buffer,
             std::size_t bytes)
      : field_(zfp_field_1d(data, zfp_type_of(type), count)), stream_(zfp_stream_open(nullptr)) {
    zfp_stream_set_rate(stream_, rate, zfp_type_of(type), 1, zfp_false);
    if (buffer != nullptr) attach(buffer, bytes);
  }
  ~ZfpSession() {
    if (bits_ != nullptr) stream_close(bits_);
    zfp_stream_close(stream_);
    zfp_field_free(field_);
  }
  ZfpSession(const ZfpSession&) = delete;
  ZfpSession& operator=(const ZfpSession&) = delete;

  std::size_t max_bytes() const { return zfp_stream_maximum_size(stream_, field_); }
  std::size_t compress() { return zfp_compress(stream_, field_); }
  std::size_t decompress() { return zfp_decompress(stream_, field_); }

 private:
  void attach(void* buffer, std::size_t bytes) {
    bits_ = stream_open(buffer, bytes);
    zfp_stream_set_bit_stream(stream_, bits_);
    zfp_stream_rewind(stream_);
  }
  zfp_field* field_;
  zfp_stream* stream_;
  bitstream* bits_ = nullptr;
};

}  // namespace

std::size_t zfp_max_bytes(DataType type, std::size_t count, double rate) {
  if (count == 0) return 0;
  ZfpSession s(type, nullptr, count, rate, nullptr, 0);
  return s.max_bytes();
}

common::Status zfp_encode(DataType type, const std::byte* in, std::size_t count, double rate,
                          std::byte* out, std::size_t& written) {
  written = 0;
  if (count == 0) return common::Status::ok();
  // zfp reads the field only; its API takes a non-const pointer.
  const std::size_t max = zfp_max_bytes(type, count, rate);
  ZfpSession s(type, const_cast<std::byte*>(in), count, rate, out, max);
  const std::size_t used = s.compress();
  if (used == 0 || used > max) return common::internal_error("zfp_compress failed");
  // Padded to the maximum, a function of count and rate alone, so that the
  // size is known to every rank without asking.
  std::memset(out + used, 0, max - used);
  written = max;
  return common::Status::ok();
}

common::Status zfp_decode(DataType type, std::span<const std::byte> in, std::size_t count,
                          double rate, std::byte* out) {
  if (count == 0) return common::Status::ok();
  if (in.size() < zfp_max_bytes(type, count, rate)) {
    return common::invalid_argument("compressed stream: zfp payload of " +
                                    std::to_string(in.size()) + " bytes is truncated");
  }
  // zfp reads the stream only; its API takes a non-const pointer.
  ZfpSession s(type, out, count, rate, const_cast<std::byte*>(in.data()), in.size());
  if (s.decompress() == 0) return common::invalid_argument("compressed stream: zfp payload bad");
  return common::Status::ok();
}

#else  // no libzfp in this build

std::size_t zfp_max_bytes(DataType, std::size_t, double) { return 0; }

common::Status zfp_encode(DataType, const std::byte*, std::size_t, double, std::byte*,
                          std::size_t& written) {
  written = 0;
  return common::unavailable_error(
      "MCCL_COLL_COMPRESS=zfp: this build has no libzfp "
      "(Debian: libzfp-dev; reconfigure with MCCL_WITH_ZFP=ON)");
}

common::Status zfp_decode(DataType, std::span<const std::byte>, std::size_t, double, std::byte*) {
  return common::unavailable_error("compressed stream uses zfp, which this build lacks");
}

#endif

}  // namespace mccl::codec
