// What every bootstrap of this layer is: how the ranks of a new
// communicator find each other, with failures as Status values (this layer
// does not throw). The public mccl::Bootstrap, whose allgather throws by
// its contract, is api/'s wrapper of one (api/bootstrap.cc), and the
// factories of the public headers (make_tcp_bootstrap, ...) call the open_*
// functions below.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "mccl/callback_bootstrap.h"
#include "mccl/tcp_bootstrap.h"

namespace mccl::bootstrap {

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // mccl::Bootstrap::allgather's contract: blocking and collective, every
  // rank's contribution of the same length; on success `all` holds
  // size() * mine.size() bytes in rank order. kTimeout naming the ranks that
  // never arrived, kMismatch when contributions differ in length.
  virtual common::Status allgather(std::span<const std::byte> mine,
                                   std::chrono::milliseconds timeout,
                                   std::vector<std::byte>& all) = 0;
};

// mccl/tcp_bootstrap.h: the TCP store of rank 0 (kInvalidArgument naming a
// missing or malformed option or variable, kTimeout, kUnavailable).
common::Status open_tcp(const TcpBootstrapOptions& options, std::unique_ptr<Rendezvous>& out);
// mccl/tcp_bootstrap.h: PMIx, or the TCP store, from the MCCL_* variables.
common::Status open_from_env(std::unique_ptr<Rendezvous>& out);
// mccl/pmix_bootstrap.h; timeout 0: MCCL_BOOTSTRAP_TIMEOUT_MS.
common::Status open_pmix(std::chrono::milliseconds timeout, std::unique_ptr<Rendezvous>& out);

// mccl/callback_bootstrap.h: the application's allgather. What the
// callback throws becomes the Status of the exchange, and every later
// exchange fails with it.
common::Status open_callback(int rank, int size, AllgatherCallback allgather,
                             std::unique_ptr<Rendezvous>& out);

// What a rendezvous holds between exchanges, let go: a communicator calls
// this once it is created, since the exchanges of creation are over. The
// TCP store's client detaches (bootstrap/wire.h: kDetach), so that rank 0's
// store holds no connection per rank while the job runs; the next exchange
// connects again (and fails, as any exchange, naming the store when it is
// gone). Others hold nothing worth letting go: no-op. Not thread-safe
// against a concurrent allgather of the same rendezvous; on any trouble the
// connection is kept.
void release_between_exchanges(Rendezvous& rendezvous);

}  // namespace mccl::bootstrap
