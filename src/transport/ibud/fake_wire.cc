// The data path of the fake fabric: posting, the "HCA" executing sends,
// multicast delivery with its drops, completions and completion events.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/ibud/fake_state.h"

namespace mccl::transport::ibud {

using common::Status;
using Lock = std::lock_guard<std::mutex>;

namespace {

Status post_error(const char* call, int err, const std::string& why) {
  return common::transport_error(std::string(call) + ": " + errno_text(err) + ": " + why);
}

// The region of `sge` inside a memory region of `pd` with its lkey, or
// nullptr when it is not registered there.
std::byte* registered(const FakeFabricImpl& f, std::uint64_t pd, const Sge& sge) {
  auto p = f.mrs.find(pd);
  if (p == f.mrs.end()) return nullptr;
  auto m = p->second.find(sge.lkey);
  if (m == p->second.end()) return nullptr;
  auto* at = reinterpret_cast<std::byte*>(sge.addr);
  const auto [base, len] = m->second;
  if (at < base || at + sge.length > base + len) return nullptr;
  return at;
}

}  // namespace

void FakeFabricImpl::pump() {
  for (auto& [id, qp] : qps) {
    while (!qp->sq.empty()) {
      PendingSend s = std::move(qp->sq.front());
      qp->sq.pop_front();
      execute(*qp, s);
    }
  }
}

void FakeFabricImpl::complete(std::uint64_t cq_id, const Wc& wc) {
  auto it = cqs.find(cq_id);
  if (it == cqs.end()) return;
  FCq& cq = *it->second;
  if (cq.entries.size() >= cq.capacity) {
    cq.overrun = true;  // hardware: IBV_EVENT_CQ_ERR, the QPs go to the error state
    return;
  }
  cq.entries.push_back(wc);
  if (!cq.armed) return;
  cq.armed = false;
  if (auto ch = channels.find(cq.channel); ch != channels.end()) {
    ch->second->events.push_back(cq_id);
    const std::uint64_t one = 1;
    [[maybe_unused]] auto w = ::write(ch->second->fd, &one, sizeof one);
    counters.cq_events++;
  }
}

void FakeFabricImpl::retire(FQp& qp, const Wc& wc, bool always) {
  if (!always) {
    qp.unsignaled_done++;
    return;
  }
  complete(qp.send_cq, wc);
  counters.signaled++;
  // The completion frees its own slot and those of the unsignaled before it.
  qp.sq_used -= qp.unsignaled_done + 1;
  qp.unsignaled_done = 0;
}

void FakeFabricImpl::execute(FQp& qp, PendingSend& s) {
  counters.sends_executed++;
  Wc wc;
  wc.wr_id = s.wr.wr_id;
  if (qp.error) {
    wc.status = IBV_WC_WR_FLUSH_ERR;
    return retire(qp, wc, true);
  }
  // The HCA reads non-inline data now, not at post time.
  if (!s.wr.inline_data) {
    for (std::uint32_t i = 0; i < s.wr.num_sge; ++i) {
      const std::byte* at = registered(*this, qp.pd, s.wr.sge[i]);
      if (at == nullptr) {
        counters.prot_errors++;
        qp.error = true;
        wc.status = IBV_WC_LOC_PROT_ERR;
        return retire(qp, wc, true);
      }
      s.data.insert(s.data.end(), at, at + s.wr.sge[i].length);
    }
  }
  const FHost& h = *hosts[static_cast<std::size_t>(qp.host)];
  const std::size_t mtu = h.cfg.devices[static_cast<std::size_t>(qp.dev)].ports[qp.port - 1u].mtu;
  wc.byte_len = static_cast<std::uint32_t>(s.data.size());
  if (s.data.size() > mtu) {
    counters.send_len_errors++;
    qp.error = true;
    wc.status = IBV_WC_LOC_LEN_ERR;
    return retire(qp, wc, true);
  }
  const std::uint32_t qkey = (s.wr.remote_qkey & 0x80000000u) != 0 ? qp.qkey : s.wr.remote_qkey;
  deliver(qp, *static_cast<const FAh*>(s.wr.ah), qkey, s.data);
  retire(qp, wc, s.wr.signaled);
}

void FakeFabricImpl::deliver(FQp& from, const FAh& ah, std::uint32_t qkey,
                             const std::vector<std::byte>& data) {
  auto g = groups.find(ah.to.mgid);
  if (g == groups.end() || g->second.members.empty() || ah.to.mlid != g->second.mlid) {
    counters.unrouted++;
    return;
  }
  // The 40-byte GRH: IPv6-like header, source GID, destination MGID.
  std::byte grh[kGrhBytes] = {};
  grh[0] = std::byte{0x60};
  const std::size_t paylen = data.size() + 24;  // BTH + DETH + ICRC
  grh[4] = std::byte(paylen >> 8);
  grh[5] = std::byte(paylen & 0xFF);
  grh[6] = std::byte{0x1B};
  grh[7] = std::byte{ah.to.hop_limit};
  const Gid sgid = port_gid(from.host, from.dev, from.port);
  std::memcpy(grh + 8, sgid.data(), 16);
  std::memcpy(grh + 24, ah.to.mgid.data(), 16);

  const std::vector<std::uint64_t> targets = g->second.attached;
  for (std::uint64_t id : targets) {
    auto it = qps.find(id);
    if (it == qps.end()) continue;
    FQp& to = *it->second;
    const FHost& th = *hosts[static_cast<std::size_t>(to.host)];
    const std::string key =
        member(to.host, th.cfg.devices[static_cast<std::size_t>(to.dev)].name, to.port);
    if (g->second.members.count(key) == 0) continue;  // the switch does not forward to that port
    if (cfg.loss > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < cfg.loss) {
      counters.lost++;
      continue;
    }
    if (to.qkey != qkey) {
      counters.qkey_dropped++;
      continue;
    }
    if (to.state < 2 || to.rq.empty()) {
      counters.no_recv_dropped++;
      continue;
    }
    const RecvWr r = to.rq.front();
    to.rq.pop_front();
    Wc wc;
    wc.wr_id = r.wr_id;
    wc.recv = true;
    wc.src_qp = from.qp_num;
    wc.slid = from.lid;
    wc.grh = true;
    wc.byte_len = static_cast<std::uint32_t>(kGrhBytes + data.size());
    std::byte* at = registered(*this, to.pd, r.sge);
    if (at == nullptr) {
      counters.prot_errors++;
      wc.status = IBV_WC_LOC_PROT_ERR;
    } else if (kGrhBytes + data.size() > r.sge.length) {
      counters.recv_len_errors++;
      wc.status = IBV_WC_LOC_LEN_ERR;
    } else {
      std::memcpy(at, grh, kGrhBytes);
      if (!data.empty()) std::memcpy(at + kGrhBytes, data.data(), data.size());
      counters.delivered++;
      if (&to == &from) counters.self_delivered++;
    }
    complete(to.recv_cq, wc);
  }
}

Status FakeVerbs::post_send(Qp& qp, std::span<const SendWr> wrs, std::size_t& posted) {
  Lock l(fab_->mu);
  posted = 0;
  fab_->pump();  // what was posted before goes out first
  auto& q = static_cast<FQp&>(qp);
  if (q.state != 3) return post_error("ibv_post_send", EINVAL, "the QP is not in RTS");
  for (const SendWr& w : wrs) {
    if (w.num_sge > q.max_send_sge || w.ah == nullptr) {
      return post_error("ibv_post_send", EINVAL, "bad work request");
    }
    if (q.sq_used >= q.max_send_wr) {
      return post_error("ibv_post_send", ENOMEM, "the send queue is full");
    }
    PendingSend s{w, {}};
    if (w.inline_data) {
      std::size_t total = 0;
      for (std::uint32_t i = 0; i < w.num_sge; ++i) total += w.sge[i].length;
      if (total > q.max_inline) {
        return post_error("ibv_post_send", EINVAL, "inline data above max_inline_data");
      }
      for (std::uint32_t i = 0; i < w.num_sge; ++i) {
        const auto* p = reinterpret_cast<const std::byte*>(w.sge[i].addr);
        s.data.insert(s.data.end(), p, p + w.sge[i].length);
      }
      fab_->counters.inline_sends++;
    }
    q.sq.push_back(std::move(s));
    q.sq_used++;
    fab_->counters.sends_posted++;
    posted++;
  }
  return Status::ok();
}

Status FakeVerbs::post_recv(Qp& qp, std::span<const RecvWr> wrs, std::size_t& posted) {
  Lock l(fab_->mu);
  posted = 0;
  auto& q = static_cast<FQp&>(qp);
  if (q.state < 1) return post_error("ibv_post_recv", EINVAL, "the QP is in RESET");
  for (const RecvWr& w : wrs) {
    if (q.rq.size() >= q.max_recv_wr) {
      return post_error("ibv_post_recv", ENOMEM, "the receive queue is full");
    }
    q.rq.push_back(w);
    posted++;
  }
  return Status::ok();
}

Status FakeVerbs::poll_cq(Cq& cq, std::span<Wc> out, std::size_t& n) {
  Lock l(fab_->mu);
  n = 0;
  fab_->pump();
  auto& c = static_cast<FCq&>(cq);
  if (c.overrun) {
    return common::transport_error("ibv_poll_cq: completion queue overrun (IBV_EVENT_CQ_ERR)");
  }
  while (n < out.size() && !c.entries.empty()) {
    out[n++] = c.entries.front();
    c.entries.pop_front();
  }
  return Status::ok();
}

Status FakeVerbs::req_notify_cq(Cq& cq) {
  Lock l(fab_->mu);
  static_cast<FCq&>(cq).armed = true;
  return Status::ok();
}

Status FakeVerbs::get_cq_event(CompChannel& channel, Cq*& cq) {
  Lock l(fab_->mu);
  cq = nullptr;
  auto& ch = static_cast<FChannel&>(channel);
  if (ch.events.empty()) return Status::ok();
  const std::uint64_t id = ch.events.front();
  ch.events.pop_front();
  std::uint64_t v;
  [[maybe_unused]] auto r = ::read(ch.fd, &v, sizeof v);
  if (auto it = fab_->cqs.find(id); it != fab_->cqs.end()) cq = it->second;
  return Status::ok();
}

}  // namespace mccl::transport::ibud
