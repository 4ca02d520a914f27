#include "offload/socket_path.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "common/private_dir.h"
#include "common/settings.h"

namespace mccl::offload {

namespace {

std::string describe(const struct stat& st) { return common::describe_stat(st.st_mode, st.st_uid); }

}  // namespace

common::Status check_daemon_file(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return common::Status::ok();
    return common::invalid_argument("offload daemon file " + path + ": " + std::strerror(errno));
  }
  if (S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) return common::Status::ok();
  // A character device (MCCL_OFFLOAD_LOG=/dev/null) keeps no daemon out, and
  // only root can make one.
  if (S_ISCHR(st.st_mode)) return common::Status::ok();
  return common::invalid_argument(
      "offload daemon file " + path + " is " + describe(st) + ", not a file of uid " +
      std::to_string(::geteuid()) +
      ": no daemon can start on this socket path (another user may have put it there to keep "
      "the daemon out; remove it, or set MCCL_OFFLOAD_SOCKET to a path in a private directory)");
}

common::Status default_socket_path(std::string& out) {
  namespace s = common::settings;
  if (auto p = s::kOffloadSocket.from_env()) {
    out = *p;
    return common::Status::ok();
  }
  std::string dir;
  if (auto st = common::private_dir(dir); !st) return st;
  std::string job = "default";
  if (auto j = s::kOffloadJob.from_env()) {
    job = *j;
  } else if (auto a = s::kBootstrapAddr.from_env()) {
    job = std::to_string(std::hash<std::string>{}(*a) & 0xffffffffu);
  }
  // /proc/self/ns/net reads "net:[4026531840]": keep the number.
  std::string ns = "0";
  char link[64] = {};
  if (::readlink("/proc/self/ns/net", link, sizeof link - 1) > 0) {
    const std::string l = link;
    const auto a = l.find('['), b = l.find(']');
    if (a != std::string::npos && b != std::string::npos && b > a + 1)
      ns = l.substr(a + 1, b - a - 1);
  }
  out = dir + "/" + std::string(kSocketPrefix) + job + "-" + ns + ".sock";
  return common::Status::ok();
}

common::Status check_socket_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return common::Status::ok();
    return common::invalid_argument("offload socket " + path + ": " + std::strerror(errno));
  }
  if (S_ISSOCK(st.st_mode) && st.st_uid == ::geteuid()) return common::Status::ok();
  return common::invalid_argument(
      "offload socket " + path + " is " + describe(st) + ", not a socket of uid " +
      std::to_string(::geteuid()) +
      ": refusing to use it (another user may be standing in for the offload daemon; remove it "
      "or set MCCL_OFFLOAD_SOCKET elsewhere)");
}

common::Status check_peer_uid(int fd, const std::string& path, const char* peer) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return common::transport_error(std::string("SO_PEERCRED on ") + path + ": " +
                                   std::strerror(errno));
  }
  if (cred.uid != ::geteuid()) {
    return common::invalid_argument(
        std::string(peer) + " on " + path + " (pid " + std::to_string(cred.pid) + ") runs as uid " +
        std::to_string(cred.uid) + ", not as uid " + std::to_string(::geteuid()) +
        ": refused (only processes of one user may share an offload daemon)");
  }
  return common::Status::ok();
}

}  // namespace mccl::offload
