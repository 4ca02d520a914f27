// The TCP store that rank 0 serves for the bootstrap (wire format in
// bootstrap/wire.h). One thread with one poll() loop: it accepts the ranks,
// checks their hellos, welcomes them once all have arrived, and answers each
// allgather round with the concatenation of the contributions.
//
// Admission: a connection is anonymous until its hello carries the job
// secret (bootstrap/secret.h). An anonymous connection may send nothing but
// one hello of bounded size within a few seconds; anything else, or a wrong
// secret, drops that connection and leaves the job alone. Payloads grow as
// their bytes arrive, so a header alone never makes the store allocate.
//
// Failure model: the first failure (a deadline passed, a rank vanished while
// others wait for it, contributions that disagree, a protocol violation)
// poisons the store: every rank still connected, and every rank that comes
// later, receives the same error naming the ranks at fault.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"

namespace mccl::bootstrap {

class StoreServer {
 public:
  // Binds `addr` and listens in the caller's thread, so that a port in use
  // fails here (kTransportError); then serves `size` ranks from a thread of
  // its own. Every rank must arrive within `timeout` from now, with a hello
  // carrying `secret`.
  static common::Status start(const sockaddr_in& addr, int size, std::chrono::milliseconds timeout,
                              std::string secret, std::unique_ptr<StoreServer>& out);

  // The most ranks a store can serve: a connection each, plus a few
  // descriptors of the process's own, within RLIMIT_NOFILE (and never more
  // than 2^24, far beyond any job a single store should carry).
  static int max_ranks();

  // Stops accepting, tells ranks still waiting that the store is gone,
  // flushes what is queued (for at most the timeout), closes and joins.
  ~StoreServer();

  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  struct Impl;

 private:
  explicit StoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mccl::bootstrap
