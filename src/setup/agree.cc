#include "setup/agree.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <unordered_map>
#include <vector>

#include "common/little_endian.h"
#include "common/log.h"
#include "common/option_names.h"
#include "common/settings.h"
#include "mccl/error.h"
#include "protocol/group_key.h"
#include "protocol/wire.h"
#include "setup/hello.h"
#include "setup/protocol_settings.h"
#include "setup/transport_settings.h"
#include "transport/udp/discovery.h"
#include "transport/udp/udp_transport.h"

namespace mccl::setup {

namespace {

const char* transport_name(TransportKind k) { return common::name_of(k, common::kTransportNames); }

// Agreement::core_share, from the hellos every rank holds alike.
double fewest_core_share(const std::vector<Hello>& hellos) {
  std::unordered_map<std::uint64_t, std::int64_t> sharing;  // ranks per known machine
  for (const Hello& h : hellos) {
    if (h.machine != 0) ++sharing[h.machine];
  }
  double fewest = std::numeric_limits<double>::infinity();
  for (const Hello& h : hellos) {
    if (h.cores == 0) return 0;
    const auto ranks = static_cast<double>(h.machine != 0 ? sharing[h.machine] : 1);
    fewest = std::min(fewest, static_cast<double>(h.cores) / ranks);
  }
  return hellos.empty() ? 0 : fewest;
}

common::Status gather_hellos(int size, const Hello& mine, const transport::OobAllgather& oob,
                             const std::string& who, std::vector<Hello>& out) {
  std::array<std::byte, kHelloBytes> bytes;
  encode_hello(mine, bytes);
  std::vector<std::byte> all;
  if (common::Status st = oob(bytes, all); !st) return st;
  if (all.size() != kHelloBytes * static_cast<std::size_t>(size)) {
    return common::internal_error(who + "the hello exchange returned " +
                                  std::to_string(all.size()) + " bytes");
  }
  out.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const std::span<const std::byte, kHelloBytes> one(all.data() + r * kHelloBytes, kHelloBytes);
    if (!decode_hello(one, out[r])) {
      return common::mismatch_error(who + "rank " + std::to_string(r) +
                                    " sent a hello this version cannot read");
    }
  }
  return common::Status::ok();
}

// Round 2 of the key agreement (protocol/group_key.h), then the key. A rank
// whose computation fails (a share altered in the store) still takes its
// part in the exchange, so no rank waits for it, and ends with a key of
// its own: agree_on_link's confirmation then fails on every rank alike.
common::Status agree_on_key(int rank, int size, const protocol::KeyScalar& secret,
                            const std::vector<Hello>& hellos, const transport::OobAllgather& oob,
                            const std::string& who, Agreement& out) {
  std::vector<protocol::KeyShare> z(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) z[static_cast<std::size_t>(r)] = hellos[r].key_share;
  bool ok = true;
  std::vector<protocol::KeyShare> x;
  if (protocol::group_key_needs_round2(size)) {
    protocol::KeyShare mine{};
    ok = protocol::group_key_round2(secret, rank, z, mine);
    std::vector<std::byte> all;
    if (common::Status st = oob(mine, all); !st) return st;
    if (all.size() != mine.size() * static_cast<std::size_t>(size)) {
      return common::internal_error(who + "the key exchange returned " +
                                    std::to_string(all.size()) + " bytes");
    }
    x.resize(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
      std::copy_n(all.data() + r * mine.size(), mine.size(),
                  x[static_cast<std::size_t>(r)].begin());
    }
  }
  ok = ok && protocol::group_key_finish(secret, rank, z, x, out.key);
  if (!ok) {
    common::logf(common::LogLevel::kWarn, rank,
                 "%sa key share in the bootstrap exchange is not valid: this rank's communicator "
                 "key will not match the others'",
                 who.c_str());
    out.key = protocol::random_auth_key();
  }
  return common::Status::ok();
}

// This rank's hello. Round 1 of the key agreement rides on it, drawn
// whether or not authentication turns out on: that is known only once all
// hellos are in.
common::Status hello_of(int rank, const Proposal& p, Hello& mine, protocol::KeyScalar& secret) {
  // Its message names the rank already.
  const std::optional<bool> choice = p.authenticate ? p.authenticate : authenticate_from_settings();
  if (common::Status s = protocol::auth_mode(rank, choice, mine.auth_mode); !s.is_ok()) {
    return s;
  }
  std::random_device rd;
  while (mine.tag == 0) mine.tag = rd();
  mine.salt = (std::uint64_t{rd()} << 32) | rd();
  mine.transport = p.transport;
  mine.checksum = common::settings::kProtoChecksum.get_bool();
  mine.ib_usable = p.ib_usable;
  mine.auth_mac = protocol::mac_kind();
  mine.offloaded = p.offloaded;
  mine.machine = p.machine;
  mine.epoch = p.epoch;
  mine.cores = p.cores;
  protocol::group_key_begin(secret, mine.key_share);
  return common::Status::ok();
}

// What every rank must have chosen alike: the engine, the transport, checksums.
common::Status check_choices_alike(const std::vector<Hello>& hellos, const Hello& mine,
                                   const std::string& who) {
  for (std::size_t r = 0; r < hellos.size(); ++r) {
    const std::string them = who + "rank " + std::to_string(r);
    if (hellos[r].offloaded != mine.offloaded) {
      return common::mismatch_error(them + (hellos[r].offloaded ? " runs" : " does not run") +
                                    " MCCL_PROGRESS=offload and this rank " +
                                    (mine.offloaded ? "does" : "does not") +
                                    ": every rank must use the offload engine, or none");
    }
    if (hellos[r].transport != mine.transport) {
      return common::mismatch_error(
          them + " chose transport '" + transport_name(hellos[r].transport) + "' and this rank '" +
          transport_name(mine.transport) + "': every rank must use the same (MCCL_TRANSPORT)");
    }
    if (hellos[r].checksum != mine.checksum) {
      return common::mismatch_error(
          them + " disagrees on MCCL_PROTO_CHECKSUM; every rank must set it the same");
    }
  }
  return common::Status::ok();
}

// Authentication, now that the transport is known ("auto" is off on
// InfiniBand): on for every rank or none, with one MAC.
common::Status agree_on_auth(const std::vector<Hello>& hellos, const Hello& mine,
                             const std::string& who, Agreement& out) {
  auto auth_of = [&](const Hello& h) {
    return protocol::auth_resolved(h.auth_mode, h.auth_mac != protocol::MacKind::kNone,
                                   out.transport != TransportKind::kIb);
  };
  out.auth = auth_of(mine);
  out.auth_auto = out.auth && std::all_of(hellos.begin(), hellos.end(), [](const Hello& h) {
                    return h.auth_mode == protocol::AuthMode::kAuto;
                  });
  for (std::size_t r = 0; r < hellos.size(); ++r) {
    const int them = static_cast<int>(r);
    if (auth_of(hellos[r]) != out.auth) {
      return common::mismatch_error(who +
                                    protocol::auth_mismatch(them, auth_of(hellos[r]), out.auth));
    }
    if (out.auth && hellos[r].auth_mac != mine.auth_mac) {
      return common::mismatch_error(who + "rank " + std::to_string(r) + " tags datagrams with " +
                                    protocol::to_string(hellos[r].auth_mac) +
                                    " and this rank with " + protocol::to_string(mine.auth_mac) +
                                    ": build every rank from one MCCL release, or set "
                                    "MCCL_PROTO_AUTH=off on every rank");
    }
  }
  return common::Status::ok();
}

// This rank's place among the ranks of its machine.
void place_on_machine(int rank, const std::vector<Hello>& hellos, const Hello& mine,
                      Agreement& out) {
  out.local_index = 0;
  out.local_ranks = 1;
  for (int r = 0; r < static_cast<int>(hellos.size()); ++r) {
    if (r == rank || hellos[r].machine == 0 || hellos[r].machine != mine.machine) continue;
    ++out.local_ranks;
    if (r < rank) ++out.local_index;
  }
}

}  // namespace

common::Status agree_on_hello(int rank, int size, const Proposal& p,
                              const transport::OobAllgather& oob, const std::string& who,
                              Agreement& out) {
  Hello mine;
  protocol::KeyScalar secret;
  if (common::Status s = hello_of(rank, p, mine, secret); !s.is_ok()) return s;
  std::vector<Hello> hellos;
  if (common::Status s = gather_hellos(size, mine, oob, who, hellos); !s.is_ok()) return s;
  if (common::Status s = check_choices_alike(hellos, mine, who); !s.is_ok()) return s;
  out.tag = hellos[0].tag;
  out.salt = hellos[0].salt;
  // A grow's joiners know no epoch: the members' decides.
  for (const Hello& h : hellos) out.epoch = std::max(out.epoch, h.epoch);
  out.transport = mine.transport;
  if (out.transport == TransportKind::kAuto) {
    const bool everyone =
        std::all_of(hellos.begin(), hellos.end(), [](const Hello& h) { return h.ib_usable; });
    out.transport = everyone ? TransportKind::kIb : TransportKind::kUdp;
  }
  if (common::Status s = agree_on_auth(hellos, mine, who, out); !s.is_ok()) return s;
  // Every rank has come this far alike (the checks above fail on all ranks
  // or none), so all take part in the key's round, or none.
  if (out.auth) {
    if (common::Status st = agree_on_key(rank, size, secret, hellos, oob, who, out); !st) return st;
  }
  if (mine.auth_mode == protocol::AuthMode::kAuto && !out.auth_auto) {
    common::logf(common::LogLevel::kInfo, rank, "multicast datagrams not authenticated (%s)",
                 out.auth ? "a rank set MCCL_PROTO_AUTH=on" : "MCCL_PROTO_AUTH=auto");
  }
  place_on_machine(rank, hellos, mine, out);
  out.core_share = fewest_core_share(hellos);
  // Rounded down; cores and ranks are small integers, so the quotient is
  // exact where it is a whole number.
  out.cores_per_rank = static_cast<std::int32_t>(
      std::min(out.core_share, static_cast<double>(std::numeric_limits<std::int32_t>::max())));
  return common::Status::ok();
}

common::Status choose_udp_interface(int rank, const transport::OobAllgather& oob,
                                    std::string& iface, std::string& because,
                                    const std::optional<std::string>& given) {
  transport::udp::IfaceChoice choice;
  const std::uint32_t hint = transport::udp::launcher_hint(launcher_addresses_from_env());
  const common::Status found = transport::udp::discover_interface(oob, rank, hint, choice);
  std::string configured = given ? *given : common::settings::kUdpIface.get();
  if (configured.empty()) configured = "auto";
  if (configured != "auto") {
    iface = configured;
    because = "MCCL_UDP_IFACE=" + configured;
    return common::Status::ok();
  }
  if (!found.is_ok()) return found;
  iface = choice.spec;
  because = "MCCL_UDP_IFACE=auto: " + choice.reason;
  return common::Status::ok();
}

LinkFacts link_facts(const transport::DatagramTransport& dgram) {
  LinkFacts f;
  f.mtu = static_cast<std::uint32_t>(dgram.caps().mtu);
  if (const auto* udp = transport::udp::as_udp(&dgram); udp != nullptr) {
    const double rate = udp->info().rate_mbit;  // 0 unpaced: no speed known
    f.rate_mbit = rate > 0 ? static_cast<std::uint32_t>(std::min(rate, 4e9)) : 0;
    f.loopback = udp->info().iface_loopback;
  }
  return f;
}

bool auto_auth_at_rate(std::uint32_t fastest_mbit, std::uint32_t max_mbit) {
  return max_mbit == 0 || fastest_mbit <= max_mbit;
}

common::Status agree_on_link(int rank, int size, LinkFacts mine, const transport::OobAllgather& oob,
                             const std::string& who, Agreement& agreed, std::uint32_t& mtu) {
  // mtu, rate, loopback, and (when authenticating) a digest of the agreed
  // key, to find out now, not as dropped datagrams, that a rank's key differs.
  constexpr std::size_t kConfirmAt = 12;
  std::array<std::byte, kConfirmAt + protocol::kKeyConfirmBytes> bytes{};
  common::put_le(bytes.data(), mine.mtu);
  common::put_le(bytes.data() + 4, mine.rate_mbit);
  common::put_le(bytes.data() + 8, static_cast<std::uint32_t>(mine.loopback));
  if (agreed.auth) {
    const auto confirm = protocol::key_confirmation(agreed.key);
    std::copy(confirm.begin(), confirm.end(), bytes.data() + kConfirmAt);
  }
  std::vector<std::byte> all;
  if (common::Status st = oob(bytes, all); !st) return st;
  if (all.size() != bytes.size() * static_cast<std::size_t>(size)) {
    return common::internal_error(who + "the link exchange returned " + std::to_string(all.size()) +
                                  " bytes");
  }
  if (agreed.auth) {
    std::string differ;
    for (int r = 1; r < size; ++r) {
      if (!std::equal(all.begin() + kConfirmAt, all.begin() + bytes.size(),
                      all.begin() + r * bytes.size() + kConfirmAt)) {
        differ += (differ.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    if (!differ.empty()) {
      return common::mismatch_error(
          who + "the communicator keys of rank(s) " + differ +
          " differ from rank 0's: a key share in the bootstrap exchange was altered or "
          "malformed (someone who can write to the bootstrap's store?)");
    }
  }
  mtu = mine.mtu;
  agreed.slowest_link_mbit = 0;
  agreed.one_host = true;
  std::uint32_t fastest = 0;
  int fastest_rank = 0;
  for (int r = 0; r < size; ++r) {
    const std::byte* at = all.data() + r * bytes.size();
    mtu = std::min(mtu, common::get_le<std::uint32_t>(at));
    const auto rate = common::get_le<std::uint32_t>(at + 4);
    agreed.one_host = agreed.one_host && common::get_le<std::uint32_t>(at + 8) != 0;
    if (rate > 0 && (agreed.slowest_link_mbit == 0 || rate < agreed.slowest_link_mbit)) {
      agreed.slowest_link_mbit = rate;
    }
    if (rate > fastest) {
      fastest = rate;
      fastest_rank = r;
    }
  }
  if (agreed.auth_auto) {
    const auto max_mbit =
        static_cast<std::uint32_t>(common::settings::kProtoAuthAutoMaxMbit.get_int());
    agreed.auth = auto_auth_at_rate(fastest, max_mbit);
    if (agreed.auth && max_mbit == 0) {
      common::logf(common::LogLevel::kInfo, rank,
                   "multicast datagrams authenticated (AES-256-GMAC; MCCL_PROTO_AUTH=auto)");
    } else if (agreed.auth) {
      common::logf(common::LogLevel::kInfo, rank,
                   "multicast datagrams authenticated (AES-256-GMAC; MCCL_PROTO_AUTH=auto, fastest "
                   "known link %u Mbit/s <= MCCL_PROTO_AUTH_AUTO_MAX_MBIT %u)",
                   fastest, max_mbit);
    } else {
      common::logf(common::LogLevel::kInfo, rank,
                   "multicast datagrams not authenticated (MCCL_PROTO_AUTH=auto: rank %d's link "
                   "runs at %u Mbit/s > MCCL_PROTO_AUTH_AUTO_MAX_MBIT %u; set "
                   "MCCL_PROTO_AUTH=on to authenticate anyway)",
                   fastest_rank, fastest, max_mbit);
    }
  }
  if (mtu <= protocol::data_header_bytes(agreed.auth) + 64) {
    return common::unavailable_error(who + "the network's datagrams are too small (" +
                                     std::to_string(mtu) + " bytes)");
  }
  return common::Status::ok();
}

}  // namespace mccl::setup
