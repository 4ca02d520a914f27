// MCCL_UDP_IFACE=auto: the ranks of a communicator agree on the network
// interface they all use, as NCCL, Gloo and MPI pick theirs.
//
// Each rank proposes its IPv4 interfaces that are up, not loopback and
// multicast-capable, with a hint: the local address this host uses towards
// the launcher (MCCL_BOOTSTRAP_ADDR, Open MPI's PMIx server, MPICH's
// PMI_PORT), the network the job was evidently started over. Then:
//  - every rank on one host (common::network_host_id equal): loopback;
//  - else the IPv4 subnet every rank has an address in; among several,
//    the one holding the most ranks' hints, then the fastest (slowest
//    rank's link), then rank 0's order;
//  - else an error listing each rank's candidates.
// Every rank computes the same choice from the same reports, so a failure
// is everyone's failure.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/oob.h"
#include "transport/udp/interface.h"

namespace mccl::transport::udp {

// One rank's proposal, as exchanged (fixed size: every rank sends the same
// number of bytes). Host byte order; the exchange never leaves the job's
// own bootstrap, which joins ranks of one build.
struct IfaceReport {
  static constexpr std::size_t kMaxCandidates = 8;
  struct Candidate {
    std::uint32_t addr = 0;
    std::uint32_t netmask = 0;
    std::uint32_t speed_mbit = 0;  // 0: unknown
    std::array<char, 16> name{};   // NUL-terminated (IFNAMSIZ)
  };
  std::uint64_t host = 0;  // common::network_host_id()
  std::uint32_t hint = 0;  // local address towards the launcher; 0: none
  std::uint32_t count = 0;
  std::array<Candidate, kMaxCandidates> candidates{};
};

// What a rank uses, and why (for logs and mccl_info).
struct IfaceChoice {
  std::string spec;    // for resolve_interface: "lo" or this rank's address
  std::string reason;  // "all 4 ranks on one host", "subnet 10.0.0.0/24 ..."
};

// This rank's report: its candidates (from `interfaces`, the output of
// list_interfaces) and the hint.
IfaceReport make_report(const std::vector<Interface>& interfaces, std::uint64_t host,
                        std::uint32_t hint);

// The choice for `rank` from every rank's report (pure; the unit tests
// drive it). kUnavailable, listing each rank's candidates and the fix,
// when no subnet is shared.
common::Status choose_interface(const std::vector<IfaceReport>& all, int rank, IfaceChoice& out);

// The local IPv4 address this host uses towards the launcher: the first of
// `launcher_addresses` ("host:port", "tcp4://host:port" or a PMIx server
// URI, most specific first; the caller reads them from the launcher's
// environment) that resolves and is not this host's loopback; 0 when none
// does. Sends nothing (a UDP connect() only picks the route).
std::uint32_t launcher_hint(const std::vector<std::string>& launcher_addresses);

// Collective and blocking: lists this host's interfaces, exchanges the
// reports (with `hint`, launcher_hint's answer) through `oob` and chooses.
// Every rank must call it (also those that name an interface themselves:
// the exchange must match). Whatever `oob` throws passes through: the
// ranks are then out of step.
common::Status discover_interface(const transport::OobAllgather& oob, int rank, std::uint32_t hint,
                                  IfaceChoice& out);

// "eth0 10.0.0.1/24, ib0 192.168.0.1/16" or "none": a rank's candidates.
std::string describe_candidates(const IfaceReport& report);

}  // namespace mccl::transport::udp
