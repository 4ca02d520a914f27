#include "setup/checks.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace mccl::setup {

namespace {

using namespace std::chrono_literals;

// One rank's outcome as exchanged: a code (0: ok) and the start of its
// message; fixed size, as the bootstrap wants.
struct Outcome {
  std::int32_t code = 0;
  std::array<char, 500> text{};
};

std::string who(int rank) { return "rank " + std::to_string(rank); }

// The probe datagram: the protocol's datagrams start with another magic,
// so a late probe is dropped there as foreign.
struct Probe {
  std::uint64_t magic = kMagic;
  std::uint32_t tag = 0;
  std::uint32_t rank = 0;
  static constexpr std::uint64_t kMagic = 0x31425250'4c43434dULL;  // "MCCLPRB1"
};

// One rank's part of a probe round's exchange.
struct HeardRecord {
  static constexpr std::uint32_t kNamed = 8;
  std::uint32_t unheard = 0;        // ranks not heard from
  std::uint32_t expired = 0;        // this rank's deadline passed
  std::uint32_t deaf[kNamed] = {};  // the first of them

  std::string describe(std::size_t size) const {
    std::string out = "rank(s) ";
    for (std::uint32_t i = 0; i < std::min(unheard, kNamed); ++i) {
      if (deaf[i] >= size) continue;  // a damaged record names nobody
      out += (i == 0 ? "" : ",") + std::to_string(deaf[i]);
    }
    if (unheard > kNamed) out += " and " + std::to_string(unheard - kNamed) + " more";
    return out;
  }
};

// One probe round's exchange: this rank's record, everyone's back.
common::Status exchange_heard(const std::vector<std::uint8_t>& heard, bool expired,
                              const transport::OobAllgather& oob, std::vector<HeardRecord>& all) {
  HeardRecord mine;
  mine.expired = expired ? 1 : 0;
  for (std::size_t q = 0; q < heard.size(); ++q) {
    if (heard[q] != 0) continue;
    if (mine.unheard < HeardRecord::kNamed) mine.deaf[mine.unheard] = static_cast<std::uint32_t>(q);
    ++mine.unheard;
  }
  std::vector<std::byte> bytes;
  if (common::Status st = oob(std::as_bytes(std::span(&mine, 1)), bytes); !st) return st;
  if (bytes.size() != sizeof(HeardRecord) * heard.size()) {
    return common::internal_error(": the multicast probe's exchange returned " +
                                  std::to_string(bytes.size()) + " bytes");
  }
  all.resize(heard.size());
  std::memcpy(all.data(), bytes.data(), bytes.size());
  return common::Status::ok();
}

struct ProbeHandler : transport::DatagramHandler {
  std::uint32_t tag = 0;
  std::vector<std::uint8_t>* heard = nullptr;
  void on_datagrams(transport::DatagramBatch batch) override {
    for (const auto& d : batch) {
      Probe p;
      if (d.size() != sizeof p) continue;
      std::memcpy(&p, d.data(), sizeof p);
      if (p.magic == Probe::kMagic && p.tag == tag && p.rank < heard->size()) (*heard)[p.rank] = 1;
    }
  }
};

}  // namespace

common::Status agree_on_outcome(int rank, int size, const common::Status& mine,
                                const std::string& what, const transport::OobAllgather& oob) {
  // Two rounds, the second only when a step failed somewhere: the codes
  // alone (4 bytes a rank) decide, so a creation that succeeds moves no
  // rank's message through the bootstrap (at 1,024 ranks, 500 bytes each
  // would be half a megabyte to every rank, per step).
  std::int32_t my_code = 0;
  if (!mine.is_ok()) {
    my_code = static_cast<std::int32_t>(mine.code());
    if (my_code == 0) my_code = static_cast<std::int32_t>(ErrorCode::kInternal);
  }
  std::vector<std::byte> codes;
  if (common::Status st = oob(std::as_bytes(std::span(&my_code, 1)), codes); !st) return st;
  std::vector<std::int32_t> code_of(static_cast<std::size_t>(size), 0);
  std::memcpy(code_of.data(), codes.data(),
              std::min(codes.size(), code_of.size() * sizeof(std::int32_t)));
  if (std::all_of(code_of.begin(), code_of.end(), [](std::int32_t c) { return c == 0; })) {
    return common::Status::ok();
  }
  Outcome out;
  out.code = my_code;
  if (my_code != 0) std::strncpy(out.text.data(), mine.message().c_str(), out.text.size() - 1);
  std::vector<std::byte> bytes;
  if (common::Status st = oob(std::as_bytes(std::span(&out, 1)), bytes); !st) return st;
  std::vector<Outcome> all(static_cast<std::size_t>(size));
  std::memcpy(all.data(), bytes.data(), std::min(bytes.size(), all.size() * sizeof(Outcome)));
  std::string ranks, reasons, last;
  std::int32_t code = 0;
  for (int r = 0; r < size; ++r) {
    const Outcome& o = all[static_cast<std::size_t>(r)];
    if (o.code == 0) continue;
    if (code == 0) code = o.code;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    const std::string text(o.text.data(), strnlen(o.text.data(), o.text.size()));
    // Ranks that fail alike (a choice every rank computed) are told once.
    if (text != last) reasons += "; " + who(r) + ": " + text;
    last = text;
  }
  return {static_cast<ErrorCode>(code),
          who(rank) + ": " + what + " could not be set up on rank(s) " + ranks + reasons};
}

common::Status probe_multicast(int rank, int size, transport::DatagramTransport& dgram,
                               std::uint32_t tag, const std::string& where,
                               std::chrono::milliseconds setup_timeout,
                               const transport::OobAllgather& oob) {
  const auto n = static_cast<std::size_t>(size);
  if (n == 1) return common::Status::ok();
  std::vector<std::uint8_t> heard(n, 0);
  heard[static_cast<std::size_t>(rank)] = 1;
  ProbeHandler handler;
  handler.tag = tag;
  handler.heard = &heard;
  const Probe probe{Probe::kMagic, tag, static_cast<std::uint32_t>(rank)};
  const transport::OutDatagram out{std::as_bytes(std::span(&probe, 1)), {}};
  const common::Deadline deadline = common::Deadline::after(setup_timeout);
  // Rounds: everyone sends at least once per round, so a rank that joined
  // the group late (a switch still learning its port) hears the others in
  // a later one; the round count is the same everywhere, since every rank
  // decides from the same exchanged table.
  // Within a round a rank sends again at growing intervals (10, 20, 40 ms
  // ...) while it has not heard everyone: each probe reaches all N ranks,
  // so a fixed 10 ms would cost the host N² datagrams per 10 ms.
  for (;;) {
    const common::Deadline round = common::Deadline::after(200ms);
    common::TimePoint next_send{};
    common::Duration gap = 10ms;
    for (;;) {
      const common::TimePoint now = common::now();
      const bool all_heard = std::all_of(heard.begin(), heard.end(), [](auto h) { return h != 0; });
      if (now >= next_send && !(all_heard && next_send != common::TimePoint{})) {
        std::size_t accepted = 0;
        (void)dgram.send(std::span(&out, 1), accepted);  // busy or lost: sent again
        next_send = now + gap;
        gap = std::min<common::Duration>(gap * 2, 80ms);
      }
      std::size_t delivered = 0;
      if (auto st = dgram.poll(handler, 64, delivered); !st.is_ok()) {
        return {st.code(), who(rank) + ": multicast probe on " + where + ": " + st.message()};
      }
      if (all_heard || round.expired(now) || deadline.expired(now)) break;
      if (delivered == 0) std::this_thread::sleep_for(1ms);
    }
    // How many this rank heard, the first few it did not, and whether its
    // deadline passed: a record of fixed size whatever N is, so the
    // exchange costs O(N) per rank, not a row of N per rank. Every rank
    // decides from the same records, so all stop in the same round.
    std::vector<HeardRecord> all;
    if (auto st = exchange_heard(heard, deadline.expired(common::now()), oob, all); !st.is_ok()) {
      return {st.code(), who(rank) + st.message()};
    }
    std::string missing;
    bool everyone = true, expired = false;
    for (std::size_t r = 0; r < n; ++r) {
      expired = expired || all[r].expired != 0;
      if (all[r].unheard == 0) continue;
      everyone = false;
      missing += "; rank " + std::to_string(r) + " heard nothing from " + all[r].describe(n);
    }
    if (everyone) break;
    if (expired) {
      return common::unavailable_error(
          who(rank) + ": the multicast group " + where + " does not reach every rank after " +
          std::to_string(setup_timeout.count()) +
          " ms (the setup timeout: CommOptions::setup_timeout, else "
          "MCCL_TRANSPORT_SETUP_TIMEOUT_MS)" +
          missing +
          ". Check that the interface is the one the hosts share (MCCL_UDP_IFACE), "
          "that the switch forwards multicast (IGMP snooping needs a querier) and "
          "that no firewall drops 239.0.0.0/8");
    }
  }
  // What is still queued (other ranks' last probes) is read here, not by
  // the protocol.
  std::size_t delivered = 1;
  while (delivered > 0) {
    if (!dgram.poll(handler, 64, delivered).is_ok()) break;
  }
  return common::Status::ok();
}

common::Status accept_members_only(int rank, transport::udp::UdpTransport& udp,
                                   const transport::OobAllgather& oob) {
  // Fixed width, as the exchange wants: a dotted quad and its NUL.
  std::array<char, 16> mine{};
  const std::string& addr = udp.info().iface_addr;
  if (addr.size() >= mine.size()) {
    return common::internal_error(who(rank) + ": interface address '" + addr + "' is not IPv4");
  }
  std::memcpy(mine.data(), addr.data(), addr.size());
  std::vector<std::byte> all;
  if (common::Status st = oob(std::as_bytes(std::span(mine)), all); !st) return st;
  if (all.size() % mine.size() != 0) {
    return common::internal_error(who(rank) + ": the address exchange returned " +
                                  std::to_string(all.size()) + " bytes");
  }
  std::vector<std::string> members;
  for (std::size_t at = 0; at < all.size(); at += mine.size()) {
    const char* p = reinterpret_cast<const char*>(all.data() + at);
    members.emplace_back(p, strnlen(p, mine.size()));
  }
  common::Status st = udp.accept_only_from(members);
  if (!st.is_ok()) return {st.code(), who(rank) + ": " + st.message()};
  return st;
}

}  // namespace mccl::setup
