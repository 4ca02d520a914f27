// Nobody joins who was not invited (docs/security.md, "The bootstrap
// store"): a job started by hand, with no secret given, cannot be joined by
// another local user who computes what the old derived secret was (uid and
// port) nor by one who reads rank 0's generated secret; a rank that cannot
// read that secret (another host) is refused at once with how to give one;
// MCCL_BOOTSTRAP_SECRET_FILE must be private; and rank 0 refuses at once a
// world larger than its store can serve. The second user is `nobody`
// (setresuid in a forked child), so those tests need root; they skip
// otherwise.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "bootstrap/wire.h"
#include "launcher.h"
#include "mccl/error.h"
#include "mccl/tcp_bootstrap.h"

namespace mccl {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
namespace wire = bootstrap::wire;
constexpr uid_t kOther = 65534;  // nobody

// Rank 0 and rank 1 with no secret given, as a job started by hand on one
// host: XDG_RUNTIME_DIR is a private directory of the test's own.
class HandStartedJob : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"MCCL_BOOTSTRAP_SECRET", "MCCL_BOOTSTRAP_SECRET_FILE"}) ::unsetenv(v);
    char t[] = "/tmp/mccl-invite-XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
    ::setenv("XDG_RUNTIME_DIR", dir_.c_str(), 1);
    port_ = launch::free_port();
    addr_ = "127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    ::unsetenv("XDG_RUNTIME_DIR");
    ::unsetenv("MCCL_BOOTSTRAP_SECRET_FILE");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  TcpBootstrapOptions opts(int rank, std::chrono::milliseconds timeout = 10s) const {
    return {.address = addr_, .rank = rank, .size = 2, .timeout = timeout};
  }
  // Rank 0 in the background; its allgather's result size, or -1 on error.
  std::future<long> start_rank0(std::chrono::milliseconds timeout = 10s) {
    return std::async(std::launch::async, [this, timeout]() -> long {
      try {
        auto boot = make_tcp_bootstrap(opts(0, timeout));
        std::byte b{0};
        return static_cast<long>(boot->allgather(std::span(&b, 1), timeout).size());
      } catch (const Error&) {
        return -1;
      }
    });
  }
  std::string secret_file() const {
    return dir_ + "/mccl-bootstrap-" + std::to_string(port_) + ".secret";
  }
  // Rank 0 writes its secret before its store listens.
  bool wait_for_secret_file() const {
    for (int i = 0; i < 2000 && !std::filesystem::exists(secret_file()); ++i) {
      std::this_thread::sleep_for(5ms);
    }
    return std::filesystem::exists(secret_file());
  }
  std::string dir_, addr_;
  int port_ = 0;
};

// What a second user tries, as `nobody` in a forked child: read rank 0's
// secret file, then join with what used to be the secret of a job started
// by hand (uid and port, both public). Exit status: 0 when both failed, 1
// when the file could be read, 2 when the store admitted it, 3 when no
// store answered.
int stranger_tries(int port, const std::string& secret_file) {
  if (::setresgid(kOther, kOther, kOther) != 0 || ::setresuid(kOther, kOther, kOther) != 0) {
    return 4;
  }
  if (std::ifstream(secret_file).good()) return 1;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 3;
  const std::string derived = "derived:uid=0;port=" + std::to_string(port) + ";job=";
  const auto body = wire::encode(wire::Hello{2, 10000, derived});
  std::array<std::byte, wire::kHeaderBytes> h;
  wire::encode({wire::Kind::kHello, 1, 0, 0, body.size()}, h);
  if (::send(fd, h.data(), h.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(h.size()) ||
      ::send(fd, body.data(), body.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(body.size())) {
    return 0;
  }
  // The store answers a member with a welcome (once all arrived: not yet)
  // and a stranger with an error frame.
  std::array<std::byte, wire::kHeaderBytes> answer;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::recv(fd, answer.data(), answer.size(), MSG_WAITALL) !=
      static_cast<ssize_t>(answer.size())) {
    return 2;  // kept waiting as a member would be
  }
  wire::Header got;
  std::string why;
  return wire::decode(answer, got, why) && got.kind == wire::Kind::kError ? 0 : 2;
}

// Defect (N1): a job started without mccl_run and without
// MCCL_BOOTSTRAP_SECRET used "derived:uid=0;port=<port>;job=" as its
// secret, which any local user can compute: one was admitted as rank 1.
// Now rank 0 draws a random secret that only this user's processes on its
// host can read; the stranger is refused and the real rank 1 joins.
TEST_F(HandStartedJob, AnotherUserCannotJoinOrReadTheSecret) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a second user (setresuid)";
  auto rank0 = start_rank0();
  const std::string file = secret_file();
  ASSERT_TRUE(wait_for_secret_file());
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The private directory is what keeps `nobody` out (root's test directory
  // is 0700): open it up to show that the file's own mode suffices too.
  ASSERT_EQ(::chmod(dir_.c_str(), 0711), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(stranger_tries(port_, file));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: read the secret file, 2: admitted with the derived secret, 3: no store, 4: setresuid";
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);  // private again, as rank 1 expects it

  auto boot = make_tcp_bootstrap(opts(1));
  std::byte b{1};
  EXPECT_EQ(boot->allgather(std::span(&b, 1), 10s).size(), 2u);
  EXPECT_EQ(rank0.get(), 2);
  boot.reset();
  EXPECT_FALSE(std::filesystem::exists(file)) << "rank 0 leaves its secret behind";
}

// A rank that cannot read rank 0's generated secret (here: another private
// directory, as on another host) is refused at once, told how to give one.
TEST_F(HandStartedJob, RankThatCannotReadTheSecretIsToldHowToGiveOne) {
  auto rank0 = start_rank0(4s);
  ASSERT_TRUE(wait_for_secret_file());
  char t[] = "/tmp/mccl-invite-other-XXXXXX";
  ASSERT_NE(::mkdtemp(t), nullptr);
  ::setenv("XDG_RUNTIME_DIR", t, 1);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    make_tcp_bootstrap(opts(1));
    ADD_FAILURE() << "joined without the secret";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("rank 1"));
    EXPECT_THAT(e.what(), HasSubstr("MCCL_BOOTSTRAP_SECRET"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "well under the 10 s timeout";
  std::filesystem::remove_all(t);
  EXPECT_EQ(rank0.get(), -1);
}

// A secret file that others may read is no secret; a private one is used.
TEST_F(HandStartedJob, SecretFileMustBePrivate) {
  const std::string file = dir_ + "/job.secret";
  std::ofstream(file) << "s3cret-from-a-file\n";
  ::setenv("MCCL_BOOTSTRAP_SECRET_FILE", file.c_str(), 1);
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  try {
    make_tcp_bootstrap(opts(1, 1s));
    ADD_FAILURE() << "a world-readable secret file was used";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("MCCL_BOOTSTRAP_SECRET_FILE"));
  }
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  auto rank0 = start_rank0();
  auto boot = make_tcp_bootstrap(opts(1));
  std::byte b{1};
  EXPECT_EQ(boot->allgather(std::span(&b, 1), 10s).size(), 2u);
  EXPECT_EQ(rank0.get(), 2);
  EXPECT_FALSE(std::filesystem::exists(secret_file())) << "a given secret needs no generated one";
}

// Defect (N4): rank 0 with MCCL_WORLD_SIZE=2147483647 sized its tables for
// the whole world up front and had not returned after 20 s. Now a world
// larger than the store can serve is refused at once, naming the value.
TEST(BootstrapWorldSize, AbsurdWorldIsRefusedAtOnce) {
  ::setenv("MCCL_BOOTSTRAP_SECRET", "s", 1);
  const auto t0 = std::chrono::steady_clock::now();
  for (bool from_env : {true, false}) {
    TcpBootstrapOptions o{.address = "127.0.0.1:" + std::to_string(launch::free_port()),
                          .rank = 0,
                          .size = from_env ? -1 : INT_MAX,
                          .timeout = 10s};
    ::setenv("MCCL_WORLD_SIZE", "2147483647", 1);
    try {
      make_tcp_bootstrap(o);
      ADD_FAILURE() << "rank 0 took a world of 2^31 - 1 ranks";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_THAT(e.what(), HasSubstr(from_env ? "MCCL_WORLD_SIZE = 2147483647"
                                               : "TcpBootstrapOptions::size = 2147483647"));
    }
  }
  ::unsetenv("MCCL_WORLD_SIZE");
  ::unsetenv("MCCL_BOOTSTRAP_SECRET");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

}  // namespace
}  // namespace mccl
