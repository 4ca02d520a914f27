// Fuzzes the TCP store's frame header and hello (src/bootstrap/wire.cc),
// what the store reads from any process that connects to its port. The
// store's own handling of a decoded frame (store_rounds.cc) is
// store_server_fuzz.cc's.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

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
      MCCL_FUZZ_CHECK(h.kind >= w::Kind::kHello && h.kind <= w::Kind::kDetach);
      std::array<std::byte, w::kHeaderBytes> again;
      w::encode(h, again);
      MCCL_FUZZ_CHECK(std::memcmp(again.data(), in.data(), w::kHeaderBytes) == 0);
    }
  }
  if (in.size() >= w::kHelloBytes) {
    // The hello: a fixed part and the job secret, as long as the store
    // accepts (kMaxHelloBytes); decoding and encoding give the bytes back.
    const auto body = in.first(std::min(in.size(), w::kMaxHelloBytes));
    const w::Hello hello = w::decode_hello(body);
    MCCL_FUZZ_CHECK(hello.secret.size() <= w::kMaxSecretBytes);
    const std::vector<std::byte> again = w::encode(hello);
    MCCL_FUZZ_CHECK(again.size() == body.size());
    MCCL_FUZZ_CHECK(std::memcmp(again.data(), body.data(), body.size()) == 0);
  }
  return 0;
}
