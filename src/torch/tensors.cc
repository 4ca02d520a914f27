#include "tensors.h"

#include <optional>
#include <stdexcept>

#include "compat.h"

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

std::optional<mccl::DataType> float_type(at::ScalarType t) {
  switch (t) {
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

namespace {

// The MCCL type that reduces `t` exactly under `op`, or a reason why none.
std::optional<mccl::DataType> mccl_type(at::ScalarType t, c10d::ReduceOp::RedOpType op,
                                        std::size_t& lanes) {
  lanes = 1;
  const bool sum_like =
      op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::AVG || op == c10d::ReduceOp::PREMUL_SUM;
  if (auto f = float_type(t)) return f;
  switch (t) {
    case at::kInt:
      return mccl::DataType::kInt32;
    case at::kLong:
      return mccl::DataType::kInt64;
    case at::kByte:
      return mccl::DataType::kUInt8;
    case at::kChar:  // int8: sums and products wrap alike in uint8
      if (op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::PRODUCT) {
        return mccl::DataType::kUInt8;
      }
      return std::nullopt;
    case at::kComplexFloat:  // sums only: the parts add independently
      lanes = 2;
      if (sum_like) return mccl::DataType::kFloat32;
      return std::nullopt;
    case at::kComplexDouble:
      lanes = 2;
      if (sum_like) return mccl::DataType::kFloat64;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

double premul_factor(const std::string& call, const c10d::ReduceOp& op) {
  const auto* s = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
#if TORCH_VERSION_MAJOR >= 2
  if (s != nullptr) {
    return s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
  }
#else
  if (s != nullptr) {
    return s->tensor_factors.empty() ? s->double_factor : s->tensor_factors[0].item<double>();
  }
#endif
  reject(call, "PREMUL_SUM without its factor");
}

}  // namespace

Reduction reduction(const std::string& call, const c10d::ReduceOp& op, const at::Tensor& t) {
  const auto kind = static_cast<c10d::ReduceOp::RedOpType>(op);
  if (kind == c10d::ReduceOp::BAND || kind == c10d::ReduceOp::BOR || kind == c10d::ReduceOp::BXOR) {
    reject(call, "bitwise reductions (BAND, BOR, BXOR) are not supported");
  }
  Reduction r{};
  const std::optional<mccl::DataType> type = mccl_type(t.scalar_type(), kind, r.lanes);
  if (!type) {
    reject(call, std::string("cannot reduce ") + c10::toString(t.scalar_type()) +
                     " with this operator (float32, float64, bfloat16, float16, int32, int64 "
                     "and uint8 take every one; int8 SUM and PRODUCT; complex SUM, AVG and "
                     "PREMUL_SUM)");
  }
  r.type = *type;
  switch (kind) {
    case c10d::ReduceOp::SUM:
      r.op = mccl::ReduceOp::kSum;
      return r;
    case c10d::ReduceOp::PRODUCT:
      r.op = mccl::ReduceOp::kProd;
      return r;
    case c10d::ReduceOp::MIN:
      r.op = mccl::ReduceOp::kMin;
      return r;
    case c10d::ReduceOp::MAX:
      r.op = mccl::ReduceOp::kMax;
      return r;
    case c10d::ReduceOp::AVG:
    case c10d::ReduceOp::PREMUL_SUM:
      // Divided or multiplied in the tensor's own type: an integer result
      // would silently truncate, so it is refused.
      if (!at::isFloatingType(t.scalar_type()) && !at::isComplexType(t.scalar_type())) {
        reject(call, std::string(kind == c10d::ReduceOp::AVG ? "AVG" : "PREMUL_SUM") +
                         " needs a floating-point tensor, not " + c10::toString(t.scalar_type()));
      }
      r.op = mccl::ReduceOp::kSum;
      r.average = kind == c10d::ReduceOp::AVG;
      if (kind == c10d::ReduceOp::PREMUL_SUM) r.premul = premul_factor(call, op);
      return r;
    default:
      reject(call, "only SUM, PRODUCT, MIN, MAX, AVG and PREMUL_SUM are supported");
  }
}

void check_same_dtype(const std::string& call, const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) {
    check_tensor(call, t);
    if (t.scalar_type() != tensors.front().scalar_type()) {
      reject(call, std::string("tensors of different dtypes: ") + c10::toString(t.scalar_type()) +
                       " and " + c10::toString(tensors.front().scalar_type()));
    }
  }
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> views;
  for (const at::Tensor& t : tensors) views.push_back(t.reshape({-1}).to(at::kCPU));
  return views.empty() ? at::empty({0}) : at::cat(views);
}

void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  std::int64_t off = 0;
  for (const at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
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
