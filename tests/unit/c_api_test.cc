// The C API (mccl/mccl.h): collectives through the opaque handles with each
// rank on its own thread, and the error contract (codes, NULL checks, the
// thread-local message). Only the C header is used here, as a C program would.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "mccl/mccl.h"

namespace {

#define EXPECT_MCCL_OK(call) EXPECT_EQ((call), MCCL_OK) << mccl_last_error()
#define ASSERT_MCCL_OK(call) ASSERT_EQ((call), MCCL_OK) << mccl_last_error()

constexpr std::int64_t kTimeoutMs = 20000;  // a hang fails instead of stalling

unsigned char pattern(int rank, std::size_t i) {
  return static_cast<unsigned char>(rank * 37 + i * 11 + 1);
}

// Creates a world of `n` ranks, one communicator per rank on its own
// thread, and runs `body(comm, rank)` on each; tears everything down after.
void run_ranks(int n, const std::function<void(mccl_comm_t, int)>& body) {
  mccl_world_t world = nullptr;
  mccl_sim_options_t sim = MCCL_SIM_OPTIONS_INIT;
  sim.seed = 7;
  ASSERT_MCCL_OK(mccl_world_create(n, &sim, &world));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      mccl_comm_options_t opts = MCCL_COMM_OPTIONS_INIT;
      opts.timeout_ms = kTimeoutMs;
      mccl_comm_t comm = nullptr;
      ASSERT_MCCL_OK(mccl_comm_create_inprocess(world, r, &opts, &comm));
      int rank = -1;
      int size = -1;
      EXPECT_MCCL_OK(mccl_comm_rank(comm, &rank));
      EXPECT_MCCL_OK(mccl_comm_size(comm, &size));
      EXPECT_EQ(rank, r);
      EXPECT_EQ(size, n);
      body(comm, r);
      EXPECT_MCCL_OK(mccl_comm_destroy(comm));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_MCCL_OK(mccl_world_destroy(world));
}

// Compression from the C options: typed float allgather within the bound
// and the same on every rank; the typed int allgather exact.
TEST(CApi, CompressedTypedAllgatherKeepsTheBound) {
  const int n = 3;
  const std::size_t count = 5000;
  std::vector<std::vector<float>> out(n, std::vector<float>(count * n));
  mccl_world_t world = nullptr;
  ASSERT_MCCL_OK(mccl_world_create(n, nullptr, &world));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      mccl_comm_options_t opts = MCCL_COMM_OPTIONS_INIT;
      opts.timeout_ms = kTimeoutMs;
      opts.compress = MCCL_COMPRESS_BOUND;
      opts.compress_bound = 0.05;
      mccl_comm_t comm = nullptr;
      ASSERT_MCCL_OK(mccl_comm_create_inprocess(world, r, &opts, &comm));
      std::vector<float> in(count);
      for (std::size_t i = 0; i < count; ++i) in[i] = std::sin(0.001f * float(i + r * count));
      EXPECT_MCCL_OK(mccl_allgather_typed(comm, in.data(), out[r].data(), count, MCCL_FLOAT32));
      std::vector<std::int32_t> ints(count, r + 1), all(count * n);
      EXPECT_MCCL_OK(mccl_allgather_typed(comm, ints.data(), all.data(), count, MCCL_INT32));
      for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], int(i / count) + 1);
      mccl_stats_t st = MCCL_STATS_INIT;
      EXPECT_MCCL_OK(mccl_comm_stats(comm, &st));
      EXPECT_EQ(st.compress_max_bound, 0.05);
      EXPECT_LT(st.compress_bytes_out, st.compress_bytes_in);
      EXPECT_MCCL_OK(mccl_comm_destroy(comm));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_MCCL_OK(mccl_world_destroy(world));
  float worst = 0;
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(out[r], out[0]);
    for (std::size_t i = 0; i < count * n; ++i) {
      worst = std::max(worst, std::fabs(out[r][i] - std::sin(0.001f * float(i))));
    }
  }
  EXPECT_LE(worst, 0.05f + 1e-6f);  // the sine's own float rounding aside
  EXPECT_GT(worst, 0.0f);
}

// ------------------------------------------------------ no communicator

TEST(CApi, VersionMatchesTheHeader) {
  const std::string want = std::to_string(MCCL_VERSION_MAJOR) + "." +
                           std::to_string(MCCL_VERSION_MINOR) + "." +
                           std::to_string(MCCL_VERSION_PATCH);
  EXPECT_EQ(want, mccl_version());
}

TEST(CApi, ResultStringsAreDistinctAndNeverNull) {
  std::vector<std::string> seen;
  for (int c = MCCL_OK; c <= MCCL_UNAVAILABLE; ++c) {
    const char* s = mccl_result_string(static_cast<mccl_result_t>(c));
    ASSERT_NE(s, nullptr);
    EXPECT_GT(std::strlen(s), 0u) << c;
    for (const auto& other : seen) EXPECT_NE(other, s) << c;
    seen.emplace_back(s);
  }
  EXPECT_STREQ(mccl_result_string(MCCL_INVALID_ARGUMENT), "invalid argument");
  EXPECT_NE(mccl_result_string(static_cast<mccl_result_t>(99)), nullptr);
  EXPECT_NE(mccl_result_string(static_cast<mccl_result_t>(-1)), nullptr);
}

TEST(CApi, InPlaceMatchesTheCppConstant) {
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(MCCL_IN_PLACE), 1u);
}

TEST(CApi, NullHandlesAndOutPointersAreNamed) {
  EXPECT_EQ(mccl_world_create(2, nullptr, nullptr), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("mccl_world_create"), std::string::npos)
      << mccl_last_error();
  EXPECT_NE(std::string(mccl_last_error()).find("'out'"), std::string::npos) << mccl_last_error();

  int value = 0;
  int done = 0;
  EXPECT_EQ(mccl_comm_rank(nullptr, &value), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("'comm'"), std::string::npos);
  EXPECT_EQ(mccl_comm_size(nullptr, &value), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_broadcast(nullptr, &value, sizeof value, 0), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_barrier(nullptr), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_comm_progress(nullptr), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_comm_destroy(nullptr), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_world_destroy(nullptr), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_world_kill_rank(nullptr, 0), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_test(nullptr, &done), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("'request'"), std::string::npos);
  EXPECT_EQ(mccl_wait(nullptr, -1), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_request_free(nullptr), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_comm_stats(nullptr, nullptr), MCCL_INVALID_ARGUMENT);
}

TEST(CApi, WorldArgumentsAreChecked) {
  mccl_world_t world = nullptr;
  EXPECT_EQ(mccl_world_create(0, nullptr, &world), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(world, nullptr);

  mccl_sim_options_t unsized{};  // struct_size forgotten
  EXPECT_EQ(mccl_world_create(2, &unsized, &world), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("struct_size"), std::string::npos);

  // A caller from the future whose extra fields are all unset is fine; one
  // that sets a field this library does not know is told so.
  struct {
    mccl_sim_options_t known;
    std::uint64_t future;
  } bigger{};
  bigger.known.struct_size = sizeof bigger;
  ASSERT_MCCL_OK(mccl_world_create(2, &bigger.known, &world));
  EXPECT_EQ(mccl_world_kill_rank(world, 2), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_world_kill_rank(world, -1), MCCL_INVALID_ARGUMENT);
  EXPECT_MCCL_OK(mccl_world_destroy(world));
  bigger.future = 1;
  world = nullptr;
  EXPECT_EQ(mccl_world_create(2, &bigger.known, &world), MCCL_UNAVAILABLE);
  EXPECT_EQ(world, nullptr);
}

TEST(CApi, CommOptionsAreChecked) {
  mccl_world_t world = nullptr;
  ASSERT_MCCL_OK(mccl_world_create(1, nullptr, &world));
  mccl_comm_t comm = nullptr;
  EXPECT_EQ(mccl_comm_create_inprocess(world, 1, nullptr, &comm), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, nullptr, nullptr), MCCL_INVALID_ARGUMENT);

  mccl_comm_options_t opts = MCCL_COMM_OPTIONS_INIT;
  opts.transport = 42;
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("transport"), std::string::npos);
  opts = MCCL_COMM_OPTIONS_INIT;
  opts.timeout_ms = -5;
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  opts = MCCL_COMM_OPTIONS_INIT;
  opts.allgather_concurrent_roots = -2;
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  opts = MCCL_COMM_OPTIONS_INIT;
  opts.reserved = 1;
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  opts = MCCL_COMM_OPTIONS_INIT;
  opts.compress = MCCL_COMPRESS_BOUND;  // and no bound
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("compress_bound"), std::string::npos);
  opts = MCCL_COMM_OPTIONS_INIT;
  opts.compress_max_link_mbit = 1000;  // without compress
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("compress_max_link_mbit"), std::string::npos);
  opts.compress = MCCL_COMPRESS_BF16;
  opts.compress_max_link_mbit = -2;
  EXPECT_EQ(mccl_comm_create_inprocess(world, 0, &opts, &comm), MCCL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mccl_last_error()).find("compress_max_link_mbit"), std::string::npos);
  EXPECT_EQ(comm, nullptr);
  EXPECT_MCCL_OK(mccl_world_destroy(world));
}

// The world handle may go first: its communicators keep it alive.
TEST(CApi, WorldMayBeDestroyedBeforeItsCommunicator) {
  mccl_world_t world = nullptr;
  ASSERT_MCCL_OK(mccl_world_create(1, nullptr, &world));
  mccl_comm_t comm = nullptr;
  ASSERT_MCCL_OK(mccl_comm_create_inprocess(world, 0, nullptr, &comm));
  EXPECT_MCCL_OK(mccl_world_destroy(world));
  int v = 5;
  EXPECT_MCCL_OK(mccl_broadcast(comm, &v, sizeof v, 0));
  EXPECT_EQ(v, 5);
  EXPECT_MCCL_OK(mccl_comm_destroy(comm));
}

// The message is per thread: another thread's failure does not show here.
TEST(CApi, LastErrorIsThreadLocal) {
  std::string other_before;
  std::string other_after;
  std::thread t([&] {
    other_before = mccl_last_error();
    EXPECT_EQ(mccl_barrier(nullptr), MCCL_INVALID_ARGUMENT);
    other_after = mccl_last_error();
  });
  t.join();
  EXPECT_EQ(other_before, "");
  EXPECT_NE(other_after.find("mccl_barrier"), std::string::npos) << other_after;
  EXPECT_EQ(mccl_comm_progress(nullptr), MCCL_INVALID_ARGUMENT);
  const std::string mine = mccl_last_error();
  EXPECT_NE(mine.find("mccl_comm_progress"), std::string::npos) << mine;
  // A successful call leaves the message alone.
  EXPECT_STRNE(mccl_version(), "");
  EXPECT_EQ(mine, mccl_last_error());
}

// ----------------------------------------------- collectives, 1..3 ranks

class CApiRanks : public ::testing::TestWithParam<int> {};

TEST_P(CApiRanks, BroadcastFromEveryRoot) {
  const int n = GetParam();
  run_ranks(n, [n](mccl_comm_t comm, int rank) {
    for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4097}}) {
      for (int root = 0; root < n; ++root) {
        std::vector<unsigned char> buf(bytes, 0);
        if (rank == root) {
          for (std::size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, i);
        }
        ASSERT_MCCL_OK(mccl_broadcast(comm, buf.data(), bytes, root));
        for (std::size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(buf[i], pattern(root, i)) << "root " << root << " byte " << i;
        }
      }
    }
  });
}

TEST_P(CApiRanks, Allgather) {
  const int n = GetParam();
  run_ranks(n, [n](mccl_comm_t comm, int rank) {
    constexpr std::size_t kBytes = 3001;
    std::vector<unsigned char> send(kBytes);
    for (std::size_t i = 0; i < kBytes; ++i) send[i] = pattern(rank, i);
    std::vector<unsigned char> recv(kBytes * n, 0);
    ASSERT_MCCL_OK(mccl_allgather(comm, send.data(), recv.data(), kBytes));
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < kBytes; ++i) {
        ASSERT_EQ(recv[r * kBytes + i], pattern(r, i)) << "block " << r << " byte " << i;
      }
    }
  });
}

TEST_P(CApiRanks, AllgatherInPlace) {
  const int n = GetParam();
  run_ranks(n, [n](mccl_comm_t comm, int rank) {
    constexpr std::size_t kBytes = 100;
    std::vector<unsigned char> recv(kBytes * n, 0);
    for (std::size_t i = 0; i < kBytes; ++i) recv[rank * kBytes + i] = pattern(rank, i);
    ASSERT_MCCL_OK(mccl_allgather(comm, MCCL_IN_PLACE, recv.data(), kBytes));
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < kBytes; ++i) ASSERT_EQ(recv[r * kBytes + i], pattern(r, i));
    }
  });
}

// Uneven counts (one rank gives nothing), blocks stored in reverse order,
// once with a send buffer and once in place.
TEST_P(CApiRanks, AllgathervUnevenAndInPlace) {
  const int n = GetParam();
  run_ranks(n, [n](mccl_comm_t comm, int rank) {
    std::vector<std::size_t> counts(n);
    for (int r = 0; r < n; ++r) counts[r] = r == 1 ? 0 : 500 * (r + 1) + 3;
    std::vector<std::size_t> displs(n);
    std::size_t total = 0;
    for (int r = n - 1; r >= 0; --r) {
      displs[r] = total;
      total += counts[r];
    }
    for (bool in_place : {false, true}) {
      std::vector<unsigned char> recv(total, 0);
      std::vector<unsigned char> send(counts[rank]);
      for (std::size_t i = 0; i < counts[rank]; ++i) {
        send[i] = pattern(rank, i);
        recv[displs[rank] + i] = in_place ? pattern(rank, i) : 0;
      }
      const void* src = in_place ? MCCL_IN_PLACE : static_cast<const void*>(send.data());
      ASSERT_MCCL_OK(mccl_allgatherv(comm, src, recv.data(), counts.data(), displs.data()));
      for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < counts[r]; ++i) {
          ASSERT_EQ(recv[displs[r] + i], pattern(r, i)) << "in place " << in_place;
        }
      }
    }
  });
}

TEST_P(CApiRanks, NonblockingCollectives) {
  const int n = GetParam();
  run_ranks(n, [n](mccl_comm_t comm, int rank) {
    // ibroadcast completed by polling mccl_test.
    std::vector<unsigned char> buf(2000, rank == 0 ? 0 : 0xEE);
    if (rank == 0) {
      for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = pattern(0, i);
    }
    mccl_request_t req = nullptr;
    ASSERT_MCCL_OK(mccl_ibroadcast(comm, buf.data(), buf.size(), 0, &req));
    int done = 0;
    while (!done) {
      ASSERT_MCCL_OK(mccl_test(req, &done));
      if (!done) {
        EXPECT_MCCL_OK(mccl_comm_progress(comm));
      }
    }
    ASSERT_MCCL_OK(mccl_test(req, &done));  // stays done
    EXPECT_EQ(done, 1);
    EXPECT_MCCL_OK(mccl_wait(req, 0));
    EXPECT_MCCL_OK(mccl_request_free(req));
    for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], pattern(0, i));

    // iallgatherv whose count arrays die before the wait: the request
    // keeps its own copies.
    std::vector<unsigned char> recv(static_cast<std::size_t>(n) * 64, 0);
    std::vector<unsigned char> mine(64);
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = pattern(rank, i);
    {
      std::vector<std::size_t> counts(n, 64);
      std::vector<std::size_t> displs(n);
      for (int r = 0; r < n; ++r) displs[r] = static_cast<std::size_t>(r) * 64;
      ASSERT_MCCL_OK(
          mccl_iallgatherv(comm, mine.data(), recv.data(), counts.data(), displs.data(), &req));
      std::fill(counts.begin(), counts.end(), std::size_t{999999});
    }
    ASSERT_MCCL_OK(mccl_wait(req, -1));
    EXPECT_MCCL_OK(mccl_request_free(req));
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < 64; ++i) ASSERT_EQ(recv[r * 64 + i], pattern(r, i));
    }

    // iallgather in place, then ibarrier, both waited with an explicit timeout.
    std::vector<unsigned char> all(static_cast<std::size_t>(n) * 8, 0);
    for (std::size_t i = 0; i < 8; ++i) all[rank * 8 + i] = pattern(rank, i);
    ASSERT_MCCL_OK(mccl_iallgather(comm, MCCL_IN_PLACE, all.data(), 8, &req));
    ASSERT_MCCL_OK(mccl_wait(req, kTimeoutMs));
    EXPECT_MCCL_OK(mccl_request_free(req));
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < 8; ++i) ASSERT_EQ(all[r * 8 + i], pattern(r, i));
    }
    ASSERT_MCCL_OK(mccl_ibarrier(comm, &req));
    ASSERT_MCCL_OK(mccl_wait(req, kTimeoutMs));
    EXPECT_MCCL_OK(mccl_request_free(req));
    EXPECT_MCCL_OK(mccl_barrier(comm));
  });
}

// A NULL buffer is refused on the calling rank before anything starts, with
// the argument named; a NULL buffer of 0 bytes is fine.
TEST_P(CApiRanks, NullBufferIsAnInvalidArgument) {
  const int n = GetParam();
  run_ranks(n, [n](mccl_comm_t comm, int rank) {
    EXPECT_EQ(mccl_broadcast(comm, nullptr, 16, 0), MCCL_INVALID_ARGUMENT);
    const std::string msg = mccl_last_error();
    EXPECT_NE(msg.find("mccl_broadcast"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'buffer'"), std::string::npos) << msg;
    EXPECT_STREQ(mccl_result_string(MCCL_INVALID_ARGUMENT), "invalid argument");

    std::vector<unsigned char> recv(static_cast<std::size_t>(n) * 4);
    EXPECT_EQ(mccl_allgather(comm, nullptr, recv.data(), 4), MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("'send'"), std::string::npos);
    unsigned char one = 1;
    EXPECT_EQ(mccl_allgather(comm, &one, nullptr, 1), MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("'recv'"), std::string::npos);
    std::vector<std::size_t> counts(n, 1);
    EXPECT_EQ(mccl_allgatherv(comm, &one, recv.data(), counts.data(), nullptr),
              MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("'displs'"), std::string::npos);
    mccl_request_t req = nullptr;
    EXPECT_EQ(mccl_ibroadcast(comm, nullptr, 1, 0, &req), MCCL_INVALID_ARGUMENT);
    EXPECT_EQ(req, nullptr);
    EXPECT_EQ(mccl_ibarrier(comm, nullptr), MCCL_INVALID_ARGUMENT);

    // None of the refused calls started anything: the communicator works.
    ASSERT_MCCL_OK(mccl_broadcast(comm, nullptr, 0, 0));
    int v = rank == 0 ? 77 : 0;
    ASSERT_MCCL_OK(mccl_broadcast(comm, &v, sizeof v, 0));
    EXPECT_EQ(v, 77);
  });
}

TEST_P(CApiRanks, StatsAndRequestOwnership) {
  const int n = GetParam();
  run_ranks(n, [](mccl_comm_t comm, int /*rank*/) {
    ASSERT_MCCL_OK(mccl_barrier(comm));
    mccl_stats_t stats = MCCL_STATS_INIT;
    ASSERT_MCCL_OK(mccl_comm_stats(comm, &stats));
    EXPECT_EQ(stats.struct_size, sizeof(mccl_stats_t));
    EXPECT_GE(stats.collectives_completed, 1u);

    mccl_stats_t unsized{};
    EXPECT_EQ(mccl_comm_stats(comm, &unsized), MCCL_INVALID_ARGUMENT);

    // An older, shorter struct: nothing past its end is written.
    alignas(mccl_stats_t) unsigned char raw[sizeof(mccl_stats_t) + 8];
    std::memset(raw, 0xAB, sizeof raw);
    const std::size_t old_size = offsetof(mccl_stats_t, mcast_bytes_sent);
    std::memcpy(raw, &old_size, sizeof old_size);
    ASSERT_MCCL_OK(mccl_comm_stats(comm, reinterpret_cast<mccl_stats_t*>(raw)));
    for (std::size_t i = old_size; i < sizeof raw; ++i) ASSERT_EQ(raw[i], 0xAB) << i;

    // A communicator with a live request refuses to be destroyed.
    mccl_request_t req = nullptr;
    ASSERT_MCCL_OK(mccl_ibarrier(comm, &req));
    ASSERT_MCCL_OK(mccl_wait(req, -1));
    EXPECT_EQ(mccl_comm_destroy(comm), MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("mccl_request_free"), std::string::npos);
    EXPECT_MCCL_OK(mccl_request_free(req));
  });
}

// Exchanges and point-to-point through the C API: alltoall, blocking and
// nonblocking; a ring of sends received from any source, whose source is
// reported; and the arguments the calls refuse, named.
TEST_P(CApiRanks, AlltoallBlockingAndNonblocking) {
  const int n = GetParam();
  run_ranks(n, [n](mccl_comm_t comm, int rank) {
    constexpr std::size_t kBytes = 1001;
    std::vector<unsigned char> send(kBytes * n), recv(kBytes * n, 0);
    for (int to = 0; to < n; ++to) {
      for (std::size_t i = 0; i < kBytes; ++i) send[to * kBytes + i] = pattern(rank * 7 + to, i);
    }
    ASSERT_MCCL_OK(mccl_alltoall(comm, send.data(), recv.data(), kBytes));
    for (int from = 0; from < n; ++from) {
      for (std::size_t i = 0; i < kBytes; ++i) {
        ASSERT_EQ(recv[from * kBytes + i], pattern(from * 7 + rank, i)) << "from " << from;
      }
    }
    std::fill(recv.begin(), recv.end(), 0);
    mccl_request_t req = nullptr;
    ASSERT_MCCL_OK(mccl_ialltoall(comm, send.data(), recv.data(), kBytes, &req));
    ASSERT_MCCL_OK(mccl_wait(req, kTimeoutMs));
    EXPECT_MCCL_OK(mccl_request_free(req));
    for (int from = 0; from < n; ++from) {
      ASSERT_EQ(recv[from * kBytes], pattern(from * 7 + rank, 0)) << "from " << from;
    }
  });
}

TEST_P(CApiRanks, SendRecvRingFromAnySource) {
  const int n = GetParam();
  run_ranks(n, [n](mccl_comm_t comm, int rank) {
    constexpr std::size_t kBytes = 70000;
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;
    std::vector<unsigned char> out(kBytes), in(kBytes, 0);
    for (std::size_t i = 0; i < kBytes; ++i) out[i] = pattern(rank, i);
    // Buffered sends: every rank sends before it receives.
    ASSERT_MCCL_OK(mccl_send(comm, out.data(), kBytes, right, 5));
    int from = -2;
    ASSERT_MCCL_OK(mccl_recv(comm, in.data(), kBytes, MCCL_ANY_SOURCE, 5, &from));
    EXPECT_EQ(from, left);
    for (std::size_t i = 0; i < kBytes; i += 997) ASSERT_EQ(in[i], pattern(left, i));
    // Nonblocking, the other way round, with the source from the request.
    mccl_request_t rreq = nullptr, sreq = nullptr;
    ASSERT_MCCL_OK(mccl_irecv(comm, in.data(), kBytes, MCCL_ANY_SOURCE, 6, &rreq));
    int source = -2;
    ASSERT_MCCL_OK(mccl_request_source(rreq, &source));
    EXPECT_EQ(source, -1) << "no source before completion";
    ASSERT_MCCL_OK(mccl_isend(comm, out.data(), kBytes, left, 6, &sreq));
    ASSERT_MCCL_OK(mccl_wait(sreq, kTimeoutMs));
    ASSERT_MCCL_OK(mccl_wait(rreq, kTimeoutMs));
    ASSERT_MCCL_OK(mccl_request_source(rreq, &source));
    EXPECT_EQ(source, right);
    EXPECT_EQ(in[1], pattern(right, 1));
    EXPECT_MCCL_OK(mccl_request_free(sreq));
    EXPECT_MCCL_OK(mccl_request_free(rreq));
    // Refused, naming what is wrong; nothing is sent, so no receive waits.
    unsigned char b = 0;
    EXPECT_EQ(mccl_send(comm, &b, 1, n, 0), MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("peer"), std::string::npos) << mccl_last_error();
    EXPECT_EQ(mccl_send(comm, &b, 1, right, -1), MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("tag"), std::string::npos) << mccl_last_error();
    EXPECT_EQ(mccl_send(comm, nullptr, 1, right, 0), MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("buffer"), std::string::npos)
        << mccl_last_error();
    EXPECT_EQ(mccl_irecv(comm, &b, 1, left, 0, nullptr), MCCL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(mccl_last_error()).find("request"), std::string::npos)
        << mccl_last_error();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, CApiRanks, ::testing::Values(1, 2, 3),
                         [](const auto& p) { return std::to_string(p.param) + "ranks"; });

}  // namespace

// Elastic membership from C: rank 1 of 3 dies; the survivors' barrier
// fails with MCCL_PEER_FAILURE, they shrink, learn that rank 1 failed and
// run an allgather on the two ranks left. Arguments are checked.
TEST(CApiElastic, SurvivorsShrinkAndGoOn) {
  constexpr int n = 3;
  mccl_world_t world = nullptr;
  mccl_sim_options_t sim = MCCL_SIM_OPTIONS_INIT;
  ASSERT_MCCL_OK(mccl_world_create(n, &sim, &world));
  std::atomic<bool> killed{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      mccl_comm_options_t opts = MCCL_COMM_OPTIONS_INIT;
      opts.timeout_ms = kTimeoutMs;
      opts.progress = MCCL_PROGRESS_THREAD;
      mccl_comm_t comm = nullptr;
      ASSERT_MCCL_OK(mccl_comm_create_inprocess(world, r, &opts, &comm));
      if (r == 1) {
        EXPECT_MCCL_OK(mccl_world_kill_rank(world, 1));
        killed = true;
      } else {
        while (!killed) std::this_thread::yield();
        EXPECT_EQ(mccl_barrier(comm), MCCL_PEER_FAILURE);
        mccl_comm_t next = nullptr;
        int failed[4] = {-1, -1, -1, -1}, count = -1;
        EXPECT_EQ(mccl_comm_shrink(comm, failed, -1, &count, &next), MCCL_INVALID_ARGUMENT);
        EXPECT_EQ(mccl_comm_shrink(comm, nullptr, 2, &count, &next), MCCL_INVALID_ARGUMENT);
        EXPECT_EQ(mccl_comm_shrink(comm, failed, 4, &count, nullptr), MCCL_INVALID_ARGUMENT);
        ASSERT_MCCL_OK(mccl_comm_shrink(comm, failed, 4, &count, &next));
        EXPECT_EQ(count, 1);
        EXPECT_EQ(failed[0], 1);
        EXPECT_EQ(failed[1], -1);
        int rank = -1, size = -1;
        EXPECT_MCCL_OK(mccl_comm_rank(next, &rank));
        EXPECT_MCCL_OK(mccl_comm_size(next, &size));
        EXPECT_EQ(rank, r == 0 ? 0 : 1);
        EXPECT_EQ(size, 2);
        std::uint32_t epoch = 0;
        EXPECT_MCCL_OK(mccl_comm_epoch(next, &epoch));
        EXPECT_EQ(epoch, 1u);
        std::vector<unsigned char> mine(1000), all(2000);
        for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = pattern(rank, i);
        EXPECT_MCCL_OK(mccl_allgather(next, mine.data(), all.data(), mine.size()));
        for (int q = 0; q < 2; ++q) {
          for (std::size_t i = 0; i < mine.size(); ++i) ASSERT_EQ(all[q * 1000 + i], pattern(q, i));
        }
        EXPECT_EQ(mccl_barrier(comm), MCCL_PEER_FAILURE);  // the old one stays revoked
        EXPECT_MCCL_OK(mccl_comm_destroy(next));
      }
      EXPECT_MCCL_OK(mccl_comm_destroy(comm));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_MCCL_OK(mccl_world_destroy(world));
  EXPECT_EQ(mccl_comm_revoke(nullptr), MCCL_INVALID_ARGUMENT);
}
