// The TCP-store bootstrap: how the processes of a multi-process run find
// each other without MPI or PMIx.
//
// Rank 0 serves a small store on host:port (a thread inside rank 0's
// Bootstrap object); every other rank connects to it. Each allgather() is
// one round trip to the store, which answers every rank with the
// concatenation of all contributions. Only rank discovery and the small
// exchanges of communicator creation go through it, never data.
//
//   // every process, with MCCL_BOOTSTRAP_ADDR=node0:29500, MCCL_RANK, MCCL_WORLD_SIZE set
//   auto boot = mccl::make_bootstrap_from_env();
//
//   // or explicitly
//   auto boot = mccl::make_tcp_bootstrap({.address = "node0:29500", .rank = r, .size = n});
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "mccl/bootstrap.h"
#include "mccl/export.h"

namespace mccl {

// A field left at its default is taken from the environment variable named
// beside it (an explicit field wins over the environment).
struct TcpBootstrapOptions {
  // host:port of the store, host a name or an IPv4 address. Rank 0 binds
  // it, so it must name rank 0's host; when the name resolves to a loopback
  // address on rank 0 (Debian maps the host's own name to 127.0.1.1) while
  // it is not "localhost" or a 127.x address, rank 0 listens on every
  // interface instead so that other hosts can reach it.
  // "" = MCCL_BOOTSTRAP_ADDR. Not needed when size is 1.
  std::string address;
  int rank = -1;  // -1 = MCCL_RANK
  int size = -1;  // -1 = MCCL_WORLD_SIZE
  // How long every rank may take to reach the store; 0 =
  // MCCL_BOOTSTRAP_TIMEOUT_MS (default 30 s).
  std::chrono::milliseconds timeout{0};
  // The job secret every rank's hello must carry (at most 256 bytes; the
  // same on every rank): only processes that know it join the store.
  // "" = MCCL_BOOTSTRAP_SECRET (mccl_run sets a random one), else derived
  // from the user id, the store's port and the launcher's job id, which
  // keeps out strangers but not someone who can guess the job id
  // (docs/security.md).
  std::string secret;
};

// Blocks until every rank of the world has reached the store, or the
// timeout passes. Rank 0 starts the store (binding host:port) and then
// joins it like every other rank; the others connect, retrying with backoff
// until the timeout. With size 1 no socket is opened and allgather() returns
// the caller's contribution.
//
// The returned object owns the connection (and, on rank 0, the store's
// thread). Rank 0's object serves the others: destroy it only after every
// rank's last allgather (the other ranks then get kPeerFailure); its
// destructor sends what is still queued, for at most the timeout, then
// joins the store's thread. One thread at a time may call allgather().
//
// Throws mccl::Error:
//   kInvalidArgument  a missing or malformed setting or field (the message
//                     names the variable or field), rank outside [0, size);
//   kTimeout          ranks did not reach the store in time (names them;
//                     rank 0 when the store itself never answered);
//   kPeerFailure      a rank or the store disconnected while others waited;
//   kMismatch         ranks disagree on the world size, or the store refused
//                     this rank's job secret (MCCL_BOOTSTRAP_SECRET must be
//                     the same on every rank);
//   kTransportError   rank 0 cannot bind host:port (e.g. the port is taken),
//                     or something that is not an MCCL store answers there.
//
// allgather() follows mccl/bootstrap.h: it also throws kTimeout naming the
// ranks that did not call it in time, kPeerFailure naming a rank that left,
// and kMismatch when contribution lengths differ. After any error the
// object is unusable: every later call throws the same error, on every rank.
MCCL_API std::unique_ptr<Bootstrap> make_tcp_bootstrap(const TcpBootstrapOptions& options = {});

// The bootstrap this process was launched for, from its environment
// (docs/bootstrap.md has the whole decision):
//  - under a PMIx launcher (mpirun of Open MPI, srun --mpi=pmix) with no
//    MCCL_BOOTSTRAP_ADDR / MCCL_RANK / MCCL_WORLD_SIZE set, and MCCL built
//    with PMIx: the PMIx bootstrap (mccl/pmix_bootstrap.h), nothing to set;
//  - otherwise the TCP store at MCCL_BOOTSTRAP_ADDR, with rank and size from
//    MCCL_RANK / MCCL_WORLD_SIZE when set, else from the launcher:
//    OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE (MPICH's hydra), PMIX_RANK
//    with OMPI_COMM_WORLD_SIZE.
// Blocks and throws like make_tcp_bootstrap(); kInvalidArgument when neither
// the MCCL_* variables nor a launcher say who this process is, or when the
// store's address is missing where it is needed (the error says so).
MCCL_API std::unique_ptr<Bootstrap> make_bootstrap_from_env();

}  // namespace mccl
