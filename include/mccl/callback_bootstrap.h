// The callback bootstrap: for applications that already run a collective
// runtime (an MPI communicator, a Gloo or torch.distributed group, ...).
// MCCL asks it for one operation, an allgather of bytes, so no MPI type
// reaches MCCL's headers and any runtime can be plugged in.
//
// From an MPI communicator:
//
//   auto boot = mccl::make_callback_bootstrap(rank, size,
//       [comm](const void* mine, void* all, std::size_t n) {
//         MPI_Allgather(mine, static_cast<int>(n), MPI_BYTE, all, static_cast<int>(n),
//                       MPI_BYTE, comm);
//       });
//   mccl::Communicator mc(*boot);
//
// where rank and size come from MPI_Comm_rank / MPI_Comm_size of `comm`.
// The communicator spans exactly the ranks of `comm`, numbered as in it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "mccl/bootstrap.h"
#include "mccl/export.h"

namespace mccl {

// Collective over the `size` ranks: every rank contributes `bytes_per_rank`
// bytes at `mine` and receives size * bytes_per_rank bytes at `all`, rank
// r's block at all + r * bytes_per_rank. Called only from the thread that
// calls Bootstrap::allgather() (in practice: while a Communicator is being
// created), with the same bytes_per_rank on every rank (MCCL checks the
// lengths with a first, 8-byte exchange before the contribution itself), so
// an MPI_Allgather with MPI_BYTE is all it takes. It may throw; an
// mccl::Error passes through unchanged, anything else becomes
// mccl::Error(kInternal) carrying its message.
using AllgatherCallback =
    std::function<void(const void* mine, void* all, std::size_t bytes_per_rank)>;

// Never blocks and never calls the callback itself. Throws
// mccl::Error(kInvalidArgument) when size < 1, rank is outside [0, size) or
// the callback is empty.
//
// allgather() calls the callback twice (lengths, then data) and throws
// kMismatch naming the rank whose contribution has another length. Its
// timeout is not enforced: the callback's runtime decides how long a
// missing rank is waited for. After any error the object is unusable: every
// later call throws the same error.
MCCL_API std::unique_ptr<Bootstrap> make_callback_bootstrap(int rank, int size,
                                                            AllgatherCallback allgather);

}  // namespace mccl
