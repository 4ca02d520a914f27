// Creating an OffloadComm (client.h): the shared rings and eventfds, the
// hello that hands them to the daemon, and the daemon's bootstrap
// allgathers relayed through the application's Bootstrap; and the goodbye.
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "offload/client/client.h"
#include "offload/client/launch.h"
#include "offload/socket_path.h"
#include "offload/wire.h"

namespace mccl::offload::client {

namespace {

HelloMsg hello_for(const OffloadComm& c, const OffloadOptions& options, std::uint32_t slots) {
  HelloMsg hello;
  hello.pid = static_cast<std::int32_t>(::getpid());
  hello.rank = c.rank();
  hello.size = c.size();
  hello.ring_slots = slots;
  hello.timeout_ms = options.timeout.count();
  hello.coll = options.coll;
  hello.epoch = options.epoch;
  std::memcpy(hello.udp_iface, options.udp_iface.c_str(), options.udp_iface.size() + 1);
  return hello;
}

// Another user's socket, lock or log at the daemon's paths is a clear
// error now, not a connect that fails until the timeout: no daemon could
// start there, so waiting for one is pointless.
common::Status check_daemon_paths(const std::string& path) {
  if (auto st = check_socket_path(path); !st) return st;
  for (const std::string& f : {path + ".lock", daemon_log_path(path)}) {
    if (auto st = check_daemon_file(f); !st) return st;
  }
  return common::Status::ok();
}

}  // namespace

common::Status OffloadComm::create(Bootstrap& bootstrap, const OffloadOptions& options,
                                   std::unique_ptr<OffloadComm>& out) {
  std::unique_ptr<OffloadComm> c(new OffloadComm());
  c->rank_ = bootstrap.rank();
  c->size_ = bootstrap.size();
  c->timeout_ = options.timeout;
  const std::string who = c->who();
  std::string path = options.socket_path;
  if (path.empty()) {
    if (auto st = default_socket_path(path); !st) return {st.code(), who + st.message()};
  }
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return common::invalid_argument(who + "offload socket path too long: " + path);
  }
  if (options.udp_iface.size() >= sizeof HelloMsg{}.udp_iface) {
    return common::invalid_argument(who + "MCCL_UDP_IFACE is longer than " +
                                    std::to_string(sizeof HelloMsg{}.udp_iface - 1) +
                                    " characters");
  }
  const std::uint32_t slots = std::max<std::uint32_t>(options.ring_slots, 1);
  if (auto st = c->map_rings(slots); !st) return {st.code(), who + st.message()};
  const HelloMsg hello = hello_for(*c, options, slots);

  // Reach the daemon, starting one when none answers. A daemon that is
  // just exiting may accept and then close: retry until it said something.
  const auto give_up = common::now() + options.connect_timeout;
  auto next_spawn = common::now();
  const std::string exe = find_daemon(options.daemon_path);
  for (;;) {
    if (common::now() > give_up) {
      return common::unavailable_error(who + "no offload daemon answers on " + path +
                                       " and starting '" + exe + "' did not help (see " +
                                       daemon_log_path(path) +
                                       "; MCCL_OFFLOAD_DAEMON names the binary)");
    }
    if (auto st = check_daemon_paths(path); !st) return {st.code(), who + st.message()};
    int fd = connect_to_daemon(path);
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
    bool retry = false;
    common::Status st = c->introduce(path, bootstrap, options, hello, retry);
    if (retry) continue;
    if (!st) return st;
    out = std::move(c);
    return common::Status::ok();
  }
}

// The shared rings and the two eventfds.
common::Status OffloadComm::map_rings(std::uint32_t slots) {
  map_bytes_ = SharedRings::bytes_for(slots);
  memfd_ = ::memfd_create("mccl-offload-rings", MFD_CLOEXEC);
  if (memfd_ < 0 || ::ftruncate(memfd_, static_cast<off_t>(map_bytes_)) != 0) {
    return common::transport_error(std::string("memfd for the offload rings: ") +
                                   std::strerror(errno));
  }
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    return common::transport_error(std::string("mmap of the offload rings: ") +
                                   std::strerror(errno));
  }
  rings_ = std::make_unique<SharedRings>(map_, slots, true);
  sub_efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  comp_efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (sub_efd_ < 0 || comp_efd_ < 0) {
    return common::transport_error(std::string("eventfd: ") + std::strerror(errno));
  }
  return common::Status::ok();
}

common::Status OffloadComm::introduce(const std::string& path, Bootstrap& bootstrap,
                                      const OffloadOptions& options, const HelloMsg& hello,
                                      bool& retry) {
  const int fd = sock_;
  // Whoever answers gets our rings and, later, our shared buffers: it
  // must be this user (a socket file of ours may still have been bound
  // by a process that changed its uid since).
  if (auto st = check_peer_uid(fd, path, "the offload daemon"); !st) {
    ::close(sock_);
    sock_ = -1;  // not even a goodbye for a stranger
    return {st.code(), who() + st.message()};
  }
  // Let the daemon read and write this process's memory where Yama
  // restricts ptrace to ancestors (EINVAL without Yama: harmless).
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    daemon_pid_ = cred.pid;
    (void)::prctl(PR_SET_PTRACER, static_cast<unsigned long>(cred.pid), 0, 0, 0);
  }
  const int fds[3] = {memfd_, sub_efd_, comp_efd_};
  if (!send_msg(fd, MsgType::kHello, std::as_bytes(std::span(&hello, 1)), fds)) {
    retry = true;
    return common::Status::ok();
  }
  // Serve the daemon's allgathers until it is ready.
  const int tmo = setup_answer_timeout_ms(options.timeout.count());
  for (bool heard = false;; heard = true) {
    MsgType type{};
    std::vector<std::byte> body;
    auto st = recv_msg(fd, type, body, nullptr, tmo);
    if (!st) {
      retry = !heard && st.code() == ErrorCode::kPeerFailure;  // the daemon was leaving
      return {st.code(), who() + "offload daemon (pid " + std::to_string(daemon_pid_) +
                             ") during communicator creation: " + st.message()};
    }
    if (type == MsgType::kAllgather) {
      if (st = relay_allgather(bootstrap, options, body); !st) return st;
    } else if (type == MsgType::kReady && body.size() >= sizeof(ReadyMsg)) {
      ReadyMsg r;
      std::memcpy(&r, body.data(), sizeof r);
      daemon_pid_ = r.daemon_pid;
      epoch_ = r.epoch;
      placement_ = r.placement;
      if (r.code == 0) return common::Status::ok();
      return {static_cast<ErrorCode>(r.code),
              std::string(reinterpret_cast<const char*>(body.data()) + sizeof r,
                          body.size() - sizeof r)};
    } else {
      return common::internal_error(who() + "unexpected message from the offload daemon");
    }
  }
}

// One of the daemon's bootstrap allgathers, through the application's
// Bootstrap; its failure goes back to the daemon too.
common::Status OffloadComm::relay_allgather(Bootstrap& bootstrap, const OffloadOptions& options,
                                            std::span<const std::byte> contribution) {
  try {
    auto all = bootstrap.allgather(contribution, options.timeout);
    common::Status st = send_msg(sock_, MsgType::kAllgatherResult, all);
    return st ? st : common::Status{st.code(), who() + st.message()};
  } catch (const std::exception& e) {
    std::string m = e.what();
    (void)send_msg(sock_, MsgType::kAllgatherFailed, std::as_bytes(std::span(m)));
    if (const auto* me = dynamic_cast<const Error*>(&e)) return {me->code(), m};
    return common::internal_error(who() + "bootstrap allgather: " + m);
  }
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

}  // namespace mccl::offload::client
