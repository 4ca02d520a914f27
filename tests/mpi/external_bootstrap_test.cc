// The bootstraps that lean on an outside runtime, without that runtime: the
// callback bootstrap with threads as ranks and an in-memory allgather, and
// what the PMIx bootstrap and make_bootstrap_from_env() say when no PMIx
// server is there. (Under a real launcher: mpi_bootstrap_test.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mccl/callback_bootstrap.h"
#include "mccl/error.h"
#include "mccl/pmix_bootstrap.h"
#include "mccl/tcp_bootstrap.h"

namespace mccl {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;

// An allgather among `size` threads: every thread deposits its block, the
// last one to arrive publishes the result, and a generation counter keeps
// consecutive rounds apart.
class ThreadAllgather {
 public:
  explicit ThreadAllgather(int size) : size_(size), blocks_(size) {}

  void operator()(int rank, const void* mine, void* all, std::size_t n) {
    std::unique_lock lock(mu_);
    const std::uint64_t gen = generation_;
    blocks_[rank].assign(static_cast<const char*>(mine), static_cast<const char*>(mine) + n);
    if (++arrived_ == size_) {
      result_.clear();
      for (auto& b : blocks_) result_.insert(result_.end(), b.begin(), b.end());
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen; });
    }
    // Every rank of a round passes the same n (the bootstrap checks lengths
    // in a first round); copy what this rank expects.
    std::memcpy(all, result_.data(), std::min(result_.size(), n * size_));
  }

 private:
  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<char>> blocks_;
  std::vector<char> result_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
};

std::vector<std::byte> bytes(const std::string& s) {
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

struct Caught {
  ErrorCode code = ErrorCode::kOk;
  std::string message;
};

template <typename F>
Caught caught_from(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

TEST(CallbackBootstrap, AllgathersThroughTheCallback) {
  constexpr int kSize = 3;
  ThreadAllgather ag(kSize);
  std::vector<std::vector<std::byte>> got(kSize), empty(kSize);
  std::vector<std::thread> threads;
  for (int r = 0; r < kSize; ++r) {
    threads.emplace_back([&, r] {
      auto boot = make_callback_bootstrap(
          r, kSize, [&, r](const void* m, void* a, std::size_t n) { ag(r, m, a, n); });
      EXPECT_EQ(boot->rank(), r);
      EXPECT_EQ(boot->size(), kSize);
      got[r] = boot->allgather(bytes("rank" + std::to_string(r)), 1s);
      empty[r] = boot->allgather({}, 1s);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kSize; ++r) {
    EXPECT_EQ(got[r], bytes("rank0rank1rank2"));
    EXPECT_TRUE(empty[r].empty());
  }
}

TEST(CallbackBootstrap, LengthsThatDifferAreAMismatchOnEveryRank) {
  ThreadAllgather ag(2);
  std::vector<Caught> c(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto boot = make_callback_bootstrap(
          r, 2, [&, r](const void* m, void* a, std::size_t n) { ag(r, m, a, n); });
      c[r] = caught_from([&] { boot->allgather(bytes(r == 0 ? "ab" : "abc"), 1s); });
      // Sticky: the object stays broken, without calling the callback.
      Caught again = caught_from([&] { boot->allgather(bytes("ab"), 1s); });
      EXPECT_EQ(again.code, ErrorCode::kMismatch);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c[0].code, ErrorCode::kMismatch);
  EXPECT_THAT(c[0].message, AllOf(HasSubstr("rank 0"), HasSubstr("rank 1 contributes 3 bytes")));
  EXPECT_EQ(c[1].code, ErrorCode::kMismatch);
  EXPECT_THAT(c[1].message, HasSubstr("rank 0 contributes 2 bytes"));
}

TEST(CallbackBootstrap, ExceptionsOfTheCallbackBecomeMcclErrors) {
  auto boot = make_callback_bootstrap(0, 1, [](const void*, void*, std::size_t) {
    throw std::runtime_error("MPI_Allgather returned MPI_ERR_COMM");
  });
  Caught c = caught_from([&] { boot->allgather(bytes("x"), 1s); });
  EXPECT_EQ(c.code, ErrorCode::kInternal);
  EXPECT_THAT(c.message, AllOf(HasSubstr("rank 0"), HasSubstr("MPI_ERR_COMM")));

  boot = make_callback_bootstrap(0, 1, [](const void*, void*, std::size_t) {
    throw Error(ErrorCode::kPeerFailure, "rank 3 is gone");
  });
  c = caught_from([&] { boot->allgather(bytes("x"), 1s); });
  EXPECT_EQ(c.code, ErrorCode::kPeerFailure);
  EXPECT_EQ(c.message, "rank 3 is gone");

  boot = make_callback_bootstrap(0, 1, [](const void*, void*, std::size_t) { throw 42; });
  c = caught_from([&] { boot->allgather(bytes("x"), 1s); });
  EXPECT_EQ(c.code, ErrorCode::kInternal);
}

TEST(CallbackBootstrap, RejectsBadArguments) {
  auto cb = [](const void*, void*, std::size_t) {};
  EXPECT_EQ(caught_from([&] { make_callback_bootstrap(0, 0, cb); }).code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(caught_from([&] { make_callback_bootstrap(2, 2, cb); }).code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(caught_from([&] { make_callback_bootstrap(-1, 2, cb); }).code,
            ErrorCode::kInvalidArgument);
  Caught c = caught_from([&] { make_callback_bootstrap(0, 2, nullptr); });
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, HasSubstr("callback is empty"));
}

// Sets launcher variables for one test and restores them afterwards.
class PmixEnvTest : public ::testing::Test {
 protected:
  static constexpr const char* kVars[] = {
      "MCCL_BOOTSTRAP_ADDR",  "MCCL_RANK",        "MCCL_WORLD_SIZE",   "OMPI_COMM_WORLD_RANK",
      "OMPI_COMM_WORLD_SIZE", "PMI_RANK",         "PMI_SIZE",          "PMIX_RANK",
      "PMIX_NAMESPACE",       "PMIX_SERVER_URI4", "PMIX_SERVER_URI41", "PMIX_SERVER_URI3",
      "PMIX_SERVER_URI2",     "PMIX_SERVER_URI21"};
  void SetUp() override {
    for (const char* v : kVars) {
      const char* val = std::getenv(v);
      saved_[v] = val ? std::optional<std::string>(val) : std::nullopt;
      ::unsetenv(v);
    }
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
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(PmixEnvTest, WithoutAServerThePmixBootstrapIsUnavailable) {
  Caught c = caught_from([] { make_pmix_bootstrap(5s); });
  EXPECT_EQ(c.code, ErrorCode::kUnavailable);
#if MCCL_TEST_HAVE_PMIX
  EXPECT_THAT(c.message, AllOf(HasSubstr("not launched under a PMIx server"),
                               HasSubstr("PMIX_NAMESPACE is not set"), HasSubstr("mpirun")));
#else
  EXPECT_THAT(c.message, HasSubstr("built without PMIx"));
#endif
  const ErrorCode negative = MCCL_TEST_HAVE_PMIX ? ErrorCode::kInvalidArgument  // checked first
                                                 : ErrorCode::kUnavailable;
  EXPECT_EQ(caught_from([] { make_pmix_bootstrap(-1ms); }).code, negative);
}

// A PMIx launcher's variables without its server (as if the server died):
// from_env picks PMIx when it is built in, and says why it cannot work.
TEST_F(PmixEnvTest, FromEnvUnderAPmixLauncherUsesPmix) {
  ::setenv("PMIX_NAMESPACE", "mccl-test-ns", 1);
  ::setenv("PMIX_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  Caught c = caught_from([] { make_bootstrap_from_env(); });
#if MCCL_TEST_HAVE_PMIX
  EXPECT_EQ(c.code, ErrorCode::kUnavailable);
  EXPECT_THAT(c.message, AllOf(HasSubstr("not launched under a PMIx server"),
                               HasSubstr("PMIX_NAMESPACE=mccl-test-ns")));
#else
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, AllOf(HasSubstr("MCCL_BOOTSTRAP_ADDR"), HasSubstr("without PMIx")));
#endif

  // Any MCCL_* variable asks for the TCP store, as before PMIx.
  ::setenv("MCCL_WORLD_SIZE", "2", 1);
  c = caught_from([] { make_bootstrap_from_env(); });
  EXPECT_EQ(c.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(c.message, AllOf(HasSubstr("MCCL_BOOTSTRAP_ADDR"), HasSubstr("rank 1 of 2")));
}

}  // namespace
}  // namespace mccl
