// The data path of RealVerbs: one ibv_post_send/ibv_post_recv per chain,
// ibv_poll_cq in batches, and the completion channel. Nothing here blocks
// (the channel's descriptor is non-blocking).
#include <cerrno>

#include "transport/ibud/real_verbs.h"

namespace mccl::transport::ibud {

using common::Status;

Status RealVerbs::post_send(Qp& qp, std::span<const SendWr> wrs, std::size_t& posted) {
  posted = 0;
  if (wrs.empty()) return Status::ok();
  auto& q = static_cast<RealQp&>(qp);
  const std::size_t n = wrs.size();
  q.send_wrs.resize(n);
  q.send_sges.resize(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const SendWr& in = wrs[i];
    ibv_send_wr& w = q.send_wrs[i];
    w = ibv_send_wr{};
    w.wr_id = in.wr_id;
    w.next = i + 1 < n ? &q.send_wrs[i + 1] : nullptr;
    w.sg_list = &q.send_sges[2 * i];
    w.num_sge = static_cast<int>(in.num_sge);
    for (std::uint32_t s = 0; s < in.num_sge && s < 2; ++s) {
      q.send_sges[2 * i + s] = ibv_sge{in.sge[s].addr, in.sge[s].length, in.sge[s].lkey};
    }
    w.opcode = IBV_WR_SEND;
    unsigned flags = 0;
    if (in.signaled) flags |= IBV_SEND_SIGNALED;
    if (in.inline_data) flags |= IBV_SEND_INLINE;
    w.send_flags = flags;
    w.wr.ud.ah = static_cast<const RealAh*>(in.ah)->ah;
    w.wr.ud.remote_qpn = in.remote_qpn;
    w.wr.ud.remote_qkey = in.remote_qkey;
  }
  ibv_send_wr* bad = nullptr;
  const int rc = ::ibv_post_send(q.qp, q.send_wrs.data(), &bad);
  if (rc == 0) {
    posted = n;
    return Status::ok();
  }
  posted = bad != nullptr ? static_cast<std::size_t>(bad - q.send_wrs.data()) : 0;
  return common::transport_error("ibv_post_send: " + errno_text(rc));
}

Status RealVerbs::post_recv(Qp& qp, std::span<const RecvWr> wrs, std::size_t& posted) {
  posted = 0;
  if (wrs.empty()) return Status::ok();
  auto& q = static_cast<RealQp&>(qp);
  const std::size_t n = wrs.size();
  q.recv_wrs.resize(n);
  q.recv_sges.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    q.recv_sges[i] = ibv_sge{wrs[i].sge.addr, wrs[i].sge.length, wrs[i].sge.lkey};
    ibv_recv_wr& w = q.recv_wrs[i];
    w = ibv_recv_wr{};
    w.wr_id = wrs[i].wr_id;
    w.next = i + 1 < n ? &q.recv_wrs[i + 1] : nullptr;
    w.sg_list = &q.recv_sges[i];
    w.num_sge = 1;
  }
  ibv_recv_wr* bad = nullptr;
  const int rc = ::ibv_post_recv(q.qp, q.recv_wrs.data(), &bad);
  if (rc == 0) {
    posted = n;
    return Status::ok();
  }
  posted = bad != nullptr ? static_cast<std::size_t>(bad - q.recv_wrs.data()) : 0;
  return common::transport_error("ibv_post_recv: " + errno_text(rc));
}

Status RealVerbs::poll_cq(Cq& cq, std::span<Wc> out, std::size_t& n) {
  n = 0;
  auto& c = static_cast<RealCq&>(cq);
  if (c.wcs.size() < out.size()) c.wcs.resize(out.size());
  const int got = ::ibv_poll_cq(c.cq, static_cast<int>(out.size()), c.wcs.data());
  if (got < 0) return common::transport_error("ibv_poll_cq failed (" + std::to_string(got) + ")");
  for (int i = 0; i < got; ++i) {
    const ibv_wc& w = c.wcs[static_cast<std::size_t>(i)];
    Wc& o = out[static_cast<std::size_t>(i)];
    o.wr_id = w.wr_id;
    o.status = w.status;
    o.recv = w.opcode == IBV_WC_RECV;
    o.byte_len = w.byte_len;
    o.src_qp = w.src_qp;
    o.slid = w.slid;
    o.grh = (w.wc_flags & IBV_WC_GRH) != 0;
    o.vendor_err = w.vendor_err;
  }
  n = static_cast<std::size_t>(got);
  return Status::ok();
}

Status RealVerbs::req_notify_cq(Cq& cq) {
  if (int rc = ::ibv_req_notify_cq(static_cast<RealCq&>(cq).cq, 0)) {
    return common::transport_error("ibv_req_notify_cq: " + errno_text(rc));
  }
  return Status::ok();
}

Status RealVerbs::get_cq_event(CompChannel& channel, Cq*& cq) {
  cq = nullptr;
  ibv_cq* got = nullptr;
  void* context = nullptr;
  if (::ibv_get_cq_event(static_cast<RealChannel&>(channel).ch, &got, &context) != 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
    return common::transport_error("ibv_get_cq_event: " + errno_text(errno));
  }
  // Acknowledged at once: ibv_destroy_cq waits for every event to be acked.
  ::ibv_ack_cq_events(got, 1);
  cq = static_cast<RealCq*>(context);
  return Status::ok();
}

}  // namespace mccl::transport::ibud
