#include "offload/client/client.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "common/settings.h"
#include "offload/socket_path.h"
#include "offload/wire.h"

namespace mccl::offload {

namespace {

std::string dir_of(const std::string& file) {
  auto slash = file.rfind('/');
  return slash == std::string::npos ? std::string(".") : file.substr(0, slash);
}

bool executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0; }

// MCCL_OFFLOAD_DAEMON, else next to the object holding this code (libmccl.so
// or a static executable) or in its ../bin, else next to the executable,
// else where `make install` puts it, else where the build tree made it,
// else $PATH.
std::string find_daemon(const OffloadOptions& o) {
  if (!o.daemon_path.empty()) return o.daemon_path;
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
  const std::string log = common::settings::kOffloadLog.from_env().value_or(socket_path + ".log");
  std::string arg_socket = "--socket=" + socket_path;
  std::string arg_log = "--log=" + log;
  char* argv[] = {const_cast<char*>(exe.c_str()), const_cast<char*>(arg_socket.c_str()),
                  const_cast<char*>(arg_log.c_str()), nullptr};
  // The daemon serves every rank on this host, so it must not inherit this
  // rank's own choices: MCCL_UDP_IFACE travels with each client's hello
  // (one rank may name another interface, or fail to), and a daemon that
  // took it from whichever rank started it would impose it on the others.
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "MCCL_UDP_IFACE=", 15) != 0) envp.push_back(*e);
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

int try_connect(const std::string& path) {
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

}  // namespace

common::Status OffloadComm::create(Bootstrap& bootstrap, const OffloadOptions& options,
                                   std::unique_ptr<OffloadComm>& out) {
  std::unique_ptr<OffloadComm> c(new OffloadComm());
  c->rank_ = bootstrap.rank();
  c->size_ = bootstrap.size();
  c->timeout_ = options.timeout;
  const std::string who = "rank " + std::to_string(c->rank_) + ": ";
  std::string path = options.socket_path;
  if (path.empty()) {
    if (auto st = default_socket_path(path); !st) return {st.code(), who + st.message()};
  }
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return common::invalid_argument(who + "offload socket path too long: " + path);
  }

  // The shared rings and the two eventfds.
  const std::uint32_t slots = std::max<std::uint32_t>(options.ring_slots, 1);
  c->map_bytes_ = SharedRings::bytes_for(slots);
  c->memfd_ = ::memfd_create("mccl-offload-rings", MFD_CLOEXEC);
  if (c->memfd_ < 0 || ::ftruncate(c->memfd_, static_cast<off_t>(c->map_bytes_)) != 0) {
    return common::transport_error(who + "memfd for the offload rings: " + std::strerror(errno));
  }
  c->map_ = ::mmap(nullptr, c->map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, c->memfd_, 0);
  if (c->map_ == MAP_FAILED) {
    c->map_ = nullptr;
    return common::transport_error(who + "mmap of the offload rings: " + std::strerror(errno));
  }
  c->rings_ = std::make_unique<SharedRings>(c->map_, slots, true);
  c->sub_efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  c->comp_efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->sub_efd_ < 0 || c->comp_efd_ < 0) {
    return common::transport_error(who + "eventfd: " + std::strerror(errno));
  }

  HelloMsg hello;
  hello.pid = static_cast<std::int32_t>(::getpid());
  hello.rank = c->rank_;
  hello.size = c->size_;
  hello.ring_slots = slots;
  hello.timeout_ms = options.timeout.count();
  hello.coll = options.coll;
  const std::string iface = common::settings::kUdpIface.from_env().value_or("");
  if (iface.size() >= sizeof hello.udp_iface) {
    return common::invalid_argument(who + "MCCL_UDP_IFACE is longer than " +
                                    std::to_string(sizeof hello.udp_iface - 1) + " characters");
  }
  std::memcpy(hello.udp_iface, iface.c_str(), iface.size() + 1);
  const int fds[3] = {c->memfd_, c->sub_efd_, c->comp_efd_};
  const int tmo = static_cast<int>(std::min<std::int64_t>(options.timeout.count() + 5000, 1 << 30));

  // Reach the daemon, starting one when none answers. A daemon that is
  // just exiting may accept and then close: retry until it said something.
  const auto give_up = common::now() + options.connect_timeout;
  auto next_spawn = common::now();
  const std::string exe = find_daemon(options);
  bool heard = false;
  while (!heard) {
    if (common::now() > give_up) {
      return common::unavailable_error(who + "no offload daemon answers on " + path +
                                       " and starting '" + exe + "' did not help (see " + path +
                                       ".log; MCCL_OFFLOAD_DAEMON names the binary)");
    }
    // Another user's socket or file at the path is a clear error now, not
    // a connect that fails until the timeout.
    if (auto st = check_socket_path(path); !st) return {st.code(), who + st.message()};
    int fd = try_connect(path);
    if (fd < 0) {
      if (common::now() >= next_spawn) {
        spawn_daemon(exe, path);
        next_spawn = common::now() + std::chrono::milliseconds(1000);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (c->sock_ >= 0) ::close(c->sock_);
    c->sock_ = fd;
    // Whoever answers gets our rings and, later, our shared buffers: it
    // must be this user (a socket file of ours may still have been bound
    // by a process that changed its uid since).
    if (auto st = check_peer_uid(fd, path, "the offload daemon"); !st) {
      ::close(c->sock_);
      c->sock_ = -1;  // not even a goodbye for a stranger
      return {st.code(), who + st.message()};
    }
    // Let the daemon read and write this process's memory where Yama
    // restricts ptrace to ancestors (EINVAL without Yama: harmless).
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      c->daemon_pid_ = cred.pid;
      (void)::prctl(PR_SET_PTRACER, static_cast<unsigned long>(cred.pid), 0, 0, 0);
    }
    if (!send_msg(fd, MsgType::kHello, std::as_bytes(std::span(&hello, 1)), fds)) continue;
    // Serve the daemon's allgathers until it is ready.
    for (;;) {
      MsgType type{};
      std::vector<std::byte> body;
      auto st = recv_msg(fd, type, body, nullptr, tmo);
      if (!st) {
        if (!heard && st.code() == ErrorCode::kPeerFailure) break;  // retry: daemon was leaving
        return {st.code(), who + "offload daemon (pid " + std::to_string(c->daemon_pid_) +
                               ") during communicator creation: " + st.message()};
      }
      heard = true;
      if (type == MsgType::kAllgather) {
        try {
          auto all = bootstrap.allgather(body, options.timeout);
          st = send_msg(fd, MsgType::kAllgatherResult, all);
        } catch (const std::exception& e) {
          std::string m = e.what();
          (void)send_msg(fd, MsgType::kAllgatherFailed, std::as_bytes(std::span(m)));
          if (const auto* me = dynamic_cast<const Error*>(&e)) return {me->code(), m};
          return common::internal_error(who + "bootstrap allgather: " + m);
        }
        if (!st) return {st.code(), who + st.message()};
      } else if (type == MsgType::kReady && body.size() >= sizeof(ReadyMsg)) {
        ReadyMsg r;
        std::memcpy(&r, body.data(), sizeof r);
        c->daemon_pid_ = r.daemon_pid;
        if (r.code != 0) {
          return {static_cast<ErrorCode>(r.code),
                  std::string(reinterpret_cast<const char*>(body.data()) + sizeof r,
                              body.size() - sizeof r)};
        }
        out = std::move(c);
        return common::Status::ok();
      } else {
        return common::internal_error(who + "unexpected message from the offload daemon");
      }
    }
  }
  return common::internal_error(who + "offload creation fell through");
}

OffloadComm::~OffloadComm() {
  // An orderly goodbye: the daemon releases the communicator without
  // poisoning it (EOF alone means this process crashed).
  if (sock_ >= 0) {
    if (failure_.is_ok()) (void)send_msg(sock_, MsgType::kBye, {});
    ::close(sock_);
  }
  rings_.reset();
  for (auto& [p, len] : blocks_) ::munmap(p, len);
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  for (int fd : {memfd_, sub_efd_, comp_efd_}) {
    if (fd >= 0) ::close(fd);
  }
}

std::shared_ptr<OffloadOp> OffloadComm::submit(std::shared_ptr<OffloadOp> op, Submission& s) {
  op->id_ = s.id = next_id_++;
  // The ring holds at most `slots` operations: wait for the oldest first.
  while (failure_.is_ok() && inflight_.size() >= rings_->slots()) {
    auto oldest = inflight_.front();
    auto st = wait(*oldest, common::Deadline::after(timeout_));
    if (!st) {
      op->done_ = true;
      op->status_ = {st.code(), "rank " + std::to_string(rank_) +
                                    ": offload submission ring full: " + st.message()};
      return op;
    }
  }
  if (!failure_.is_ok()) {
    op->done_ = true;
    op->status_ = failure_;
    return op;
  }
  if (!rings_->push_submission(s)) {
    op->done_ = true;
    op->status_ = common::internal_error("offload submission ring unexpectedly full");
    return op;
  }
  std::uint64_t one = 1;
  (void)!::write(sub_efd_, &one, sizeof one);
  inflight_.push_back(op);
  return op;
}

std::shared_ptr<OffloadOp> OffloadComm::broadcast(void* buffer, std::size_t bytes, int root) {
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kBroadcast);
  s.root = root;
  s.buffer = reinterpret_cast<std::uint64_t>(buffer);
  s.bytes = bytes;
  auto op = std::make_shared<OffloadOp>();
  op->what_ = "offloaded broadcast of " + std::to_string(bytes) + " bytes from root " +
              std::to_string(root);
  return submit(std::move(op), s);
}

std::shared_ptr<OffloadOp> OffloadComm::allgatherv(const void* send, bool in_place, void* recv,
                                                   std::span<const std::size_t> counts,
                                                   std::span<const std::size_t> displacements) {
  auto op = std::make_shared<OffloadOp>();
  op->counts_.assign(counts.begin(), counts.end());
  op->displs_.assign(displacements.begin(), displacements.end());
  op->what_ = "offloaded allgatherv of " + std::to_string(counts[rank_]) + " bytes from rank " +
              std::to_string(rank_);
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kAllgatherv);
  s.buffer = reinterpret_cast<std::uint64_t>(recv);
  s.send = reinterpret_cast<std::uint64_t>(send);
  s.in_place = in_place ? 1 : 0;
  s.counts = reinterpret_cast<std::uint64_t>(op->counts_.data());
  s.displs = reinterpret_cast<std::uint64_t>(op->displs_.data());
  return submit(std::move(op), s);
}

std::shared_ptr<OffloadOp> OffloadComm::barrier() {
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kBarrier);
  auto op = std::make_shared<OffloadOp>();
  op->what_ = "offloaded barrier";
  return submit(std::move(op), s);
}

std::shared_ptr<OffloadOp> OffloadComm::reduce_scatterv(const void* send, void* recv,
                                                        std::span<const std::size_t> counts,
                                                        DataType type, ReduceOp redop) {
  auto op = std::make_shared<OffloadOp>();
  op->counts_.assign(counts.begin(), counts.end());
  op->what_ = "offloaded reduce-scatter of " + std::to_string(counts[rank_]) +
              " elements to rank " + std::to_string(rank_);
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kReduceScatterv);
  s.buffer = reinterpret_cast<std::uint64_t>(recv);
  s.send = reinterpret_cast<std::uint64_t>(send);
  s.counts = reinterpret_cast<std::uint64_t>(op->counts_.data());
  s.dtype = static_cast<std::uint32_t>(type);
  s.redop = static_cast<std::uint32_t>(redop);
  return submit(std::move(op), s);
}

std::shared_ptr<OffloadOp> OffloadComm::allreduce(const void* send, bool in_place, void* recv,
                                                  std::size_t count, DataType type,
                                                  ReduceOp redop) {
  auto op = std::make_shared<OffloadOp>();
  op->what_ = "offloaded allreduce of " + std::to_string(count) + " elements";
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kAllreduce);
  s.buffer = reinterpret_cast<std::uint64_t>(recv);
  s.send = reinterpret_cast<std::uint64_t>(send);
  s.in_place = in_place ? 1 : 0;
  s.bytes = count;
  s.dtype = static_cast<std::uint32_t>(type);
  s.redop = static_cast<std::uint32_t>(redop);
  return submit(std::move(op), s);
}

void* OffloadComm::allocate(std::size_t bytes, common::Status& why) {
  const std::string who = "rank " + std::to_string(rank_) + ": ";
  if (!failure_.is_ok()) {
    why = failure_;
    return nullptr;
  }
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t len = std::max<std::size_t>((bytes + page - 1) / page * page, page);
  int fd = ::memfd_create("mccl-offload-buffer", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(len)) != 0) {
    why = common::transport_error(who + "memfd for a shared buffer of " + std::to_string(bytes) +
                                  " bytes: " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    why = common::transport_error(who + "mmap of a shared buffer: " + std::strerror(errno));
    ::close(fd);
    return nullptr;
  }
  RegionMsg r{reinterpret_cast<std::uint64_t>(p), len};
  const int fds[1] = {fd};
  auto st = send_msg(sock_, MsgType::kRegister, std::as_bytes(std::span(&r, 1)), fds);
  ::close(fd);  // the daemon has its own mapping once it answers
  MsgType type{};
  std::vector<std::byte> body;
  const int tmo = static_cast<int>(std::min<std::int64_t>(timeout_.count(), 1 << 30));
  if (st) st = recv_msg(sock_, type, body, nullptr, tmo);
  if (st && (type != MsgType::kRegistered || body.size() < sizeof(std::int32_t))) {
    st = common::internal_error("unexpected answer to a shared buffer registration");
  }
  if (st) {
    std::int32_t code = 0;
    std::memcpy(&code, body.data(), sizeof code);
    if (code != 0) {
      st = {static_cast<ErrorCode>(code),
            std::string(reinterpret_cast<const char*>(body.data()) + sizeof code,
                        body.size() - sizeof code)};
    }
  }
  if (!st) {
    ::munmap(p, len);
    why = {st.code(), who + "the offload daemon (pid " + std::to_string(daemon_pid_) +
                          ") did not map a shared buffer: " + st.message()};
    return nullptr;
  }
  blocks_.emplace_back(p, len);
  return p;
}

bool OffloadComm::deallocate(void* p) {
  auto it =
      std::find_if(blocks_.begin(), blocks_.end(), [&](const auto& b) { return b.first == p; });
  if (it == blocks_.end()) return false;
  if (failure_.is_ok()) {
    RegionMsg r{reinterpret_cast<std::uint64_t>(p), it->second};
    (void)send_msg(sock_, MsgType::kUnregister, std::as_bytes(std::span(&r, 1)));
  }
  ::munmap(p, it->second);
  blocks_.erase(it);
  return true;
}

common::Status OffloadComm::stats(Stats& out, common::Deadline deadline) {
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kStats);
  s.buffer = reinterpret_cast<std::uint64_t>(&out);
  s.bytes = sizeof out;
  auto op = std::make_shared<OffloadOp>();
  op->what_ = "offloaded stats";
  op = submit(std::move(op), s);
  auto st = wait(*op, deadline);
  return st ? op->status() : st;
}

void OffloadComm::poll() {
  std::uint64_t v;
  (void)!::read(comp_efd_, &v, sizeof v);  // clear before popping: no lost wake-up
  Completion c;
  while (rings_->pop_completion(c)) {
    auto it = std::find_if(inflight_.begin(), inflight_.end(),
                           [&](const auto& op) { return op->id_ == c.id; });
    if (it == inflight_.end()) continue;
    (*it)->status_ = completion_status(c);
    (*it)->done_ = true;
    inflight_.erase(it);
  }
}

void OffloadComm::fail_all(const common::Status& why) {
  poll();  // what the daemon finished before it went still counts
  if (failure_.is_ok()) failure_ = why;
  for (auto& op : inflight_) {
    op->status_ = failure_;
    op->done_ = true;
  }
  inflight_.clear();
}

bool OffloadComm::sleep_once(int timeout_ms) {
  pollfd pfds[2] = {{comp_efd_, POLLIN, 0}, {sock_, POLLIN, 0}};
  int n = ::poll(pfds, 2, timeout_ms);
  if (n > 0 && pfds[1].revents != 0) {
    fail_all(common::peer_failure(
        "rank " + std::to_string(rank_) + ": the offload daemon (pid " +
        std::to_string(daemon_pid_) +
        ") has gone; its collectives failed (restart the job; see the daemon's log beside "
        "the offload socket)"));
    return false;
  }
  return true;
}

common::Status OffloadComm::wait(const OffloadOp& op, common::Deadline deadline) {
  while (!op.done()) {
    poll();
    if (op.done()) break;
    if (!failure_.is_ok()) {
      fail_all(failure_);
      break;
    }
    if (deadline.expired()) {
      return common::timeout_error("rank " + std::to_string(rank_) +
                                   ": offloaded collective still in flight at the deadline");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining());
    sleep_once(static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 1, 100)));
  }
  return common::Status::ok();
}

}  // namespace mccl::offload
