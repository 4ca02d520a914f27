// Finding, starting and reaching the daemon (launch.h).
#include "offload/client/launch.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/settings.h"

namespace mccl::offload::client {

namespace {

std::string dir_of(const std::string& file) {
  auto slash = file.rfind('/');
  return slash == std::string::npos ? std::string(".") : file.substr(0, slash);
}

bool executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0; }

}  // namespace

std::string daemon_log_path(const std::string& socket_path) {
  return common::settings::kOffloadLog.from_env().value_or(socket_path + ".log");
}

std::string find_daemon(const std::string& daemon_path) {
  if (!daemon_path.empty()) return daemon_path;
  if (auto e = common::settings::kOffloadDaemon.from_env()) return *e;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&find_daemon), &info) != 0 && info.dli_fname != nullptr) {
    std::string p = dir_of(info.dli_fname) + "/mccl_offloadd";
    if (executable(p)) return p;
    // An installed tree: <prefix>/lib*/libmccl.so and <prefix>/bin/mccl_offloadd.
    p = dir_of(info.dli_fname) + "/../bin/mccl_offloadd";
    if (executable(p)) return p;
  }
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    std::string p = dir_of(exe) + "/mccl_offloadd";
    if (executable(p)) return p;
  }
#ifdef MCCL_OFFLOADD_INSTALLED
  if (executable(MCCL_OFFLOADD_INSTALLED)) return MCCL_OFFLOADD_INSTALLED;
#endif
#ifdef MCCL_OFFLOADD_BUILT
  if (executable(MCCL_OFFLOADD_BUILT)) return MCCL_OFFLOADD_BUILT;
#endif
  return "mccl_offloadd";
}

// Starts a detached daemon (double fork: it is nobody's child here, so it
// outlives this process and leaves no zombie). Its output goes to a log
// file beside the socket, never to the application's descriptors.
void spawn_daemon(const std::string& exe, const std::string& socket_path) {
  // Everything the child needs is prepared before fork(): after it, only
  // async-signal-safe calls (the application may have threads).
  const std::string log = daemon_log_path(socket_path);
  std::string arg_socket = "--socket=" + socket_path;
  std::string arg_log = "--log=" + log;
  char* argv[] = {const_cast<char*>(exe.c_str()), const_cast<char*>(arg_socket.c_str()),
                  const_cast<char*>(arg_log.c_str()), nullptr};
  // The daemon serves every rank on this host, so it must not inherit this
  // rank's own choices: MCCL_UDP_IFACE travels with each client's hello
  // (one rank may name another interface, or fail to), and a daemon that
  // took it from whichever rank started it would impose it on the others.
  // MCCL_TEST_KILL_AT kills the application process that set it, never the
  // daemon its neighbours share.
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "MCCL_UDP_IFACE=", 15) != 0 &&
        std::strncmp(*e, "MCCL_TEST_KILL_AT=", 18) != 0) {
      envp.push_back(*e);
    }
  }
  envp.push_back(nullptr);
  pid_t child = ::fork();
  if (child < 0) return;
  if (child == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    int devnull = ::open("/dev/null", O_RDONLY);
    // Never through a symlink, and never into someone else's file (an
    // explicit MCCL_OFFLOAD_SOCKET may lie in a shared directory).
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat log_stat {};
    if (out >= 0 && (::fstat(out, &log_stat) != 0 ||
                     (S_ISREG(log_stat.st_mode) && log_stat.st_uid != ::geteuid()))) {
      ::close(out);
      out = -1;
    }
    if (devnull >= 0) ::dup2(devnull, 0);
    // Without its log the daemon writes nowhere: never to the
    // application's terminal (the client names the refused log itself).
    if (out < 0) out = devnull;
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    ::close_range(3, ~0U, 0);
    ::execvpe(argv[0], argv, envp.data());
    ::_exit(127);
  }
  int ignored;
  ::waitpid(child, &ignored, 0);
}

int connect_to_daemon(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), std::min(path.size() + 1, sizeof addr.sun_path - 1));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace mccl::offload::client
