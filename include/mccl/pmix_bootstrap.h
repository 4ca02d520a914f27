// The PMIx bootstrap: rank discovery for processes started by a PMIx
// launcher — Open MPI's mpirun (4.1 runs a PMIx server), or Slurm's
// `srun --mpi=pmix` — with or without MPI in the program.
//
//   // every process, started by `mpirun -n 4 ./app`
//   auto boot = mccl::make_pmix_bootstrap();
//   mccl::Communicator comm(*boot);
//
// make_bootstrap_from_env() (mccl/tcp_bootstrap.h) picks this bootstrap by
// itself when it sees a PMIx launcher and MCCL_BOOTSTRAP_ADDR is not set.
//
// The rank is this process's PMIx rank and the size its job's size
// (PMIX_JOB_SIZE). Every allgather() is one PMIx exchange through the
// launcher: each rank puts its contribution under a fresh key, a fence over
// every process of the job collects them, and each rank reads all of them.
// No socket of MCCL's own is opened. No PMIx type appears here: the library
// is linked into MCCL only when it was found at build time (Debian:
// libpmix-dev).
#pragma once

#include <chrono>
#include <memory>

#include "mccl/bootstrap.h"
#include "mccl/export.h"

namespace mccl {

// Connects to the PMIx server of the launcher that started this process
// (PMIx_Init) and reads the job's size. Does not wait for the other ranks:
// the first allgather() does. `timeout` bounds that start-up and is the
// deadline of every allgather() called with a zero timeout; 0 =
// MCCL_BOOTSTRAP_TIMEOUT_MS (default 30 s).
//
// The returned object holds one PMIx_Init (PMIx counts them, so an MPI
// library in the same process is unaffected); its destructor calls
// PMIx_Finalize. Every rank must call allgather() the same number of times,
// in the same order relative to other PMIx fences of the process (those of
// other PMIx bootstraps included). One thread at a time may call it.
//
// Throws mccl::Error:
//   kUnavailable      MCCL was built without PMIx; or PMIx_Init failed: the
//                     process was not launched under a PMIx server;
//   kInvalidArgument  a negative timeout;
//   kTimeout          the server did not say the job's size in time.
//
// allgather() follows mccl/bootstrap.h. It throws kTimeout when the fence
// did not complete within the timeout (some rank never reached it; PMIx
// does not say which), kMismatch naming the rank whose contribution has
// another length, kPeerFailure when the server reports a lost process or
// connection. After any error the object is unusable: every later call
// throws the same error.
MCCL_API std::unique_ptr<Bootstrap> make_pmix_bootstrap(std::chrono::milliseconds timeout = {});

}  // namespace mccl
