#include "offload/daemon/stale.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

#include "offload/socket_path.h"

namespace mccl::offload::daemon {

namespace {

constexpr std::string_view kLockSuffix = ".sock.lock";

bool is_daemon_lock_name(std::string_view name) {
  return name.size() > kSocketPrefix.size() + kLockSuffix.size() &&
         name.starts_with(kSocketPrefix) && name.ends_with(kLockSuffix);
}

// Removes `lock` and its socket when no daemon holds the lock. The lock is
// held (flock) while both are unlinked, as a daemon does at exit: a daemon
// that opened this lock file just before fails to take it and leaves, and
// the next one makes a fresh file.
bool remove_if_stale(const std::string& lock) {
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  bool removed = false;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    const std::string socket = lock.substr(0, lock.size() - std::string_view(".lock").size());
    if (check_socket_path(socket)) ::unlink(socket.c_str());  // nothing, or a socket of ours
    removed = ::unlink(lock.c_str()) == 0;
  }
  ::close(fd);
  return removed;
}

}  // namespace

int remove_stale_daemon_files(const std::string& own_socket) {
  const auto slash = own_socket.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : own_socket.substr(0, slash);
  const std::string own_lock = own_socket + ".lock";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  int removed = 0;
  while (const dirent* e = ::readdir(d)) {
    if (!is_daemon_lock_name(e->d_name)) continue;
    const std::string lock = dir + "/" + e->d_name;
    if (lock != own_lock && remove_if_stale(lock)) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace mccl::offload::daemon
