// The leaders scheme for a communicator that spans hosts with several
// ranks on some host, as MVAPICH does it: only the lowest rank of each host
// (its leader) is in an MCCL communicator and joins the multicast group;
// inside a host the data moves by MPI (its shared memory where MPI uses it
// there, loopback TCP in the namespace cluster). The flat scheme is every
// rank in the group. MCCL_MPI_HIERARCHY picks one, or (`auto`) both: then
// the leaders serve the calls where they were measured faster (blocking
// allgathers, broadcasts up to MCCL_MPI_LEADERS_BCAST_MAX_BYTES) and the
// flat communicator everything else; docs/mpi.md has the measurements.
//
// Served through the leaders: blocking MPI_Bcast, MPI_Allgather and
// MPI_Allgatherv. Under `leaders` alone the nonblocking calls and the
// reductions of such a communicator go to MPI (decide.cc says so in its
// log line).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mpi/comm_cache.h"
#include "mpi/state.h"

namespace mccl::mpi {

// Hosts are numbered by their lowest rank; every rank computes the same.
struct Hierarchy {
  MPI_Comm user = MPI_COMM_NULL;  // the program's communicator (error handler, label)
  std::string label;
  int rank = 0;
  // This rank's host: host rank i is members[my_host][i] (the leader is 0).
  MPI_Comm host = MPI_COMM_NULL;
  // The leaders (MPI_COMM_NULL elsewhere): the leader of host h has rank h.
  MPI_Comm leaders = MPI_COMM_NULL;
  std::vector<int> host_of;               // comm rank -> host
  std::vector<int> index_in_host;         // comm rank -> its rank in its host
  std::vector<std::vector<int>> members;  // host -> comm ranks, ascending
  int my_host = 0;
  bool leader = false;
  std::shared_ptr<McclComm> mccl;  // over `leaders`; leaders only
};

// What create_mccl() builds for ranks on `hosts` (every rank's host id in
// rank order): kLeaders or kBoth (MCCL_MPI_HIERARCHY leaders or auto) only
// where the ranks span several hosts with more than one rank on some host.
enum class Scheme { kFlat, kLeaders, kBoth };
Scheme scheme_for(const std::vector<std::uint64_t>& hosts);

// Collective over `comm`, as create_mccl(): splits the host and leader
// communicators and creates MCCL on the leaders. Every rank returns the
// same: the scheme, or null when it could not be set up (the host and
// leader communicators are then freed again).
std::shared_ptr<Hierarchy> make_hierarchy(MPI_Comm comm, const CommEntry& e,
                                          const std::vector<std::uint64_t>& hosts);

// Whether the leaders serve a call of `kind` and `bytes` where a
// communicator has both schemes (kBoth). The same on every rank.
bool leaders_serve(Kind kind, std::size_t bytes);

// Whether the scheme's MPI steps (int counts of bytes) can carry a call
// of `bytes` in all.
bool hierarchy_fits(std::size_t bytes);

// MPI_Bcast of `bytes` from `root` (a rank of the program's communicator):
// root to its host's leader, MCCL among the leaders, MPI inside each host.
// Returns an MPI error code (after the error handler, as raise_error).
int hier_bcast(const Hierarchy& h, void* buf, std::size_t bytes, int root);

// MPI_Allgatherv with MCCL's arguments (`send` may be kInPlace; byte
// counts and displacements from `base`, per rank of the program's
// communicator): gather to the leader, MCCL allgatherv of whole hosts'
// blocks among the leaders, MPI broadcast inside each host. The result is
// in rank order whatever the placement of ranks on hosts.
int hier_allgatherv(const Hierarchy& h, const void* send, char* base,
                    const std::vector<std::size_t>& counts, const std::vector<std::size_t>& displs);

// MPI_Comm_free (after its barrier): frees the host and leader
// communicators; the MCCL communicator goes with the last reference.
void release_hierarchy(Hierarchy& h);

}  // namespace mccl::mpi
