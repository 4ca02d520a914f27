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

// The element type of a reduction; rejects the dtypes MCCL cannot reduce.
mccl::DataType reduce_type(const std::string& call, const at::Tensor& t);

// The MCCL float type of `t`'s dtype (float32, float64, bfloat16,
// float16), or nothing: broadcasts and allgathers of float tensors go
// through the typed calls, which compress where MCCL_COLL_COMPRESS says
// (docs/compression.md); every other dtype moves as bytes, exactly.
std::optional<mccl::DataType> float_type(const at::Tensor& t);

// A reduction operator: the MCCL operator and whether the result is then
// divided by the group size (AVG). Rejects what MCCL cannot serve.
struct Reduction {
  mccl::ReduceOp op;
  bool average;
};
Reduction reduction(const std::string& call, const c10d::ReduceOp& op, const at::Tensor& t);

// `t` itself when it is on the CPU; else a pinned host tensor of its shape,
// holding a copy of it when `copy` is set.
at::Tensor host_view(const at::Tensor& t, bool copy);
// Copies `host` back into `t` when they differ (a staged CUDA tensor).
void copy_back(const at::Tensor& t, const at::Tensor& host);

}  // namespace mccl::torch_backend
