// What a client can do to mccl_offloadd (src/offload/daemon): each test
// plays a client that skipped the library's checks or broke the protocol,
// speaking the wire (offload/wire.h) itself, and checks that only its own
// session fails, at once, without unbounded work or memory. Each test fails
// without the fix it guards (checked by reverting that fix).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "offload/wire.h"
#include "proc_status.h"

namespace mccl::offload {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// The threads of process `pid`.
std::vector<std::string> threads_of(pid_t pid) {
  std::vector<std::string> tids;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    tids.push_back(e.path().string());
  }
  return tids;
}

// First word of /proc/PID/task/TID/FILE.
std::string first_word(const std::string& task, const char* file) {
  std::ifstream f(task + "/" + file);
  std::string w;
  f >> w;
  return w;
}

// Whether thread `task` (stopped) was stopped while blocked in a call that
// only waits (poll, epoll, select, futex, a sleep, accept), not in the
// middle of its loop (reads and sends are left out: the loop makes them
// without blocking): /proc/.../syscall gives the number of the call a
// stopped thread sits in, -1 for one stopped in user code. A wait with a
// timeout that an earlier stop interrupted goes on as restart_syscall (219).
bool stopped_while_waiting(const std::string& task) {
#if defined(__x86_64__)
  static const std::set<long> kWaits = {7,   23,  35,  43,  61,  202, 219,
                                        230, 232, 270, 271, 281, 288, 441};
  const std::string nr = first_word(task, "syscall");
  return !nr.empty() && nr != "running" && nr != "-1" && kWaits.count(std::stol(nr)) == 1;
#else
  (void)task;
  return true;  // no table of call numbers here: take the stop as it comes
#endif
}

// Stops `pid` (SIGSTOP) at a moment when every thread of it is waiting, so
// that what it does once resumed begins with a fresh pass of its loop (a
// stop in the middle of a pass would resume it halfway). Retries a stop
// that caught a thread busy; false if none of many tries was clean.
bool stop_while_idle(pid_t pid) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    if (::kill(pid, SIGSTOP) != 0) return false;
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    bool all_stopped = false;
    while (!all_stopped && std::chrono::steady_clock::now() < deadline) {
      all_stopped = true;
      for (const auto& t : threads_of(pid)) {
        std::ifstream f(t + "/stat");
        std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        const auto close = stat.rfind(')');
        if (close == std::string::npos || stat.size() < close + 3 || stat[close + 2] != 'T') {
          all_stopped = false;
        }
      }
      if (!all_stopped) std::this_thread::sleep_for(1ms);
    }
    bool idle = all_stopped;
    for (const auto& t : threads_of(pid)) idle = idle && stopped_while_waiting(t);
    if (idle) return true;
    ::kill(pid, SIGCONT);
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

// An mccl_offloadd of this test's own (a child, so its pid is known and it
// is reaped), logging to a file. It exits when its last client has gone.
class Daemon {
 public:
  Daemon(const std::string& socket, const std::string& log) : socket_(socket), log_(log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0) ::dup2(fd, 2);
      const std::string arg = "--socket=" + socket;
      ::execl(MCCL_OFFLOADD, MCCL_OFFLOADD, arg.c_str(), "--idle-timeout-ms=30000", nullptr);
      ::_exit(127);
    }
    // The daemon reads and writes this process's memory (Yama's ptrace
    // scope otherwise allows that to ancestors only).
    (void)::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  }
  ~Daemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& socket() const { return socket_; }
  bool exits_within(std::chrono::milliseconds limit) {
    const auto until = common::now() + limit;
    while (common::now() < until) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  std::string log() const {
    std::ifstream f(log_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  std::string socket_, log_;
  pid_t pid_ = -1;
};

// Connects to the daemon at `path`, retrying while it starts.
int connect_to(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  const auto until = common::now() + 10s;
  while (common::now() < until) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

// Whether `sock` reports EOF or an error within `limit` (the daemon closed it).
bool closed_within(int sock, std::chrono::milliseconds limit) {
  const auto until = common::now() + limit;
  while (common::now() < until) {
    pollfd p{sock, POLLIN, 0};
    if (::poll(&p, 1, 10) > 0) {
      char c;
      const ssize_t n = ::recv(sock, &c, 1, MSG_DONTWAIT);
      if (n <= 0) return true;
    }
  }
  return false;
}

// A client that speaks the wire itself: the library's OffloadComm would
// not send what these tests send.
class RawClient {
 public:
  ~RawClient() {
    drop();
    if (map_ != nullptr) ::munmap(map_, map_bytes_);
    for (int fd : {memfd_, sub_efd_, comp_efd_}) {
      if (fd >= 0) ::close(fd);
    }
  }
  // Connects and hands over the rings; relay_until_ready() does the rest.
  void hello(const std::string& path, int rank, int size, std::uint32_t slots) {
    map_bytes_ = SharedRings::bytes_for(slots);
    memfd_ = ::memfd_create("daemon-test-rings", MFD_CLOEXEC);
    ASSERT_EQ(::ftruncate(memfd_, static_cast<off_t>(map_bytes_)), 0);
    map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
    ASSERT_NE(map_, MAP_FAILED);
    rings_ = std::make_unique<SharedRings>(map_, slots, true);
    sub_efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    comp_efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    sock_ = connect_to(path);
    ASSERT_GE(sock_, 0) << "no daemon at " << path;
    HelloMsg h;
    h.pid = static_cast<std::int32_t>(::getpid());
    h.rank = rank;
    h.size = size;
    h.ring_slots = slots;
    h.timeout_ms = 20000;
    const int fds[3] = {memfd_, sub_efd_, comp_efd_};
    ASSERT_TRUE(send_msg(sock_, MsgType::kHello, std::as_bytes(std::span(&h, 1)), fds).is_ok());
  }
  int sock() const { return sock_; }
  // The submission ring's header (first in the shared memory).
  RingHeader& submissions() { return *static_cast<RingHeader*>(map_); }
  void submit(const Submission& s) {
    ASSERT_TRUE(rings_->push_submission(s));
    ring_bell();
  }
  void ring_bell() {
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(sub_efd_, &one, sizeof one), 8);
  }
  // The next completion, waiting up to `limit`.
  bool completion(Completion& c, std::chrono::milliseconds limit) {
    const auto until = common::now() + limit;
    while (!rings_->pop_completion(c)) {
      if (common::now() >= until) return false;
      pollfd p{comp_efd_, POLLIN, 0};
      (void)::poll(&p, 1, 10);
      std::uint64_t v;
      (void)!::read(comp_efd_, &v, sizeof v);
    }
    return true;
  }
  // Leaves without a goodbye, as a crashed process does.
  void drop() {
    if (sock_ >= 0) ::close(sock_);
    sock_ = -1;
  }

 private:
  int sock_ = -1, memfd_ = -1, sub_efd_ = -1, comp_efd_ = -1;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::unique_ptr<SharedRings> rings_;
};

// The bootstrap of `clients` (rank order): relays their daemons' allgathers
// until every daemon says Ready; the first failure otherwise.
common::Status relay_until_ready(const std::vector<RawClient*>& clients) {
  for (;;) {
    std::vector<std::byte> all;
    int ready = 0;
    for (RawClient* c : clients) {
      MsgType type{};
      std::vector<std::byte> body;
      auto st = recv_msg(c->sock(), type, body, nullptr, 30000);
      if (!st) return st;
      if (type == MsgType::kReady) {
        ReadyMsg r;
        std::memcpy(&r, body.data(), sizeof r);
        if (r.code != 0) {
          return {static_cast<ErrorCode>(r.code),
                  std::string(reinterpret_cast<const char*>(body.data()) + sizeof r,
                              body.size() - sizeof r)};
        }
        ++ready;
      } else if (type == MsgType::kAllgather) {
        all.insert(all.end(), body.begin(), body.end());
      } else {
        return common::internal_error("unexpected message " +
                                      std::to_string(static_cast<int>(type)));
      }
    }
    if (ready == static_cast<int>(clients.size())) return common::Status::ok();
    if (ready > 0) return common::internal_error("the daemons disagree on the exchanges");
    for (RawClient* c : clients) {
      auto st = send_msg(c->sock(), MsgType::kAllgatherResult, all);
      if (!st) return st;
    }
  }
}

Submission broadcast(std::uint64_t id, const void* buffer, std::uint64_t bytes) {
  Submission s;
  s.id = id;
  s.kind = static_cast<std::uint32_t>(OpKind::kBroadcast);
  s.root = 0;
  s.buffer = reinterpret_cast<std::uint64_t>(buffer);
  s.bytes = bytes;
  return s;
}

class OffloadRogueClient : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/mccl-daemon-test-XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
  }
  void TearDown() override {
    daemons_.clear();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  Daemon& start_daemon(const std::string& name) {
    return *daemons_.emplace_back(
        std::make_unique<Daemon>(dir_ + "/" + name + ".sock", dir_ + "/" + name + ".log"));
  }
  // A one-rank communicator in a daemon of its own.
  void solo(RawClient& c, Daemon*& d, std::uint32_t slots = 8) {
    d = &start_daemon("d");
    c.hello(d->socket(), 0, 1, slots);
    const auto st = relay_until_ready({&c});
    ASSERT_TRUE(st.is_ok()) << st.message();
  }
  std::string dir_;
  std::vector<std::unique_ptr<Daemon>> daemons_;
};

// Found by reading: the daemon staged a broadcast of whatever size it was
// handed (the API's checks run in the client library), so 2^60 bytes
// failed as "out of memory" at best, and a size past the wire's 2^32
// chunks would have had its chunk count wrap. It now checks a broadcast as
// the API does, with the same helper and bound, before staging.
TEST_F(OffloadRogueClient, BroadcastPastTheWireIsRefusedBeforeStaging) {
  RawClient c;
  Daemon* d = nullptr;
  ASSERT_NO_FATAL_FAILURE(solo(c, d));
  std::uint64_t word = 0;
  ASSERT_NO_FATAL_FAILURE(c.submit(broadcast(1, &word, std::uint64_t{1} << 60)));
  Completion done;
  ASSERT_TRUE(c.completion(done, 10s));
  const auto st = completion_status(done);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.message();
  EXPECT_THAT(st.message(), HasSubstr("2^32 chunks"));
  // The session serves on.
  ASSERT_NO_FATAL_FAILURE(c.submit(broadcast(2, &word, sizeof word)));
  ASSERT_TRUE(c.completion(done, 10s));
  EXPECT_EQ(done.id, 2u);
  EXPECT_TRUE(completion_status(done).is_ok()) << completion_status(done).message();
}

// Found by reading: the session popped submissions until the tail met the
// head the client wrote, so a head set far ahead kept it popping stale
// slots (and queueing their completions) almost forever. A full ring is
// served; a head one past the ring's capacity ends that session, logged.
// (Before the fix this test saw the session pop 9 stale slots and go on.)
TEST_F(OffloadRogueClient, SubmissionHeadPastTheRingEndsTheSession) {
  RawClient c;
  Daemon* d = nullptr;
  ASSERT_NO_FATAL_FAILURE(solo(c, d, 8));
  std::uint64_t word = 0;
  for (std::uint64_t i = 1; i <= 8; ++i) {
    ASSERT_NO_FATAL_FAILURE(c.submit(broadcast(i, &word, sizeof word)));
  }
  for (int i = 0; i < 8; ++i) {
    Completion done;
    ASSERT_TRUE(c.completion(done, 10s)) << i;
    EXPECT_TRUE(completion_status(done).is_ok()) << completion_status(done).message();
  }
  RingHeader& h = c.submissions();
  h.head.store(h.tail.load() + 9);
  ASSERT_NO_FATAL_FAILURE(c.ring_bell());
  EXPECT_TRUE(closed_within(c.sock(), 5s)) << "the session went on";
  EXPECT_TRUE(d->exits_within(5s));
  EXPECT_THAT(d->log(), HasSubstr("broke the offload protocol"));
}

// Found by reading: the daemon read a client's hello into a buffer as long
// as the frame claimed (up to 64 MiB, zero-filled) before it looked at who
// the client was, then waited 10 s for the body. A hello is 152 bytes: a
// longer claim is refused at once, without allocating it.
TEST_F(OffloadRogueClient, HelloClaimingMegabytesIsRefusedWithoutAllocating) {
  Daemon& d = start_daemon("d");
  const int holder = connect_to(d.socket());  // keeps the daemon up meanwhile
  ASSERT_GE(holder, 0);
  std::this_thread::sleep_for(100ms);
  const long hwm_before = proc_status_kib(d.pid(), "VmHWM:");
  ASSERT_GT(hwm_before, 0);
  const int sock = connect_to(d.socket());
  ASSERT_GE(sock, 0);
  const std::uint32_t claim[2] = {static_cast<std::uint32_t>(MsgType::kHello), 63u << 20};
  ASSERT_EQ(::write(sock, claim, sizeof claim), static_cast<ssize_t>(sizeof claim));
  EXPECT_TRUE(closed_within(sock, 3s)) << "refused at once, not after the hello's 10 s";
  const long hwm_after = proc_status_kib(d.pid(), "VmHWM:");
  EXPECT_LT(hwm_after - hwm_before, 16 * 1024) << "KiB resident at the peak";
  ::close(sock);
  ::close(holder);
}

// Found by reading: the daemon read a client's hello before it asked the
// kernel who the client was. Another user's client is now refused before a
// byte is read: its hello stays unread (the kernel tells it ECONNRESET,
// not EOF) and it gets no answer. Needs root (setuid); skips otherwise.
TEST_F(OffloadRogueClient, AnotherUsersClientIsRefusedBeforeAnythingIsRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (setuid)";
  constexpr uid_t kOther = 65534;  // nobody
  Daemon& d = start_daemon("d");
  // Let the other user reach the socket (the daemon makes it 0600).
  while (::chmod(d.socket().c_str(), 0666) != 0) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(kOther) != 0 || ::setuid(kOther) != 0) ::_exit(10);
    const int sock = connect_to(d.socket());
    if (sock < 0) ::_exit(11);
    HelloMsg h;
    h.pid = static_cast<std::int32_t>(::getpid());
    h.size = 1;
    h.ring_slots = 8;
    const std::uint32_t frame[2] = {static_cast<std::uint32_t>(MsgType::kHello), sizeof h};
    iovec iov[2] = {{const_cast<std::uint32_t*>(frame), sizeof frame}, {&h, sizeof h}};
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = 2;
    // Closed before the hello could even be sent: nothing was read either.
    if (::sendmsg(sock, &mh, MSG_NOSIGNAL) < 0) ::_exit(errno == EPIPE ? 0 : 12);
    char buf[64];
    timeval tv{5, 0};
    ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ssize_t n = ::recv(sock, buf, sizeof buf, 0);
    if (n > 0) ::_exit(1);                 // answered
    if (n == 0) ::_exit(2);                // read, then closed
    ::_exit(errno == ECONNRESET ? 0 : 3);  // closed unread
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: answered, 2: its hello was read, 3+: see the child";
  EXPECT_TRUE(d.exits_within(5s));
  EXPECT_THAT(d.log(), HasSubstr("refused a client of uid " + std::to_string(kOther)));
}

// Defect 13's second fix (ac30cef), which had no test that failed without
// it: a session runs the protocol before it takes new submissions, and a
// submission to a broken communicator completes at once with the reason,
// staging nothing. Rank 0's daemon is stopped while rank 1's client dies
// (its daemon sends rank 0 an abort) and rank 0 submits a 4 GiB broadcast
// from memory the daemon cannot read; resumed, the daemon finds both the
// abort and the submission. Before the fix the submission was started
// first: 4 GiB of staging allocated, then "could not read" (the loop's
// order alone reversed, or the check alone removed, fails the same way).
TEST_F(OffloadRogueClient, SubmissionToABrokenCommunicatorCompletesAtOnceUnstaged) {
  Daemon& a = start_daemon("a");
  Daemon& b = start_daemon("b");
  RawClient c0, c1;
  ASSERT_NO_FATAL_FAILURE(c0.hello(a.socket(), 0, 2, 8));
  ASSERT_NO_FATAL_FAILURE(c1.hello(b.socket(), 1, 2, 8));
  const auto st = relay_until_ready({&c0, &c1});
  ASSERT_TRUE(st.is_ok()) << st.message();
  constexpr std::size_t kBytes = std::size_t{4} << 30;
  void* unreadable =
      ::mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(unreadable, MAP_FAILED);
  const long peak_before = proc_status_kib(a.pid(), "VmPeak:");
  ASSERT_TRUE(stop_while_idle(a.pid())) << "rank 0's daemon never stopped between passes";
  ASSERT_NO_FATAL_FAILURE(c0.submit(broadcast(1, unreadable, kBytes)));
  c1.drop();
  EXPECT_TRUE(b.exits_within(10s)) << "rank 1's daemon lingers";  // the abort has left
  ASSERT_EQ(::kill(a.pid(), SIGCONT), 0);
  Completion done;
  ASSERT_TRUE(c0.completion(done, 10s));
  const auto got = completion_status(done);
  EXPECT_EQ(got.code(), ErrorCode::kPeerFailure) << got.message();
  EXPECT_THAT(got.message(), HasSubstr("application process exited"));
  const long grew_kib = proc_status_kib(a.pid(), "VmPeak:") - peak_before;
  EXPECT_LT(grew_kib, 1024 * 1024) << "KiB of address space: staging for 4 GiB?";
  ::munmap(unreadable, kBytes);
}

// A unix socket file at `path`, left behind as a killed process leaves it;
// the listening descriptor is returned (close it to leave only the file).
int socket_file(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << path;
  return fd;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Found by a run of the suite that left 2,000 files in the private
// directory: the sockets and locks of daemons killed with their network
// namespaces. A starting daemon removes those whose lock nobody holds, and
// nothing else: not a live daemon's, not other files, not the logs.
TEST_F(OffloadRogueClient, AStartingDaemonRemovesTheFilesOfKilledDaemonsOnly) {
  // A daemon that really ran, killed.
  Daemon& killed = start_daemon("mccl-offload-killed-3");
  const auto listening = [](Daemon& d) {
    const auto until = common::now() + 10s;
    while (common::now() < until) {
      if (d.log().find("listening on") != std::string::npos) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  ASSERT_TRUE(listening(killed)) << killed.log();
  ASSERT_EQ(::kill(killed.pid(), SIGKILL), 0);
  ASSERT_TRUE(killed.exits_within(5s));
  ASSERT_TRUE(exists(killed.socket()));
  ASSERT_TRUE(exists(killed.socket() + ".lock"));
  // Files as another killed daemon left them (made after the first daemon
  // started: it would have swept them).
  const std::string old_sock = dir_ + "/mccl-offload-old-1.sock";
  ::close(socket_file(old_sock));
  { std::ofstream(old_sock + ".lock") << ""; }
  // A live daemon's files: its lock is held.
  const std::string live_sock = dir_ + "/mccl-offload-live-2.sock";
  const int live_listen = socket_file(live_sock);
  const int live_lock = ::open((live_sock + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_EQ(::flock(live_lock, LOCK_EX | LOCK_NB), 0);
  { std::ofstream(dir_ + "/mccl-offload-notes.txt") << "kept"; }

  Daemon& d = start_daemon("d");
  ASSERT_TRUE(listening(d)) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("removed the socket and lock of 2 daemon(s)"));
  EXPECT_FALSE(exists(old_sock));
  EXPECT_FALSE(exists(old_sock + ".lock"));
  EXPECT_FALSE(exists(killed.socket()));
  EXPECT_FALSE(exists(killed.socket() + ".lock"));
  EXPECT_TRUE(exists(dir_ + "/mccl-offload-killed-3.log")) << "a killed daemon's log is kept";
  EXPECT_TRUE(exists(live_sock));
  EXPECT_TRUE(exists(live_sock + ".lock"));
  EXPECT_TRUE(exists(dir_ + "/mccl-offload-notes.txt"));
  ::close(live_lock);
  ::close(live_listen);
}

}  // namespace
}  // namespace mccl::offload
