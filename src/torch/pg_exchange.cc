// The exchanges over MCCL's reliable transport: all_to_all_single (even
// and uneven splits) and all_to_all by its alltoallv; send, recv (from one
// rank or any) and so batch_isend_irecv by its point-to-point messages;
// monitored_barrier by point-to-point tokens under a reserved tag.
#include <thread>

#include "process_group.h"
#include "tensors.h"

namespace mccl::torch_backend {
namespace {

// Tags from here up are the backend's own (monitored_barrier); send and
// recv refuse them.
constexpr int kReservedTag = 0x7FFFFF00;
constexpr int kMonitoredBarrierTag = kReservedTag;

// The bytes of each rank's rows of `t` along dimension 0: `splits` rows
// each, or an equal share where `splits` is empty.
std::vector<std::size_t> row_bytes(const std::string& call, const char* which, const at::Tensor& t,
                                   const std::vector<int64_t>& splits, int size) {
  if (t.dim() == 0) reject(call, std::string("the ") + which + " must have a dimension to split");
  const std::int64_t rows = t.size(0);
  std::int64_t per_row = t.element_size();
  for (std::int64_t d = 1; d < t.dim(); ++d) per_row *= t.size(d);
  std::vector<std::size_t> bytes;
  if (splits.empty()) {
    if (rows % size != 0) {
      reject(call, std::string("the ") + which + "'s " + std::to_string(rows) +
                       " rows do not split evenly over " + std::to_string(size) +
                       " ranks (give split sizes)");
    }
    bytes.assign(size, static_cast<std::size_t>(rows / size * per_row));
    return bytes;
  }
  std::int64_t sum = 0;
  for (std::int64_t s : splits) {
    if (s < 0) reject(call, std::string("negative ") + which + " split size");
    sum += s;
    bytes.push_back(static_cast<std::size_t>(s * per_row));
  }
  if (static_cast<int>(splits.size()) != size || sum != rows) {
    reject(call, std::string("the ") + which + " split sizes must be " + std::to_string(size) +
                     " numbers adding up to its " + std::to_string(rows) + " rows");
  }
  return bytes;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::alltoall_base(at::Tensor& output,
                                                               at::Tensor& input,
                                                               std::vector<int64_t>& output_splits,
                                                               std::vector<int64_t>& input_splits,
                                                               const c10d::AllToAllOptions&) {
  const std::string call = "all_to_all_single";
  check_tensor(call, output);
  check_like(call, input, input);
  if (output.scalar_type() != input.scalar_type()) {
    reject(call, "the input and output must have one dtype");
  }
  std::vector<std::size_t> sc = row_bytes(call, "input", input, input_splits, size_);
  std::vector<std::size_t> rc = row_bytes(call, "output", output, output_splits, size_);
  at::Tensor host_in = host_view(input, true);
  at::Tensor host_out = host_view(output, false);
  return post(call, c10d::OpType::ALLTOALL_BASE, {output},
              [this, output, host_in, host_out, sc, rc] {
                Started s = exchange(host_in, sc, host_out, rc);
                s.then = [output, host_out] { copy_back(output, host_out); };
                return s;
              });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions&) {
  const std::string call = "all_to_all";
  if (outputs.size() != static_cast<std::size_t>(size_) || inputs.size() != outputs.size()) {
    reject(call, "needs " + std::to_string(size_) + " input and " + std::to_string(size_) +
                     " output tensors");
  }
  check_same_dtype(call, inputs);
  check_same_dtype(call, outputs);
  std::vector<std::size_t> sc, rc;
  for (int r = 0; r < size_; ++r) {
    sc.push_back(inputs[r].nbytes());
    rc.push_back(outputs[r].nbytes());
  }
  at::Tensor flat_in = flatten(inputs);  // staged where the inputs are known ready
  return post(call, c10d::OpType::ALLTOALL, outputs, [this, flat_in, outputs, sc, rc] {
    std::int64_t total = 0;
    for (const at::Tensor& o : outputs) total += o.numel();
    at::Tensor flat_out = at::empty({total}, flat_in.options());
    Started s = exchange(flat_in, sc, flat_out, rc);
    s.then = [flat_out, outputs] { unflatten(flat_out, outputs); };
    return s;
  });
}

void ProcessGroupMCCL::check_tag(const std::string& call, int tag) const {
  if (tag < 0 || tag >= kReservedTag) {
    reject(call,
           "tag " + std::to_string(tag) + " is outside [0, " + std::to_string(kReservedTag) + ")");
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::send(std::vector<at::Tensor>& tensors, int dst,
                                                      int tag) {
  const std::string call = "send";
  const at::Tensor& t = single_tensor(call, tensors);
  check_peer(call, dst);
  check_tag(call, tag);
  at::Tensor host = host_view(t, true);
  return post(call, c10d::OpType::SEND, tensors, [this, host, dst, tag] {
    return Started{comm_.isend(host.data_ptr(), host.nbytes(), dst, tag), {}, {host}};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::recv(std::vector<at::Tensor>& tensors, int src,
                                                      int tag) {
  const std::string call = src == mccl::kAnySource ? "recv (any source)" : "recv";
  const at::Tensor& t = single_tensor(call, tensors);
  if (src != mccl::kAnySource) check_peer(call, src);
  check_tag(call, tag);
  at::Tensor host = host_view(t, false);
  const auto type = src == mccl::kAnySource ? c10d::OpType::RECVANYSOURCE : c10d::OpType::RECV;
  return post(call, type, tensors, [this, t, host, src, tag] {
    return Started{comm_.irecv(host.data_ptr(), host.nbytes(), src, tag),
                   [t, host] { copy_back(t, host); },
                   {host}};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::recvAnysource(std::vector<at::Tensor>& tensors,
                                                               int tag) {
  return recv(tensors, mccl::kAnySource, tag);
}

#if MCCL_TORCH_HAS_MONITORED_BARRIER
// Every rank but 0 sends rank 0 a token and waits for its answer; rank 0
// waits `opts.timeout` for the tokens and names the ranks whose token did
// not come (the first only, unless `wait_all_ranks`). Blocks the caller and
// the group's executor (torch's monitored_barrier is synchronous).
void ProcessGroupMCCL::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  const std::string call = "monitored_barrier";
  const auto limit = opts.timeout;
  auto work = post(call, c10d::OpType::BARRIER, {}, [this, limit, wait_all_ranks] {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    // One byte per rank, on the heap: a receive given up on may still land.
    auto tokens = std::make_shared<std::vector<std::uint8_t>>(size_, 1);
    std::uint8_t* token = tokens->data();
    auto wait_until = [&](std::vector<mccl::Request>& reqs) {
      std::vector<int> late;
      for (;;) {
        late.clear();
        for (std::size_t i = 0; i < reqs.size(); ++i) {
          if (!reqs[i].test()) late.push_back(static_cast<int>(i));
        }
        if (late.empty() || std::chrono::steady_clock::now() >= deadline) return late;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    };
    auto give_up = [&](std::vector<mccl::Request>& reqs, const std::string& what) {
      // Still in flight: kept (they fail by themselves at MCCL's timeout)
      // rather than destroyed, which would wait for them.
      for (auto& r : reqs) stale_.emplace_back(std::move(r), tokens);
      throw std::runtime_error(what + " within " + std::to_string(limit.count()) + " ms");
    };
    std::vector<mccl::Request> reqs;
    if (rank_ != 0) {
      comm_.send(token, 1, 0, kMonitoredBarrierTag);
      reqs.push_back(comm_.irecv(token + rank_, 1, 0, kMonitoredBarrierTag));
      if (!wait_until(reqs).empty()) give_up(reqs, "rank 0 did not release this rank");
      return Started{};
    }
    for (int r = 1; r < size_; ++r) {
      reqs.push_back(comm_.irecv(token + r, 1, r, kMonitoredBarrierTag));
    }
    std::vector<int> late = wait_until(reqs);
    if (!late.empty()) {
      std::string who;
      for (std::size_t i = 0; i < (wait_all_ranks ? late.size() : 1); ++i) {
        who += (who.empty() ? "" : ", ") + std::to_string(late[i] + 1);
      }
      give_up(reqs, "rank(s) " + who + " did not reach the barrier");
    }
    for (int r = 1; r < size_; ++r) comm_.send(token, 1, r, kMonitoredBarrierTag);
    return Started{};
  });
  work->wait();
}
#endif

}  // namespace mccl::torch_backend
