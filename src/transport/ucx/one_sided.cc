// One-sided reads over UCX (one_sided.h): ucp_mem_map and a packed rkey
// per registered buffer; ucp_get_nbx with a key unpacked per read (keys
// are small and reads of repair ranges are few; a cache can come when the
// protocol uses this).
#include <cstring>
#include <string>

#include "transport/ucx/endpoint.h"

namespace mccl::transport::ucx {
namespace {

void get_trampoline(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<GetOp*>(user_data);
  op->owner->on_get_done(op, status);
  ucp_request_free(request);
}

}  // namespace

common::Status UcxEndpoint::register_buffer(const void* buffer, std::size_t len,
                                            RegisteredBuffer& out) {
  if (!config_.one_sided) {
    return common::unavailable_error(me() + "one-sided reads are disabled (one_sided = false)");
  }
  if (buffer == nullptr || len == 0) {
    return common::invalid_argument(me() + "register_buffer needs a buffer of at least one byte");
  }
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = const_cast<void*>(buffer);
  mp.length = len;
  ucp_mem_h memh = nullptr;
  ucs_status_t st = ucp_mem_map(context_, &mp, &memh);
  if (st != UCS_OK) {
    return common::transport_error(me() + "ucp_mem_map() of " + std::to_string(len) +
                                   " bytes: " + ucs_status_string(st));
  }
  void* packed = nullptr;
  std::size_t packed_size = 0;
  st = ucp_rkey_pack(context_, memh, &packed, &packed_size);
  if (st != UCS_OK) {
    ucp_mem_unmap(context_, memh);
    return common::transport_error(me() + "ucp_rkey_pack(): " + ucs_status_string(st));
  }
  out.key.assign(static_cast<const std::byte*>(packed),
                 static_cast<const std::byte*>(packed) + packed_size);
  ucp_rkey_buffer_release(packed);
  out.id = ++next_region_;
  out.address = reinterpret_cast<std::uintptr_t>(buffer);
  regions_.emplace(out.id, memh);
  return common::Status::ok();
}

common::Status UcxEndpoint::deregister_buffer(std::uint64_t id) {
  auto it = regions_.find(id);
  if (it == regions_.end()) {
    return common::invalid_argument(me() + "deregister_buffer: no registered buffer " +
                                    std::to_string(id));
  }
  const ucs_status_t st = ucp_mem_unmap(context_, it->second);
  regions_.erase(it);
  if (st != UCS_OK)
    return common::transport_error(me() + "ucp_mem_unmap(): " + ucs_status_string(st));
  return common::Status::ok();
}

common::Status UcxEndpoint::get(int peer, std::uint64_t remote_address,
                                std::span<const std::byte> key, void* local, std::size_t len,
                                Completion done) {
  if (!config_.one_sided) {
    return common::unavailable_error(me() + "one-sided reads are disabled (one_sided = false)");
  }
  if (peer < 0 || peer >= size_) {
    return common::invalid_argument(me() + "get from rank " + std::to_string(peer) +
                                    ", outside 0.." + std::to_string(size_ - 1));
  }
  if (len > 0 && (local == nullptr || remote_address == 0 || key.empty())) {
    return common::invalid_argument(me() + "get needs a local buffer, a remote address and a key");
  }
  auto* op = new GetOp{this, peer, nullptr, std::move(done)};
  get_ops_.insert(op);
  ++counters_.gets_posted;
  counters_.get_bytes += len;
  if (len == 0 || peer == rank_) {
    // Our own registered memory (or nothing): no UCX operation needed.
    if (len > 0) std::memcpy(local, reinterpret_cast<const void*>(remote_address), len);
    op->status = UCS_OK;
    gets_done_.push_back(op);
    return common::Status::ok();
  }
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  auto undo = [&] {
    get_ops_.erase(op);
    delete op;
    --counters_.gets_posted;
    counters_.get_bytes -= len;
  };
  if (p.failed || p.ep == nullptr) {
    undo();
    return failure_of(peer);
  }
  ucs_status_t st = ucp_ep_rkey_unpack(p.ep, key.data(), &op->rkey);
  if (st != UCS_OK) {
    undo();
    return common::transport_error(me() + "ucp_ep_rkey_unpack() of rank " + std::to_string(peer) +
                                   "'s key: " + ucs_status_string(st));
  }
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.send = get_trampoline;
  rp.user_data = op;
  ucs_status_ptr_t r = ucp_get_nbx(p.ep, local, len, remote_address, op->rkey, &rp);
  if (r == nullptr) {
    op->status = UCS_OK;
    gets_done_.push_back(op);
  } else if (UCS_PTR_IS_ERR(r)) {
    ucp_rkey_destroy(op->rkey);
    undo();
    return common::transport_error(me() + "ucp_get_nbx() from rank " + std::to_string(peer) + ": " +
                                   ucs_status_string(UCS_PTR_STATUS(r)));
  }
  return common::Status::ok();
}

}  // namespace mccl::transport::ucx
