// What MPI_Finalize does with MCCL's state before PMPI_Finalize, and in
// which order.
//
// MPICH 4.0.2 (ch4:ucx) may hang in MPI_Finalize when the ranks enter it
// apart in time. Its UCX netmod first closes every endpoint (a flush that
// needs the peer to answer), and only then waits in a PMI barrier, where it
// no longer makes UCX progress. A rank that is still inside some MPI call
// when a peer starts finalizing answers that peer's flush from there; the
// peer completes, sends its close and waits in the PMI barrier. When the
// late rank then closes its own endpoint to that peer, nobody answers its
// flush, and it spins forever (seen with the preload: three ranks reading
// the PMI socket, one in uct_tcp_iface_progress, each having printed its
// results). The window is the time between a rank's last MPI call and its
// PMPI_Finalize; MCCL's teardown (joining progress threads, closing
// sockets) after a PMPI_Barrier made it tens of milliseconds wide.
//
// So the ranks leave MPI together and never re-enter it before
// PMPI_Finalize. When MPI_COMM_WORLD has an MCCL communicator, two barriers
// over MCCL's own connections end it:
//   1. a barrier during which every rank still makes MPI progress, so that
//      whatever its last MPI call left queued (a send partly written to a
//      socket) reaches the peers still inside theirs; no rank can be in
//      PMPI_Finalize yet, since it would have to pass barrier 2 first;
//   2. a barrier with no MPI progress at all: from here to PMPI_Finalize no
//      rank answers a peer's close, so no close completes before both sides
//      have started theirs.
// Barrier 2 also tells every rank that every other has finished its MCCL
// collectives, so all MCCL communicators may go.
//
// This takes out what libmccl_mpi added to the window, no more: MPICH also
// hangs when no rank makes MPI progress between barrier 2 and its
// PMPI_Finalize (traced once: ranks within 12 ms of one another, one flush
// never answered), and on a busy host plain MPICH hangs about as often as
// with the preload (docs/mpi.md).
// A program's own last MPI call before MPI_Finalize opens the same window.
#include "mpi/comm_cache.h"
#include "mpi/log.h"
#include "mpi/requests.h"
#include "mpi/state.h"

namespace mccl::mpi {

namespace {

void free_self() {
  Global& g = global();
  if (g.self != MPI_COMM_NULL) PMPI_Comm_free(&g.self);
}

}  // namespace

void finalize_mccl() {
  const Global& g = global();
  CommEntry* world = g.active ? find_world() : nullptr;
  const McclState state = world != nullptr ? world->state : McclState::kNone;
  // The state of MPI_COMM_WORLD is the same on every rank (it is decided
  // collectively), so every rank takes the same branch below.
  if (!g.active || state == McclState::kOneHost) {
    // Every communicator of this job lies on one host and MCCL serves none
    // (or MCCL is off): nothing to agree on; MPI_Finalize stays MPI's.
    free_self();
    destroy_all();
    return;
  }
  if (state == McclState::kReady && world->mccl) {
    Communicator& comm = world->mccl->comm;
    try {
      Request first = comm.ibarrier();
      wait_served(*world->mccl, first, "MPI_Finalize's barrier");  // makes MPI progress too
      free_self();
      comm.barrier();  // no MPI call until PMPI_Finalize
    } catch (const std::exception& e) {
      // The communicator is broken, on every rank (the failure travels
      // around the ring): no peer needs this rank's connections any more.
      warnf("MPI_Finalize: MCCL's barrier on MPI_COMM_WORLD failed: %s", e.what());
    }
    free_self();
    destroy_all();
    return;
  }
  // Communicators other than MPI_COMM_WORLD may hold MCCL state. Every rank
  // finishes its collectives before its connections go (comm_cache.cc), and
  // the second barrier makes the ranks leave MPI as close together as an
  // MPI program ending in a collective does.
  PMPI_Barrier(MPI_COMM_WORLD);
  free_self();
  destroy_all();
  PMPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace mccl::mpi
