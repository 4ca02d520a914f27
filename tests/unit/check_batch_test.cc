// src/protocol/check_batch: a receiver's batch checked by the engine's
// thread and the helpers together finds, for every datagram, what
// decode_data finds alone: good ones, a tampered payload, a forged tag, a
// wrong communicator, whole and landed; batch after batch, so that no
// helper mixes two batches' datagrams; and alone in a forked child.
#include "protocol/check_batch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <thread>
#include <vector>

#include "protocol/auth.h"

namespace mccl::protocol {
namespace {

constexpr unsigned kHelpers = 2;
constexpr std::uint32_t kTag = 0xBEEF;
constexpr std::uint32_t kChunk = 1400;

struct Datagram {
  std::vector<std::byte> bytes;  // header then payload
};

// `count` datagrams of one stream; every fifth is spoilt one way or another.
std::vector<Datagram> make_datagrams(std::size_t count, const DataAuth& auth, std::uint32_t seed) {
  const std::uint64_t total = count * kChunk;
  const std::size_t hb = data_header_bytes(auth.mac != nullptr);
  std::vector<Datagram> out(count);
  for (std::size_t c = 0; c < count; ++c) {
    std::vector<std::byte> payload(kChunk);
    for (std::size_t i = 0; i < kChunk; ++i) payload[i] = std::byte(i * 7 + c * 13 + seed);
    DataHeader h;
    h.comm_tag = (c % 5 == 4 && c % 3 == 0) ? kTag + 1 : kTag;
    h.seq = 9;
    h.root = 1;
    h.chunk_index = static_cast<std::uint32_t>(c);
    h.chunk_bytes = kChunk;
    h.total_bytes = total;
    h.payload_len = kChunk;
    out[c].bytes.resize(hb + kChunk);
    encode_data_header(h, payload, true, auth, out[c].bytes.data());
    std::copy(payload.begin(), payload.end(), out[c].bytes.begin() + static_cast<long>(hb));
    if (c % 5 == 4 && c % 3 == 1) out[c].bytes[hb + 100] ^= std::byte{1};   // payload tampered
    if (c % 5 == 4 && c % 3 == 2) out[c].bytes[hb - 1] ^= std::byte{0x80};  // tag or CRC forged
  }
  return out;
}

class CheckBatchTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      if (!auth_available()) GTEST_SKIP() << "this build has no authentication";
      mac_ = std::make_unique<DatagramMac>(random_auth_key(), kHelpers);
    }
    auth_ = {mac_.get(), 9, 9};
  }
  // A job posted to the helpers, with a lane for each where there is a MAC.
  std::shared_ptr<CheckBatch> posted_job() const {
    auto job = std::make_shared<CheckBatch>(mac_ != nullptr ? mac_->seal_lanes() : ~0u);
    HelperPool::shared(kHelpers).post(job);
    return job;
  }
  std::unique_ptr<DatagramMac> mac_;
  DataAuth auth_;
};

// Every datagram whole, as the transport hands over those it did not land.
std::vector<CheckedDatagram> whole(const std::vector<Datagram>& datagrams) {
  std::vector<CheckedDatagram> batch;
  for (const Datagram& d : datagrams) batch.push_back({.header = d.bytes});
  return batch;
}

TEST_P(CheckBatchTest, FindsWhatDecodeFindsAlone) {
  auto job = posted_job();
  const std::size_t hb = data_header_bytes(mac_ != nullptr);
  std::size_t spoilt = 0;
  for (std::uint32_t round = 0; round < 50; ++round) {
    const bool landed = round % 2 == 1;
    const auto datagrams = make_datagrams(40 + round, auth_, round);
    std::vector<CheckedDatagram> batch;
    for (const Datagram& d : datagrams) {
      const std::span<const std::byte> all(d.bytes);
      batch.push_back(
          landed ? CheckedDatagram{.header = all.first(hb), .body = all.subspan(hb), .landed = true}
                 : CheckedDatagram{.header = all});
    }
    job->run(batch, kTag, true, auth_);
    for (std::size_t i = 0; i < datagrams.size(); ++i) {
      DataHeader h;
      std::span<const std::byte> payload;
      const DataCheck want = decode_data(datagrams[i].bytes, kTag, true, auth_, h, payload);
      ASSERT_EQ(batch[i].check, want) << "round " << round << ", datagram " << i;
      if (want != DataCheck::kOk) {
        ++spoilt;
        continue;
      }
      EXPECT_EQ(batch[i].h.chunk_index, i);
      EXPECT_EQ(batch[i].payload.data(), datagrams[i].bytes.data() + hb);
      EXPECT_EQ(batch[i].payload.size(), kChunk);
    }
  }
  EXPECT_GT(spoilt, 0u);
  job->close();
  EXPECT_TRUE(job->finished());
}

// The helpers do take part: batches of good datagrams until some helper
// has checked one (on a loaded machine the engine may check many alone).
TEST_P(CheckBatchTest, HelpersTakeTheirShare) {
  auto job = posted_job();
  std::vector<Datagram> datagrams = make_datagrams(64, auth_, 1);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (job->helper_checks() == 0 && std::chrono::steady_clock::now() < end) {
    std::vector<CheckedDatagram> batch = whole(datagrams);
    job->run(batch, kTag, true, auth_);
  }
  EXPECT_GT(job->helper_checks(), 0u) << "no helper checked a datagram in 30 s";
  job->close();
  EXPECT_TRUE(job->finished());
}

// A child of fork() has the pool but no helpers: its batches are checked by
// their owner alone, and posting takes no lock a helper held at the fork.
TEST_P(CheckBatchTest, AForkedChildChecksAlone) {
  auto job = posted_job();
  std::vector<Datagram> datagrams = make_datagrams(64, auth_, 3);
  std::vector<CheckedDatagram> batch = whole(datagrams);
  job->run(batch, kTag, true, auth_);  // helpers awake, lingering, at the fork
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto mine = posted_job();
    std::vector<CheckedDatagram> again = whole(datagrams);
    mine->run(again, kTag, true, auth_);
    const bool same = again.size() == batch.size() && again[0].check == batch[0].check &&
                      again[4].check == batch[4].check && mine->helper_checks() == 0;
    ::_exit(same ? 0 : 1);
  }
  int status = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  pid_t done = 0;
  while ((done = ::waitpid(child, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "the forked child did not finish its batch in 30 s";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's batch differed, or a helper took part";
  job->close();
}

INSTANTIATE_TEST_SUITE_P(MacOrCrc, CheckBatchTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Mac" : "Crc"; });

}  // namespace
}  // namespace mccl::protocol
