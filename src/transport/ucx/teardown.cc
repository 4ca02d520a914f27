// Closing the UCX transport's endpoints: a failed peer's at once, every
// one at destruction after what was sent has had its chance to arrive
// (contract in ucx_transport.h, invariants in endpoint.h).
#include <algorithm>
#include <vector>

#include "transport/ucx/endpoint.h"

namespace mccl::transport::ucx {

void UcxEndpoint::close_failed_endpoints() {
  for (Peer& p : peers_) {
    if (p.failed && !p.closed) close_endpoint(p, true);
  }
  reap_closes();
}

void UcxEndpoint::close_endpoint(Peer& p, bool force) {
  p.closed = true;
  if (p.ep == nullptr) return;
  // No callback: the request is polled and freed by reap_closes(), or freed
  // unfinished before ucp_worker_destroy, which insists that a close
  // request still queued then was released by its owner.
  ucp_request_param_t cp{};
  // Force needs UCP_ERR_HANDLING_MODE_PEER on both sides ("Invalid
  // parameter" otherwise), so without failure detection it is never used.
  if (force && config_.detect_peer_failures) {
    cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    cp.flags = UCP_EP_CLOSE_FLAG_FORCE;
  }
  ucs_status_ptr_t r = ucp_ep_close_nbx(p.ep, &cp);
  p.ep = nullptr;
  if (UCS_PTR_IS_PTR(r)) closing_.push_back(r);
}

void UcxEndpoint::reap_closes() {
  std::erase_if(closing_, [](void* r) {
    if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
    ucp_request_free(r);
    return true;
  });
}

UcxEndpoint::~UcxEndpoint() {
  destroying_ = true;
  if (worker_ != nullptr) {
    const common::Deadline deadline = common::Deadline::after(config_.close_timeout);
    close_failed_endpoints();  // their sends complete (cancelled) at once
    // Let what was sent reach the peers that are still alive.
    while (!send_ops_.empty() && !deadline.expired()) wait_idle(deadline);
    for (Peer& p : peers_) {
      if (p.ep != nullptr) close_endpoint(p, p.failed || deadline.expired());
    }
    for (reap_closes(); !closing_.empty() && !deadline.expired(); reap_closes()) {
      wait_idle(deadline);
    }
    for (void* r : closing_) ucp_request_free(r);  // abandoned: completes inside worker destroy
    closing_.clear();
    rndv_to_post_.clear();
    for (Peer& p : peers_) drop_window(p);
    // Whatever did not finish is cancelled here; callbacks may still run.
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
  }
  if (context_ != nullptr) ucp_cleanup(context_);
  for (SendOp* op : send_ops_) delete op;
  for (RecvOp* op : recv_ops_) delete op;
}

}  // namespace mccl::transport::ucx
