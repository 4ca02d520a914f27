// A Session's life (session.h): the client's hello, its rings and its
// communicator; the loop that drives the protocol, takes submissions and
// posts completions; the client's socket (shared buffers, goodbye, death).
// The collectives themselves are in collectives.cc.
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "common/log.h"
#include "offload/daemon/session.h"

namespace mccl::offload::daemon {

namespace {

// Set when something went wrong that the log should keep (see run_daemon).
std::atomic<bool> g_trouble{false};

// At most this many submissions are taken per pass of a session's loop, so
// that the protocol runs between them however many the client queued.
constexpr int kDrainBatch = 32;

// The kernel's word on who is at the other end of `sock` (nobody can forge
// it), asked before a byte is read: a client of another user gets nothing
// read, nothing allocated, no answer.
common::Status check_peer(int sock, ucred& peer) {
  socklen_t len = sizeof peer;
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
    return common::transport_error(std::string("SO_PEERCRED of a client: ") + std::strerror(errno));
  }
  if (peer.uid != ::geteuid()) {
    return common::invalid_argument("refused a client of uid " + std::to_string(peer.uid) +
                                    " (pid " + std::to_string(peer.pid) +
                                    "): this daemon serves uid " + std::to_string(::geteuid()) +
                                    " only");
  }
  return common::Status::ok();
}

}  // namespace

std::vector<std::byte> with_text(const void* head, std::size_t head_bytes,
                                 const std::string& text) {
  const std::size_t n = std::min(text.size(), kMaxTextBytes);
  std::vector<std::byte> body(head_bytes + n);
  std::memcpy(body.data(), head, head_bytes);
  std::memcpy(body.data() + head_bytes, text.data(), n);
  return body;
}

Session::~Session() {
  // The context first: its operations point into the staging buffers.
  comm_.ctx.reset();
  pending_.clear();
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  for (int fd : {memfd_, sub_efd_, comp_efd_}) {
    if (fd >= 0) ::close(fd);
  }
}

common::Status Session::setup() {
  ucred peer{};
  auto st = check_peer(sock_, peer);
  if (st) st = receive_hello(peer.pid);
  if (st) st = map_rings();
  if (!st) return st;
  hello_.udp_iface[sizeof hello_.udp_iface - 1] = '\0';  // whatever the client sent
  return build_comm(hello_.rank, hello_.size, std::chrono::milliseconds(hello_.timeout_ms),
                    hello_.coll, relay_to_client(), comm_, hello_.udp_iface, hello_.epoch);
}

common::Status Session::receive_hello(pid_t peer_pid) {
  MsgType type{};
  std::vector<std::byte> body;
  std::vector<int> fds;
  auto st = recv_msg(sock_, type, body, &fds, 10000);
  if (!st) return st;
  if (fds.size() == 3) {
    memfd_ = fds[0];
    sub_efd_ = fds[1];
    comp_efd_ = fds[2];
  } else {
    for (int fd : fds) ::close(fd);
  }
  if (type != MsgType::kHello || body.size() != sizeof hello_ || memfd_ < 0) {
    return common::internal_error("the offload client's hello is malformed");
  }
  std::memcpy(&hello_, body.data(), sizeof hello_);
  if (hello_.magic != kMagic || hello_.version != kVersion) {
    return common::mismatch_error("the offload client speaks another protocol version");
  }
  // The daemon writes into the memory of the pid it is told.
  if (hello_.pid != peer_pid) {
    return common::invalid_argument("the offload client's hello names pid " +
                                    std::to_string(hello_.pid) + " but the socket's peer is pid " +
                                    std::to_string(peer_pid));
  }
  if (hello_.size < 1 || hello_.rank < 0 || hello_.rank >= hello_.size || hello_.ring_slots == 0 ||
      hello_.ring_slots > 65536) {
    return common::invalid_argument("the offload client's hello has bad rank/size/slots");
  }
  return common::Status::ok();
}

common::Status Session::map_rings() {
  map_bytes_ = SharedRings::bytes_for(hello_.ring_slots);
  struct stat sb {};
  if (::fstat(memfd_, &sb) != 0 || static_cast<std::size_t>(sb.st_size) < map_bytes_) {
    return common::invalid_argument("the offload client's shared rings are too small");
  }
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    return common::transport_error(std::string("mmap of the rings: ") + std::strerror(errno));
  }
  rings_ = std::make_unique<SharedRings>(map_, hello_.ring_slots, false);
  return common::Status::ok();
}

// Communicator creation: every allgather goes through the client's
// bootstrap, which the application owns.
transport::OobAllgather Session::relay_to_client() const {
  const int sock = sock_;
  const auto ranks = static_cast<std::size_t>(hello_.size);
  const int tmo = setup_answer_timeout_ms(hello_.timeout_ms);
  return [sock, ranks, tmo](std::span<const std::byte> mine, std::vector<std::byte>& result) {
    auto s = send_msg(sock, MsgType::kAllgather, mine);
    MsgType t{};
    if (s) s = recv_msg(sock, t, result, nullptr, tmo);
    if (s && t == MsgType::kAllgatherResult) {
      s = transport::check_gathered(result.size(), ranks, mine.size());
    } else if (s) {
      s = common::peer_failure(
          "the application's bootstrap allgather failed: " +
          std::string(reinterpret_cast<const char*>(result.data()), result.size()));
    }
    return s;
  };
}

// A message on the socket after setup: a shared buffer (un)registered, a
// revoke or a shrink, the client's goodbye, or (EOF, garbage) the client
// has gone.
Session::SocketEvent Session::handle_socket() {
  MsgType type{};
  std::vector<std::byte> body;
  std::vector<int> fds;
  if (!recv_msg(sock_, type, body, &fds, 100)) return SocketEvent::kGone;
  RegionMsg r;
  const bool region =
      (type == MsgType::kRegister || type == MsgType::kUnregister) && body.size() == sizeof r;
  if (region) std::memcpy(&r, body.data(), sizeof r);
  if (region && type == MsgType::kRegister) {
    common::Status st = fds.size() == 1
                            ? regions_.add(fds[0], r.addr, r.bytes)
                            : common::invalid_argument("shared buffer sent without its memfd");
    if (fds.size() != 1) {
      for (int fd : fds) ::close(fd);
    }
    const auto code = static_cast<std::int32_t>(st.code());
    const auto reply = with_text(&code, sizeof code, st.message());
    return send_msg(sock_, MsgType::kRegistered, reply) ? SocketEvent::kHandled
                                                        : SocketEvent::kGone;
  }
  for (int fd : fds) ::close(fd);
  if (region) {
    regions_.remove(r.addr);
    return SocketEvent::kHandled;
  }
  if (type == MsgType::kRevoke && body.empty()) {
    revoke();
    return SocketEvent::kHandled;
  }
  if (type == MsgType::kShrink && body.empty()) {
    return shrink() ? SocketEvent::kHandled : SocketEvent::kGone;
  }
  return type == MsgType::kBye ? SocketEvent::kBye : SocketEvent::kGone;
}

bool Session::drain_submissions() {
  bool any = false;
  Submission s;
  // A correct client has at most ring_slots operations in flight (it waits
  // for its oldest), so this bound never holds it back; it caps what a
  // client that ignores its completions makes the daemon keep.
  for (int i = 0; i < kDrainBatch && pending_.size() + unsent_.size() < hello_.ring_slots; ++i) {
    const RingPop got = rings_->pop_submission(s);
    if (got == RingPop::kOverrun) {
      violation_ = "its submission ring's head is more than the ring's " +
                   std::to_string(hello_.ring_slots) + " slots ahead of the tail";
      break;
    }
    if (got == RingPop::kEmpty) break;
    any = true;
    take(s);
  }
  return any;
}

void Session::take(const Submission& s) {
  if (static_cast<OpKind>(s.kind) == OpKind::kStats) {
    Stats snap = comm_.ctx->counters().snapshot();
    auto st = s.bytes == sizeof snap
                  ? client_io(hello_.pid, true, s.buffer, reinterpret_cast<std::byte*>(&snap),
                              sizeof snap)
                  : common::mismatch_error("the client's mccl::Stats has another size");
    unsent_.push_back(make_completion(s.id, st));
    return;
  }
  // A broken communicator fails a submission at once, as ctx.start()
  // would, without first staging its input (tens of milliseconds for a
  // few MiB on a loaded host, before the client hears of the failure).
  if (const common::Status& broken = comm_.ctx->poisoned(); !broken.is_ok()) {
    unsent_.push_back(make_completion(s.id, broken));
    return;
  }
  Pending p;
  common::Status st;
  try {
    st = start(s, p);
  } catch (const std::bad_alloc&) {
    // A client's oversized request fails that request, not a daemon that
    // other clients share.
    st = common::unavailable_error("offload daemon: out of memory staging a collective of " +
                                   std::to_string(s.bytes) + " bytes");
  }
  if (!st) {
    unsent_.push_back(make_completion(s.id, st));
    retire(p);
    return;
  }
  pending_.push_back(std::move(p));
}

bool Session::complete_finished() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!it->op->done()) {
      ++it;
      continue;
    }
    common::Status st = it->op->status();
    if (st) st = deliver(*it);
    unsent_.push_back(make_completion(it->sub.id, st));
    retire(*it);
    it = pending_.erase(it);
  }
  std::size_t pushed = 0;
  while (pushed < unsent_.size() && rings_->push_completion(unsent_[pushed])) ++pushed;
  unsent_.erase(unsent_.begin(), unsent_.begin() + static_cast<std::ptrdiff_t>(pushed));
  if (pushed > 0) {
    std::uint64_t one = 1;
    (void)!::write(comp_efd_, &one, sizeof one);
  }
  return pushed > 0;
}

void Session::retire(Pending& p) {
  const common::TimePoint now = common::now();
  pool_.give_back(std::move(p.staging), now);
  pool_.give_back(std::move(p.input), now);
}

void Session::loop() {
  std::vector<pollfd> pfds;
  for (;;) {
    // Read each pass: a shrink replaces the communicator.
    protocol::Context& ctx = *comm_.ctx;
    // Progress first: an abort that arrived while the client prepared its
    // next submission breaks the communicator before that is started.
    bool busy = protocol::progress_counting_sends(ctx) > 0;
    busy = drain_submissions() || busy;
    if (!violation_.empty()) {
      abandon("rank " + std::to_string(ctx.rank()) + "'s application broke the offload protocol (" +
                  violation_ + "): ending its session",
              "the application process broke the offload protocol");
      return;
    }
    busy = complete_finished() || busy;
    // Nothing else to do: the staged collectives' final bytes go to the
    // client now rather than all at their end.
    for (auto it = pending_.begin(); !busy && it != pending_.end(); ++it) {
      if (it->blocks != nullptr) busy = it->blocks->write_held();
    }
    if (pending_.empty()) pool_.release_if_idle(common::now());

    pfds.clear();
    pfds.push_back({sock_, POLLIN, 0});
    pfds.push_back({sub_efd_, POLLIN, 0});
    for (int fd : ctx.wait_fds()) pfds.push_back({fd, POLLIN, 0});
    // Spin while traffic flows; wake every millisecond while collectives
    // are in flight (loss deadlines); sleep otherwise.
    const int timeout = busy ? 0 : (pending_.empty() ? 100 : 1);
    if (::poll(pfds.data(), pfds.size(), timeout) < 0 && errno != EINTR) break;
    if (pfds[1].revents != 0) {
      std::uint64_t v;
      (void)!::read(sub_efd_, &v, sizeof v);
    }
    if (pfds[0].revents != 0) {
      const SocketEvent ev = handle_socket();
      if (ev == SocketEvent::kHandled) continue;
      // A Bye with nothing in flight is the one orderly end. (A shrink that
      // failed to answer replaced the communicator: comm_, not ctx.)
      protocol::Context& now = *comm_.ctx;
      if (ev == SocketEvent::kBye && pending_.empty()) {
        // Still the right neighbour's repair source for what completed eagerly.
        now.serve_until_released(common::Deadline::after(now.config().op_timeout));
        return;
      }
      // The client has gone (crashed, or left collectives in flight).
      abandon("rank " + std::to_string(now.rank()) +
                  "'s application process has gone: releasing its communicator",
              "the application process exited");
      return;
    }
  }
}

void Session::abandon(const std::string& log_line, const std::string& why) {
  protocol::Context& ctx = *comm_.ctx;
  g_trouble = true;
  say("%s", log_line);
  // Its peers get an error instead of waiting for their deadlines: poison
  // the communicator. The session ends next, and the context's destruction
  // gives the abort a bounded chance to leave before its connections close
  // (TcpEndpoint's destructor), which is how the peers see this rank gone.
  // (A fixed 200 ms here held every survivor's shrink that long.)
  ctx.poison(common::peer_failure("rank " + std::to_string(ctx.rank()) + ": " + why +
                                  " (offload daemon)"));
}

void Session::run() {
  auto st = setup();
  ReadyMsg ready{static_cast<std::int32_t>(st.code()), static_cast<std::int32_t>(::getpid()),
                 comm_.epoch, comm_.coll.placement};
  // Only a client that got as far as handing over its rings is answered.
  if (rings_ != nullptr || memfd_ >= 0) {
    (void)send_msg(sock_, MsgType::kReady, with_text(&ready, sizeof ready, st.message()));
  }
  if (!st) {
    g_trouble = true;
    say("a client's communicator failed: %s", st.message());
    return;
  }
  loop();
}

void run_session(int sock) {
  Session s(sock);
  s.run();
}

bool session_trouble() { return g_trouble.load(); }

void say(const char* fmt, const std::string& a) {
  // Through the library's logger: one write per line, so lines of the
  // daemon's sessions (threads) and of other processes never interleave.
  char text[1024];
  std::snprintf(text, sizeof text, fmt, a.c_str());
  common::log_message(common::LogLevel::kWarn, -1,
                      "mccl_offloadd[" + std::to_string(::getpid()) + "]: " + text);
}

}  // namespace mccl::offload::daemon
