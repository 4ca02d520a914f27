// Per-communicator state, cached on the MPI communicator as an attribute.
//
// The entry itself is local (created on the first intercepted call, no
// communication); the MCCL communicator inside it is created collectively
// by create_mccl() on the first eligible blocking call, or in MPI_Init for
// MPI_COMM_WORLD. The attribute's delete callback (run by MPI_Comm_free, or
// by MPI_Finalize for what is still attached) frees the entry.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "mccl/bootstrap.h"
#include "mccl/communicator.h"

namespace mccl::mpi {

// One mccl::Communicator and the bootstrap it was made with. Shared by the
// entry and by every nonblocking request in flight on it, so that an
// MPI_Comm_free with requests pending destroys it only once they are done.
// Adds its mccl::Stats to the process counters when destroyed.
//
// `mu` serialises every call on `comm` and on its requests: MCCL wants one
// thread at a time on a communicator, and under MPI_THREAD_MULTIPLE one
// thread may start a collective on it while another completes an earlier
// one (state.h gives the lock order).
struct McclComm {
  McclComm(std::unique_ptr<Bootstrap> b, std::string l, const CommOptions& options);
  ~McclComm();
  McclComm(const McclComm&) = delete;
  McclComm& operator=(const McclComm&) = delete;

  std::mutex mu;
  std::unique_ptr<Bootstrap> boot;
  Communicator comm;
  std::string label;
  MPI_Comm mpi_comm = MPI_COMM_NULL;
  std::atomic<bool> mpi_comm_alive{true};  // cleared when the MPI communicator is freed
};

struct Hierarchy;  // hierarchy.h

// kOneHost: every rank on one host (common::network_host_id), left to MPI
// unless MCCL_MPI_SINGLE_HOST=1. kLeaders: served by the leaders scheme
// (MCCL_MPI_HIERARCHY=leaders; `hier` holds it, `mccl` stays null).
// kReady: `mccl` serves; under MCCL_MPI_HIERARCHY=auto `hier` may be there
// too, for the calls the leaders serve faster (hierarchy.h).
enum class McclState { kNone, kReady, kFailed, kOneHost, kLeaders };

struct CommEntry {
  int id = 0;
  std::string label;  // "MPI_COMM_WORLD", the user's name, or "comm#<id>"
  int rank = 0;
  int size = 1;
  bool inter = false;
  McclState state = McclState::kNone;
  std::shared_ptr<McclComm> mccl;
  std::shared_ptr<Hierarchy> hier;
  // (kind, reason) pairs already logged under MCCL_MPI_DEBUG.
  std::set<std::pair<int, const char*>> logged;
};

// Creates the attribute key (MPI_Init). Returns an MPI error code.
int create_keyval();
// The entry of `comm`, made on first use. nullptr for MPI_COMM_NULL or when
// an MPI query fails (the caller then leaves the call to PMPI_).
CommEntry* entry_for(MPI_Comm comm);
// Collective over `comm`, on every rank at the same call: creates the MCCL
// communicator. All ranks return the same value; on false the entry is
// kFailed on every rank and every later call on `comm` goes to PMPI_.
bool create_mccl(MPI_Comm comm, CommEntry& e);
// The MCCL communicator of `comm` (all of its ranks) labelled `label`,
// created so that every rank gets the same outcome: collective over `comm`;
// null on every rank when it failed on any (rank 0 says why, once).
std::shared_ptr<McclComm> create_agreed(MPI_Comm comm, int rank, int size,
                                        const std::string& label);
// MPI_Comm_free, before PMPI_Comm_free (collective, like it): completes the
// MCCL requests on `comm`, holds a barrier, and destroys its MCCL state.
void release_before_free(MPI_Comm comm);
// Destroys the MCCL communicators of freed MPI communicators that have been
// idle long enough (comm_cache.cc says why they wait). Called on every
// intercepted collective; local, never blocks.
void reap_retired();
// MPI_Finalize, after every request has completed and every rank has said
// so (finalize.cc): destroys every MCCL communicator still alive (their
// counters land in the totals) and frees the key. Entries stay until MPI
// deletes the attributes.
void destroy_all();
// MPI_COMM_WORLD's entry when it exists; nullptr otherwise. Local.
CommEntry* find_world();
// MPI_Finalize, after drain_all(): agrees with every rank that all MCCL
// collectives are over, then destroy_all(); collective over MPI_COMM_WORLD
// (finalize.cc says in which order, and why).
void finalize_mccl();

}  // namespace mccl::mpi
