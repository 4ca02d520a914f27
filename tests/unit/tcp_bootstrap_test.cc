// The TCP-store bootstrap (mccl/tcp_bootstrap.h), ranks as threads on
// 127.0.0.1: allgather rounds, the single-rank world, ranks that never
// arrive or leave, bad settings, and make_bootstrap_from_env().
#include "mccl/tcp_bootstrap.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/rendezvous.h"
#include "mccl/error.h"

namespace mccl {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A port that was free a moment ago (bind to 0, read it back, close).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

int open_fds() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d) != nullptr) ++n;
    ::closedir(d);
  }
  return n;
}

std::vector<std::byte> pattern(int rank, int round, std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<std::byte>((rank * 131 + round * 17 + static_cast<int>(i)) & 0xFF);
  }
  return v;
}

// Runs fn(rank) on one thread per rank; rethrows nothing, returns each
// rank's exception (or null).
std::vector<std::exception_ptr> run_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

// The code and message of an mccl::Error, or a failure when it is something else.
struct Caught {
  ErrorCode code = ErrorCode::kOk;
  std::string message;
};
Caught caught(const std::exception_ptr& e) {
  if (!e) return {};
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return {err.code(), err.what()};
  } catch (const std::exception& other) {
    ADD_FAILURE() << "not an mccl::Error: " << other.what();
  }
  return {ErrorCode::kInternal, ""};
}

template <typename F>
Caught caught_from(F&& f) {
  try {
    f();
  } catch (...) {
    return caught(std::current_exception());
  }
  return {};
}

constexpr const char* kVars[] = {"MCCL_BOOTSTRAP_ADDR",
                                 "MCCL_RANK",
                                 "MCCL_WORLD_SIZE",
                                 "MCCL_BOOTSTRAP_TIMEOUT_MS",
                                 "OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_SIZE",
                                 "PMI_RANK",
                                 "PMI_SIZE",
                                 "PMIX_RANK"};

// Every test starts with the bootstrap and launcher variables unset and
// leaves the environment as it found it. Variables are only changed while
// no rank thread runs.
class TcpBootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) {
      const char* val = std::getenv(v);
      saved_[v] = val ? std::optional<std::string>(val) : std::nullopt;
      ::unsetenv(v);
    }
    port_ = free_port();
    addr_ = "127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  TcpBootstrapOptions opts(int rank, int size, std::chrono::milliseconds timeout = 10s) const {
    return {.address = addr_, .rank = rank, .size = size, .timeout = timeout};
  }

  std::map<std::string, std::optional<std::string>> saved_;
  int port_ = 0;
  std::string addr_;
};

class TcpBootstrapRounds : public TcpBootstrapTest, public ::testing::WithParamInterface<int> {};

TEST_P(TcpBootstrapRounds, EveryRoundReturnsTheConcatenationInRankOrder) {
  const int n = GetParam();
  const std::vector<std::size_t> sizes = {0, 1, 7, 4096, 65537, 1 << 20, 3, 0, 100};
  auto errors = run_ranks(n, [&](int r) {
    auto boot = make_tcp_bootstrap(opts(r, n));
    ASSERT_EQ(boot->rank(), r);
    ASSERT_EQ(boot->size(), n);
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      auto mine = pattern(r, static_cast<int>(k), sizes[k]);
      auto all = boot->allgather(mine, 10s);
      ASSERT_EQ(all.size(), sizes[k] * static_cast<std::size_t>(n)) << "round " << k;
      for (int q = 0; q < n; ++q) {
        auto want = pattern(q, static_cast<int>(k), sizes[k]);
        ASSERT_TRUE(std::equal(want.begin(), want.end(),
                               all.begin() + static_cast<std::ptrdiff_t>(sizes[k]) * q))
            << "round " << k << ", rank " << q << "'s part, seen by rank " << r;
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(caught(errors[static_cast<std::size_t>(r)]).message, "");
}

// Ranks let their store connection go between rounds (as a communicator
// does once created), each at its own moments, rank 0 included, some
// twice in a row; every round still returns every rank's part, and an idle
// store holds no connection per rank.
TEST_P(TcpBootstrapRounds, RanksThatLetTheirConnectionGoComeBackForTheNextRound) {
  const int n = GetParam();
  const int fds_before = open_fds();
  std::atomic<int> idle{0};
  std::atomic<int> fds_idle{0};
  auto errors = run_ranks(n, [&](int r) {
    std::unique_ptr<bootstrap::Rendezvous> boot;
    ASSERT_TRUE(bootstrap::open_tcp(opts(r, n), boot).is_ok());
    for (int k = 0; k < 6; ++k) {
      if ((k + r) % 2 == 0 || k == 3) bootstrap::release_between_exchanges(*boot);
      if (k == 3) bootstrap::release_between_exchanges(*boot);  // twice: a no-op
      if (k == 3) {
        // Everyone let go: count what the whole process holds (the store
        // closes its end as it reads each goodbye), then go on.
        if (++idle == n) {
          int held = open_fds();
          for (int i = 0; i < 200 && held - fds_before > 2; ++i) {
            std::this_thread::sleep_for(10ms);
            held = open_fds();
          }
          fds_idle = held;
        }
        while (idle < n || fds_idle == 0) std::this_thread::sleep_for(1ms);
      }
      std::vector<std::byte> all;
      ASSERT_TRUE(boot->allgather(pattern(r, k, 100), 10s, all).is_ok());
      ASSERT_EQ(all.size(), 100u * static_cast<std::size_t>(n));
      for (int q = 0; q < n; ++q) {
        auto want = pattern(q, k, 100);
        ASSERT_TRUE(std::equal(want.begin(), want.end(), all.begin() + 100 * q))
            << "round " << k << ", rank " << q << "'s part, seen by rank " << r;
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(caught(errors[static_cast<std::size_t>(r)]).message, "");
  // The store's listener and its wake-up: no pair of sockets per rank.
  EXPECT_LE(fds_idle - fds_before, 2) << "descriptors held while every rank was detached";
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, TcpBootstrapRounds, ::testing::Values(2, 3, 5));

TEST_F(TcpBootstrapTest, SizeOneOpensNoSocketAndNeedsNoAddress) {
  const int before = open_fds();
  auto boot = make_tcp_bootstrap({.rank = 0, .size = 1});
  EXPECT_EQ(open_fds(), before);
  EXPECT_EQ(boot->rank(), 0);
  EXPECT_EQ(boot->size(), 1);
  auto mine = pattern(0, 0, 33);
  EXPECT_EQ(boot->allgather(mine, 1ms), mine);
  EXPECT_TRUE(boot->allgather({}, 1ms).empty());
}

TEST_F(TcpBootstrapTest, HugeTimeoutMeansNoDeadline) {
  // The store converted the timeout to nanoseconds unchecked: INT64_MAX ms
  // wrapped to -1 ms, so it turned every rank away at once ("never arrived").
  const auto forever = std::chrono::milliseconds::max();
  auto errors = run_ranks(3, [&](int r) {
    auto boot = make_tcp_bootstrap(opts(r, 3, forever));
    auto all = boot->allgather(pattern(r, 0, 5), forever);
    ASSERT_EQ(all.size(), 15u);
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(caught(errors[static_cast<std::size_t>(r)]).message, "");
}

TEST_F(TcpBootstrapTest, RankThatNeverArrivesIsNamedWithinTheTimeout) {
  // kTimeout (not a hang, which the test's deadline would end) is what
  // says the ranks gave up at their deadline.
  const auto timeout = 600ms;
  auto errors = run_ranks(2, [&](int r) { make_tcp_bootstrap(opts(r, 3, timeout)); });
  for (int r = 0; r < 2; ++r) {
    Caught c = caught(errors[static_cast<std::size_t>(r)]);
    EXPECT_EQ(c.code, ErrorCode::kTimeout) << c.message;
    EXPECT_THAT(c.message, AllOf(HasSubstr("rank " + std::to_string(r) + ":"),
                                 HasSubstr("never arrived"), HasSubstr(": 2")));
  }
}

TEST_F(TcpBootstrapTest, StoreThatNeverAnswersNamesRankZero) {
  Caught c = caught_from([&] { make_tcp_bootstrap(opts(1, 2, 300ms)); });
  EXPECT_EQ(c.code, ErrorCode::kTimeout);
  EXPECT_THAT(c.message,
              AllOf(HasSubstr("rank 1:"), HasSubstr("never arrived: 0"), HasSubstr(addr_)));
}

TEST_F(TcpBootstrapTest, RankMissingFromARoundIsNamedAndTheErrorSticks) {
  std::promise<void> others_done;
  auto done = others_done.get_future().share();
  std::atomic<int> finished{0};
  auto errors = run_ranks(3, [&](int r) {
    auto boot = make_tcp_bootstrap(opts(r, 3));
    boot->allgather(pattern(r, 0, 8), 5s);
    if (r == 2) {  // stays connected but skips round 1
      done.wait();
      return;
    }
    Caught c = caught_from([&] { boot->allgather(pattern(r, 1, 8), 500ms); });
    EXPECT_EQ(c.code, ErrorCode::kTimeout) << c.message;
    EXPECT_THAT(c.message, AllOf(HasSubstr("allgather #1"), HasSubstr("never arrived: 2")));
    // The store is poisoned: later calls fail the same way, at once.
    Caught again = caught_from([&] { boot->allgather(pattern(r, 2, 8), 5s); });
    EXPECT_EQ(again.code, ErrorCode::kTimeout);
    if (++finished == 2) others_done.set_value();
  });
  for (auto& e : errors) EXPECT_EQ(caught(e).message, "");
}

TEST_F(TcpBootstrapTest, RankThatLeavesIsReportedAsPeerFailure) {
  auto errors = run_ranks(3, [&](int r) {
    auto boot = make_tcp_bootstrap(opts(r, 3));
    boot->allgather(pattern(r, 0, 8), 5s);
    if (r == 2) return;  // destroys its bootstrap
    // A departure must not wait for the deadline: waiting would end in
    // kTimeout, never kPeerFailure.
    Caught c = caught_from([&] { boot->allgather(pattern(r, 1, 8), 10s); });
    EXPECT_EQ(c.code, ErrorCode::kPeerFailure) << c.message;
    EXPECT_THAT(c.message, HasSubstr("rank 2"));
  });
  for (auto& e : errors) EXPECT_EQ(caught(e).message, "");
}

TEST_F(TcpBootstrapTest, ContributionsOfDifferentLengthsAreAMismatch) {
  auto errors = run_ranks(2, [&](int r) {
    auto boot = make_tcp_bootstrap(opts(r, 2));
    boot->allgather(pattern(r, 0, r == 0 ? 4 : 8), 5s);
  });
  for (auto& e : errors) {
    Caught c = caught(e);
    EXPECT_EQ(c.code, ErrorCode::kMismatch) << c.message;
    EXPECT_THAT(c.message, HasSubstr("differ in length"));
  }
}

TEST_F(TcpBootstrapTest, DisagreementOnTheWorldSizeIsAMismatch) {
  auto errors = run_ranks(2, [&](int r) { make_tcp_bootstrap(opts(r, r == 0 ? 2 : 3, 3s)); });
  for (auto& e : errors) {
    Caught c = caught(e);
    EXPECT_EQ(c.code, ErrorCode::kMismatch) << c.message;
    EXPECT_THAT(c.message, HasSubstr("MCCL_WORLD_SIZE"));
  }
}

TEST_F(TcpBootstrapTest, StoreIsReachableByHostName) {
  addr_ = "localhost:" + std::to_string(port_);
  auto errors = run_ranks(2, [&](int r) {
    auto boot = make_tcp_bootstrap(opts(r, 2));
    EXPECT_EQ(boot->allgather(pattern(r, 0, 3), 5s).size(), 6u);
  });
  for (auto& e : errors) EXPECT_EQ(caught(e).message, "");
}

TEST_F(TcpBootstrapTest, StrayConnectionsAreIgnored) {
  std::promise<void> store_up;
  std::thread rank0([&] {
    // Rank 0 of 2: the store exists as soon as this call starts.
    store_up.set_value();
    auto boot = make_tcp_bootstrap(opts(0, 2));
    EXPECT_EQ(boot->allgather(pattern(0, 0, 5), 5s).size(), 10u);
  });
  store_up.get_future().wait();
  // Something that is not MCCL connects and sends junk (retrying until the
  // store is listening).
  int fd = -1;
  for (int i = 0; i < 200 && fd < 0; ++i) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      fd = -1;
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_GE(fd, 0);
  const char junk[] = "GET / HTTP/1.0\r\n\r\nand then some more bytes to fill a header";
  ASSERT_GT(::send(fd, junk, sizeof junk, MSG_NOSIGNAL), 0);
  auto boot = make_tcp_bootstrap(opts(1, 2));
  EXPECT_EQ(boot->allgather(pattern(1, 0, 5), 5s).size(), 10u);
  rank0.join();
  ::close(fd);
}

TEST_F(TcpBootstrapTest, PortInUseIsATransportError) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  Caught c = caught_from([&] { make_tcp_bootstrap(opts(0, 2, 500ms)); });
  EXPECT_EQ(c.code, ErrorCode::kTransportError) << c.message;
  EXPECT_THAT(c.message, AllOf(HasSubstr("rank 0"), HasSubstr(addr_)));
  ::close(fd);
}

struct BadEnv {
  const char* variable;
  const char* value;  // nullptr: unset it
};

TEST_F(TcpBootstrapTest, BadEnvironmentValuesNameTheVariable) {
  const BadEnv cases[] = {
      {"MCCL_RANK", "abc"},
      {"MCCL_RANK", "-2"},
      {"MCCL_RANK", "4"},  // not below the world size
      {"MCCL_RANK", nullptr},
      {"MCCL_WORLD_SIZE", "0"},
      {"MCCL_WORLD_SIZE", "many"},
      {"MCCL_WORLD_SIZE", nullptr},
      {"MCCL_BOOTSTRAP_TIMEOUT_MS", "-5"},
      {"MCCL_BOOTSTRAP_TIMEOUT_MS", "soon"},
      {"MCCL_BOOTSTRAP_ADDR", "nohostport"},
      {"MCCL_BOOTSTRAP_ADDR", "127.0.0.1:99999"},
      {"MCCL_BOOTSTRAP_ADDR", "127.0.0.1:"},
      {"MCCL_BOOTSTRAP_ADDR", ":29500"},
      {"MCCL_BOOTSTRAP_ADDR", nullptr},
  };
  for (const BadEnv& bad : cases) {
    SCOPED_TRACE(std::string(bad.variable) + "=" + (bad.value ? bad.value : "(unset)"));
    ::setenv("MCCL_BOOTSTRAP_ADDR", "127.0.0.1:1", 1);
    ::setenv("MCCL_RANK", "1", 1);
    ::setenv("MCCL_WORLD_SIZE", "4", 1);
    ::setenv("MCCL_BOOTSTRAP_TIMEOUT_MS", "200", 1);
    if (bad.value) {
      ::setenv(bad.variable, bad.value, 1);
    } else {
      ::unsetenv(bad.variable);
    }
    for (bool from_env : {false, true}) {
      Caught c = caught_from([&] {
        if (from_env) {
          make_bootstrap_from_env();
        } else {
          make_tcp_bootstrap();
        }
      });
      EXPECT_EQ(c.code, ErrorCode::kInvalidArgument) << c.message;
      EXPECT_THAT(c.message, HasSubstr(bad.variable));
    }
  }
}

TEST_F(TcpBootstrapTest, BadOptionsNameTheField) {
  Caught c = caught_from([&] { make_tcp_bootstrap(opts(-3, 2)); });
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, HasSubstr("TcpBootstrapOptions::rank"));
  c = caught_from([&] { make_tcp_bootstrap(opts(0, 0)); });
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, HasSubstr("TcpBootstrapOptions::size"));
  c = caught_from([&] { make_tcp_bootstrap({.address = "nowhere", .rank = 0, .size = 2}); });
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, HasSubstr("TcpBootstrapOptions::address"));
}

TEST_F(TcpBootstrapTest, FromEnvUsesTheMcclVariables) {
  ::setenv("MCCL_BOOTSTRAP_ADDR", addr_.c_str(), 1);
  ::setenv("MCCL_RANK", "1", 1);
  ::setenv("MCCL_WORLD_SIZE", "2", 1);
  ::setenv("MCCL_BOOTSTRAP_TIMEOUT_MS", "5000", 1);
  std::thread rank0([&] {
    // Rank 0 explicitly: options win over MCCL_RANK=1.
    auto boot = make_tcp_bootstrap({.rank = 0});
    EXPECT_EQ(boot->size(), 2);
    EXPECT_EQ(boot->allgather(pattern(0, 0, 4), 5s).size(), 8u);
  });
  auto boot = make_bootstrap_from_env();
  EXPECT_EQ(boot->rank(), 1);
  EXPECT_EQ(boot->size(), 2);
  auto all = boot->allgather(pattern(1, 0, 4), 5s);
  rank0.join();
  EXPECT_EQ(std::vector<std::byte>(all.begin() + 4, all.end()), pattern(1, 0, 4));
  EXPECT_EQ(std::vector<std::byte>(all.begin(), all.begin() + 4), pattern(0, 0, 4));
}

TEST_F(TcpBootstrapTest, FromEnvTakesRankAndSizeFromTheLauncher) {
  ::setenv("MCCL_BOOTSTRAP_ADDR", addr_.c_str(), 1);
  ::setenv("PMI_RANK", "1", 1);
  ::setenv("PMI_SIZE", "2", 1);
  std::thread rank0([&] {
    auto boot = make_tcp_bootstrap(opts(0, 2));
    boot->allgather(pattern(0, 0, 1), 5s);
  });
  auto boot = make_bootstrap_from_env();
  EXPECT_EQ(boot->rank(), 1);
  EXPECT_EQ(boot->size(), 2);
  EXPECT_EQ(boot->allgather(pattern(1, 0, 1), 5s).size(), 2u);
  rank0.join();
}

TEST_F(TcpBootstrapTest, FromEnvUnderMpirunWithoutAddressSaysWhatIsMissing) {
  ::setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("PMIX_RANK", "3", 1);
  Caught c = caught_from([] { make_bootstrap_from_env(); });
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, AllOf(HasSubstr("MCCL_BOOTSTRAP_ADDR"), HasSubstr("Open MPI"),
                               HasSubstr("rank 3 of 4")));

  ::setenv("OMPI_COMM_WORLD_RANK", "x3", 1);
  c = caught_from([] { make_bootstrap_from_env(); });
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, HasSubstr("OMPI_COMM_WORLD_RANK"));
}

TEST_F(TcpBootstrapTest, FromEnvSingleRankLaunchNeedsNoStore) {
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  auto boot = make_bootstrap_from_env();
  EXPECT_EQ(boot->size(), 1);
  EXPECT_EQ(boot->allgather(pattern(0, 0, 2), 1s), pattern(0, 0, 2));
}

TEST_F(TcpBootstrapTest, FromEnvWithNothingSetExplainsWhatToSet) {
  Caught c = caught_from([] { make_bootstrap_from_env(); });
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, AllOf(HasSubstr("MCCL_BOOTSTRAP_ADDR"), HasSubstr("MCCL_RANK"),
                               HasSubstr("MCCL_WORLD_SIZE")));
}

}  // namespace
}  // namespace mccl
