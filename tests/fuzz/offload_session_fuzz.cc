// Fuzzes the offload daemon's handling of one client (src/offload/daemon):
// a whole session runs in this process (run_session on one end of a socket
// pair, the fuzzer the client on the other), with a one-rank communicator
// over UDP loopback. The input patches the client's hello, then drives the
// session: raw socket frames, submissions on the shared ring, the ring's
// head put anywhere, waits for completions. A session that hangs shows as
// libFuzzer's timeout, one that allocates what a client names as its
// out-of-memory report.
//
// The daemon reads and writes the client's memory at the addresses a
// submission names (process_vm_*), here this very process: the harness
// points every address into an arena followed by a guard it cannot write
// past, and keeps the sizes it names small, so the fuzzer tests the daemon
// and not how much memory it may overwrite or allocate.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "fuzz_util.h"
#include "offload/daemon/session.h"
#include "offload/wire.h"

namespace o = mccl::offload;

namespace {

constexpr std::size_t kArena = std::size_t{1} << 20;   // where buffers may lie
constexpr std::size_t kGuard = std::size_t{64} << 20;  // PROT_NONE after it
constexpr std::uint64_t kMaxBytes = 64 << 10;          // sizes and counts named
constexpr std::uint32_t kSlots = 8;
constexpr std::size_t kRegionBytes = 64 << 10;  // each registered shared buffer
constexpr std::size_t kLayouts = 64;            // counts/displs slots

// Memory the daemon may read and write: the arena (buffers) and a layout
// area (counts and displacements, written by the harness only, so that a
// result delivered into the arena cannot change a later size).
struct ClientMemory {
  std::byte* arena = nullptr;
  std::uint64_t* layouts = nullptr;
  ClientMemory() {
    void* p = ::mmap(nullptr, kArena + kGuard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || ::mprotect(p, kArena, PROT_READ | PROT_WRITE) != 0) std::abort();
    arena = static_cast<std::byte*>(p);
    layouts = new std::uint64_t[2 * kLayouts]();
  }
  std::uint64_t in_arena(std::uint64_t v) const {
    return reinterpret_cast<std::uint64_t>(arena) + v % kArena;
  }
};

// The input, read front to back; past its end, zeros.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  bool done() const { return at_ >= in_.size(); }
  void bytes(void* out, std::size_t n) {
    if (n == 0) return;
    std::memset(out, 0, n);
    const std::size_t k = std::min(n, in_.size() - std::min(at_, in_.size()));
    if (k > 0) std::memcpy(out, in_.data() + at_, k);
    at_ += n;
  }
  template <typename T>
  T get() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

class FakeClient {
 public:
  FakeClient() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    sock_ = sv[0];
    daemon_sock_ = sv[1];
    const std::size_t bytes = o::SharedRings::bytes_for(kSlots);
    memfd_ = ::memfd_create("fuzz-rings", MFD_CLOEXEC);
    if (memfd_ < 0 || ::ftruncate(memfd_, static_cast<off_t>(bytes)) != 0) std::abort();
    map_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
    if (map_ == MAP_FAILED) std::abort();
    rings_ = std::make_unique<o::SharedRings>(map_, kSlots, true);
    sub_efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    comp_efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    session_ = std::thread([fd = daemon_sock_] { o::daemon::run_session(fd); });
  }
  ~FakeClient() {
    if (sock_ >= 0) ::close(sock_);  // EOF: the session ends
    session_.join();
    ::close(daemon_sock_);
    ::munmap(map_, o::SharedRings::bytes_for(kSlots));
    for (int fd : {memfd_, sub_efd_, comp_efd_}) ::close(fd);
  }

  // A valid hello with `patch` XORed over it (zeros keep it valid); then
  // the bootstrap of a one-rank job. False when the daemon refused.
  bool hello(Reader& in) {
    o::HelloMsg h;
    h.pid = static_cast<std::int32_t>(::getpid());
    h.size = 1;
    h.ring_slots = kSlots;
    h.timeout_ms = 2000;
    std::byte patch[sizeof h];
    in.bytes(patch, sizeof patch);
    auto* raw = reinterpret_cast<std::byte*>(&h);
    for (std::size_t i = 0; i < sizeof h; ++i) raw[i] ^= patch[i];
    const int fds[3] = {memfd_, sub_efd_, comp_efd_};
    if (!o::send_msg(sock_, o::MsgType::kHello, std::as_bytes(std::span(&h, 1)), fds)) return false;
    for (;;) {
      o::MsgType type{};
      std::vector<std::byte> body;
      if (!o::recv_msg(sock_, type, body, nullptr, 5000)) return false;
      if (type == o::MsgType::kReady) {
        o::ReadyMsg r;
        MCCL_FUZZ_CHECK(body.size() >= sizeof r);
        std::memcpy(&r, body.data(), sizeof r);
        return r.code == 0;
      }
      MCCL_FUZZ_CHECK(type == o::MsgType::kAllgather);
      // One rank (a patched size is answered as one, and refused there).
      if (!o::send_msg(sock_, o::MsgType::kAllgatherResult, body)) return false;
    }
  }

  // A frame as the input spells it: type, claimed length, up to 255 bytes
  // sent. A register frame brings a shared buffer and, when it is a region
  // message, its address moved into the arena.
  void frame(Reader& in, const ClientMemory& mem) {
    const auto type = in.get<std::uint32_t>();
    const auto claim = in.get<std::uint32_t>();
    std::vector<std::byte> body(in.get<std::uint8_t>());
    in.bytes(body.data(), body.size());
    const bool region = body.size() == sizeof(o::RegionMsg);
    if (region && (type == static_cast<std::uint32_t>(o::MsgType::kRegister) ||
                   type == static_cast<std::uint32_t>(o::MsgType::kUnregister))) {
      o::RegionMsg r;
      std::memcpy(&r, body.data(), sizeof r);
      r.addr = mem.in_arena(r.addr);
      std::memcpy(body.data(), &r, sizeof r);
    }
    const std::uint32_t head[2] = {type, claim};
    std::vector<std::byte> bytes(sizeof head + body.size());
    std::memcpy(bytes.data(), head, sizeof head);
    if (!body.empty()) std::memcpy(bytes.data() + sizeof head, body.data(), body.size());
    iovec iov{bytes.data(), bytes.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
    const int shared = type == static_cast<std::uint32_t>(o::MsgType::kRegister)
                           ? ::memfd_create("fuzz-region", MFD_CLOEXEC)
                           : -1;
    if (shared >= 0 && ::ftruncate(shared, kRegionBytes) == 0) {
      mh.msg_control = ctrl;
      mh.msg_controllen = sizeof ctrl;
      cmsghdr* c = CMSG_FIRSTHDR(&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &shared, sizeof shared);
    }
    (void)::sendmsg(sock_, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (shared >= 0) ::close(shared);
    // A registration is answered while the client waits: read it.
    pollfd p{sock_, POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) {
      char sink[4096];
      (void)::recv(sock_, sink, sizeof sink, MSG_DONTWAIT);
    }
  }

  // A submission as the input spells it, its addresses moved into the
  // arena and its sizes made small.
  void submit(Reader& in, ClientMemory& mem) {
    auto s = in.get<o::Submission>();
    s.buffer = mem.in_arena(s.buffer);
    s.send = mem.in_arena(s.send);
    s.bytes %= kMaxBytes;
    std::uint64_t* layout = mem.layouts + 2 * (next_layout_++ % kLayouts);
    layout[0] = s.counts % kMaxBytes;
    layout[1] = s.displs % kMaxBytes;
    s.counts = reinterpret_cast<std::uint64_t>(&layout[0]);
    s.displs = reinterpret_cast<std::uint64_t>(&layout[1]);
    if (rings_->push_submission(s)) ring_bell();
  }

  // The submission ring's head put where the input says, near the tail.
  void move_head(Reader& in) {
    auto* h = static_cast<o::RingHeader*>(map_);
    h->head.store(h->tail.load() + in.get<std::uint16_t>());
    ring_bell();
  }

  // Takes completions for up to `ms`.
  void collect(int ms) {
    const auto until = mccl::common::now() + std::chrono::milliseconds(ms);
    o::Completion c;
    while (mccl::common::now() < until) {
      while (rings_->pop_completion(c)) {
        MCCL_FUZZ_CHECK(o::completion_status(c).message().size() <= sizeof c.message);
      }
      pollfd p{comp_efd_, POLLIN, 0};
      (void)::poll(&p, 1, 5);
      std::uint64_t v;
      (void)!::read(comp_efd_, &v, sizeof v);
    }
  }

  void bye() { (void)o::send_msg(sock_, o::MsgType::kBye, {}); }

 private:
  void ring_bell() {
    const std::uint64_t one = 1;
    (void)!::write(sub_efd_, &one, sizeof one);
  }

  int sock_ = -1, daemon_sock_ = -1, memfd_ = -1, sub_efd_ = -1, comp_efd_ = -1;
  void* map_ = nullptr;
  std::unique_ptr<o::SharedRings> rings_;
  std::thread session_;
  std::size_t next_layout_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ClientMemory mem;
  Reader in(mccl::fuzz::as_bytes(data, size));
  FakeClient client;
  if (!client.hello(in)) return 0;
  // At most 64 actions: a session per input costs milliseconds already.
  for (int i = 0; i < 64 && !in.done(); ++i) {
    switch (in.get<std::uint8_t>() % 4) {
      case 0:
        client.frame(in, mem);
        break;
      case 1:
        client.submit(in, mem);
        break;
      case 2:
        client.move_head(in);
        break;
      default:
        client.collect(20);
        break;
    }
  }
  client.collect(20);
  client.bye();
  return 0;
}
