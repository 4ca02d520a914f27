// Authenticated datagrams (MCCL_PROTO_AUTH, protocol/auth.h, docs/security.md):
// the MAC on the wire, its IVs across sequence-number wrap, and a
// forger on the sim fabric who knows the group, the tag, the sequence
// number and the layout, and sends datagrams with a valid CRC.
#include <gtest/gtest.h>

#include "protocol/auth.h"
#include "protocol_rig.h"

namespace mccl::protocol::test {
namespace {

static_assert(kAuthDataHeaderBytes == 56, "the authenticated data header is 56 bytes");
static_assert(data_header_bytes(false) == kDataHeaderBytes);

constexpr std::uint32_t kAuthChunk = 1500 - kAuthDataHeaderBytes;  // the sim's MTU

AuthKey key_of(std::uint8_t v) {
  AuthKey k;
  k.fill(std::byte{v});
  return k;
}

// A datagram of stream `root`, chunk `index`, collective `seq` (64-bit
// `seq64`), filled with `fill`, under `mac` (none: the CRC as without auth).
Bytes make(const DatagramMac* mac, std::uint32_t seq, std::uint64_t seq64, std::uint32_t root,
           std::uint64_t total, std::uint32_t index, std::byte fill) {
  return encode_datagram(DataAuth{mac, seq, seq64}, kAuthChunk, seq, root, total, index, kTag,
                         fill);
}

DataCheck check(const DatagramMac& mac, const Bytes& d, std::uint32_t ref = 7,
                std::uint64_t ref64 = 7) {
  DataHeader h;
  std::span<const std::byte> p;
  return decode_data(d, kTag, true, DataAuth{&mac, ref, ref64}, h, p);
}

class WireAuth : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!auth_available()) GTEST_SKIP() << "built without authentication";
  }
};

TEST_F(WireAuth, RoundTripCarriesTheFlagAndNoCrc) {
  DatagramMac mac(key_of(1));
  Bytes d = make(&mac, 7, 7, 2, 3 * kAuthChunk, 1, std::byte{0x42});
  ASSERT_EQ(d.size(), kAuthDataHeaderBytes + kAuthChunk);
  EXPECT_EQ(d[34], std::byte{0x01});  // flags = kFlagMac, little-endian
  for (int i = 36; i < 40; ++i) EXPECT_EQ(d[i], std::byte{0}) << "crc byte " << i;
  DataHeader h;
  std::span<const std::byte> p;
  ASSERT_EQ(decode_data(d, kTag, true, DataAuth{&mac, 7, 7}, h, p), DataCheck::kOk);
  EXPECT_EQ(h.flags, kFlagMac);
  EXPECT_EQ(p.data(), d.data() + kAuthDataHeaderBytes);
  EXPECT_EQ(p.size(), kAuthChunk);
}

TEST_F(WireAuth, EveryFlippedBitOfTheMacIsRejected) {
  DatagramMac mac(key_of(1));
  const Bytes good = make(&mac, 7, 7, 2, 3 * kAuthChunk, 1, std::byte{0x42});
  for (std::size_t i = kDataHeaderBytes; i < kAuthDataHeaderBytes; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes d = good;
      d[i] ^= std::byte(1u << bit);
      EXPECT_EQ(check(mac, d), DataCheck::kBadMac) << "mac byte " << i << " bit " << bit;
    }
  }
}

TEST_F(WireAuth, AlteredHeaderOrPayloadIsRejected) {
  DatagramMac mac(key_of(1));
  const Bytes good = make(&mac, 7, 7, 2, 3 * kAuthChunk, 1, std::byte{0x42});
  for (std::size_t i = 0; i < kDataHeaderBytes; ++i) {
    Bytes d = good;
    d[i] ^= std::byte{0x01};
    EXPECT_NE(check(mac, d), DataCheck::kOk) << "header byte " << i;
  }
  // Fields no framing rule sees (seq, root, the unused CRC) fail the MAC.
  for (std::size_t i : {8u, 12u, 36u}) {
    Bytes d = good;
    d[i] ^= std::byte{0x01};
    EXPECT_EQ(check(mac, d), DataCheck::kBadMac) << "header byte " << i;
  }
  for (std::size_t at : {std::size_t{0}, std::size_t{kAuthChunk - 1}}) {
    Bytes d = good;
    d[kAuthDataHeaderBytes + at] ^= std::byte{0x80};
    EXPECT_EQ(check(mac, d), DataCheck::kBadMac) << "payload byte " << at;
  }
}

TEST_F(WireAuth, WithoutTheKeyNothingPasses) {
  DatagramMac mac(key_of(1)), other(key_of(2));
  // The forger's best: every field right, a MAC under another key.
  EXPECT_EQ(check(mac, make(&other, 7, 7, 2, 3 * kAuthChunk, 1, std::byte{0x42})),
            DataCheck::kBadMac);
  // Or no MAC at all, with a valid CRC: the flag is required.
  EXPECT_EQ(check(mac, make(nullptr, 7, 7, 2, 3 * kAuthChunk, 1, std::byte{0x42})),
            DataCheck::kBadFlags);
}

TEST_F(WireAuth, NoOneTimeKeyRepeatsAcrossSequenceWrap) {
  DatagramMac mac(key_of(1));
  // Collective 2^32 + 7 has wire seq 7, like collective 7; their MACs differ.
  const std::uint64_t late = (std::uint64_t{1} << 32) + 7;
  Bytes early_d = make(&mac, 7, 7, 2, 3 * kAuthChunk, 1, std::byte{0x42});
  Bytes late_d = make(&mac, 7, late, 2, 3 * kAuthChunk, 1, std::byte{0x42});
  EXPECT_NE(Bytes(early_d.begin() + 40, early_d.begin() + 56),
            Bytes(late_d.begin() + 40, late_d.begin() + 56));
  // A receiver past the wrap refuses the old one (a replay from 2^32
  // collectives ago) and takes the new one.
  EXPECT_EQ(check(mac, early_d, 5, late - 2), DataCheck::kBadMac);
  EXPECT_EQ(check(mac, late_d, 5, late - 2), DataCheck::kOk);
}

TEST(WireAuthSeq, ExtendReadsTheNearestCollective) {
  DataAuth a{nullptr, 0xFFFFFFF0u, 0x1FFFFFFF0ull};
  EXPECT_EQ(a.extend(0xFFFFFFF0u), 0x1FFFFFFF0ull);
  EXPECT_EQ(a.extend(0x00000005u), 0x200000005ull);  // just past the wrap
  EXPECT_EQ(a.extend(0xFFFFFFE0u), 0x1FFFFFFE0ull);  // just before
  DataAuth b{nullptr, 5, (std::uint64_t{1} << 32) + 5};
  EXPECT_EQ(b.extend(0xFFFFFFFFu), (std::uint64_t{1} << 32) - 1);
}

// ---- a forger on the group ---------------------------------------------------

ProtocolConfig with_auth(const AuthKey& key) {
  ProtocolConfig pc = patient();
  enable_auth(pc, key);
  return pc;
}

// The forger's datagrams for chunk 0 of the broadcast about to run (seq 1,
// root 0): valid CRC, every field right, the MAC under a key of its own,
// and an honest datagram with one MAC bit flipped.
std::vector<Bytes> forgeries(std::uint64_t total, const AuthKey& real_key) {
  DatagramMac guess(key_of(0x77)), real(real_key);
  std::vector<Bytes> f;
  f.push_back(make(nullptr, 1, 1, 0, total, 0, std::byte{0xEE}));
  f.push_back(make(&guess, 1, 1, 0, total, 0, std::byte{0xEE}));
  Bytes flipped = make(&real, 1, 1, 0, total, 0, std::byte{0xEE});
  flipped[kDataHeaderBytes + 3] ^= std::byte{0x04};
  f.push_back(flipped);
  return f;
}

TEST(ProtocolAuth, ForgedDatagramsAreDroppedAndTheBroadcastIsExact) {
  if (!auth_available()) GTEST_SKIP() << "built without authentication";
  const int n = 3;
  const AuthKey key = random_auth_key();
  Rig rig(n, clean(), with_auth(key));
  ASSERT_EQ(rig.ctx(0).config().chunk_bytes, kAuthChunk);
  const std::size_t bytes = 5 * kAuthChunk + 3;
  Broadcast b(rig, bytes, 0, /*seed=*/91);
  // The receivers wait; the forgeries arrive before the root's data.
  for (int r = 1; r < n; ++r) b.start(rig, r);
  const auto forged = forgeries(bytes, key);
  for (const auto& d : forged) rig.fabric().inject(kTag, d);
  rig.progress_all(3);
  for (int r = 1; r < n; ++r) {
    EXPECT_EQ(rig.stats(r).dropped_invalid, forged.size()) << "rank " << r;
    EXPECT_EQ(rig.stats(r).mcast_datagrams_received, 0u) << "rank " << r;
    EXPECT_TRUE(b.bufs[r] == Bytes(bytes, std::byte{0xA5})) << "rank " << r << " buffer touched";
  }
  b.start(rig, 0);
  ASSERT_TRUE(rig.run(b.ops));
  b.expect_exact();
}

TEST(ProtocolAuth, AllgatherUnderAForgedFloodIsExact) {
  if (!auth_available()) GTEST_SKIP() << "built without authentication";
  const int n = 4;
  const AuthKey key = random_auth_key();
  Rig rig(n, lossy(0.02, /*seed=*/4242), with_auth(key));
  const std::size_t bytes = 7 * kAuthChunk + 11;
  Allgather a(rig, bytes, /*seed=*/17);
  a.start_all(rig);
  // Forgeries for every root's chunks, interleaved with the real traffic.
  DatagramMac guess(key_of(0x55));
  auto deadline = common::Deadline::after(kDeadline);
  std::uint32_t i = 0;
  while (!deadline.expired()) {
    const auto root = i % n;
    const auto chunk = (i / n) % 8;
    rig.fabric().inject(kTag, make(&guess, 1, 1, root, bytes, chunk, std::byte{0xEE}));
    rig.fabric().inject(kTag, make(nullptr, 1, 1, root, bytes, chunk, std::byte{0xEE}));
    ++i;
    rig.progress_all();
    bool all = true;
    for (const auto& op : a.ops) all = all && op->done();
    if (all) break;
  }
  a.expect_exact();
  for (int r = 0; r < n; ++r) EXPECT_GT(rig.stats(r).dropped_invalid, 0u) << "rank " << r;
}

// What MCCL_PROTO_AUTH=off leaves open (and what the tests above would
// find without authentication): a datagram with a valid CRC and the right
// tag, seq and root is placed, and the root's own is then a duplicate.
TEST(ProtocolAuth, WithoutAuthAForgedDatagramCorruptsTheBroadcast) {
  const int n = 3;
  Rig rig(n, clean(), patient());
  const std::size_t bytes = 5 * kChunk + 3;
  Broadcast b(rig, bytes, 0, /*seed=*/91);
  for (int r = 1; r < n; ++r) b.start(rig, r);
  rig.fabric().inject(kTag, datagram(1, 0, bytes, 0));
  rig.progress_all(3);
  b.start(rig, 0);
  ASSERT_TRUE(rig.run(b.ops));
  for (int r = 1; r < n; ++r) {
    EXPECT_EQ(b.bufs[r][0], std::byte{0xEE}) << "rank " << r;
    EXPECT_FALSE(b.bufs[r] == b.expect) << "rank " << r;
  }
}

}  // namespace
}  // namespace mccl::protocol::test
