// The hello every rank contributes when a communicator is created, in the
// application (src/api) and in the offload daemon (src/offload/daemon)
// alike: what the ranks must agree on before any transport exists.
//
// Encoding (kHelloBytes, little-endian, no padding), so ranks built for
// different architectures (an x86-64 host, a SmartNIC's Arm cores) read
// the same bytes:
//
//   offset  size  field
//        0     4  tag         random, nonzero; rank 0's names the communicator
//        4     4  transport   mccl::TransportKind as chosen (kAuto unresolved)
//        8     8  salt        random; rank 0's keeps two jobs' groups apart
//       16     1  checksum    MCCL_PROTO_CHECKSUM (0/1)
//       17     1  ib_usable   this rank has an active InfiniBand port (0/1)
//       18     1  auth_mode   protocol::AuthMode
//       19     1  auth_mac    protocol::MacKind this build tags datagrams with
//       20     1  offloaded   the protocol runs in mccl_offloadd (0/1)
//       21     3  zero
//       24     8  machine     topo::machine_id(); 0 unknown
//       32    32  key_share   round 1 of the key agreement (protocol/group_key.h):
//                             r·G on ristretto255; zero when not authenticating
//       64     4  epoch       the membership change this rank proposes the
//                             communicator is (docs/elastic.md); the largest wins
//       68     4  cores       the cores this rank's process may use; 0 unknown
//                             (a build from before the field)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mccl/options.h"
#include "protocol/auth.h"
#include "protocol/group_key.h"

namespace mccl::setup {

struct Hello {
  std::uint32_t tag = 0;
  TransportKind transport = TransportKind::kAuto;
  std::uint64_t salt = 0;
  bool checksum = false;   // a rank that checks CRCs would drop a non-checking root's data
  bool ib_usable = false;  // auto picks InfiniBand only when every rank has it
  protocol::AuthMode auth_mode = protocol::AuthMode::kAuto;  // a MAC-less root's data is dropped
  protocol::MacKind auth_mac = protocol::MacKind::kNone;     // kNone: "auto" is off
  bool offloaded = false;          // daemon and in-process engines run different exchanges
  std::uint64_t machine = 0;       // ranks on one machine spread their progress threads
  protocol::KeyShare key_share{};  // never the key itself: the store may be read by others
  std::uint32_t epoch = 0;         // a joiner knows none (0); the members propose theirs
  std::uint32_t cores = 0;         // picks the crossover table (coll/tuning.h)
};

inline constexpr std::size_t kHelloBytes = 32 + protocol::kKeyShareBytes + 8;

void encode_hello(const Hello& h, std::span<std::byte, kHelloBytes> out);
// False when a field is out of its range (an unknown transport or mode).
bool decode_hello(std::span<const std::byte, kHelloBytes> in, Hello& out);

}  // namespace mccl::setup
