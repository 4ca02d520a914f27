// MCCL requests behind real MPI_Request handles.
//
// A nonblocking call served by MCCL returns a generalized request
// (PMPI_Grequest_start) as its MPI_Request: a real handle that MPI's own
// MPI_Wait/Test* and MPI_Request_free accept, mixed with any other
// requests. libmccl_mpi keeps a table from that handle to the
// mccl::Request and completes the generalized request
// (PMPI_Grequest_complete) once MCCL reports the collective done.
// Generalized requests are not progressed by MPI, so the wait and test
// functions are intercepted too (wait.cc): they advance every MCCL request
// in the table and then hand the whole array to PMPI_ unchanged. While MCCL
// requests are pending, a blocking MPI_Wait* becomes a loop of MCCL progress
// and PMPI_Test*, so an MPI request in the same array (or an MCCL request a
// peer needs) is never starved; when only MCCL's requests are waited for,
// the loop sleeps on them between rounds instead of spinning
// (sleep_on_ours).
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "mccl/communicator.h"
#include "mpi/comm_cache.h"
#include "mpi/state.h"

namespace mccl::mpi {

// Run once a tracked collective has succeeded, before its generalized
// request completes (unpacks a staged receive buffer, staging.h); returns
// an error message, or empty. It owns what it needs (the staging buffer).
using Finish = std::function<std::string()>;

// Wraps `req` in a new generalized request, stored in *out. On an MPI error
// `req` is waited for here and the error code returned. Takes
// tables_lock(); call without owner->mu.
int track(std::shared_ptr<McclComm> owner, Request req, Kind kind, MPI_Request* out,
          Finish finish = nullptr);

// True when `handle` is one of ours and not yet handed back by MPI.
bool is_tracked(MPI_Request handle);
bool any_tracked();
// True while some tracked MCCL collective has not finished; once none has,
// every generalized request is complete and PMPI_ may block on them.
bool any_running();

// Advances every tracked MCCL request once; completes the generalized
// request of each one that finished (and retires those the program freed).
void progress_all();

// After a PMPI_ wait/test call has freed `handle` (its slot became
// MPI_REQUEST_NULL): forgets it and returns MPI_SUCCESS, or, when its
// collective failed, runs the communicator's error handler and returns
// MPI_ERR_OTHER.
int retire(MPI_Request handle);

// MPI_Request_free of a tracked request: retired now if done, otherwise
// when it completes. Returns PMPI_Request_free's code.
int free_tracked(MPI_Request* handle);

// Inside MPI_Wait/Waitall/Waitany/Waitsome, between two rounds of
// polling: when every active request of `reqs` is MCCL's and one is still
// running, sleeps until it finishes or 1 ms passes and returns true;
// otherwise returns false at once (an MPI request is best polled).
// Spinning instead starves MCCL's progress threads of the cores they share
// with the ranks, so roots inject late and receivers mistake them for loss.
bool sleep_on_ours(int n, const MPI_Request reqs[]);

// Blocks until `req` (a request of `owner`) completes, driving the other
// tracked requests and MPI's own progress meanwhile. Holds owner.mu only
// while it tests or waits a short slice, never tables_lock(). Throws
// mccl::Error.
void wait_served(McclComm& owner, Request& req, const char* what);

// Starts a collective on `mc` under its lock: `start(Communicator&)`
// returns the Request.
template <typename Start>
Request start_on(McclComm& mc, Start&& start) {
  std::lock_guard<std::mutex> comm(mc.mu);
  return start(mc.comm);
}

// Whether a wait wrapper may block in PMPI_Wait* once every MCCL request
// it waits for has completed. Not under MPI_THREAD_MULTIPLE: a request MPI
// frees there is retired afterwards, and meanwhile another thread may get
// the same handle for a new collective; the wrappers poll instead, with
// the test and the retirement under one hold of tables_lock().
bool may_block_in_mpi();

// MPI_Comm_free: completes every tracked request on `owner` (their
// generalized requests stay for the program to wait for).
void drain_comm(const McclComm& owner);
// MPI_Finalize: completes every tracked request, then drops their
// communicators.
void drain_all();

// A served call failed: logs, runs the communicator's error handler
// (MPI_ERR_OTHER) and returns MPI_ERR_OTHER for the wrapper to return.
int raise_error(const McclComm& owner, const char* what, const std::string& message);
// The same for a call on `comm` (labelled `label`); `alive`: whether its
// error handler may still be called.
int raise_error(const std::string& label, MPI_Comm comm, bool alive, const char* what,
                const std::string& message);

}  // namespace mccl::mpi
