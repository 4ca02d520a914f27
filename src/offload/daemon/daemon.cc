#include "offload/daemon/daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <list>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "coll/validate.h"
#include "offload/daemon/comm_setup.h"
#include "offload/daemon/regions.h"
#include "offload/daemon/session.h"
#include "offload/daemon/staging.h"
#include "offload/wire.h"

namespace mccl::offload {

namespace {

// Set when something went wrong that the log should keep (see run_daemon).
std::atomic<bool> g_trouble{false};

// The "DMA" into the client: process_vm_readv / process_vm_writev, looped
// because the kernel may move fewer bytes than asked.
common::Status client_io(pid_t pid, bool write, std::uint64_t remote, std::byte* local,
                         std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    iovec l{local + done, n - done};
    iovec r{reinterpret_cast<void*>(remote + done), n - done};
    ssize_t k = write ? ::process_vm_writev(pid, &l, 1, &r, 1, 0)
                      : ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (k <= 0) {
      return common::invalid_argument(std::string("the offload daemon could not ") +
                                      (write ? "write" : "read") + " the application's buffer (" +
                                      std::strerror(errno) + ")");
    }
    done += static_cast<std::size_t>(k);
  }
  return common::Status::ok();
}

class Session {
 public:
  explicit Session(int sock) : sock_(sock) {}
  ~Session() {
    // The context first: its operations point into the staging buffers.
    comm_.ctx.reset();
    pending_.clear();
    if (map_ != nullptr) ::munmap(map_, map_bytes_);
    for (int fd : {memfd_, sub_efd_, comp_efd_}) {
      if (fd >= 0) ::close(fd);
    }
  }
  void run();

 private:
  struct Pending {
    Submission sub;
    std::shared_ptr<protocol::Operation> op;
    StagingBuffer staging;  // uninitialised: see staging.h
    StagingBuffer input;    // reduce-scatter: the whole input vector
    std::vector<std::size_t> counts, displs;
    bool direct = false;  // ran on shared buffers: nothing to deliver
  };
  common::Status setup();
  common::Status start(const Submission& s, Pending& p);
  common::Status deliver(Pending& p);
  bool start_direct(const Submission& s, Pending& p);
  // Reads an allgatherv's counts and displacements from the client into `p`
  // and checks them as the client library does (coll/validate.h): a client
  // that skipped those checks must not make the daemon write outside its
  // staging buffer.
  common::Status read_layout(const Submission& s, Pending& p);
  enum class SocketEvent { kHandled, kBye, kGone };
  SocketEvent handle_socket();
  bool drain_submissions();
  bool complete_finished();
  void loop();

  int sock_;
  HelloMsg hello_{};
  int memfd_ = -1, sub_efd_ = -1, comp_efd_ = -1;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::unique_ptr<SharedRings> rings_;
  Comm comm_;
  std::list<Pending> pending_;
  std::vector<Completion> unsent_;  // completions the ring had no room for
  Regions regions_;                 // the client's shared buffers
};

common::Status Session::setup() {
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
  // The daemon writes into the memory of the pid it is told: believe only
  // the kernel about who is on the other end of the socket.
  ucred cred{};
  socklen_t cred_len = sizeof cred;
  if (::getsockopt(sock_, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
      cred.pid != hello_.pid || cred.uid != ::geteuid()) {
    return common::invalid_argument("the offload client's hello names pid " +
                                    std::to_string(hello_.pid) + " but the socket's peer is pid " +
                                    std::to_string(cred.pid) + " of uid " +
                                    std::to_string(cred.uid) + " (this daemon serves uid " +
                                    std::to_string(::geteuid()) + " only)");
  }
  if (hello_.size < 1 || hello_.rank < 0 || hello_.rank >= hello_.size || hello_.ring_slots == 0 ||
      hello_.ring_slots > 65536) {
    return common::invalid_argument("the offload client's hello has bad rank/size/slots");
  }
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

  // Communicator creation: every allgather goes through the client's
  // bootstrap, which the application owns.
  const int sock = sock_;
  const int tmo = static_cast<int>(std::min<std::int64_t>(hello_.timeout_ms + 5000, 1 << 30));
  transport::OobAllgather oob = [sock, tmo](std::span<const std::byte> mine) {
    auto s = send_msg(sock, MsgType::kAllgather, mine);
    MsgType t{};
    std::vector<std::byte> result;
    if (s) s = recv_msg(sock, t, result, nullptr, tmo);
    if (s && t == MsgType::kAllgatherResult) return result;
    if (s) {
      s = common::peer_failure(
          "the application's bootstrap allgather failed: " +
          std::string(reinterpret_cast<const char*>(result.data()), result.size()));
    }
    throw Error(s.code(), s.message());
  };
  hello_.udp_iface[sizeof hello_.udp_iface - 1] = '\0';  // whatever the client sent
  return build_comm(hello_.rank, hello_.size, std::chrono::milliseconds(hello_.timeout_ms),
                    hello_.coll, oob, comm_, hello_.udp_iface);
}

common::Status Session::start(const Submission& s, Pending& p) {
  protocol::Context& ctx = *comm_.ctx;
  const pid_t pid = hello_.pid;
  const int rank = ctx.rank(), size = ctx.size();
  p.sub = s;
  if (start_direct(s, p)) {
    ctx.start(p.op);
    return common::Status::ok();
  }
  switch (static_cast<OpKind>(s.kind)) {
    case OpKind::kBarrier:
      p.op = coll::make_barrier(ctx);
      break;
    case OpKind::kBroadcast: {
      if (s.root < 0 || s.root >= size)
        return common::invalid_argument("broadcast root out of range");
      p.staging.allocate(s.bytes);
      if (rank == s.root && s.bytes > 0) {
        auto st = client_io(pid, false, s.buffer, p.staging.data(), s.bytes);
        if (!st) return st;
      }
      p.op = coll::make_broadcast(ctx, comm_.coll, p.staging.data(), s.bytes, s.root);
      break;
    }
    case OpKind::kAllgatherv: {
      auto st = read_layout(s, p);
      if (!st) return st;
      std::size_t total = 0;
      for (int r = 0; r < size; ++r) {
        if (p.counts[r] > 0) total = std::max(total, p.displs[r] + p.counts[r]);
      }
      p.staging.allocate(total);
      const std::size_t mine = p.counts[rank], at = mine > 0 ? p.displs[rank] : 0;
      if (mine > 0) {
        st =
            client_io(pid, false, s.in_place ? s.buffer + at : s.send, p.staging.data() + at, mine);
        if (!st) return st;
      }
      p.op = coll::make_allgatherv(ctx, comm_.coll, p.staging.data() + at, true, p.staging.data(),
                                   p.counts, p.displs);
      break;
    }
    case OpKind::kReduceScatterv: {
      const auto type = static_cast<DataType>(s.dtype);
      const std::size_t es = size_of(type);
      if (es == 0 || s.redop > static_cast<std::uint32_t>(ReduceOp::kMax)) {
        return common::invalid_argument("reduce-scatter: unknown data type or operation");
      }
      std::vector<std::uint64_t> raw(static_cast<std::size_t>(size));
      auto st = client_io(pid, false, s.counts, reinterpret_cast<std::byte*>(raw.data()),
                          sizeof(std::uint64_t) * raw.size());
      if (!st) return st;
      p.counts.assign(raw.begin(), raw.end());
      std::size_t total = 0;
      for (std::size_t c : p.counts) {
        if (c > SIZE_MAX / es - total) {
          return common::invalid_argument("reduce-scatter: the counts overflow a size_t");
        }
        total += c;
      }
      p.input.allocate(total * es);
      p.staging.allocate(p.counts[rank] * es);
      if (!p.input.empty()) {
        st = client_io(pid, false, s.send, p.input.data(), p.input.size());
        if (!st) return st;
      }
      p.op = coll::make_reduce_scatterv(ctx, comm_.coll, p.input.data(), p.staging.data(), p.counts,
                                        type, static_cast<ReduceOp>(s.redop));
      break;
    }
    case OpKind::kAllreduce: {
      const auto type = static_cast<DataType>(s.dtype);
      const std::size_t es = size_of(type);
      if (es == 0 || s.redop > static_cast<std::uint32_t>(ReduceOp::kMax)) {
        return common::invalid_argument("allreduce: unknown data type or operation");
      }
      if (s.bytes > SIZE_MAX / es) {
        return common::invalid_argument("allreduce: count " + std::to_string(s.bytes) +
                                        " overflows a size_t in bytes");
      }
      p.staging.allocate(s.bytes * es);
      if (!p.staging.empty()) {
        auto st = client_io(pid, false, s.in_place ? s.buffer : s.send, p.staging.data(),
                            p.staging.size());
        if (!st) return st;
      }
      p.op = coll::make_allreduce(ctx, comm_.coll, nullptr, true, p.staging.data(), s.bytes, type,
                                  static_cast<ReduceOp>(s.redop));
      break;
    }
    default:
      return common::invalid_argument("unknown offloaded operation kind");
  }
  ctx.start(p.op);
  return common::Status::ok();
}

common::Status Session::read_layout(const Submission& s, Pending& p) {
  const int rank = comm_.ctx->rank(), size = comm_.ctx->size();
  std::vector<std::uint64_t> raw(2 * static_cast<std::size_t>(size));
  const std::size_t half = sizeof(std::uint64_t) * static_cast<std::size_t>(size);
  auto st = client_io(hello_.pid, false, s.counts, reinterpret_cast<std::byte*>(raw.data()), half);
  if (st) {
    st = client_io(hello_.pid, false, s.displs, reinterpret_cast<std::byte*>(raw.data() + size),
                   half);
  }
  if (!st) return st;
  p.counts.assign(raw.begin(), raw.begin() + size);
  p.displs.assign(raw.begin() + size, raw.end());
  // The client's own addresses: checked for null and for wrapping, never used.
  return coll::validate_allgatherv(rank, size, reinterpret_cast<const void*>(s.send),
                                   s.in_place != 0, reinterpret_cast<const void*>(s.buffer),
                                   p.counts, p.displs,
                                   coll::max_stream_bytes(comm_.ctx->config().chunk_bytes));
}

// Zero copy: when every buffer of `s` lies in the client's shared regions,
// the operation runs on them in place. False: take the staging path.
bool Session::start_direct(const Submission& s, Pending& p) {
  protocol::Context& ctx = *comm_.ctx;
  const int rank = ctx.rank(), size = ctx.size();
  const auto kind = static_cast<OpKind>(s.kind);
  if (kind == OpKind::kBroadcast) {
    std::byte* buf = regions_.find(s.buffer, s.bytes);
    if (buf == nullptr || s.root < 0 || s.root >= size) return false;
    p.op = coll::make_broadcast(ctx, comm_.coll, buf, s.bytes, s.root);
  } else if (kind == OpKind::kAllgatherv) {
    if (!read_layout(s, p)) return false;  // the staging path reports it
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (int r = 0; r < size; ++r) {
      if (p.counts[r] == 0) continue;
      lo = std::min<std::uint64_t>(lo, p.displs[r]);
      hi = std::max<std::uint64_t>(hi, p.displs[r] + p.counts[r]);
    }
    if (hi == 0) return false;
    std::byte* recv = regions_.find(s.buffer + lo, hi - lo);
    const std::size_t mine = p.counts[rank];
    std::byte* send = s.in_place || mine == 0 ? nullptr : regions_.find(s.send, mine);
    if (recv == nullptr || (!s.in_place && mine > 0 && send == nullptr)) return false;
    p.op = coll::make_allgatherv(ctx, comm_.coll, send, s.in_place != 0 || mine == 0, recv - lo,
                                 p.counts, p.displs);
  } else if (kind == OpKind::kAllreduce) {
    const std::size_t es = size_of(static_cast<DataType>(s.dtype));
    if (es == 0 || s.bytes > SIZE_MAX / es) return false;  // the staging path reports it
    const std::size_t bytes = s.bytes * es;
    std::byte* recv = regions_.find(s.buffer, bytes);
    std::byte* send = s.in_place ? nullptr : regions_.find(s.send, bytes);
    if (bytes == 0 || recv == nullptr || (!s.in_place && send == nullptr) ||
        s.redop > static_cast<std::uint32_t>(ReduceOp::kMax)) {
      return false;
    }
    p.op = coll::make_allreduce(ctx, comm_.coll, send, s.in_place != 0, recv, s.bytes,
                                static_cast<DataType>(s.dtype), static_cast<ReduceOp>(s.redop));
  } else if (kind == OpKind::kReduceScatterv) {
    const std::size_t es = size_of(static_cast<DataType>(s.dtype));
    std::vector<std::uint64_t> raw(static_cast<std::size_t>(size));
    if (es == 0 || s.redop > static_cast<std::uint32_t>(ReduceOp::kMax) ||
        !client_io(hello_.pid, false, s.counts, reinterpret_cast<std::byte*>(raw.data()),
                   sizeof(std::uint64_t) * raw.size())) {
      return false;
    }
    p.counts.assign(raw.begin(), raw.end());
    std::size_t total = 0;
    for (std::size_t c : p.counts) total += c;
    std::byte* send = regions_.find(s.send, total * es);
    std::byte* recv = regions_.find(s.buffer, p.counts[rank] * es);
    if (send == nullptr || (p.counts[rank] > 0 && recv == nullptr)) return false;
    p.op =
        coll::make_reduce_scatterv(ctx, comm_.coll, send, recv, p.counts,
                                   static_cast<DataType>(s.dtype), static_cast<ReduceOp>(s.redop));
  } else {
    return false;  // a barrier has no buffers
  }
  p.direct = true;
  return true;
}

// A message on the socket after setup: a shared buffer (un)registered, the
// client's goodbye, or (EOF, garbage) the client has gone.
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
    std::vector<std::byte> reply(sizeof(std::int32_t) + st.message().size());
    const auto code = static_cast<std::int32_t>(st.code());
    std::memcpy(reply.data(), &code, sizeof code);
    std::memcpy(reply.data() + sizeof code, st.message().data(), st.message().size());
    return send_msg(sock_, MsgType::kRegistered, reply) ? SocketEvent::kHandled
                                                        : SocketEvent::kGone;
  }
  for (int fd : fds) ::close(fd);
  if (region) {
    regions_.remove(r.addr);
    return SocketEvent::kHandled;
  }
  return type == MsgType::kBye ? SocketEvent::kBye : SocketEvent::kGone;
}

// Moves the result into the client's buffers.
common::Status Session::deliver(Pending& p) {
  if (p.direct) return common::Status::ok();
  const pid_t pid = hello_.pid;
  const int rank = comm_.ctx->rank();
  const Submission& s = p.sub;
  if (static_cast<OpKind>(s.kind) == OpKind::kBroadcast) {
    if (rank == s.root || s.bytes == 0) return common::Status::ok();
    return client_io(pid, true, s.buffer, p.staging.data(), s.bytes);
  }
  if (static_cast<OpKind>(s.kind) == OpKind::kReduceScatterv ||
      static_cast<OpKind>(s.kind) == OpKind::kAllreduce) {
    if (p.staging.empty()) return common::Status::ok();
    return client_io(pid, true, s.buffer, p.staging.data(), p.staging.size());
  }
  if (static_cast<OpKind>(s.kind) == OpKind::kAllgatherv) {
    for (std::size_t r = 0; r < p.counts.size(); ++r) {
      if (p.counts[r] == 0 || (static_cast<int>(r) == rank && s.in_place)) continue;
      auto st =
          client_io(pid, true, s.buffer + p.displs[r], p.staging.data() + p.displs[r], p.counts[r]);
      if (!st) return st;
    }
  }
  return common::Status::ok();
}

bool Session::drain_submissions() {
  bool any = false;
  Submission s;
  while (rings_->pop_submission(s)) {
    any = true;
    if (static_cast<OpKind>(s.kind) == OpKind::kStats) {
      Stats snap = comm_.ctx->counters().snapshot();
      auto st = s.bytes == sizeof snap
                    ? client_io(hello_.pid, true, s.buffer, reinterpret_cast<std::byte*>(&snap),
                                sizeof snap)
                    : common::mismatch_error("the client's mccl::Stats has another size");
      unsent_.push_back(make_completion(s.id, st));
      continue;
    }
    // A broken communicator fails a submission at once, as ctx.start()
    // would, without first staging its input (tens of milliseconds for a
    // few MiB on a loaded host, before the client hears of the failure).
    if (const common::Status& broken = comm_.ctx->poisoned(); !broken.is_ok()) {
      unsent_.push_back(make_completion(s.id, broken));
      continue;
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
      continue;
    }
    pending_.push_back(std::move(p));
  }
  return any;
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

void Session::loop() {
  protocol::Context& ctx = *comm_.ctx;
  std::vector<pollfd> pfds;
  for (;;) {
    // Progress first: an abort that arrived while the client prepared its
    // next submission breaks the communicator before that is started.
    bool busy = ctx.progress() > 0;
    busy = drain_submissions() || busy;
    busy = complete_finished() || busy;

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
      // A Bye with nothing in flight is the one orderly end.
      if (ev == SocketEvent::kBye && pending_.empty()) {
        // Still the right neighbour's repair source for what completed eagerly.
        ctx.serve_until_released(common::Deadline::after(ctx.config().op_timeout));
        return;
      }
      // The client has gone (crashed, or left collectives in flight): poison
      // its communicator so that its peers get an error instead of waiting,
      // give the abort a moment to leave.
      g_trouble = true;
      say("%s", "rank " + std::to_string(ctx.rank()) +
                    "'s application process has gone: releasing its communicator");
      ctx.poison(common::peer_failure("rank " + std::to_string(ctx.rank()) +
                                      ": the application process exited (offload daemon)"));
      auto until = common::now() + std::chrono::milliseconds(200);
      while (common::now() < until) {
        ctx.progress();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return;
    }
  }
}

void Session::run() {
  auto st = setup();
  ReadyMsg ready{static_cast<std::int32_t>(st.code()), static_cast<std::int32_t>(::getpid())};
  std::vector<std::byte> body(sizeof ready + st.message().size());
  std::memcpy(body.data(), &ready, sizeof ready);
  std::memcpy(body.data() + sizeof ready, st.message().data(), st.message().size());
  if (rings_ != nullptr || memfd_ >= 0) (void)send_msg(sock_, MsgType::kReady, body);
  if (!st) {
    g_trouble = true;
    say("a client's communicator failed: %s", st.message());
    return;
  }
  loop();
}

}  // namespace

void run_session(int sock) {
  Session s(sock);
  s.run();
}

bool session_trouble() { return g_trouble.load(); }

void say(const char* fmt, const std::string& a) {
  std::fprintf(stderr, "mccl_offloadd[%d]: ", static_cast<int>(::getpid()));
  std::fprintf(stderr, fmt, a.c_str());
  std::fprintf(stderr, "\n");
}

}  // namespace mccl::offload
