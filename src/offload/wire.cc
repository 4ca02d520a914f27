#include "offload/wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "common/clock.h"

namespace mccl::offload {

namespace {

std::size_t align64(std::size_t n) { return (n + 63) & ~std::size_t{63}; }

template <typename T>
bool push(RingHeader* r, T* slots, std::uint32_t n, const T& v) {
  const std::uint64_t h = r->head.load(std::memory_order_relaxed);
  const std::uint64_t t = r->tail.load(std::memory_order_acquire);
  if (h - t >= n) return false;
  slots[h % n] = v;
  r->head.store(h + 1, std::memory_order_release);
  return true;
}

// The head is the other process's word: a correct producer is never more
// than `n` ahead. Believing a head far ahead (or behind: the difference
// wraps) would have the consumer pop stale slots almost forever.
template <typename T>
RingPop pop(RingHeader* r, T* slots, std::uint32_t n, T& v) {
  const std::uint64_t t = r->tail.load(std::memory_order_relaxed);
  const std::uint64_t h = r->head.load(std::memory_order_acquire);
  if (t == h) return RingPop::kEmpty;
  if (h - t > n) return RingPop::kOverrun;
  v = slots[t % n];
  r->tail.store(t + 1, std::memory_order_release);
  return RingPop::kTaken;
}

struct FrameHeader {
  std::uint32_t type;
  std::uint32_t length;
};

// A message carries at most this many descriptors (the hello's three).
constexpr std::size_t kMaxFds = 3;
// The body is read in pieces of at most this many bytes, each allocated
// only when the bytes before it have arrived.
constexpr std::size_t kReadPiece = std::size_t{64} << 10;
// Exchanges (daemon <-> client's bootstrap) carry per-rank rows; the
// longest, the multicast probe's, is size x (size + 1) bytes: 8192 ranks.
constexpr std::size_t kMaxExchangeBytes = std::size_t{64} << 20;
// A shrink's failed ranks: as many as the exchanges allow.
constexpr std::size_t kMaxRanks = 8192;

// Keeps at most kMaxFds descriptors of a message in `fds` (none when it is
// null) and closes the rest: a peer cannot fill this process's table.
void keep_fd(int fd, std::vector<int>* fds) {
  if (fds != nullptr && fds->size() < kMaxFds) {
    fds->push_back(fd);
  } else {
    ::close(fd);
  }
}

// Reads exactly `n` bytes by `deadline`, keeping the descriptors that come
// with them.
common::Status read_full(int sock, std::byte* p, std::size_t n, std::vector<int>* fds,
                         const common::Deadline& deadline) {
  std::size_t got = 0;
  while (got < n) {
    pollfd pfd{sock, POLLIN, 0};
    int pr = ::poll(&pfd, 1, common::poll_timeout_ms(deadline));
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) return common::timeout_error("offload socket: nothing arrived in time");
    iovec iov{p + got, n - got};
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * 4)];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl;
    mh.msg_controllen = sizeof ctrl;
    ssize_t r = ::recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return common::peer_failure(std::string("offload socket: ") + std::strerror(errno));
    }
    if (r == 0) return common::peer_failure("offload socket: the other side closed it");
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c != nullptr; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < k; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        keep_fd(fd, fds);
      }
    }
    got += static_cast<std::size_t>(r);
  }
  return common::Status::ok();
}

}  // namespace

std::size_t SharedRings::bytes_for(std::uint32_t slots) {
  return 2 * align64(sizeof(RingHeader)) + align64(sizeof(Submission) * slots) +
         align64(sizeof(Completion) * slots);
}

SharedRings::SharedRings(void* base, std::uint32_t slots, bool init) : slots_(slots) {
  auto* p = static_cast<std::byte*>(base);
  sub_ = reinterpret_cast<RingHeader*>(p);
  comp_ = reinterpret_cast<RingHeader*>(p + align64(sizeof(RingHeader)));
  subs_ = reinterpret_cast<Submission*>(p + 2 * align64(sizeof(RingHeader)));
  comps_ = reinterpret_cast<Completion*>(p + 2 * align64(sizeof(RingHeader)) +
                                         align64(sizeof(Submission) * slots));
  if (init) {
    // The region is fresh (zero-filled) memory: construct the atomics in it.
    new (sub_) RingHeader{};
    new (comp_) RingHeader{};
    sub_->head.store(0);
    sub_->tail.store(0);
    comp_->head.store(0);
    comp_->tail.store(0);
  }
}

bool SharedRings::push_submission(const Submission& s) { return push(sub_, subs_, slots_, s); }
RingPop SharedRings::pop_submission(Submission& s) { return pop(sub_, subs_, slots_, s); }
bool SharedRings::push_completion(const Completion& c) { return push(comp_, comps_, slots_, c); }
bool SharedRings::pop_completion(Completion& c) {
  return pop(comp_, comps_, slots_, c) == RingPop::kTaken;
}

common::Status send_msg(int sock, MsgType type, std::span<const std::byte> body,
                        std::span<const int> fds) {
  FrameHeader fh{static_cast<std::uint32_t>(type), static_cast<std::uint32_t>(body.size())};
  iovec iov[2] = {{&fh, sizeof fh}, {const_cast<std::byte*>(body.data()), body.size()}};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = body.empty() ? 1 : 2;
  if (!fds.empty()) {
    mh.msg_control = ctrl;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  std::size_t total = sizeof fh + body.size();
  std::size_t sent = 0;
  while (sent < total) {
    ssize_t r = ::sendmsg(sock, &mh, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      return common::peer_failure(std::string("offload socket: send: ") + std::strerror(errno));
    }
    sent += static_cast<std::size_t>(r);
    if (sent >= total) break;
    // Partial write: resend the rest without descriptors.
    mh.msg_control = nullptr;
    mh.msg_controllen = 0;
    std::size_t skip = static_cast<std::size_t>(r);
    while (mh.msg_iovlen > 0 && skip >= mh.msg_iov[0].iov_len) {
      skip -= mh.msg_iov[0].iov_len;
      ++mh.msg_iov;
      --mh.msg_iovlen;
    }
    mh.msg_iov[0].iov_base = static_cast<char*>(mh.msg_iov[0].iov_base) + skip;
    mh.msg_iov[0].iov_len -= skip;
  }
  return common::Status::ok();
}

int setup_answer_timeout_ms(std::int64_t collective_timeout_ms) {
  constexpr std::int64_t kGraceMs = 5000, kMaxMs = std::int64_t{1} << 30;
  return static_cast<int>(std::min(collective_timeout_ms, kMaxMs - kGraceMs) + kGraceMs);
}

int shrink_answer_timeout_ms(std::int64_t collective_timeout_ms) {
  // Up to four attempts (setup::kShrinkAttempts) of an agreement and a
  // creation of a few exchanges each: 32 exchanges' worth bounds it.
  constexpr std::int64_t kExchanges = 32, kMaxMs = std::int64_t{1} << 30;
  return static_cast<int>(
      std::min<std::int64_t>(setup_answer_timeout_ms(collective_timeout_ms), kMaxMs / kExchanges) *
      kExchanges);
}

std::size_t max_body_bytes(MsgType type) {
  switch (type) {
    case MsgType::kHello:
      return sizeof(HelloMsg);
    case MsgType::kAllgather:
    case MsgType::kAllgatherResult:
      return kMaxExchangeBytes;
    case MsgType::kAllgatherFailed:
      return kMaxTextBytes;
    case MsgType::kReady:
      return sizeof(ReadyMsg) + kMaxTextBytes;
    case MsgType::kBye:
      return 0;
    case MsgType::kRegister:
    case MsgType::kUnregister:
      return sizeof(RegionMsg);
    case MsgType::kRegistered:
      return sizeof(std::int32_t) + kMaxTextBytes;
    case MsgType::kRevoke:
    case MsgType::kShrink:
      return 0;
    case MsgType::kShrunk:
      return sizeof(ShrunkMsg) + kMaxRanks * sizeof(std::int32_t) + kMaxTextBytes;
  }
  return 0;
}

common::Status recv_msg(int sock, MsgType& type, std::vector<std::byte>& body,
                        std::vector<int>* fds, int timeout_ms) {
  const common::Deadline deadline =
      timeout_ms < 0 ? common::Deadline::never()
                     : common::Deadline::after(std::chrono::milliseconds(timeout_ms));
  FrameHeader fh{};
  auto st = read_full(sock, reinterpret_cast<std::byte*>(&fh), sizeof fh, fds, deadline);
  if (!st) return st;
  const std::size_t most = max_body_bytes(static_cast<MsgType>(fh.type));
  if (fh.length > most) {
    return common::internal_error("offload socket: a message of type " + std::to_string(fh.type) +
                                  " claims " + std::to_string(fh.length) + " bytes; it can need " +
                                  std::to_string(most) + " at most");
  }
  // Grown as the bytes arrive: a peer that claims much and sends little
  // costs this process nothing.
  body.clear();
  while (body.size() < fh.length) {
    const std::size_t at = body.size();
    body.resize(at + std::min<std::size_t>(fh.length - at, kReadPiece));
    st = read_full(sock, body.data() + at, body.size() - at, fds, deadline);
    if (!st) return st;
  }
  type = static_cast<MsgType>(fh.type);
  return common::Status::ok();
}

Completion make_completion(std::uint64_t id, const common::Status& st) {
  Completion c;
  c.id = id;
  c.code = static_cast<std::int32_t>(st.code());
  const std::size_t n = std::min(st.message().size(), sizeof c.message - 1);
  std::memcpy(c.message, st.message().data(), n);
  c.length = static_cast<std::uint32_t>(n);
  return c;
}

common::Status completion_status(const Completion& c) {
  if (c.code == 0) return common::Status::ok();
  return {static_cast<ErrorCode>(c.code),
          std::string(c.message, std::min<std::size_t>(c.length, sizeof c.message))};
}

}  // namespace mccl::offload
