#include "tensors.h"

#include <stdexcept>

namespace mccl::torch_backend {

void reject(const std::string& call, const std::string& what) {
  throw std::invalid_argument("mccl " + call + ": " + what);
}

const at::Tensor& single_tensor(const std::string& call, const std::vector<at::Tensor>& tensors) {
  if (tensors.size() != 1) {
    reject(call, "takes one tensor per process, got " + std::to_string(tensors.size()) +
                     " (tensor lists of several devices are not supported)");
  }
  check_tensor(call, tensors[0]);
  return tensors[0];
}

void check_tensor(const std::string& call, const at::Tensor& t) {
  if (t.layout() != at::kStrided) reject(call, "sparse tensors are not supported");
  if (!t.is_contiguous()) reject(call, "the tensor must be contiguous (call .contiguous())");
  if (!t.is_cpu() && !t.is_cuda()) {
    reject(call, "tensors on " + t.device().str() + " are not supported (CPU and CUDA are)");
  }
}

void check_like(const std::string& call, const at::Tensor& t, const at::Tensor& like) {
  check_tensor(call, t);
  if (t.scalar_type() != like.scalar_type()) {
    reject(call, std::string("tensors of different dtypes: ") + c10::toString(t.scalar_type()) +
                     " and " + c10::toString(like.scalar_type()));
  }
  if (t.numel() != like.numel()) {
    reject(call, "tensors of different sizes: " + std::to_string(t.numel()) + " and " +
                     std::to_string(like.numel()) + " elements");
  }
}

std::optional<mccl::DataType> float_type(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return mccl::DataType::kFloat32;
    case at::kDouble:
      return mccl::DataType::kFloat64;
    case at::kBFloat16:
      return mccl::DataType::kBFloat16;
    case at::kHalf:
      return mccl::DataType::kFloat16;
    default:
      return std::nullopt;
  }
}

mccl::DataType reduce_type(const std::string& call, const at::Tensor& t) {
  if (auto type = float_type(t)) return *type;
  switch (t.scalar_type()) {
    case at::kInt:
      return mccl::DataType::kInt32;
    case at::kLong:
      return mccl::DataType::kInt64;
    case at::kByte:
      return mccl::DataType::kUInt8;
    default:
      reject(call, std::string("cannot reduce ") + c10::toString(t.scalar_type()) +
                       " (float32, float64, bfloat16, float16, int32, int64 and uint8 can be)");
  }
}

Reduction reduction(const std::string& call, const c10d::ReduceOp& op, const at::Tensor& t) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    case c10d::ReduceOp::SUM:
      return {mccl::ReduceOp::kSum, false};
    case c10d::ReduceOp::PRODUCT:
      return {mccl::ReduceOp::kProd, false};
    case c10d::ReduceOp::MIN:
      return {mccl::ReduceOp::kMin, false};
    case c10d::ReduceOp::MAX:
      return {mccl::ReduceOp::kMax, false};
    case c10d::ReduceOp::AVG:
      // The sum divided in the tensor's own type: an integer average would
      // silently truncate, so it is refused.
      if (!at::isFloatingType(t.scalar_type())) {
        reject(call, std::string("AVG needs a floating-point tensor, not ") +
                         c10::toString(t.scalar_type()));
      }
      return {mccl::ReduceOp::kSum, true};
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      reject(call, "bitwise reductions (BAND, BOR, BXOR) are not supported");
    default:
      reject(call, "only SUM, PRODUCT, MIN, MAX and AVG are supported");
  }
}

at::Tensor host_view(const at::Tensor& t, bool copy) {
  if (t.is_cpu()) return t;
  at::Tensor host = at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true));
  if (copy) host.copy_(t);
  return host;
}

void copy_back(const at::Tensor& t, const at::Tensor& host) {
  if (!t.is_same(host)) t.copy_(host);
}

}  // namespace mccl::torch_backend
