// Fuzzes the key agreement's messages (protocol/group_key.h, carried by the
// hello of setup/hello.h and one more allgather): what a rank computes from
// the shares that other ranks, or whoever can write to the bootstrap store,
// put there. Each rank's share is either honest (from a scalar the input
// gives) or raw input bytes; whatever they are, nothing crashes, and when
// every share is honest every rank derives the same key. The hello's
// decoder is fed the same bytes and must give them back when it accepts.
#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "protocol/group_key.h"
#include "setup/hello.h"

namespace p = mccl::protocol;

namespace {

// 1 byte of ranks, 1 byte of honesty mask, then per rank 32 bytes of
// scalar-or-share and 32 bytes of round-2 value (zero when short).
constexpr std::size_t kPerRank = 2 * p::kKeyShareBytes;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (sodium_init() < 0) return 0;
  const auto in = mccl::fuzz::as_bytes(data, size);
  if (in.size() >= mccl::setup::kHelloBytes) {
    mccl::setup::Hello h;
    if (mccl::setup::decode_hello(in.first<mccl::setup::kHelloBytes>(), h)) {
      std::array<std::byte, mccl::setup::kHelloBytes> again;
      mccl::setup::encode_hello(h, again);
      // Bytes 21..23 are reserved and written as zero; flags read as 0/1.
      MCCL_FUZZ_CHECK(std::memcmp(again.data() + 32, in.data() + 32, p::kKeyShareBytes) == 0);
      MCCL_FUZZ_CHECK(std::memcmp(again.data(), in.data(), 16) == 0);
    }
  }
  if (in.size() < 2) return 0;
  const int n = 1 + static_cast<int>(data[0] % 8);
  const unsigned honest = data[1];
  std::vector<std::byte> body(in.begin() + 2, in.end());
  body.resize(kPerRank * static_cast<std::size_t>(n));

  std::vector<p::KeyScalar> r(static_cast<std::size_t>(n));
  std::vector<p::KeyShare> z(r.size()), x(r.size());
  auto is_honest = [&](int i) { return ((honest >> i) & 1u) != 0; };
  for (int i = 0; i < n; ++i) {
    const std::byte* at = body.data() + kPerRank * static_cast<std::size_t>(i);
    std::copy_n(at, p::kKeyShareBytes, z[i].begin());
    std::copy_n(at + p::kKeyShareBytes, p::kKeyShareBytes, x[i].begin());
    if (!is_honest(i)) continue;
    unsigned char wide[64] = {};
    std::memcpy(wide, at, p::kKeyShareBytes);
    crypto_core_ristretto255_scalar_reduce(r[i].bytes.data(), wide);
    if (crypto_scalarmult_ristretto255_base(reinterpret_cast<unsigned char*>(z[i].data()),
                                            r[i].bytes.data()) != 0) {
      return 0;  // a zero scalar: no honest rank draws one
    }
  }
  // Honest ranks draw distinct scalars; the input may repeat one, which
  // makes two shares equal and their difference the identity (refused).
  bool distinct = true;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) distinct = distinct && z[i] != z[j];
  }
  if (p::group_key_needs_round2(n)) {
    for (int i = 0; i < n; ++i) {
      if (is_honest(i) && !p::group_key_round2(r[i], i, z, x[i])) {
        // Only a dishonest neighbour's share can make an honest rank fail.
        MCCL_FUZZ_CHECK(!distinct || !is_honest((i + 1) % n) || !is_honest((i + n - 1) % n));
      }
    }
  }
  bool all_honest = distinct;
  for (int i = 0; i < n; ++i) all_honest = all_honest && is_honest(i);
  std::vector<p::AuthKey> keys;
  for (int i = 0; i < n; ++i) {
    if (!is_honest(i)) continue;
    p::AuthKey k{};
    const bool ok = p::group_key_finish(r[i], i, z, x, k);
    if (all_honest && n > 1) {
      MCCL_FUZZ_CHECK(ok);
      keys.push_back(k);
    }
  }
  for (const auto& k : keys) MCCL_FUZZ_CHECK(k == keys.front());
  if (!keys.empty()) {
    MCCL_FUZZ_CHECK(p::key_confirmation(keys.front()) == p::key_confirmation(keys.back()));
  }
  return 0;
}
