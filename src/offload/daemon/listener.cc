// run_daemon(): the daemon's socket, its lock and log, and one session
// thread per client (the sessions themselves: session.h).
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/settings.h"
#include "offload/daemon/daemon.h"
#include "offload/daemon/session.h"
#include "offload/daemon/stale.h"
#include "offload/socket_path.h"

namespace mccl::offload::daemon {

namespace {

enum class Lock { kHeld, kAnotherServes, kFailed };

// One daemon per path: the lock is held for the daemon's life. `lock`
// receives the descriptor when kHeld.
Lock take_lock(const std::string& lock_path, int& lock) {
  if (auto st = check_daemon_file(lock_path); !st) {
    say("%s", st.message());
    return Lock::kFailed;
  }
  // Never through a symlink, and only a lock file of this user: one that
  // someone else made could be held by them to keep every daemon out.
  lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
  struct stat lock_stat {};
  if (lock < 0 || ::fstat(lock, &lock_stat) != 0 || !S_ISREG(lock_stat.st_mode) ||
      lock_stat.st_uid != ::geteuid()) {
    say("cannot use the lock file %s",
        lock_path + ": " + (lock < 0 ? std::strerror(errno) : "not a plain file of this user"));
    if (lock >= 0) ::close(lock);
    return Lock::kFailed;
  }
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock);
    return Lock::kAnotherServes;
  }
  // The lock must still be the file at lock_path: one unlinked between our
  // open and our flock (by a daemon exiting, or one sweeping stale files)
  // would let a later daemon lock a fresh file and serve the path too.
  struct stat at_path {};
  if (::stat(lock_path.c_str(), &at_path) != 0 || at_path.st_ino != lock_stat.st_ino ||
      at_path.st_dev != lock_stat.st_dev) {
    ::close(lock);
    return Lock::kAnotherServes;  // the client starts another daemon if none answers
  }
  return Lock::kHeld;
}

// The listening socket at `path` (a stale socket of ours replaced first),
// or -1 after saying why.
int listen_at(const std::string& path) {
  // Only a stale socket of ours is replaced; anything else is someone
  // else's and stays (the clients refuse it too).
  if (auto st = check_socket_path(path); !st) {
    say("%s", st.message());
    return -1;
  }
  ::unlink(path.c_str());
  if (const int n = remove_stale_daemon_files(path); n > 0) {
    say("removed the socket and lock of %s", std::to_string(n) + " daemon(s) that were killed");
  }
  sockaddr_un addr{};
  int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(lfd, 128) != 0) {
    say("cannot listen on %s", path + ": " + std::strerror(errno));
    if (lfd >= 0) ::close(lfd);
    return -1;
  }
  ::chmod(path.c_str(), 0600);
  say("listening on %s", path);
  return lfd;
}

// Accepts clients on `lfd` (bound at `path`), a session thread each, until
// the last client has gone (or none came within the idle timeout); then
// closes and unlinks the socket and joins every session. Returns whether
// any client came.
bool serve(int lfd, const std::string& path, const DaemonConfig& config) {
  std::atomic<int> live{0};
  bool ever = false;
  const auto started = common::now();
  // A session thread's stack lives until it is joined: finished ones are
  // joined as the loop goes round, so a long-lived daemon serving many
  // short communicators stays small.
  struct SessionThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished = std::make_shared<std::atomic<bool>>(false);
  };
  std::list<SessionThread> sessions;
  auto reap = [&sessions] {
    for (auto it = sessions.begin(); it != sessions.end();) {
      if (!it->finished->load()) {
        ++it;
        continue;
      }
      it->thread.join();
      it = sessions.erase(it);
    }
  };
  for (;;) {
    reap();
    pollfd pfd{lfd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) > 0) {
      int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        ever = true;
        live.fetch_add(1);
        SessionThread& t = sessions.emplace_back();
        t.thread = std::thread([fd, &live, finished = t.finished] {
          run_session(fd);
          ::close(fd);
          live.fetch_sub(1);
          finished->store(true);
        });
      }
      continue;
    }
    const bool idle_out = !ever && common::now() - started > config.idle_timeout;
    if ((ever && live.load() == 0) || idle_out) break;
  }
  // Refuse new clients first (they start a new daemon), then leave.
  ::close(lfd);
  ::unlink(path.c_str());
  for (auto& t : sessions) t.thread.join();
  return ever;
}

}  // namespace

int run_daemon(const DaemonConfig& config) {
  // The transports it brings up read MCCL_* settings: refuse to start on
  // one that does not parse rather than run on its default.
  if (common::Status st = common::check_settings(); !st) {
    say("%s", st.message());
    return 1;
  }
  std::string path = config.socket_path;
  if (path.empty()) {
    if (auto st = default_socket_path(path); !st) {
      say("%s", st.message());
      return 1;
    }
  }
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    say("socket path too long: %s", path);
    return 1;
  }
  const std::string lock_path = path + ".lock";
  int lock = -1;
  switch (take_lock(lock_path, lock)) {
    case Lock::kHeld:
      break;
    case Lock::kAnotherServes:
      return 0;
    case Lock::kFailed:
      return 1;
  }
  const int lfd = listen_at(path);
  if (lfd < 0) {
    ::close(lock);
    return 1;
  }
  const bool ever = serve(lfd, path, config);
  say("%s", ever ? "the last client has gone: exiting" : "no client came: exiting");
  // Unlinked while still held: a daemon starting now either opened the old
  // file (and fails to lock it, as before) or makes a new one; the socket
  // path is free either way.
  ::unlink(lock_path.c_str());
  ::close(lock);
  // A log with nothing but "listening" and "exiting" in it is not kept;
  // only a regular file is removed (MCCL_OFFLOAD_LOG may be /dev/null).
  struct stat log_stat {};
  if (!config.log_path.empty() && !session_trouble() &&
      ::lstat(config.log_path.c_str(), &log_stat) == 0 && S_ISREG(log_stat.st_mode)) {
    ::unlink(config.log_path.c_str());
  }
  return 0;
}

}  // namespace mccl::offload::daemon
