// Everything that differs between the PyTorch versions this backend builds
// against, in one place. Built and tested against PyTorch 1.13 (Debian 12)
// and the current 2.x from PyPI (mccl_torch_pypi, docs/pytorch.md).
//
// - 1.13: a backend is a c10d::ProcessGroup; Backend.register_backend(name,
//   func, extended_api) takes a creator that returns that ProcessGroup.
// - 2.x: a backend derives from c10d::Backend, which a ProcessGroup owns per
//   device; the creator returns the Backend. Later releases' register_backend
//   also takes `devices`: module.cc asks the function for that parameter
//   rather than guessing the release that added it.
// - 2.x only: allgather_into_tensor_coalesced and
//   reduce_scatter_tensor_coalesced (torch.compile's functional
//   collectives) and a monitored_barrier, which the Python of later 2.x
//   releases (2.15, not 2.11) lets any CPU backend serve.
// - Within 2.x: the premultiplied sum's factor is c10d::NCCLPreMulSumSupplement
//   (2.11; later releases keep that name as an alias of PreMulSumSupplement), and
//   OpType names the coalesced tensor collectives only after 2.11.
// In both, Work is c10d::Work (Work.hpp, with ::kNoTimeout outside the
// namespace), the collectives keep the same signatures, and ReduceOp
// converts to ReduceOp::RedOpType.
#pragma once

#include <torch/csrc/api/include/torch/version.h>

// The backend serves monitored_barrier from 2.x on. Whether torch's Python
// asks it is the release's choice: 1.13 and 2.11 refuse every backend but
// gloo by name, 2.15 asks the group's CPU backend.
#define MCCL_TORCH_HAS_MONITORED_BARRIER (TORCH_VERSION_MAJOR >= 2)

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace mccl::torch_backend {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;

// The OpType a Work of the coalesced tensor collectives carries (it labels the
// work for profilers): the release's own name where it has one, else the
// uncoalesced collective's.
template <typename T = c10d::OpType>
constexpr T allgather_into_tensor_coalesced_op() {
  if constexpr (requires { T::ALLGATHER_INTO_TENSOR_COALESCED; }) {
    return T::ALLGATHER_INTO_TENSOR_COALESCED;
  } else {
    return T::_ALLGATHER_BASE;
  }
}

template <typename T = c10d::OpType>
constexpr T reduce_scatter_tensor_coalesced_op() {
  if constexpr (requires { T::REDUCE_SCATTER_TENSOR_COALESCED; }) {
    return T::REDUCE_SCATTER_TENSOR_COALESCED;
  } else {
    return T::_REDUCE_SCATTER_BASE;
  }
}
#else
using BackendBase = c10d::ProcessGroup;
#endif

}  // namespace mccl::torch_backend
