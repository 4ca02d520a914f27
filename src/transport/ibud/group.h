// What every rank of a communicator derives from its tag and the job's
// salt, with no message: the IPv4 group rdma_cm maps to an MGID, and the
// Q_Key. Also the text forms of GIDs and the IB MTU enumeration.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "transport/ibud/verbs.h"

namespace mccl::transport::ibud {

// An IPv4 group in 239.0.0.0/8 (a different one than the UDP transport
// picks for the same tag). rdma_cm turns it into the MGID
// ff12:4001:<pkey>::<low 28 bits> (IPoIB's mapping, RDMA CM signature).
std::uint32_t derive_group_ipv4(std::uint32_t comm_tag, std::uint64_t job_salt);

// The communicator's Q_Key. A receiving QP drops every datagram whose Q_Key
// is not its own, so two communicators sharing one MGID (MCCL_IB_MGID)
// never see each other's traffic. The high bit stays clear: Q_Keys with it
// set are "controlled" and may only be sent by privileged QPs.
std::uint32_t derive_qkey(std::uint32_t comm_tag, std::uint64_t job_salt);

// "ff12:401b:ffff::1" (an IPv6 text of 16 bytes) -> GID. Only multicast
// GIDs (first byte 0xff) are accepted.
common::Status parse_mgid(const std::string& text, Gid& out);
std::string gid_text(const Gid& gid);

// IBV_MTU_4096 -> 4096; 0 for an unknown value.
std::size_t mtu_bytes(ibv_mtu mtu);
// The largest IB MTU (256, 512, ..., 4096) not above `bytes`; 0 below 256.
std::size_t ib_mtu_at_most(std::size_t bytes);

}  // namespace mccl::transport::ibud
