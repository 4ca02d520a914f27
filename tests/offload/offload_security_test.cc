// Who may stand at either end of the offload socket (offload/socket_path.h):
// another user's file or socket at the path, or a listener running as
// another user, is refused at once; the private directory is checked
// without following symlinks; the daemon's lock and log are never opened
// through a symlink; and a daemon serving many short sessions joins their
// threads instead of keeping every stack; the daemon checks the allgatherv
// layouts it is handed. Runs as root (chown, setuid);
// skips otherwise.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/private_dir.h"
#include "offload/client/client.h"
#include "offload/client/launch.h"
#include "offload/socket_path.h"
#include "proc_status.h"

namespace mccl::offload::client {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;
constexpr uid_t kOther = 65534;  // nobody

class SoloBootstrap final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::byte> allgather(std::span<const std::byte> mine,
                                   std::chrono::milliseconds) override {
    return {mine.begin(), mine.end()};
  }
};

class OffloadSecurity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (chown, setuid)";
    char t[] = "/tmp/mccl-offload-sec-XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
    sock_ = dir_ + "/d.sock";
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // create() with a daemon that cannot start, so only the checks can end it.
  common::Status create(std::chrono::milliseconds connect_timeout,
                        std::unique_ptr<OffloadComm>& out, const std::string& daemon) {
    OffloadOptions o;
    o.socket_path = sock_;
    o.daemon_path = daemon;
    o.timeout = 2000ms;
    o.connect_timeout = connect_timeout;
    return OffloadComm::create(boot_, o, out);
  }
  std::string dir_, sock_;
  SoloBootstrap boot_;
};

// Defect: another user's plain file at the socket path kept the client
// trying for the whole connect timeout (10.4 s) before it failed.
TEST_F(OffloadSecurity, AnotherUsersFileAtTheSocketPathIsAFastClearError) {
  std::ofstream(sock_) << "not a socket";
  ASSERT_EQ(::chown(sock_.c_str(), kOther, kOther), 0);
  std::unique_ptr<OffloadComm> c;
  const auto t0 = common::now();
  auto st = create(10s, c, "/nonexistent/mccl_offloadd");
  EXPECT_LT(common::now() - t0, 5s) << "well under the 10 s connect timeout";
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("uid " + std::to_string(kOther)));
  EXPECT_THAT(st.message(), HasSubstr(sock_));
}

// Defect: the client handed its rings to whatever listened at the path.
// A listener that runs as another user (the socket file is root's, the
// listening process is not) is refused before anything is sent to it.
TEST_F(OffloadSecurity, ListenerRunningAsAnotherUserGetsNothing) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, sock_.c_str(), sizeof a.sun_path - 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ::_exit(10);
    // The peer credentials are those of listen(): another user's.
    if (::setgid(kOther) != 0 || ::setuid(kOther) != 0 || ::listen(fd, 4) != 0) ::_exit(11);
    (void)!::write(ready[1], "r", 1);
    int conn = ::accept(fd, nullptr, nullptr);
    if (conn < 0) ::_exit(12);
    char buf[256];
    timeval tv{3, 0};
    ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = ::recv(conn, buf, sizeof buf, 0);
    ::_exit(n > 0 ? 1 : 0);  // 1: the client told a stranger its secrets
  }
  ::close(ready[1]);
  char r;
  ASSERT_EQ(::read(ready[0], &r, 1), 1);
  ::close(ready[0]);
  std::unique_ptr<OffloadComm> c;
  auto st = create(3s, c, "/nonexistent/mccl_offloadd");
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the fake daemon received the client's hello (status " << status << ")";
  EXPECT_FALSE(st.is_ok());
  EXPECT_THAT(st.message(), HasSubstr("runs as uid " + std::to_string(kOther)));
}

TEST_F(OffloadSecurity, PrivateDirIsMadePrivate) {
  std::string got;
  ASSERT_TRUE(common::private_dir_under(dir_, got).is_ok());
  EXPECT_EQ(got, dir_ + "/mccl-0");
  struct stat st {};
  ASSERT_EQ(::lstat(got.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// Defect (N2): another user who made /tmp/mccl-<uid> first (the sticky
// /tmp lets nobody else remove it) kept this user's offload engine from
// starting. Now a directory only this user can own takes its place, the
// same one for every process of the user, and an open mode, a symlink or
// a file in the way are treated alike: never followed nor used.
TEST_F(OffloadSecurity, SquattedPrivateDirIsReplacedByOneOfOurOwn) {
  const std::string squatted = dir_ + "/mccl-0";
  ASSERT_EQ(::mkdir(squatted.c_str(), 0777), 0);
  ASSERT_EQ(::chown(squatted.c_str(), kOther, kOther), 0);
  std::string got, again;
  ASSERT_TRUE(common::private_dir_under(dir_, got).is_ok());
  EXPECT_NE(got, squatted);
  EXPECT_THAT(got, StartsWith(squatted + "."));
  EXPECT_TRUE(common::why_not_private(got).empty()) << common::why_not_private(got);
  ASSERT_TRUE(common::private_dir_under(dir_, again).is_ok());
  EXPECT_EQ(again, got) << "every process of the user must find the same directory";

  // The whole offload engine comes up beside the squatter.
  const char* saved = std::getenv("MCCL_OFFLOAD_SOCKET");
  const std::string keep = saved ? saved : "";
  ::setenv("MCCL_OFFLOAD_SOCKET", (got + "/d.sock").c_str(), 1);
  sock_ = got + "/d.sock";
  std::unique_ptr<OffloadComm> c;
  auto st = create(10s, c, MCCL_OFFLOADD);
  EXPECT_TRUE(st.is_ok()) << st.message();
  c.reset();
  saved ? (void)::setenv("MCCL_OFFLOAD_SOCKET", keep.c_str(), 1)
        : (void)::unsetenv("MCCL_OFFLOAD_SOCKET");

  // A symlink to someone's directory, or our own directory left open: the
  // same replacement, never the link's target nor the open directory.
  ASSERT_EQ(::rmdir(squatted.c_str()), 0);
  ASSERT_EQ(::symlink("/", squatted.c_str()), 0);
  ASSERT_TRUE(common::private_dir_under(dir_, again).is_ok());
  EXPECT_EQ(again, got);
  ASSERT_EQ(::unlink(squatted.c_str()), 0);
  ASSERT_EQ(::mkdir(squatted.c_str(), 0755), 0);
  ASSERT_TRUE(common::private_dir_under(dir_, again).is_ok());
  EXPECT_EQ(again, got);
}

// Defect (N3): with MCCL_OFFLOAD_SOCKET in a shared directory, another
// user's planted <socket>.lock kept every daemon out and the client failed
// only after its whole connect timeout (10 s). Now the client names the
// lock and its owner at once; likewise for a planted log.
TEST_F(OffloadSecurity, AnotherUsersLockOrLogIsAFastClearError) {
  for (const std::string& planted : {sock_ + ".lock", sock_ + ".log"}) {
    std::ofstream(planted) << "planted";
    ASSERT_EQ(::chown(planted.c_str(), kOther, kOther), 0);
    std::unique_ptr<OffloadComm> c;
    const auto t0 = common::now();
    auto st = create(10s, c, MCCL_OFFLOADD);
    EXPECT_LT(common::now() - t0, 5s) << "well under the 10 s connect timeout";
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.message();
    EXPECT_THAT(st.message(), HasSubstr(planted));
    EXPECT_THAT(st.message(), HasSubstr("owned by uid " + std::to_string(kOther)));
    ASSERT_EQ(::unlink(planted.c_str()), 0);
  }
}

// Defect (N3): a daemon that could not open its log wrote its errors to
// the application's stderr. Now it writes nowhere but its log.
TEST_F(OffloadSecurity, DaemonNeverWritesToTheApplicationsStderr) {
  const std::string log = sock_ + ".log", lock = sock_ + ".lock";
  std::ofstream(log) << "planted";
  ASSERT_EQ(::chown(log.c_str(), kOther, kOther), 0);
  // The daemon fails at once on this lock, and says so on its stderr.
  ASSERT_EQ(::symlink("/nonexistent", lock.c_str()), 0);
  // Our stderr is a pipe while the daemon is spawned: it reads as ended
  // once the daemon no longer holds it (at exec with the fix, at exit
  // without), and holds whatever the daemon wrote there.
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  const int saved = ::dup(2);
  ::dup2(pipe_fds[1], 2);
  ::close(pipe_fds[1]);
  spawn_daemon(MCCL_OFFLOADD, sock_);
  ::dup2(saved, 2);
  ::close(saved);
  std::string text;
  const auto give_up = common::now() + 20s;
  while (common::now() < give_up) {
    pollfd p{pipe_fds[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  EXPECT_EQ(text, "") << "the daemon wrote to the application's stderr";
}

TEST_F(OffloadSecurity, DefaultSocketLivesInXdgRuntimeDirOnlyWhenItIsPrivate) {
  const char* saved_sock = std::getenv("MCCL_OFFLOAD_SOCKET");
  const char* saved_xdg = std::getenv("XDG_RUNTIME_DIR");
  const std::string keep_sock = saved_sock ? saved_sock : "", keep_xdg = saved_xdg ? saved_xdg : "";
  ::unsetenv("MCCL_OFFLOAD_SOCKET");
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  ::setenv("XDG_RUNTIME_DIR", dir_.c_str(), 1);
  std::string path;
  ASSERT_TRUE(default_socket_path(path).is_ok());
  EXPECT_THAT(path, StartsWith(dir_ + "/mccl-offload-"));
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  ASSERT_TRUE(default_socket_path(path).is_ok());
  EXPECT_THAT(path, StartsWith("/tmp/mccl-" + std::to_string(::geteuid()) + "/mccl-offload-"));
  if (saved_sock) ::setenv("MCCL_OFFLOAD_SOCKET", keep_sock.c_str(), 1);
  if (saved_xdg) {
    ::setenv("XDG_RUNTIME_DIR", keep_xdg.c_str(), 1);
  } else {
    ::unsetenv("XDG_RUNTIME_DIR");
  }
}

// Defect: the daemon's .lock and the .log beside the socket were opened
// following symlinks, so a planted link made them create or append to any
// file the user can write.
TEST_F(OffloadSecurity, LockAndLogAreNeverOpenedThroughASymlink) {
  const std::string victim_lock = dir_ + "/victim-lock", victim_log = dir_ + "/victim-log";
  ASSERT_EQ(::symlink(victim_lock.c_str(), (sock_ + ".lock").c_str()), 0);
  const std::string cmd =
      std::string(MCCL_OFFLOADD) + " --socket=" + sock_ + " --idle-timeout-ms=200 2>/dev/null";
  const int rc = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 1) << rc;
  EXPECT_FALSE(std::filesystem::exists(victim_lock));

  ASSERT_EQ(::unlink((sock_ + ".lock").c_str()), 0);
  ASSERT_EQ(::symlink(victim_log.c_str(), (sock_ + ".log").c_str()), 0);
  std::unique_ptr<OffloadComm> c;
  auto st = create(300ms, c, "/nonexistent/mccl_offloadd");
  EXPECT_FALSE(st.is_ok());
  EXPECT_FALSE(std::filesystem::exists(victim_log));
}

// Defect: the daemon never joined finished session threads, so each
// communicator's stack stayed mapped (2.3 -> 33.5 GB of virtual size in 8 s
// of create/destroy). One client holds the daemon up while others come
// and go; its size and thread count must stay bounded.
TEST_F(OffloadSecurity, DaemonJoinsFinishedSessions) {
  std::unique_ptr<OffloadComm> holder;
  auto st = create(10s, holder, MCCL_OFFLOADD);
  ASSERT_TRUE(st.is_ok()) << st.message();
  const pid_t daemon = holder->daemon_pid();
  long vm_at_start = 0;
  for (int i = 0; i < 48; ++i) {
    std::unique_ptr<OffloadComm> c;
    st = create(10s, c, MCCL_OFFLOADD);
    ASSERT_TRUE(st.is_ok()) << "session " << i << ": " << st.message();
    ASSERT_EQ(c->daemon_pid(), daemon);
    c.reset();
    if (i == 7) vm_at_start = proc_status_kib(daemon, "VmSize:");
  }
  // Sessions end asynchronously: give the last ones a moment to be joined.
  std::this_thread::sleep_for(300ms);
  const long grew_kib = proc_status_kib(daemon, "VmSize:") - vm_at_start;
  EXPECT_LT(grew_kib, 128 * 1024) << "KiB of virtual size for 40 finished sessions";
  EXPECT_LT(proc_status_kib(daemon, "Threads:"), 8);
}

// Found by reading: the daemon trusted an allgatherv's counts and
// displacements as the client library had checked them; a client that
// skipped the checks made a displacement + count wrap, the staging buffer
// came out 3 bytes long and the daemon copied the client's bytes before it.
// Now the daemon checks them itself; the request fails, the daemon lives on.
TEST_F(OffloadSecurity, DaemonChecksAnAllgathervItIsHanded) {
  std::unique_ptr<OffloadComm> c;
  auto st = create(10s, c, MCCL_OFFLOADD);
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::vector<std::byte> send(8, std::byte{7}), recv(8);
  const std::size_t counts[] = {8};
  const std::size_t wrapping[] = {SIZE_MAX - 4};
  auto bad = c->allgatherv(send.data(), false, recv.data(), counts, wrapping);
  ASSERT_TRUE(c->wait(*bad, common::Deadline::after(10s)).is_ok());
  EXPECT_EQ(bad->status().code(), ErrorCode::kInvalidArgument) << bad->status().message();
  EXPECT_THAT(bad->status().message(), HasSubstr("displs[0]"));
  const std::size_t fine[] = {0};
  auto good = c->allgatherv(send.data(), false, recv.data(), counts, fine);
  ASSERT_TRUE(c->wait(*good, common::Deadline::after(10s)).is_ok());
  EXPECT_TRUE(good->status().is_ok()) << good->status().message();
  EXPECT_EQ(recv, send);
}

}  // namespace
}  // namespace mccl::offload::client
