// Fuzzes the TCP store's frame header and hello (src/bootstrap/wire.cc),
// what the store reads from any process that connects to its port. The
// store's own handling of a decoded frame (store_server.cc) is not fuzzed
// here: it reads sockets and threads, and is being reworked separately.
#include <array>
#include <cstring>
#include <string>

#include "bootstrap/wire.h"
#include "fuzz_util.h"

namespace w = mccl::bootstrap::wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = mccl::fuzz::as_bytes(data, size);
  if (in.size() >= w::kHeaderBytes) {
    w::Header h;
    std::string why;
    const bool ok = w::decode(in.first<w::kHeaderBytes>(), h, why);
    MCCL_FUZZ_CHECK(ok == why.empty());
    if (ok) {
      MCCL_FUZZ_CHECK(h.kind >= w::Kind::kHello && h.kind <= w::Kind::kBye);
      std::array<std::byte, w::kHeaderBytes> again;
      w::encode(h, again);
      MCCL_FUZZ_CHECK(std::memcmp(again.data(), in.data(), w::kHeaderBytes) == 0);
    }
  }
  if (in.size() >= w::kHelloBytes) {
    const w::Hello hello = w::decode_hello(in.first<w::kHelloBytes>());
    std::array<std::byte, w::kHelloBytes> again;
    w::encode(hello, again);
    MCCL_FUZZ_CHECK(std::memcmp(again.data(), in.data(), w::kHelloBytes) == 0);
  }
  return 0;
}
