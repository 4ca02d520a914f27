#include "transport/ibud/endpoint.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/log.h"

namespace mccl::transport::ibud {

using common::Status;

namespace {

std::size_t size_of(const OutDatagram& d) { return d.header.size() + d.payload.size(); }

std::uint64_t addr_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

AlignedBuffer AlignedBuffer::make(std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  const std::size_t n = std::max<std::size_t>(kPage, (bytes + kPage - 1) / kPage * kPage);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kPage, n));
  AlignedBuffer b;
  if (p == nullptr) return b;
  std::memset(p, 0, n);
  b.ptr.reset(p);
  b.size = n;
  return b;
}

IbEndpoint::IbEndpoint(Resources res, IbInfo info, int rank)
    : res_(std::move(res)),
      info_(std::move(info)),
      rank_(rank),
      slot_bytes_(kGrhBytes + info_.mtu) {
  send_wrs_.reserve(info_.sq_depth);
  wcs_.resize(kPollBatch);
  repost_.reserve(kPollBatch);
}

DatagramCaps IbEndpoint::caps() const {
  return DatagramCaps{info_.mtu, info_.sq_depth, /*loopback=*/false, "ibud"};
}

std::string IbEndpoint::where() const {
  return "ibud transport (" + info_.device + ":" + std::to_string(info_.port) + ", MGID " +
         info_.mgid + ")";
}

Status IbEndpoint::fail(Status st) {
  if (error_.is_ok()) {
    error_ = Status(st.code(), where() + ": " + st.message());
    common::logf(common::LogLevel::kError, rank_, "%s", error_.message().c_str());
  }
  return error_;
}

Status IbEndpoint::arm(Cq& cq, bool& armed) {
  if (armed) return Status::ok();
  if (Status st = res_.verbs->req_notify_cq(cq); !st) return st;
  armed = true;
  return Status::ok();
}

Status IbEndpoint::take_events() {
  for (;;) {
    Cq* cq = nullptr;
    if (Status st = res_.verbs->get_cq_event(*res_.channel, cq); !st) return st;
    if (cq == nullptr) return Status::ok();
    // One event per arming: the CQ must be armed again to raise another.
    if (cq == res_.recv_cq.get()) recv_armed_ = false;
    if (cq == res_.send_cq.get()) send_armed_ = false;
    counters_.cq_events.fetch_add(1, std::memory_order_relaxed);
  }
}

Status IbEndpoint::reap_sends() {
  std::size_t n = 0;
  do {
    if (Status st = res_.verbs->poll_cq(*res_.send_cq, wcs_, n); !st) return fail(st);
    for (std::size_t i = 0; i < n; ++i) {
      const Wc& wc = wcs_[i];
      if (wc.status != IBV_WC_SUCCESS) {
        return fail(common::transport_error("send completion " + wc_status_text(wc.status) +
                                            " (vendor error " + std::to_string(wc.vendor_err) +
                                            ")"));
      }
      completed_ = std::max(completed_, wc.wr_id + 1);
    }
    counters_.send_completions.fetch_add(n, std::memory_order_relaxed);
  } while (n == wcs_.size());
  return Status::ok();
}

Status IbEndpoint::send(std::span<const OutDatagram> batch, std::size_t& accepted) {
  accepted = 0;
  if (!error_.is_ok()) return error_;
  if (Status st = reap_sends(); !st) return st;
  // Datagrams go in order, so only those before the first oversize one can.
  std::size_t limit = 0;
  while (limit < batch.size() && size_of(batch[limit]) <= info_.mtu) ++limit;

  send_wrs_.clear();
  for (std::size_t i = 0; i < limit; ++i) {
    const std::uint64_t seq = posted_ + send_wrs_.size();
    if (seq - completed_ >= info_.sq_depth) break;  // every slot is in flight
    const OutDatagram& d = batch[i];
    SendWr w;
    w.wr_id = seq;
    w.ah = res_.ah.get();
    w.remote_qpn = kMulticastQpn;
    w.remote_qkey = info_.qkey;
    w.signaled = (seq + 1) % info_.signal_every == 0;
    if (size_of(d) <= info_.max_inline) {
      // Copied into the WQE by the post itself: the caller's memory may be
      // neither registered nor kept.
      w.inline_data = true;
      for (auto part : {d.header, d.payload}) {
        if (!part.empty()) {
          w.sge[w.num_sge++] =
              Sge{addr_of(part.data()), static_cast<std::uint32_t>(part.size()), 0};
        }
      }
    } else {
      std::byte* slot = res_.send_mem.data() + (seq % info_.sq_depth) * info_.mtu;
      std::byte* at = slot;
      for (auto part : {d.header, d.payload}) {
        if (part.empty()) continue;
        std::memcpy(at, part.data(), part.size());
        w.sge[w.num_sge++] =
            Sge{addr_of(at), static_cast<std::uint32_t>(part.size()), res_.send_mr->lkey};
        at += part.size();
      }
    }
    send_wrs_.push_back(w);
  }

  std::size_t posted = 0;
  const Status st = res_.verbs->post_send(*res_.qp, send_wrs_, posted);
  posted_ += posted;
  accepted = posted;
  std::uint64_t bytes = 0, inlined = 0;
  for (std::size_t i = 0; i < posted; ++i) {
    bytes += size_of(batch[i]);
    inlined += send_wrs_[i].inline_data ? 1 : 0;
  }
  counters_.datagrams_sent.fetch_add(posted, std::memory_order_relaxed);
  counters_.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
  counters_.inline_sent.fetch_add(inlined, std::memory_order_relaxed);
  if (!st) return fail(st);

  if (accepted == limit && limit < batch.size()) {
    return common::invalid_argument(where() + ": datagram of " +
                                    std::to_string(size_of(batch[limit])) +
                                    " bytes is over the MTU of " + std::to_string(info_.mtu));
  }
  if (accepted < batch.size()) {
    counters_.send_busy.fetch_add(1, std::memory_order_relaxed);
    // Busy: a sleeping engine must wake when slots free up.
    if (Status a = arm(*res_.send_cq, send_armed_); !a) return fail(a);
  }
  return Status::ok();
}

Status IbEndpoint::poll(DatagramHandler& handler, std::size_t max, std::size_t& delivered) {
  delivered = 0;
  if (!error_.is_ok()) return error_;
  if (Status st = take_events(); !st) return fail(st);
  if (Status st = reap_sends(); !st) return st;
  std::uint64_t bytes = 0;
  while (delivered < max) {
    const std::size_t want = std::min(kPollBatch, max - delivered);
    std::size_t n = 0;
    if (Status st = res_.verbs->poll_cq(*res_.recv_cq, std::span(wcs_.data(), want), n); !st) {
      return fail(st);
    }
    if (n == 0) {
      if (recv_armed_) break;
      // Arm, then look once more: a completion that arrived between the
      // empty poll and the arming raises no event.
      if (Status st = arm(*res_.recv_cq, recv_armed_); !st) return fail(st);
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Wc& wc = wcs_[i];
      if (wc.status != IBV_WC_SUCCESS) {
        return fail(common::transport_error("receive completion " + wc_status_text(wc.status) +
                                            " (vendor error " + std::to_string(wc.vendor_err) +
                                            ")"));
      }
      std::byte* buf = res_.recv_mem.data() + wc.wr_id * slot_bytes_;
      if (wc.src_qp == info_.qp_num && wc.slid == info_.lid) {
        counters_.own_dropped.fetch_add(1, std::memory_order_relaxed);
      } else if (wc.byte_len < kGrhBytes || !wc.grh) {
        counters_.short_dropped.fetch_add(1, std::memory_order_relaxed);
      } else {
        views_.emplace_back(buf + kGrhBytes, wc.byte_len - kGrhBytes);
        bytes += wc.byte_len - kGrhBytes;
      }
      repost_.push_back(RecvWr{wc.wr_id, Sge{addr_of(buf), static_cast<std::uint32_t>(slot_bytes_),
                                             res_.recv_mr->lkey}});
    }
    // The buffers go back to the receive queue only after the handler saw them.
    if (!views_.empty()) handler.on_datagrams(views_);
    delivered += views_.size();
    views_.clear();
    std::size_t reposted = 0;
    const Status st = res_.verbs->post_recv(*res_.qp, repost_, reposted);
    repost_.clear();
    if (!st) return fail(st);
  }
  counters_.datagrams_received.fetch_add(delivered, std::memory_order_relaxed);
  counters_.bytes_received.fetch_add(bytes, std::memory_order_relaxed);
  return Status::ok();
}

IbCounters IbEndpoint::counters() const {
  const auto get = [](const std::atomic<std::uint64_t>& a) {
    return a.load(std::memory_order_relaxed);
  };
  IbCounters c;
  c.datagrams_sent = get(counters_.datagrams_sent);
  c.bytes_sent = get(counters_.bytes_sent);
  c.inline_sent = get(counters_.inline_sent);
  c.datagrams_received = get(counters_.datagrams_received);
  c.bytes_received = get(counters_.bytes_received);
  c.own_dropped = get(counters_.own_dropped);
  c.short_dropped = get(counters_.short_dropped);
  c.send_busy = get(counters_.send_busy);
  c.send_completions = get(counters_.send_completions);
  c.cq_events = get(counters_.cq_events);
  return c;
}

}  // namespace mccl::transport::ibud
