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

#include "common/settings.h"
#include "offload/client/client.h"
#include "offload/client/launch.h"
#include "offload/socket_path.h"
#include "offload/wire.h"

namespace mccl::offload::client {

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
  hello.epoch = options.epoch;
  const std::string iface = common::settings::kUdpIface.from_env().value_or("");
  if (iface.size() >= sizeof hello.udp_iface) {
    return common::invalid_argument(who + "MCCL_UDP_IFACE is longer than " +
                                    std::to_string(sizeof hello.udp_iface - 1) + " characters");
  }
  std::memcpy(hello.udp_iface, iface.c_str(), iface.size() + 1);
  const int fds[3] = {c->memfd_, c->sub_efd_, c->comp_efd_};
  const int tmo = setup_answer_timeout_ms(options.timeout.count());

  // Reach the daemon, starting one when none answers. A daemon that is
  // just exiting may accept and then close: retry until it said something.
  const auto give_up = common::now() + options.connect_timeout;
  auto next_spawn = common::now();
  const std::string exe = find_daemon(options.daemon_path);
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
    // Likewise a lock or log the daemon would refuse (another user's): no
    // daemon could start, so waiting for one is pointless.
    for (const std::string& f : {path + ".lock", daemon_log_path(path)}) {
      if (auto st = check_daemon_file(f); !st) return {st.code(), who + st.message()};
    }
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
        c->epoch_ = r.epoch;
        c->cores_per_rank_ = r.cores_per_rank;
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

}  // namespace mccl::offload::client
