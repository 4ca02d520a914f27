// A rank's side of the TCP store (mccl/tcp_bootstrap.h): one blocking
// connection to the store, one round trip per allgather. Rank 0 also owns
// the store itself (bootstrap/store_server.h) and joins it over loopback
// like any other rank, so every rank runs the same client code.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <climits>
#include <mutex>
#include <optional>
#include <thread>

#include "bootstrap/rendezvous.h"
#include "bootstrap/secret.h"
#include "bootstrap/socket.h"
#include "bootstrap/store_server.h"
#include "bootstrap/wire.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"

namespace mccl::bootstrap {
namespace {

using namespace std::chrono_literals;
namespace settings = common::settings;

// How long a rank waits beyond its own deadline for the store to name the
// ranks that missed it (the store keeps the same deadline and answers
// first); only a silent store makes a rank use it up.
constexpr auto kStoreGrace = 2s;
// Retry interval while the store is not up yet: doubles up to the cap.
constexpr auto kFirstBackoff = 10ms;
constexpr auto kMaxBackoff = 500ms;

common::Deadline deadline_in(std::chrono::milliseconds ms) {
  if (ms.count() < 0) ms = 0ms;
  if (ms > std::chrono::hours(24 * 365)) return common::Deadline::never();
  return common::Deadline::after(ms);
}

std::uint32_t clamp_ms(std::chrono::milliseconds ms) {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(ms.count(), 0, UINT32_MAX));
}

std::int64_t ms_since(common::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(common::now() - t).count();
}

// ---- Options ---------------------------------------------------------------

struct Config {
  int rank = 0;
  int size = 1;
  HostPort store;
  std::string store_text;    // as given, for messages
  std::string store_source;  // "MCCL_BOOTSTRAP_ADDR" or "TcpBootstrapOptions::address"
  std::chrono::milliseconds timeout{0};
  const char* size_source = "MCCL_WORLD_SIZE";  // for messages
  JobSecret secret;                             // bootstrap/secret.h
};

// `field` where the options set it (not -1), else the variable of `s`,
// which must then be set (its range is checked with the other settings).
common::Status int_setting(const common::Setting& s, int field, const char* field_name, int min,
                           const char* what, int& out) {
  if (field != -1) {
    if (field < min) {
      return common::invalid_argument(std::string("TcpBootstrapOptions::") + field_name + " = " +
                                      std::to_string(field) + " is not valid: must be at least " +
                                      std::to_string(min));
    }
    out = field;
    return common::Status::ok();
  }
  if (!s.from_env()) {
    return common::invalid_argument(std::string(s.name()) +
                                    " is not set (and TcpBootstrapOptions::" + field_name +
                                    " is -1): set it to " + what);
  }
  out = static_cast<int>(s.get_int());
  return common::Status::ok();
}

common::Status resolve(const TcpBootstrapOptions& o, Config& c) {
  common::Status st =
      int_setting(settings::kWorldSize, o.size, "size", 1, "the number of ranks", c.size);
  if (st) st = int_setting(settings::kRank, o.rank, "rank", 0, "this process's rank", c.rank);
  if (!st) return st;
  if (o.size != -1) c.size_source = "TcpBootstrapOptions::size";
  if (c.rank >= c.size) {
    return common::invalid_argument(
        (o.rank != -1 ? std::string("TcpBootstrapOptions::rank") : std::string("MCCL_RANK")) +
        " = " + std::to_string(c.rank) + " is not valid: must be less than the world size " +
        std::to_string(c.size));
  }
  if (o.timeout.count() < 0) {
    return common::invalid_argument(
        "TcpBootstrapOptions::timeout = " + std::to_string(o.timeout.count()) +
        " ms is not valid: must be positive (0 = MCCL_BOOTSTRAP_TIMEOUT_MS)");
  }
  c.timeout = o.timeout.count() > 0
                  ? o.timeout
                  : std::chrono::milliseconds(settings::kBootstrapTimeoutMs.get_int());
  if (c.size == 1) return common::Status::ok();  // nothing to connect to
  if (!o.address.empty()) {
    c.store_text = o.address;
    c.store_source = "TcpBootstrapOptions::address";
  } else if (auto env = settings::kBootstrapAddr.from_env()) {
    c.store_text = *env;
    c.store_source = settings::kBootstrapAddr.name();
  } else {
    return common::invalid_argument(
        "rank " + std::to_string(c.rank) +
        ": MCCL_BOOTSTRAP_ADDR is not set: every rank of a world of " + std::to_string(c.size) +
        " needs host:port of the store that rank 0 serves (e.g. MCCL_BOOTSTRAP_ADDR=node0:29500)");
  }
  if (st = parse_host_port(c.store_text, c.store_source, c.store); !st) return st;
  return job_secret(o.secret, c.store.port, c.secret);
}

// ---- The bootstraps ----------------------------------------------------------

class SoloRendezvous final : public Rendezvous {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  common::Status allgather(std::span<const std::byte> mine, std::chrono::milliseconds,
                           std::vector<std::byte>& all) override {
    all.assign(mine.begin(), mine.end());
    return common::Status::ok();
  }
};

class TcpRendezvous final : public Rendezvous {
 public:
  TcpRendezvous(const Config& c, std::unique_ptr<StoreServer> server)
      : rank_(c.rank),
        size_(c.size),
        where_(c.store_text),
        secret_(c.secret),
        server_(std::move(server)) {}
  ~TcpRendezvous() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  common::Status allgather(std::span<const std::byte> mine, std::chrono::milliseconds timeout,
                           std::vector<std::byte>& all) override;

  // Connects to the store (retrying until `timeout`), says hello and waits
  // for the welcome that says every rank has arrived.
  common::Status join(const sockaddr_in* direct, const HostPort& store,
                      std::chrono::milliseconds timeout);

  // Between allgathers: lets the store connection go (kDetach); the next
  // allgather connects again. Best effort: on any trouble it keeps it.
  void detach();

 private:
  // Connects (retrying until `deadline`) to the store, by address for rank
  // 0 (its own store), else by name; fails naming the last error.
  common::Status connect_store(common::Deadline deadline, std::chrono::milliseconds timeout);
  // Says hello: `aux` 0 to arrive, wire::kRejoin to come back for round_.
  common::Status say_hello(std::uint32_t aux, common::Deadline answer_by);
  // Makes `st` the object's sticky error and returns it: the ranks'
  // exchanges are out of step from then on.
  common::Status fail(common::Status st);
  // Reads the store's next frame, which must be `want` of round `round` with
  // `length` payload bytes (into `payload`); else fails.
  common::Status expect(wire::Kind want, std::uint64_t round, std::uint64_t length,
                        std::span<std::byte> payload, common::Deadline deadline,
                        const std::string& waiting_for);
  std::string me() const { return "rank " + std::to_string(rank_) + ": "; }
  std::string store() const { return "the bootstrap store at " + where_ + " (rank 0)"; }

  const int rank_;
  const int size_;
  const std::string where_;
  JobSecret secret_;  // a generated one: rank 0's file, read by the others in join()
  std::mutex mu_;     // one allgather at a time
  Fd fd_;
  std::uint64_t round_ = 0;
  bool detached_ = false;
  std::optional<sockaddr_in> direct_;  // rank 0: its own store's address
  HostPort store_hp_;
  std::optional<common::Status> failed_;
  std::unique_ptr<StoreServer> server_;  // rank 0 only; stops after our own goodbye
};

TcpRendezvous::~TcpRendezvous() {
  if (fd_ && !failed_) {
    // Best effort and non-blocking: the store learns this was an orderly exit.
    std::array<std::byte, wire::kHeaderBytes> bye;
    wire::encode({wire::Kind::kBye, static_cast<std::uint32_t>(rank_), 0, round_, 0}, bye);
    [[maybe_unused]] auto n =
        ::send(fd_.get(), bye.data(), bye.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  fd_.reset();
  server_.reset();
  if (rank_ == 0) remove_generated_secret(secret_);
}

common::Status TcpRendezvous::fail(common::Status st) {
  failed_ = std::move(st);
  common::logf(common::LogLevel::kInfo, rank_, "%s", failed_->message().c_str());
  return *failed_;
}

common::Status TcpRendezvous::expect(wire::Kind want, std::uint64_t round, std::uint64_t length,
                                     std::span<std::byte> payload, common::Deadline deadline,
                                     const std::string& waiting_for) {
  auto io_failure = [&](const common::Status& st) {
    if (st.code() == ErrorCode::kTimeout) {
      return fail(common::timeout_error(me() + store() + " did not answer while waiting for " +
                                        waiting_for + " (is rank 0 alive?)"));
    }
    return fail(common::peer_failure(me() + "lost the connection to " + store() +
                                     " while waiting for " + waiting_for + ": " + st.message()));
  };
  std::array<std::byte, wire::kHeaderBytes> raw;
  if (auto st = read_exact(fd_.get(), raw, deadline); !st) return io_failure(st);
  wire::Header h;
  std::string why;
  if (!wire::decode(raw, h, why)) {
    return fail(
        common::transport_error(me() + "something answers at " + where_ +
                                ", but not an MCCL bootstrap store of this version: " + why));
  }
  if (h.rank != wire::kStoreRank) {
    return fail(common::transport_error(me() + store() + " sent a frame claiming rank " +
                                        std::to_string(h.rank)));
  }
  if (h.kind == wire::Kind::kError) {
    if (h.length > wire::kMaxErrorBytes) {
      return fail(common::transport_error(me() + store() + " sent an error of " +
                                          std::to_string(h.length) + " bytes"));
    }
    std::string text(h.length, '\0');
    if (auto st = read_exact(fd_.get(), std::as_writable_bytes(std::span(text)), deadline); !st) {
      return io_failure(st);
    }
    auto code = static_cast<ErrorCode>(h.aux);
    if (h.aux < static_cast<std::uint32_t>(ErrorCode::kInvalidArgument) ||
        h.aux > static_cast<std::uint32_t>(ErrorCode::kUnavailable)) {
      code = ErrorCode::kInternal;
    }
    return fail(common::Status(code, me() + text));
  }
  if (h.kind != want || h.round != round || h.length != length) {
    return fail(common::transport_error(
        me() + store() + " broke the protocol: expected frame kind " +
        std::to_string(static_cast<int>(want)) + " of round " + std::to_string(round) + " with " +
        std::to_string(length) + " bytes, got kind " + std::to_string(static_cast<int>(h.kind)) +
        " of round " + std::to_string(h.round) + " with " + std::to_string(h.length) + " bytes"));
  }
  if (auto st = read_exact(fd_.get(), payload, deadline); !st) return io_failure(st);
  return common::Status::ok();
}

common::Status TcpRendezvous::connect_store(common::Deadline deadline,
                                            std::chrono::milliseconds timeout) {
  const common::TimePoint start = common::now();
  std::string last_error = "no attempt";
  auto backoff = std::chrono::milliseconds(kFirstBackoff);
  while (!fd_) {
    sockaddr_in addr{};
    common::Status st =
        direct_ ? common::Status::ok() : resolve_ipv4(store_hp_.host, store_hp_.port, addr);
    if (direct_) addr = *direct_;
    if (st) st = connect_by(addr, deadline, fd_);
    if (st) break;
    last_error = st.message();
    if (deadline.expired()) {
      return fail(common::timeout_error(
          me() + store() + " never answered within " + std::to_string(timeout.count()) +
          " ms (last attempt: " + last_error +
          "); ranks never arrived: 0. Is rank 0 running, and is " + where_ + " its address?"));
    }
    auto nap = std::min<common::Duration>(backoff, deadline.remaining());
    std::this_thread::sleep_for(nap);
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
  }
  common::logf(common::LogLevel::kDebug, rank_,
               "connected to the bootstrap store at %s after %lld ms", where_.c_str(),
               static_cast<long long>(ms_since(start)));
  return common::Status::ok();
}

common::Status TcpRendezvous::say_hello(std::uint32_t aux, common::Deadline answer_by) {
  std::array<std::byte, wire::kHeaderBytes> header;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(answer_by.remaining());
  const auto hello =
      wire::encode(wire::Hello{static_cast<std::uint32_t>(size_), clamp_ms(left), secret_.value});
  wire::encode({wire::Kind::kHello, static_cast<std::uint32_t>(rank_), aux, round_, hello.size()},
               header);
  const std::span<const std::byte> parts[] = {header, hello};
  if (auto st = write_all(fd_.get(), parts, answer_by); !st) {
    return fail(common::peer_failure(me() + "lost the connection to " + store() +
                                     " while saying hello: " + st.message()));
  }
  return common::Status::ok();
}

common::Status TcpRendezvous::join(const sockaddr_in* direct, const HostPort& store_hp,
                                   std::chrono::milliseconds timeout) {
  const common::Deadline deadline = deadline_in(timeout);
  if (direct != nullptr) direct_ = *direct;
  store_hp_ = store_hp;
  if (common::Status st = connect_store(deadline, timeout); !st) return st;
  // Rank 0 wrote its generated secret before its store listened, so now
  // that the store answered, the file of this job is there (on its host).
  if (rank_ != 0 && !secret_.generated.empty()) {
    if (common::Status st = read_generated_secret(rank_, secret_); !st) return fail(st);
  }
  const common::Deadline answer_by(deadline.at() == common::TimePoint::max()
                                       ? common::TimePoint::max()
                                       : deadline.at() + kStoreGrace);
  if (common::Status st = say_hello(0, deadline); !st) return st;
  return expect(wire::Kind::kWelcome, 0, 0, {}, answer_by, "every rank to arrive");
}

void TcpRendezvous::detach() {
  std::lock_guard lock(mu_);
  if (!fd_ || failed_ || detached_) return;
  std::array<std::byte, wire::kHeaderBytes> frame;
  wire::encode({wire::Kind::kDetach, static_cast<std::uint32_t>(rank_), 0, round_, 0}, frame);
  const std::span<const std::byte> parts[] = {frame};
  if (!write_all(fd_.get(), parts, common::Deadline::after(kStoreGrace))) return;
  ::shutdown(fd_.get(), SHUT_WR);
  fd_.reset();
  detached_ = true;
}

common::Status TcpRendezvous::allgather(std::span<const std::byte> mine,
                                        std::chrono::milliseconds timeout,
                                        std::vector<std::byte>& all) {
  std::lock_guard lock(mu_);
  if (failed_) return *failed_;
  if (mine.size() > wire::kMaxContribution) {
    return common::invalid_argument(me() + "bootstrap allgather of " + std::to_string(mine.size()) +
                                    " bytes: the TCP store takes at most " +
                                    std::to_string(wire::kMaxContribution) + " bytes per rank");
  }
  const common::Deadline deadline = deadline_in(timeout);
  const common::Deadline answer_by(deadline.at() == common::TimePoint::max()
                                       ? common::TimePoint::max()
                                       : deadline.at() + kStoreGrace);
  const bool rejoined = detached_;
  if (rejoined) {
    // Back for this round: hello and contribution go out together, the
    // welcome and the result come back in that order.
    common::Status st = connect_store(deadline, timeout);
    if (st) st = say_hello(wire::kRejoin, deadline);
    if (!st) return st;
    detached_ = false;
  }
  std::array<std::byte, wire::kHeaderBytes> header;
  wire::encode({wire::Kind::kContribute, static_cast<std::uint32_t>(rank_), clamp_ms(timeout),
                round_, mine.size()},
               header);
  const std::span<const std::byte> parts[] = {header, mine};
  const std::string what = "allgather #" + std::to_string(round_);
  if (auto st = write_all(fd_.get(), parts, answer_by); !st) {
    return fail(common::peer_failure(me() + "lost the connection to " + store() +
                                     " while sending " + what + ": " + st.message()));
  }
  if (rejoined) {
    if (common::Status st =
            expect(wire::Kind::kWelcome, round_, 0, {}, answer_by, "the store to take it back");
        !st) {
      return st;
    }
  }
  all.assign(mine.size() * static_cast<std::size_t>(size_), std::byte{0});
  if (common::Status st = expect(wire::Kind::kResult, round_, all.size(), all, answer_by,
                                 "the other ranks in " + what);
      !st) {
    return st;
  }
  ++round_;
  return common::Status::ok();
}

}  // namespace

void release_between_exchanges(Rendezvous& rendezvous) {
  if (auto* tcp = dynamic_cast<TcpRendezvous*>(&rendezvous)) tcp->detach();
}

common::Status open_tcp(const TcpBootstrapOptions& options, std::unique_ptr<Rendezvous>& out) {
  Config c;
  if (common::Status st = resolve(options, c); !st) return st;
  if (c.size == 1) {
    out = std::make_unique<SoloRendezvous>();
    return common::Status::ok();
  }

  std::unique_ptr<StoreServer> server;
  sockaddr_in self{};
  if (c.rank == 0) {
    // The store must exist before rank 0 can join it: resolving its own
    // address is a configuration error, not something to wait for.
    if (auto st = resolve_ipv4(c.store.host, c.store.port, self); !st) {
      return common::invalid_argument("rank 0: " + c.store_source + "=\"" + c.store_text +
                                      "\": " + st.message());
    }
    sockaddr_in bind_to = self;
    in_addr literal{};
    bool loopback_name =
        c.store.host == "localhost" || ::inet_pton(AF_INET, c.store.host.c_str(), &literal) == 1;
    if (is_loopback(self) && !loopback_name) bind_to.sin_addr.s_addr = htonl(INADDR_ANY);
    // Refused before anything is sized for the world: the store holds a
    // connection per rank, so a world it cannot serve would only fail later.
    if (const int most = StoreServer::max_ranks(); c.size > most) {
      return common::invalid_argument(
          "rank 0: " + std::string(c.size_source) + " = " + std::to_string(c.size) +
          " is more ranks than the bootstrap store can serve (at most " + std::to_string(most) +
          ": it keeps a connection per rank, and RLIMIT_NOFILE limits this process's "
          "descriptors; raise it with ulimit -n, or check the world size)");
    }
    if (!c.secret.generated.empty()) {
      if (common::Status st = publish_generated_secret(c.secret); !st) return st;
    }
    if (auto st = StoreServer::start(bind_to, c.size, c.timeout, c.secret.value, server); !st) {
      remove_generated_secret(c.secret);
      return {st.code(), "rank 0: cannot serve the bootstrap store at " + c.store_text + " (from " +
                             c.store_source + "): " + st.message()};
    }
  }
  auto rendezvous = std::make_unique<TcpRendezvous>(c, std::move(server));
  if (common::Status st = rendezvous->join(c.rank == 0 ? &self : nullptr, c.store, c.timeout);
      !st) {
    return st;
  }
  out = std::move(rendezvous);
  return common::Status::ok();
}

}  // namespace mccl::bootstrap
