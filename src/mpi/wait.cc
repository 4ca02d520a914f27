// MPI_Wait/Test and friends, MPI_Request_free, MPI_Request_get_status:
// advance every MCCL request (requests.h), then hand the very same array to
// the PMPI_ function, and afterwards retire the MCCL requests that MPI
// freed (their slot became MPI_REQUEST_NULL) and report their errors.
// With no MCCL request pending each call is its PMPI_ twin, unchanged.
#include <chrono>
#include <thread>
#include <vector>

#include "mpi/export.h"
#include "mpi/requests.h"

namespace mccl::mpi {
namespace {

struct Ours {
  int index;
  MPI_Request handle;
};

std::vector<Ours> ours(int n, const MPI_Request reqs[]) {
  std::vector<Ours> o;
  for (int i = 0; i < n; ++i) {
    if (reqs[i] != MPI_REQUEST_NULL && is_tracked(reqs[i])) o.push_back({i, reqs[i]});
  }
  return o;
}

// Retires the consumed ones; returns the indices whose collective failed.
std::vector<int> settle(const std::vector<Ours>& o, const MPI_Request reqs[]) {
  std::vector<int> failed;
  for (const Ours& x : o) {
    if (reqs[x.index] == MPI_REQUEST_NULL && retire(x.handle) != MPI_SUCCESS) {
      failed.push_back(x.index);
    }
  }
  return failed;
}

// Multiple-completion calls report per-request errors in the statuses
// (MPI_ERR_IN_STATUS): `status_of(i)` is the status of request i, or null
// when that request's status is not among those returned.
template <typename StatusOf>
int report_multi(int rc, const std::vector<int>& failed, MPI_Status statuses[], int n_statuses,
                 StatusOf&& status_of) {
  if (failed.empty()) return rc;
  if (statuses == MPI_STATUSES_IGNORE) return rc == MPI_SUCCESS ? MPI_ERR_OTHER : rc;
  if (rc == MPI_SUCCESS) {
    for (int j = 0; j < n_statuses; ++j) statuses[j].MPI_ERROR = MPI_SUCCESS;
  }
  for (int i : failed) {
    if (MPI_Status* s = status_of(i)) s->MPI_ERROR = MPI_ERR_OTHER;
  }
  return MPI_ERR_IN_STATUS;
}

int single(int rc, MPI_Request* req, MPI_Request handle, bool tracked) {
  if (tracked && *req == MPI_REQUEST_NULL) {
    const int e = retire(handle);
    if (e != MPI_SUCCESS && rc == MPI_SUCCESS) rc = e;
  }
  return rc;
}

// The blocking wrappers' loop while MCCL requests are tracked: advance
// them and `test()` (a PMPI_Test*; true when the wait is over) under one
// hold of tables_lock(), and `settle(rc)` (which retires what MPI freed)
// under the same hold, so that no other thread can get a freed handle back
// for a new collective before its old entry is gone. In between, sleep on
// an MCCL request of `reqs` or yield; once none of MCCL's is running, block
// in `block()` (the PMPI_Wait*) where may_block_in_mpi() allows.
template <typename Test, typename Block, typename Settle>
int wait_loop(int n, MPI_Request reqs[], Test&& test, Block&& block, Settle&& settle) {
  for (;;) {
    {
      TablesGuard tables(tables_lock());
      progress_all();
      int rc = MPI_SUCCESS;
      if (test(rc)) return settle(rc);
    }
    if (!any_running()) {
      if (may_block_in_mpi()) return settle(block());
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    } else if (!sleep_on_ours(n, reqs)) {
      std::this_thread::yield();
    }
  }
}

}  // namespace
}  // namespace mccl::mpi

using namespace mccl::mpi;

MCCL_MPI_EXPORT int MPI_Wait(MPI_Request* req, MPI_Status* status) {
  if (!any_tracked()) return PMPI_Wait(req, status);
  const MPI_Request h = *req;
  const bool tracked = is_tracked(h);
  return wait_loop(
      1, req,
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Test(req, &flag, status);
        return rc != MPI_SUCCESS || flag;
      },
      [&] { return PMPI_Wait(req, status); }, [&](int rc) { return single(rc, req, h, tracked); });
}

MCCL_MPI_EXPORT int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status) {
  if (!any_tracked()) return PMPI_Test(req, flag, status);
  TablesGuard tables(tables_lock());
  const MPI_Request h = *req;
  const bool tracked = is_tracked(h);
  progress_all();
  return single(PMPI_Test(req, flag, status), req, h, tracked);
}

MCCL_MPI_EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  if (!any_tracked()) return PMPI_Waitall(n, reqs, statuses);
  const auto o = ours(n, reqs);
  return wait_loop(
      n, reqs,
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Testall(n, reqs, &flag, statuses);
        return rc != MPI_SUCCESS || flag;
      },
      [&] { return PMPI_Waitall(n, reqs, statuses); },
      [&](int rc) {
        return report_multi(rc, settle(o, reqs), statuses, n, [&](int i) {
          return statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[i];
        });
      });
}

MCCL_MPI_EXPORT int MPI_Testall(int n, MPI_Request reqs[], int* flag, MPI_Status statuses[]) {
  if (!any_tracked()) return PMPI_Testall(n, reqs, flag, statuses);
  TablesGuard tables(tables_lock());
  const auto o = ours(n, reqs);
  progress_all();
  const int rc = PMPI_Testall(n, reqs, flag, statuses);
  return report_multi(rc, settle(o, reqs), statuses, n, [&](int i) {
    return statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[i];
  });
}

MCCL_MPI_EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int* index, MPI_Status* status) {
  if (!any_tracked()) return PMPI_Waitany(n, reqs, index, status);
  const auto o = ours(n, reqs);
  return wait_loop(
      n, reqs,
      [&](int& rc) {
        int flag = 0;
        rc = PMPI_Testany(n, reqs, index, &flag, status);
        return rc != MPI_SUCCESS || flag;
      },
      [&] { return PMPI_Waitany(n, reqs, index, status); },
      [&](int rc) {
        const auto failed = settle(o, reqs);
        return failed.empty() || rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
      });
}

MCCL_MPI_EXPORT int MPI_Testany(int n, MPI_Request reqs[], int* index, int* flag,
                                MPI_Status* status) {
  if (!any_tracked()) return PMPI_Testany(n, reqs, index, flag, status);
  TablesGuard tables(tables_lock());
  const auto o = ours(n, reqs);
  progress_all();
  const int rc = PMPI_Testany(n, reqs, index, flag, status);
  const auto failed = settle(o, reqs);
  return failed.empty() || rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
}

namespace {
int some_result(int rc, const std::vector<Ours>& o, MPI_Request reqs[], int* outcount,
                int indices[], MPI_Status statuses[]) {
  const auto failed = settle(o, reqs);
  const int out = *outcount == MPI_UNDEFINED ? 0 : *outcount;
  return report_multi(rc, failed, statuses, out, [&](int i) -> MPI_Status* {
    if (statuses == MPI_STATUSES_IGNORE) return nullptr;
    for (int j = 0; j < out; ++j) {
      if (indices[j] == i) return &statuses[j];
    }
    return nullptr;
  });
}
}  // namespace

MCCL_MPI_EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int* outcount, int indices[],
                                 MPI_Status statuses[]) {
  if (!any_tracked()) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
  const auto o = ours(n, reqs);
  return wait_loop(
      n, reqs,
      [&](int& rc) {
        rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
        return rc != MPI_SUCCESS || *outcount != 0;
      },
      [&] { return PMPI_Waitsome(n, reqs, outcount, indices, statuses); },
      [&](int rc) { return some_result(rc, o, reqs, outcount, indices, statuses); });
}

MCCL_MPI_EXPORT int MPI_Testsome(int n, MPI_Request reqs[], int* outcount, int indices[],
                                 MPI_Status statuses[]) {
  if (!any_tracked()) return PMPI_Testsome(n, reqs, outcount, indices, statuses);
  TablesGuard tables(tables_lock());
  const auto o = ours(n, reqs);
  progress_all();
  const int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
  return some_result(rc, o, reqs, outcount, indices, statuses);
}

MCCL_MPI_EXPORT int MPI_Request_free(MPI_Request* req) {
  if (!any_tracked() || !is_tracked(*req)) return PMPI_Request_free(req);
  return free_tracked(req);
}

MCCL_MPI_EXPORT int MPI_Request_get_status(MPI_Request req, int* flag, MPI_Status* status) {
  progress_all();
  return PMPI_Request_get_status(req, flag, status);
}
