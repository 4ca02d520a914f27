// What a bootstrap holds between exchanges, let go: a communicator calls
// this once it is created, since the exchanges of creation are over. The
// TCP store's client detaches (bootstrap/wire.h: kDetach), so that rank 0's
// store holds no connection per rank while the job runs; the next
// allgather connects again (and fails, as any allgather, naming the store
// when it is gone). Other bootstraps hold nothing worth letting go: no-op.
#pragma once

#include "mccl/bootstrap.h"

namespace mccl::bootstrap {

// Not thread-safe against a concurrent allgather of the same bootstrap
// beyond what Bootstrap::allgather itself allows (one at a time); never
// throws: on any trouble the connection is kept.
void release_between_exchanges(Bootstrap& bootstrap);

}  // namespace mccl::bootstrap
