// A bootstrap over the c10d::Store that torch.distributed hands a backend:
// the store the user's init_method (env://, tcp://, file://) already built,
// so MCCL needs no variables of its own to find the other ranks.
#pragma once

#include <mccl/bootstrap.h>

#include <chrono>
#include <memory>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace mccl::torch_backend {

// The ranks allgather by publishing under "mccl/<round>/<rank>" and reading
// every rank's key. torch gives each process group a store of its own
// (PrefixStore under the group's name), so the keys of two groups never
// meet; one communicator per store. A rank that does not publish within
// `timeout` makes the others throw mccl::Error(kTimeout) naming it.
std::unique_ptr<mccl::Bootstrap> make_store_bootstrap(c10::intrusive_ptr<c10d::Store> store,
                                                      int rank, int size,
                                                      std::chrono::milliseconds timeout);

}  // namespace mccl::torch_backend
