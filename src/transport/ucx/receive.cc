// The receive side of the UCX transport: the active-message callback, the
// completion callbacks, and the per-sender window that puts messages back
// in order. Callbacks record and return; poll() does everything else.
#include <cstring>
#include <string>

#include "transport/ucx/endpoint.h"

namespace mccl::transport::ucx {
namespace {

// Eager messages above this size stay in UCX's buffer until delivery
// (when UCX offers that) instead of being copied out of the callback.
constexpr std::size_t kHoldThreshold = 1024;
// A sequence number this far ahead of the next one to deliver is not a
// reordering, it is a corrupt or foreign stream.
constexpr std::uint64_t kMaxWindow = std::uint64_t{1} << 20;

void recv_trampoline(void* request, ucs_status_t status, size_t length, void* user_data) {
  auto* op = static_cast<RecvOp*>(user_data);
  op->owner->on_recv_done(op, status, length);
  ucp_request_free(request);
}

}  // namespace

ucs_status_t UcxEndpoint::on_am(const void* header, std::size_t header_length, void* data,
                                std::size_t length, const ucp_am_recv_param_t* param) {
  wire::AmHeader h;
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (header == nullptr ||
      !wire::decode({static_cast<const std::byte*>(header), header_length}, h) ||
      h.session != session_ || h.from >= static_cast<std::uint32_t>(size_) ||
      h.from == static_cast<std::uint32_t>(rank_)) {
    ++counters_.dropped_foreign;
    return UCS_OK;  // a rendezvous is declined; its sender completes
  }
  Peer& p = peers_[h.from];
  switch (h.kind) {
    case wire::Kind::kHello:
      if (!p.hello) p.ack_due = true;
      p.hello = true;
      return UCS_OK;
    case wire::Kind::kHelloAck:
      p.acked = true;
      return UCS_OK;
    case wire::Kind::kData:
      break;
  }
  if (destroying_ || p.reported) {
    ++counters_.dropped_after_failure;
    return UCS_OK;
  }
  if (h.seq < p.next_deliver) {
    ++counters_.dropped_foreign;  // a duplicate: UCX does not make them
    return UCS_OK;
  }
  const std::uint64_t index = h.seq - p.next_deliver;
  if (index >= kMaxWindow || length > wire::kMaxMessageBytes) {
    mark_failed(p, "it sent message " + std::to_string(h.seq) + " of " + std::to_string(length) +
                       " bytes while message " + std::to_string(p.next_deliver) +
                       " is due (corrupt stream)");
    return UCS_OK;
  }
  if (p.window.size() <= index) p.window.resize(static_cast<std::size_t>(index) + 1);
  Slot& s = p.window[static_cast<std::size_t>(index)];
  if (s.state != SlotState::kEmpty) {
    ++counters_.dropped_foreign;
    return UCS_OK;
  }
  s.msg.size = length;
  if (rndv) {
    // Fetched by poll(): the official pattern, and it keeps every UCX call
    // that may start communication out of the callback.
    s.state = SlotState::kRndvWaiting;
    s.rndv_desc = data;
    rndv_to_post_.emplace_back(p.rank, h.seq);
    ++counters_.received_rndv;
    return UCS_INPROGRESS;
  }
  became_ready(p, h.seq, s);
  if (length > kHoldThreshold && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0) {
    s.msg.ucx_data = data;
    s.msg.data = static_cast<const std::byte*>(data);
    ++counters_.received_eager_held;
    return UCS_INPROGRESS;
  }
  if (length > 0) {
    s.msg.owned = std::make_unique_for_overwrite<std::byte[]>(length);
    std::memcpy(s.msg.owned.get(), data, length);
    s.msg.data = s.msg.owned.get();
  }
  ++counters_.received_eager_copied;
  return UCS_OK;
}

void UcxEndpoint::post_rendezvous() {
  // Swap first: a receive that completes inline changes nothing here, but
  // keep the loop independent of the member anyway.
  std::vector<std::pair<int, std::uint64_t>> todo;
  todo.swap(rndv_to_post_);
  for (auto [q, seq] : todo) {
    Peer& p = peers_[static_cast<std::size_t>(q)];
    if (p.reported || seq < p.next_deliver) continue;  // dropped: descriptor already released
    Slot& s = p.window[static_cast<std::size_t>(seq - p.next_deliver)];
    if (s.state != SlotState::kRndvWaiting) continue;
    auto* op = new RecvOp{this, q, seq, nullptr, s.msg.size};
    op->buffer = std::make_unique_for_overwrite<std::byte[]>(op->size);
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.recv_am = recv_trampoline;
    rp.user_data = op;
    void* desc = s.rndv_desc;
    s.rndv_desc = nullptr;
    ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker_, desc, op->buffer.get(), op->size, &rp);
    if (r == nullptr) {
      s.msg.owned = std::move(op->buffer);
      s.msg.data = s.msg.owned.get();
      became_ready(p, seq, s);
      delete op;
    } else if (UCS_PTR_IS_ERR(r)) {
      s.state = SlotState::kLost;
      mark_failed(p, "the rendezvous receive of message " + std::to_string(seq) + " (" +
                         std::to_string(op->size) +
                         " bytes) failed: " + ucs_status_string(UCS_PTR_STATUS(r)));
      delete op;
    } else {
      s.state = SlotState::kRndvPosted;
      ++p.rndv_in_flight;
      recv_ops_.insert(op);
    }
  }
}

void UcxEndpoint::on_recv_done(RecvOp* op, ucs_status_t status, std::size_t length) {
  recv_ops_.erase(op);
  if (!op->orphaned) {
    Peer& p = peers_[static_cast<std::size_t>(op->peer)];
    --p.rndv_in_flight;
    Slot& s = p.window[static_cast<std::size_t>(op->seq - p.next_deliver)];
    if (status == UCS_OK && length == op->size) {
      s.msg.owned = std::move(op->buffer);
      s.msg.data = s.msg.owned.get();
      became_ready(p, op->seq, s);
    } else {
      s.state = SlotState::kLost;
      mark_failed(p, "the rendezvous receive of message " + std::to_string(op->seq) + " (" +
                         std::to_string(op->size) + " bytes) failed: " +
                         (status == UCS_OK ? std::string("short by ") +
                                                 std::to_string(op->size - length) + " bytes"
                                           : std::string(ucs_status_string(status))));
    }
  }
  delete op;
}

void UcxEndpoint::became_ready(Peer& p, std::uint64_t seq, Slot& s) {
  s.state = SlotState::kReady;
  counters_.buffered_bytes += s.msg.size;
  if (seq + 1 < p.ready_mark) ++counters_.completed_out_of_order;
  if (seq + 1 > p.ready_mark) p.ready_mark = seq + 1;
}

void UcxEndpoint::on_send_done(SendOp* op, ucs_status_t status) {
  send_ops_.erase(op);
  Peer& p = peers_[static_cast<std::size_t>(op->peer)];
  p.outstanding_bytes -= op->size;
  counters_.outstanding_bytes -= op->size;
  if (status != UCS_OK && status != UCS_ERR_CANCELED) {
    mark_failed(p, std::string("a send to it failed: ") + ucs_status_string(status));
  }
  delete op;
}

void UcxEndpoint::on_ep_error(Peer& p, ucs_status_t status) {
  mark_failed(p, std::string("UCX reported its endpoint failed: ") + ucs_status_string(status));
}

void UcxEndpoint::mark_failed(Peer& p, std::string why) {
  if (p.failed) return;
  p.failed = true;
  p.why = std::move(why);
  p.failed_at = common::now();
}

void UcxEndpoint::drop_window(Peer& p) {
  for (Slot& s : p.window) {
    if (s.state == SlotState::kReady) counters_.buffered_bytes -= s.msg.size;
    release(s.msg);
    if (s.rndv_desc != nullptr) ucp_am_data_release(worker_, s.rndv_desc);
    s.rndv_desc = nullptr;
  }
  p.window.clear();
  for (RecvOp* op : recv_ops_) {
    if (op->peer == p.rank) op->orphaned = true;
  }
  p.rndv_in_flight = 0;
}

void UcxEndpoint::release(Held& m) {
  if (m.ucx_data != nullptr) ucp_am_data_release(worker_, m.ucx_data);
  m.ucx_data = nullptr;
  m.owned.reset();
  m.data = nullptr;
}

}  // namespace mccl::transport::ucx
