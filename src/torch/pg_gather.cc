// The gathering calls: all_gather (even and uneven lists), the
// all_gather_into_tensor forms (single and coalesced), by MCCL's multicast
// allgather(v); gather and scatter, by its alltoallv (one rank receives, or
// sends, every block: multicast has nothing to offer).
#include <numeric>

#include "process_group.h"
#include "tensors.h"

namespace mccl::torch_backend {
namespace {

std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> d(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), d.begin(), std::size_t{0});
  return d;
}

// Where rank r's copy of input i lands, for the coalesced allgathers.
using Placement = std::function<at::Tensor(int rank, std::size_t input)>;

// gather's outputs and scatter's inputs: one list of `size` tensors like
// `like` on the root, nothing elsewhere. `what`: "output" or "input".
std::vector<at::Tensor> root_list(const std::string& call,
                                  const std::vector<std::vector<at::Tensor>>& lists, int rank,
                                  int size, int root, const at::Tensor& like, const char* what) {
  if (rank != root) {
    if (!lists.empty() && !lists[0].empty()) {
      reject(call, "only the root (rank " + std::to_string(root) + ") takes " + what + " tensors");
    }
    return {};
  }
  if (lists.size() != 1 || lists[0].size() != static_cast<std::size_t>(size)) {
    reject(call, "the root needs one list of " + std::to_string(size) + " " + what + " tensors");
  }
  for (const at::Tensor& t : lists[0]) check_like(call, t, like);
  return lists[0];
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const std::string call = "all_gather";
  const at::Tensor& in = single_tensor(call, inputs);
  if (outputs.size() != 1 || outputs[0].size() != static_cast<std::size_t>(size_)) {
    reject(call, "needs one list of " + std::to_string(size_) + " output tensors");
  }
  std::vector<at::Tensor> outs = outputs[0];
  check_same_dtype(call, outs);
  check_like(call, outs[rank_], in);  // the others may differ in size (uneven lists)
  // Float tensors through the typed call (which may compress), counted in
  // elements; every other dtype as bytes.
  const auto type = float_type(in.scalar_type());
  std::vector<std::size_t> counts;
  for (const at::Tensor& o : outs) counts.push_back(type ? o.numel() : o.nbytes());
  at::Tensor host_in = host_view(in, true);
  return post(
      call, c10d::OpType::ALLGATHER, outs, [this, host_in, outs, counts, type, o = call_options()] {
        // One contiguous receive buffer, then each block to its tensor: torch's
        // output tensors are separate allocations.
        std::int64_t total = 0;
        for (const at::Tensor& t : outs) total += t.numel();
        at::Tensor flat = at::empty({total}, host_in.options());
        const std::vector<std::size_t> displs = displacements(counts);
        mccl::Request r =
            type ? comm_.iallgatherv(host_in.data_ptr(), flat.data_ptr(), counts, displs, *type, o)
                 : comm_.iallgatherv(host_in.data_ptr(), flat.data_ptr(), counts, displs);
        return Started{std::move(r), [flat, outs] { unflatten(flat, outs); }, {host_in, flat}};
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::_allgather_base(at::Tensor& output,
                                                                 at::Tensor& input,
                                                                 const c10d::AllgatherOptions&) {
  const std::string call = "all_gather_into_tensor";
  check_tensor(call, input);
  check_tensor(call, output);
  if (output.scalar_type() != input.scalar_type() || output.numel() != input.numel() * size_) {
    reject(call, "the output must have the input's dtype and " + std::to_string(size_) +
                     " times its " + std::to_string(input.numel()) + " elements, not " +
                     std::to_string(output.numel()) + " of " + c10::toString(output.scalar_type()));
  }
  at::Tensor host_out = host_view(output, false);
  // Where `input` lies inside `output` at this rank's block, the allgather
  // runs in place (MCCL's send and receive buffers must not overlap).
  const bool in_place = output.is_cpu() && input.is_cpu() && input.nbytes() > 0 &&
                        static_cast<const char*>(input.data_ptr()) ==
                            static_cast<const char*>(output.data_ptr()) + rank_ * input.nbytes();
  at::Tensor host_in = in_place ? input : host_view(input, true);
  return post(call, c10d::OpType::_ALLGATHER_BASE, {output},
              [this, output, host_out, host_in, in_place, o = call_options()] {
                const void* send = in_place ? mccl::kInPlace : host_in.data_ptr();
                const auto type = float_type(host_in.scalar_type());
                mccl::Request r =
                    type ? comm_.iallgather(send, host_out.data_ptr(),
                                            static_cast<std::size_t>(host_in.numel()), *type, o)
                         : comm_.iallgather(send, host_out.data_ptr(), host_in.nbytes());
                return Started{std::move(r),
                               [output, host_out] { copy_back(output, host_out); },
                               {host_in, host_out}};
              });
}

namespace {
// Every input back to back in one block per rank, allgathered at once;
// then `place` says where rank r's copy of input i goes.
struct CoalescedGather {
  at::Tensor flat_in, flat_out;
  std::vector<std::int64_t> offsets;  // of each input inside a block
};
CoalescedGather stage_coalesced(const std::vector<at::Tensor>& inputs, int size) {
  CoalescedGather g;
  g.flat_in = flatten(inputs);
  std::int64_t off = 0;
  for (const at::Tensor& t : inputs) {
    g.offsets.push_back(off);
    off += t.numel();
  }
  g.flat_out = at::empty({size, off}, g.flat_in.options());
  return g;
}
void place_coalesced(const CoalescedGather& g, const std::vector<at::Tensor>& inputs, int size,
                     const Placement& place) {
  for (int r = 0; r < size; ++r) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      at::Tensor dst = place(r, i);
      dst.copy_(g.flat_out[r].narrow(0, g.offsets[i], inputs[i].numel()).view(dst.sizes()));
    }
  }
}
}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const std::string call = "all_gather_coalesced";
  check_same_dtype(call, inputs);
  if (outputs.size() != inputs.size()) reject(call, "needs one output list per input");
  std::vector<at::Tensor> all_outs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (outputs[i].size() != static_cast<std::size_t>(size_)) {
      reject(call, "every output list needs " + std::to_string(size_) + " tensors");
    }
    for (const at::Tensor& o : outputs[i]) check_like(call, o, inputs[i]);
    all_outs.insert(all_outs.end(), outputs[i].begin(), outputs[i].end());
  }
  auto outs = outputs;
  return post(call, c10d::OpType::ALLGATHER_COALESCED, all_outs, [this, inputs, outs] {
    auto g = std::make_shared<CoalescedGather>(stage_coalesced(inputs, size_));
    mccl::Request r =
        comm_.iallgather(g->flat_in.data_ptr(), g->flat_out.data_ptr(), g->flat_in.nbytes());
    return Started{std::move(r),
                   [this, g, inputs, outs] {
                     place_coalesced(*g, inputs, size_, [&](int rank, std::size_t i) {
                       return outs[i][static_cast<std::size_t>(rank)];
                     });
                   },
                   {g->flat_in, g->flat_out}};
  });
}

#if TORCH_VERSION_MAJOR >= 2
c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const std::string call = "allgather_into_tensor_coalesced";
  check_same_dtype(call, inputs);
  if (outputs.size() != inputs.size()) reject(call, "needs one output tensor per input");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check_tensor(call, outputs[i]);
    if (outputs[i].scalar_type() != inputs[i].scalar_type() ||
        outputs[i].numel() != inputs[i].numel() * size_) {
      reject(call, "output " + std::to_string(i) + " must have its input's dtype and " +
                       std::to_string(size_) + " times its elements");
    }
  }
  return post(call, allgather_into_tensor_coalesced_op(), outputs, [this, inputs, outputs] {
    auto g = std::make_shared<CoalescedGather>(stage_coalesced(inputs, size_));
    mccl::Request r =
        comm_.iallgather(g->flat_in.data_ptr(), g->flat_out.data_ptr(), g->flat_in.nbytes());
    return Started{std::move(r),
                   [this, g, inputs, outputs] {
                     place_coalesced(*g, inputs, size_, [&](int rank, std::size_t i) {
                       return outputs[i].view({size_, -1})[rank];
                     });
                   },
                   {g->flat_in, g->flat_out}};
  });
}
#endif

ProcessGroupMCCL::Started ProcessGroupMCCL::exchange(const at::Tensor& send,
                                                     std::vector<std::size_t> send_counts,
                                                     const at::Tensor& recv,
                                                     std::vector<std::size_t> recv_counts) {
  mccl::Request r = comm_.ialltoallv(
      send.defined() ? send.data_ptr() : nullptr, send_counts, displacements(send_counts),
      recv.defined() ? recv.data_ptr() : nullptr, recv_counts, displacements(recv_counts));
  return Started{std::move(r), {}, {send, recv}};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const std::string call = "gather";
  const at::Tensor& in = single_tensor(call, inputs);
  check_root(call, opts.rootRank);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs = root_list(call, outputs, rank_, size_, root, in, "output");
  at::Tensor host_in = host_view(in, true);
  return post(call, c10d::OpType::GATHER, outs, [this, host_in, outs, root] {
    std::vector<std::size_t> sc(size_, 0), rc(size_, 0);
    sc[root] = host_in.nbytes();
    at::Tensor flat;
    if (rank_ == root) {
      rc.assign(size_, host_in.nbytes());
      flat = at::empty({size_ * host_in.numel()}, host_in.options());
    }
    Started s = exchange(host_in, sc, flat, rc);
    s.then = [flat, outs] {
      if (!outs.empty()) unflatten(flat, outs);
    };
    return s;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMCCL::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const std::string call = "scatter";
  const at::Tensor& out = single_tensor(call, outputs);
  check_root(call, opts.rootRank);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins = root_list(call, inputs, rank_, size_, root, out, "input");
  // Staged here, on the caller's thread, where the inputs are known ready.
  at::Tensor flat = ins.empty() ? at::Tensor() : flatten(ins);
  at::Tensor host_out = host_view(out, false);
  return post(call, c10d::OpType::SCATTER, outputs, [this, flat, out, host_out, root] {
    std::vector<std::size_t> sc(size_, 0), rc(size_, 0);
    if (rank_ == root) sc.assign(size_, host_out.nbytes());
    rc[root] = host_out.nbytes();
    Started s = exchange(flat, sc, host_out, rc);
    s.then = [out, host_out] { copy_back(out, host_out); };
    return s;
  });
}

}  // namespace mccl::torch_backend
