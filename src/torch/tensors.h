// Argument checks and host staging shared by the collectives.
//
// MCCL moves host memory. A CPU tensor is used in place; a CUDA tensor is
// staged: copied into a pinned host tensor before the collective and back
// after it. The staging uses only at::Tensor operations, so this builds
// without CUDA headers and works wherever torch itself has CUDA.
#pragma once

#include <ATen/ATen.h>
#include <mccl/types.h>

#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <vector>

namespace mccl::torch_backend {

// Throws std::invalid_argument "mccl <call>: <what>".
[[noreturn]] void reject(const std::string& call, const std::string& what);

// Exactly one tensor (one device per process), strided, contiguous, on
// the CPU or a CUDA device.
const at::Tensor& single_tensor(const std::string& call, const std::vector<at::Tensor>& tensors);
void check_tensor(const std::string& call, const at::Tensor& t);
// Same dtype and number of elements.
void check_like(const std::string& call, const at::Tensor& t, const at::Tensor& like);

// The MCCL float type of dtype `t` (float32, float64, bfloat16, float16),
// or nothing: broadcasts and allgathers of float tensors go
// through the typed calls, which compress where MCCL_COLL_COMPRESS says
// (docs/compression.md); every other dtype moves as bytes, exactly.
std::optional<mccl::DataType> float_type(at::ScalarType t);

// How MCCL reduces a tensor under a torch ReduceOp: the element type and
// how many of its elements one tensor element is (2 for a complex number,
// reduced as its real and imaginary parts), the MCCL operator, whether the
// result is then divided by the group size (AVG) and the factor each
// input is first multiplied by (PREMUL_SUM; 1 otherwise). Rejects, naming
// the call, every dtype and operator MCCL cannot serve exactly.
struct Reduction {
  mccl::DataType type;
  std::size_t lanes = 1;
  mccl::ReduceOp op;
  bool average = false;
  double premul = 1;
  // MCCL elements in `t`.
  std::size_t count(const at::Tensor& t) const {
    return static_cast<std::size_t>(t.numel()) * lanes;
  }
  // `t`, or a new tensor of t * premul where PREMUL_SUM asks for it.
  at::Tensor scaled(const at::Tensor& t) const { return premul == 1 ? t : t * premul; }
  // In place: AVG's division of the result.
  void finish(const at::Tensor& result, int size) const {
    if (average) result.div_(size);
  }
};
Reduction reduction(const std::string& call, const c10d::ReduceOp& op, const at::Tensor& t);

// Every tensor of `tensors` checked and of one dtype (the coalesced calls).
void check_same_dtype(const std::string& call, const std::vector<at::Tensor>& tensors);

// The tensors' elements back to back in one new CPU tensor, and back.
at::Tensor flatten(const std::vector<at::Tensor>& tensors);
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors);

// `t` itself when it is on the CPU; else a pinned host tensor of its shape,
// holding a copy of it when `copy` is set.
at::Tensor host_view(const at::Tensor& t, bool copy);
// Copies `host` back into `t` when they differ (a staged CUDA tensor).
void copy_back(const at::Tensor& t, const at::Tensor& host);

}  // namespace mccl::torch_backend
