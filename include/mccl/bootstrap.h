// Bootstrap: how the ranks of a new communicator find each other.
//
// A Bootstrap answers "who am I, how many are we" and performs the small
// out-of-band exchanges a communicator needs while it is created (agreeing
// on a tag, exchanging transport addresses). It is not used on the data
// path. Implementations: in-process (mccl/inprocess.h), the TCP store and
// make_bootstrap_from_env() (mccl/tcp_bootstrap.h), PMIx
// (mccl/pmix_bootstrap.h), and any runtime that can allgather, such as an
// MPI communicator (mccl/callback_bootstrap.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

#include "mccl/export.h"

namespace mccl {

class MCCL_API Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Blocking and collective: every rank calls it the same number of times
  // with a contribution of the same length. Returns size() * mine.size()
  // bytes, rank r's contribution at offset r * mine.size().
  // Throws mccl::Error(kTimeout) naming the ranks that never arrived, and
  // kMismatch when contributions differ in length.
  virtual std::vector<std::byte> allgather(std::span<const std::byte> mine,
                                           std::chrono::milliseconds timeout) = 0;
};

}  // namespace mccl
