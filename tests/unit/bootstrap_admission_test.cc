// Who may join the TCP store (bootstrap/store_server.h): a process without
// the job secret is refused without failing the job, anonymous connections
// make the store allocate nothing, a rank that breaks the protocol mid-frame
// fails the job cleanly (rank 0 does not crash), and mccl_run hands its
// ranks one random secret.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/secret.h"
#include "bootstrap/store_server.h"
#include "bootstrap/wire.h"
#include "launcher.h"
#include "mccl/error.h"
#include "mccl/tcp_bootstrap.h"

namespace mccl {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
namespace wire = bootstrap::wire;

constexpr const char* kSecret = "correct horse battery staple";

// A raw TCP peer of the store, speaking the wire format by hand.
class Raw {
 public:
  explicit Raw(int port) {
    for (int i = 0; i < 500 && fd_ < 0; ++i) {
      fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<std::uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd_);
        fd_ = -1;
        std::this_thread::sleep_for(10ms);
      }
    }
  }
  ~Raw() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return fd_ >= 0; }
  void send_bytes(const void* p, std::size_t n) {
    ASSERT_EQ(::send(fd_, p, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
  }
  void send_header(wire::Kind kind, std::uint32_t rank, std::uint64_t length) {
    std::array<std::byte, wire::kHeaderBytes> h;
    wire::encode({kind, rank, 0, 0, length}, h);
    send_bytes(h.data(), h.size());
  }
  void hello(std::uint32_t rank, std::uint32_t size, const std::string& secret) {
    auto body = wire::encode(wire::Hello{size, 10000, secret});
    send_header(wire::Kind::kHello, rank, body.size());
    send_bytes(body.data(), body.size());
  }
  // Everything the store sends until it closes the connection (or `within`
  // passes); `closed` says which.
  std::string read_until_closed(std::chrono::milliseconds within, bool& closed) {
    std::string got;
    closed = false;
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed = true;
        break;
      }
      got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
  }

 private:
  int fd_ = -1;
};

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

class BootstrapAdmission : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = launch::free_port();
    addr_ = "127.0.0.1:" + std::to_string(port_);
  }
  TcpBootstrapOptions opts(int rank, const std::string& secret = kSecret) const {
    return {.address = addr_, .rank = rank, .size = 2, .timeout = 10s, .secret = secret};
  }
  int port_ = 0;
  std::string addr_;
};

// Defect: a hello was believed whatever sent it, and a bad one failed the
// whole job. Now a stranger (wrong secret) is refused alone, whatever rank
// it claims, and the real ranks go on.
TEST_F(BootstrapAdmission, HelloWithoutTheSecretIsRefusedAndTheJobGoesOn) {
  auto rank0 = std::async(std::launch::async, [&] {
    auto boot = make_tcp_bootstrap(opts(0));
    std::byte b{0};
    return boot->allgather(std::span(&b, 1), 10s).size();
  });
  for (std::uint32_t claimed : {1u, 7u}) {
    Raw stranger(port_);
    ASSERT_TRUE(stranger.connected());
    stranger.hello(claimed, 2, "a guess");
    bool closed = false;
    const std::string answer = stranger.read_until_closed(5s, closed);
    EXPECT_TRUE(closed) << "the store kept a stranger's connection open";
    EXPECT_THAT(answer, HasSubstr("job's secret"));
  }
  auto boot = make_tcp_bootstrap(opts(1));
  std::byte b{1};
  EXPECT_EQ(boot->allgather(std::span(&b, 1), 10s).size(), 2u);
  EXPECT_EQ(rank0.get(), 2u);
}

// A real rank with another secret learns why it was refused.
TEST_F(BootstrapAdmission, RankWithAnotherSecretGetsAMismatchNamingTheSetting) {
  auto rank0 = std::async(std::launch::async, [&] {
    try {
      make_tcp_bootstrap(
          {.address = addr_, .rank = 0, .size = 2, .timeout = 2s, .secret = kSecret});
    } catch (const Error&) {
    }
  });
  try {
    make_tcp_bootstrap(opts(1, "another"));
    ADD_FAILURE() << "joined with the wrong secret";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMismatch) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("MCCL_BOOTSTRAP_SECRET"));
  }
  rank0.get();
}

// Defect: eight anonymous 32-byte headers announcing 256 MiB each made
// rank 0 allocate and zero 2 GiB. Now an anonymous connection may only say
// hello, and is dropped before anything is allocated.
TEST_F(BootstrapAdmission, AnonymousHeadersMakeTheStoreAllocateNothing) {
  auto rank0 = std::async(std::launch::async, [&] {
    auto boot = make_tcp_bootstrap(opts(0));
    std::byte b{0};
    return boot->allgather(std::span(&b, 1), 10s).size();
  });
  const long before = rss_kib();
  std::vector<std::unique_ptr<Raw>> strangers;
  for (int i = 0; i < 8; ++i) {
    strangers.push_back(std::make_unique<Raw>(port_));
    ASSERT_TRUE(strangers.back()->connected());
    strangers.back()->send_header(wire::Kind::kContribute, 1, wire::kMaxContribution);
  }
  for (auto& s : strangers) {
    bool closed = false;
    s->read_until_closed(5s, closed);
    EXPECT_TRUE(closed) << "an anonymous contribution was not dropped";
  }
  EXPECT_LT(rss_kib() - before, 64 * 1024) << "KiB of resident memory grew";
  auto boot = make_tcp_bootstrap(opts(1));
  std::byte b{1};
  EXPECT_EQ(boot->allgather(std::span(&b, 1), 10s).size(), 2u);
  EXPECT_EQ(rank0.get(), 2u);
}

// Defect: after a protocol error the store left the connection half-framed
// and dereferenced a null payload on its next byte: a process that claimed
// rank 1 and then sent 33 bad bytes killed rank 0. Now the job fails with
// an error that names the rank, and rank 0 lives on.
TEST_F(BootstrapAdmission, RankThatBreaksTheProtocolMidFrameFailsTheJobWithoutACrash) {
  // The store alone (no rank 0 client that would stop it on the error).
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<std::uint16_t>(port_));
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::unique_ptr<bootstrap::StoreServer> store;
  ASSERT_TRUE(bootstrap::StoreServer::start(at, 3, 10s, kSecret, store).is_ok());
  Raw rank1(port_);
  ASSERT_TRUE(rank1.connected());
  rank1.hello(1, 3, kSecret);
  // At once: the 33rd byte is waiting when the store has judged the header.
  std::array<char, 33> junk;
  junk.fill('x');
  rank1.send_bytes(junk.data(), junk.size());
  bool closed = false;
  const std::string answer = rank1.read_until_closed(500ms, closed);
  EXPECT_THAT(answer, HasSubstr("rank 1 broke the protocol"));
  // The store still serves: a latecomer learns why the job failed.
  Raw rank2(port_);
  ASSERT_TRUE(rank2.connected());
  rank2.hello(2, 3, kSecret);
  EXPECT_THAT(rank2.read_until_closed(500ms, closed), HasSubstr("rank 1 broke the protocol"));
  store.reset();
}

TEST(BootstrapSecret, ComparisonTakesTheWholeString) {
  EXPECT_TRUE(wire::secrets_equal("abc", "abc"));
  EXPECT_TRUE(wire::secrets_equal("", ""));
  EXPECT_FALSE(wire::secrets_equal("abc", "abd"));
  EXPECT_FALSE(wire::secrets_equal("abc", "ab"));
  EXPECT_FALSE(wire::secrets_equal("abc", "abcd"));
  EXPECT_FALSE(wire::secrets_equal("abc", ""));
}

TEST(BootstrapSecret, ExplicitThenEnvironmentNeverDerived) {
  ::unsetenv("MCCL_BOOTSTRAP_SECRET");
  ::unsetenv("MCCL_BOOTSTRAP_SECRET_FILE");
  // Nothing given: no secret to compute, only a file for rank 0 to write.
  auto secret = [](const char* option) {
    bootstrap::JobSecret s;
    EXPECT_TRUE(bootstrap::job_secret(option, 29500, s).is_ok());
    return s;
  };
  const auto none = secret("");
  EXPECT_EQ(none.value, "");
  EXPECT_THAT(none.generated, HasSubstr("mccl-bootstrap-29500.secret"));
  ::setenv("MCCL_BOOTSTRAP_SECRET", "from-env", 1);
  EXPECT_EQ(secret("").value, "from-env");
  EXPECT_EQ(secret("explicit").value, "explicit");
  ::setenv("MCCL_BOOTSTRAP_SECRET", std::string(wire::kMaxSecretBytes + 1, 'k').c_str(), 1);
  bootstrap::JobSecret too_long;
  const common::Status st = bootstrap::job_secret("", 29500, too_long);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("MCCL_BOOTSTRAP_SECRET"));
  ::unsetenv("MCCL_BOOTSTRAP_SECRET");
}

// mccl_run's launcher gives every rank of a job the same random secret,
// and another job another one.
TEST(BootstrapSecret, LauncherSetsOneRandomSecretPerJob) {
  auto secrets = [] {
    auto job = launch::run_job("/bin/sh", {"-c", "echo \"$MCCL_BOOTSTRAP_SECRET\""}, 2, {}, 20s);
    EXPECT_EQ(job.ranks[0].exit_code, 0) << launch::describe(job);
    EXPECT_EQ(job.ranks[0].output, job.ranks[1].output);
    return job.ranks[0].output;
  };
  const std::string a = secrets(), b = secrets();
  EXPECT_EQ(a.size(), 33u) << a;  // 32 hex digits and a newline
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace mccl
