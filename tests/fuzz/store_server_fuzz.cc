// Fuzzes the bootstrap store's state machine (src/bootstrap/store_server.cc,
// store_rounds.cc): admission, hellos, the allgather rounds, goodbyes,
// protocol errors, deadlines and the close. A store of kRanks ranks runs in
// this thread, one pass of its loop at a time (Impl::step with no wait), on
// a clock of the fuzzer's own, so deadlines pass without sleeping. Up to
// kMaxConns clients (unix stream sockets to its listening socket) act as the
// input says:
//
// The first byte picks the store's timeout; then, op by op:
//
//   op % 8   then                                      does
//   0        -                                         connect a client
//   1        conn, n, n bytes                          send raw bytes
//   2        conn, kind, rank, aux u16, round, flags,  send one frame (flags & 1:
//            n, [claimed length u32], n bytes          its length field lies)
//   3        conn, rank, size, wait_ms u16, good       say hello (good & 1: with
//                                                      the job's secret)
//   4        conn, round, aux u16, n, fill             contribute n bytes
//   5        conn, how                                 close / half-close / goodbye
//   6        ms u16, scale                             let time pass
//   7        -                                         stop the store (once)
//
// (conn is a byte, taken modulo the clients connected; integers are
// little-endian.) After each op the store makes one pass and every client
// reads what it was sent. Checks, besides the sanitizers': every frame the
// store sends is well formed and of a kind it may send (welcome, result,
// error); nothing follows an error; a client is welcomed at most once and
// before any result, and gets the results of rounds 0, 1, 2, ... in order,
// each a whole number of contributions; the store's bookkeeping of ranks
// (by_rank_, counts) stays consistent.
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store_state.h"
#include "bootstrap/wire.h"
#include "fuzz_util.h"

namespace b = mccl::bootstrap;
namespace w = mccl::bootstrap::wire;
using mccl::common::TimePoint;

namespace {

constexpr int kRanks = 3;
constexpr std::size_t kMaxConns = 8;
const std::string kSecret = "fuzz-secret";

TimePoint g_now;
TimePoint fuzz_clock() { return g_now; }

// The input, read front to back; zeros once it runs out.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  std::uint8_t u8() { return at_ < size_ ? data_[at_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() { return u16() | (static_cast<std::uint32_t>(u16()) << 16); }
  std::vector<std::byte> bytes(std::size_t n) {
    n = std::min(n, size_ - std::min(at_, size_));
    std::vector<std::byte> out(reinterpret_cast<const std::byte*>(data_ + at_),
                               reinterpret_cast<const std::byte*>(data_ + at_ + n));
    at_ += n;
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

// A client: its socket and what it has been sent, judged frame by frame.
struct Client {
  b::Fd fd;
  bool write_closed = false;
  std::vector<std::byte> in;
  bool welcomed = false;
  bool told_error = false;
  std::uint64_t next_round = 0;

  void send(std::span<const std::byte> bytes) {
    if (!fd || write_closed) return;
    // Unix stream sockets take what fits at once; the rest is cut, as if
    // the client had stopped there.
    [[maybe_unused]] auto n =
        ::send(fd.get(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  void receive() {
    if (!fd) return;
    std::array<std::byte, 4096> buf;
    for (;;) {
      ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      in.insert(in.end(), buf.begin(), buf.begin() + n);
    }
    judge();
  }

  // Consumes every whole frame in `in`.
  void judge() {
    for (;;) {
      if (in.size() < w::kHeaderBytes) return;
      w::Header h;
      std::string why;
      MCCL_FUZZ_CHECK(w::decode(
          std::span<const std::byte, w::kHeaderBytes>(in.data(), w::kHeaderBytes), h, why));
      MCCL_FUZZ_CHECK(h.rank == w::kStoreRank);
      if (in.size() - w::kHeaderBytes < h.length) return;
      MCCL_FUZZ_CHECK(!told_error);  // an error is the store's last word
      switch (h.kind) {
        case w::Kind::kWelcome:
          MCCL_FUZZ_CHECK(!welcomed && h.length == 0);
          welcomed = true;
          break;
        case w::Kind::kResult:
          MCCL_FUZZ_CHECK(welcomed);
          MCCL_FUZZ_CHECK(h.round == next_round);
          MCCL_FUZZ_CHECK(h.length % kRanks == 0);
          ++next_round;
          break;
        case w::Kind::kError:
          MCCL_FUZZ_CHECK(h.length <= w::kMaxErrorBytes);
          told_error = true;
          break;
        default:
          MCCL_FUZZ_CHECK(false && "the store sent a kind only ranks send");
      }
      in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(w::kHeaderBytes + h.length));
    }
  }
};

std::vector<std::byte> frame(w::Kind kind, std::uint32_t rank, std::uint32_t aux,
                             std::uint64_t round, std::span<const std::byte> payload,
                             std::uint64_t claimed_length) {
  std::vector<std::byte> out(w::kHeaderBytes);
  w::encode({kind, rank, aux, round, claimed_length},
            std::span<std::byte, w::kHeaderBytes>(out.data(), w::kHeaderBytes));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// The store's own view of its ranks agrees with itself.
void check_books(const b::StoreServer::Impl& s) {
  MCCL_FUZZ_CHECK(s.arrived_count_ >= 0 && s.arrived_count_ <= s.size_);
  MCCL_FUZZ_CHECK(s.count_ >= 0 && s.count_ <= s.size_);
  MCCL_FUZZ_CHECK(!s.welcomed_ || s.arrived_count_ == s.size_);
  int contributed = 0;
  for (const auto& [r, part] : s.contributions_) {
    MCCL_FUZZ_CHECK(r >= 0 && r < s.size_ && part != nullptr);
    ++contributed;
  }
  MCCL_FUZZ_CHECK(static_cast<int>(s.arrived_.size()) == s.arrived_count_);
  for (const auto& [r, c] : s.by_rank_) {
    MCCL_FUZZ_CHECK(c != nullptr && s.arrived_.count(r) == 1 && c->rank == r);
    bool listed = false;
    for (const auto& k : s.conns_) listed = listed || k.get() == c;
    MCCL_FUZZ_CHECK(listed);
  }
  MCCL_FUZZ_CHECK(contributed == s.count_);
}

b::Fd unix_listener(sockaddr_un& addr, socklen_t& len) {
  b::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  MCCL_FUZZ_CHECK(fd);
  // An abstract address the kernel picks (autobind): nothing in the file system.
  sockaddr_un any{};
  any.sun_family = AF_UNIX;
  MCCL_FUZZ_CHECK(::bind(fd.get(), reinterpret_cast<sockaddr*>(&any), sizeof(sa_family_t)) == 0);
  MCCL_FUZZ_CHECK(::listen(fd.get(), 64) == 0);
  len = sizeof addr;
  MCCL_FUZZ_CHECK(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  g_now = TimePoint{} + std::chrono::hours(1000);
  sockaddr_un where{};
  socklen_t where_len = 0;
  b::Fd listener = unix_listener(where, where_len);
  sockaddr_in shown{};  // only named in messages
  shown.sin_family = AF_INET;
  // The store's timeout: 1 to 31 s, or (31 modulo 32) INT64_MAX ms, "forever".
  const std::uint8_t t = in.u8() % 32;
  const auto timeout =
      t == 31 ? std::chrono::milliseconds::max() : std::chrono::milliseconds(1000 + 1000 * t);
  b::StoreServer::Impl store(std::move(listener), shown, kRanks, timeout, kSecret, &fuzz_clock);
  store.wake_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  MCCL_FUZZ_CHECK(store.wake_);

  std::vector<std::unique_ptr<Client>> clients;
  bool running = true;
  auto pick = [&](std::uint8_t b) -> Client* {
    return clients.empty() ? nullptr : clients[b % clients.size()].get();
  };
  auto pass = [&] {
    if (running) running = store.step(0);
    for (auto& c : clients) c->receive();
    check_books(store);
  };

  for (int ops = 0; !in.empty() && ops < 256; ++ops) {
    switch (in.u8() % 8) {
      case 0: {
        if (clients.size() >= kMaxConns) break;
        auto c = std::make_unique<Client>();
        c->fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        MCCL_FUZZ_CHECK(c->fd);
        // Refused once the store has stopped listening: the client stays unconnected.
        ::connect(c->fd.get(), reinterpret_cast<const sockaddr*>(&where), where_len);
        clients.push_back(std::move(c));
        break;
      }
      case 1: {
        Client* c = pick(in.u8());
        auto bytes = in.bytes(in.u8());
        if (c != nullptr) c->send(bytes);
        break;
      }
      case 2: {
        Client* c = pick(in.u8());
        const auto kind = static_cast<w::Kind>(in.u8() % 8);
        const std::uint32_t rank = in.u8();
        const std::uint32_t aux = in.u16();
        const std::uint64_t round = in.u8();
        const std::uint8_t flags = in.u8();
        const std::size_t n = in.u8();
        const std::uint64_t claimed = (flags & 1) != 0 ? in.u32() : n;
        auto payload = in.bytes(n);
        if (c != nullptr) c->send(frame(kind, rank, aux, round, payload, claimed));
        break;
      }
      case 3: {
        Client* c = pick(in.u8());
        w::Hello hello;
        const std::uint32_t rank = in.u8() % (kRanks + 2);
        hello.size = in.u8() % (kRanks + 2);
        hello.wait_ms = in.u16();
        hello.secret = (in.u8() & 1) != 0 ? kSecret : "not-the-secret";
        const auto body = w::encode(hello);
        if (c != nullptr) c->send(frame(w::Kind::kHello, rank, 0, 0, body, body.size()));
        break;
      }
      case 4: {
        Client* c = pick(in.u8());
        const std::uint64_t round = in.u8();
        const std::uint32_t aux = in.u16();
        const std::size_t n = in.u8() % 64;
        const std::vector<std::byte> body(n, std::byte{in.u8()});
        if (c != nullptr) c->send(frame(w::Kind::kContribute, 0, aux, round, body, n));
        break;
      }
      case 5: {
        Client* c = pick(in.u8());
        const int how = in.u8() % 3;
        if (c == nullptr || !c->fd) break;
        if (how == 0) {
          c->fd.reset();  // vanishes (what it was sent is no longer judged)
        } else if (how == 1) {
          ::shutdown(c->fd.get(), SHUT_WR);
          c->write_closed = true;
        } else {
          c->send(frame(w::Kind::kBye, 0, 0, 0, {}, 0));
          ::shutdown(c->fd.get(), SHUT_WR);
          c->write_closed = true;
        }
        break;
      }
      case 6: {
        const std::uint16_t ms = in.u16();
        g_now += std::chrono::milliseconds(ms) * ((in.u8() & 3) == 0 ? 100 : 1);
        break;
      }
      case 7:
        store.stop();
        break;
    }
    pass();
  }
  // The end: the store stops, says so to whoever still listens, and closes.
  store.stop();
  for (int i = 0; i < 64 && running; ++i) {
    g_now += std::chrono::milliseconds(100);
    pass();
  }
  store.close_all();
  for (auto& c : clients) c->receive();
  return 0;
}
