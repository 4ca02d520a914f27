// The UCX transport's send, poll and wake-up (contract in ucx_transport.h,
// invariants in endpoint.h); closing and destruction are in teardown.cc.
#include "transport/ucx/endpoint.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace mccl::transport::ucx {
namespace {

using namespace std::chrono_literals;

// Messages up to this size are first offered to UCX's immediate path.
constexpr std::size_t kImmediateBytes = 8192;
// ucp_worker_progress calls per poll(), at most (each may run many callbacks).
constexpr int kProgressRounds = 32;
// How long a failed peer's rendezvous receives may take to resolve before
// the failure is reported anyway.
constexpr auto kFailureGrace = 1s;

void send_trampoline(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<SendOp*>(user_data);
  op->owner->on_send_done(op, status);
  ucp_request_free(request);
}

// Marks the poll() in progress, so a handler that calls poll() again is
// refused instead of corrupting the windows.
class PollGuard {
 public:
  explicit PollGuard(bool& flag) : flag_(flag) { flag_ = true; }
  ~PollGuard() { flag_ = false; }
  PollGuard(const PollGuard&) = delete;
  PollGuard& operator=(const PollGuard&) = delete;

 private:
  bool& flag_;
};

}  // namespace

common::Status UcxEndpoint::failure_of(int peer) const {
  return common::peer_failure(me() + "rank " + std::to_string(peer) + " is unreachable over UCX: " +
                              peers_[static_cast<std::size_t>(peer)].why);
}

unsigned UcxEndpoint::progress() {
  unsigned total = 0;
  for (int i = 0; i < kProgressRounds; ++i) {
    const unsigned n = ucp_worker_progress(worker_);
    total += n;
    if (n == 0) break;
  }
  return total;
}

common::Status UcxEndpoint::send(int peer, std::span<const std::span<const std::byte>> parts) {
  if (peer < 0 || peer >= size_) {
    return common::invalid_argument(me() + "send to rank " + std::to_string(peer) +
                                    ", outside 0.." + std::to_string(size_ - 1));
  }
  std::size_t total = 0;
  for (const auto& part : parts) total += part.size();
  if (total > wire::kMaxMessageBytes) {
    return common::invalid_argument(me() + "message of " + std::to_string(total) +
                                    " bytes is over the 1 GiB limit");
  }
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  if (peer == rank_) {
    // To self: straight into our own window, delivered by poll().
    Slot& s = p.window.emplace_back();
    s.state = SlotState::kReady;
    s.msg.size = total;
    if (total > 0) {
      s.msg.owned = std::make_unique_for_overwrite<std::byte[]>(total);
      std::size_t at = 0;
      for (const auto& part : parts) {
        if (!part.empty()) std::memcpy(s.msg.owned.get() + at, part.data(), part.size());
        at += part.size();
      }
      s.msg.data = s.msg.owned.get();
    }
    counters_.buffered_bytes += total;
    ++counters_.messages_sent;
    counters_.bytes_sent += total;
    return common::Status::ok();
  }
  if (p.failed) return failure_of(peer);
  wire::AmHeader h{.session = session_,
                   .from = static_cast<std::uint32_t>(rank_),
                   .kind = wire::Kind::kData,
                   .seq = p.next_seq};
  common::Status s = post(p, h, parts, total);
  if (s) {
    ++p.next_seq;
    ++counters_.messages_sent;
    counters_.bytes_sent += total;
  }
  return s;
}

common::Status UcxEndpoint::send_control(int peer, wire::Kind kind) {
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  if (p.failed) return failure_of(peer);
  wire::AmHeader h{
      .session = session_, .from = static_cast<std::uint32_t>(rank_), .kind = kind, .seq = 0};
  return post(p, h, {}, 0);
}

namespace {
// The parts of a message, one after another, into `out`.
void gather(std::span<const std::span<const std::byte>> parts, std::byte* out) {
  for (const auto& part : parts) {
    if (!part.empty()) std::memcpy(out, part.data(), part.size());
    out += part.size();
  }
}
}  // namespace

common::Status UcxEndpoint::post(Peer& p, const wire::AmHeader& h,
                                 std::span<const std::span<const std::byte>> parts,
                                 std::size_t total) {
  auto fail = [&](ucs_status_t st) {
    mark_failed(p, std::string("sending to it failed: ") + ucs_status_string(st));
    return failure_of(p.rank);
  };
  if (total <= kImmediateBytes) {
    // UCX's short path copies header and payload before returning, so the
    // header can live on the stack and the parts need no copy of ours
    // (beyond gathering several into one).
    std::byte header[wire::kAmHeaderBytes];
    wire::encode(h, std::span<std::byte, wire::kAmHeaderBytes>(header));
    const void* data = nullptr;
    if (parts.size() == 1) {
      data = parts[0].data();
    } else if (total > 0) {
      scratch_.resize(total);
      gather(parts, scratch_.data());
      data = scratch_.data();
    }
    ucp_request_param_t ip{};
    ip.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    ucs_status_ptr_t r =
        ucp_am_send_nbx(p.ep, wire::kAmId, header, sizeof header, data, total, &ip);
    if (r == nullptr) {
      ++counters_.sends_immediate;
      return common::Status::ok();
    }
    if (UCS_PTR_IS_PTR(r)) {
      // Not expected with FORCE_IMM_CMPL; the header is on our stack.
      ucp_request_free(r);
      return common::internal_error(me() + "UCX returned a request for an immediate send");
    }
    if (UCS_PTR_STATUS(r) != UCS_ERR_NO_RESOURCE) return fail(UCS_PTR_STATUS(r));
  }
  if (counters_.outstanding_bytes + total > config_.max_outstanding_bytes) {
    ++counters_.sends_backpressured;
    return common::unavailable_error(
        me() + "send of " + std::to_string(total) + " bytes to rank " + std::to_string(p.rank) +
        " refused: " + std::to_string(counters_.outstanding_bytes) +
        " bytes of earlier sends are still in flight (max_outstanding_bytes " +
        std::to_string(config_.max_outstanding_bytes) + "); poll() and retry");
  }
  auto* op = new SendOp{this, p.rank, {}, nullptr, total};
  wire::encode(h, std::span<std::byte, wire::kAmHeaderBytes>(op->header));
  if (total > 0) {
    op->data = std::make_unique_for_overwrite<std::byte[]>(total);
    gather(parts, op->data.get());
  }
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.send = send_trampoline;
  rp.user_data = op;
  ucs_status_ptr_t r =
      ucp_am_send_nbx(p.ep, wire::kAmId, op->header, sizeof op->header, op->data.get(), total, &rp);
  ++counters_.sends_copied;
  if (r == nullptr) {
    delete op;
    return common::Status::ok();
  }
  if (UCS_PTR_IS_ERR(r)) {
    delete op;
    return fail(UCS_PTR_STATUS(r));
  }
  send_ops_.insert(op);
  p.outstanding_bytes += total;
  counters_.outstanding_bytes += total;
  if (counters_.outstanding_bytes > counters_.peak_outstanding_bytes) {
    counters_.peak_outstanding_bytes = counters_.outstanding_bytes;
  }
  return common::Status::ok();
}

void UcxEndpoint::send_due_acks() {
  for (Peer& p : peers_) {
    if (!p.ack_due || p.failed) continue;
    p.ack_due = false;
    (void)send_control(p.rank, wire::Kind::kHelloAck);  // a failure marks the peer
  }
}

common::Status UcxEndpoint::poll(ReliableHandler& handler, std::size_t max,
                                 std::size_t& delivered) {
  delivered = 0;
  if (in_poll_) return common::internal_error(me() + "poll() called from inside a handler");
  PollGuard guard(in_poll_);
  // Back-pressure on the receive side: while plenty waits for delivery and
  // some of it can go now, leave new data in UCX (and the socket).
  bool deliverable = false;
  for (const Peer& p : peers_) {
    if (!p.window.empty() && p.window.front().state == SlotState::kReady) deliverable = true;
  }
  if (!(deliverable && counters_.buffered_bytes > config_.max_buffered_bytes)) {
    progress();
    if (!rndv_to_post_.empty()) {
      post_rendezvous();
      progress();
    }
  }
  send_due_acks();
  close_failed_endpoints();
  deliver(handler, max, delivered);
  report_failures(handler);
  return rearm();
}

void UcxEndpoint::deliver(ReliableHandler& handler, std::size_t max, std::size_t& delivered) {
  const auto n = static_cast<std::size_t>(size_);
  bool any = true;
  while (any && delivered < max) {
    any = false;
    for (std::size_t k = 0; k < n && delivered < max; ++k) {
      Peer& p = peers_[(rr_ + k) % n];
      if (p.reported || p.window.empty() || p.window.front().state != SlotState::kReady) continue;
      Held m = std::move(p.window.front().msg);
      p.window.pop_front();
      ++p.next_deliver;
      counters_.buffered_bytes -= m.size;
      ++counters_.messages_received;
      counters_.bytes_received += m.size;
      ++delivered;
      any = true;
      handler.on_message(p.rank, {m.data, m.size});
      release(m);
    }
  }
  rr_ = (rr_ + 1) % n;
}

void UcxEndpoint::report_failures(ReliableHandler& handler) {
  for (Peer& p : peers_) {
    if (!p.failed || p.reported) continue;
    if (!p.window.empty()) {
      const SlotState front = p.window.front().state;
      if (front == SlotState::kReady) continue;  // still deliverable (max ran out)
      const bool resolving = front == SlotState::kRndvWaiting || front == SlotState::kRndvPosted;
      if (resolving && common::now() - p.failed_at < kFailureGrace) continue;
    }
    drop_window(p);
    p.reported = true;
    handler.on_peer_failure(p.rank, failure_of(p.rank));
  }
}

bool UcxEndpoint::work_in_memory() const {
  if (!rndv_to_post_.empty()) return true;
  for (const Peer& p : peers_) {
    if (p.ack_due && !p.failed) return true;
    if (p.failed && !p.reported) return true;  // reportable now or once the grace ends
    if (!p.reported && !p.window.empty() && p.window.front().state == SlotState::kReady) {
      return true;
    }
  }
  return false;
}

common::Status UcxEndpoint::rearm() {
  if (efd_ < 0) return common::Status::ok();
  if (!work_in_memory()) {
    // The first arm after a signal only drains it (UCS_ERR_BUSY); events
    // that arrive meanwhile are progressed here and retried.
    for (int attempt = 0; attempt < 4; ++attempt) {
      const ucs_status_t st = ucp_worker_arm(worker_);
      if (st == UCS_OK) {
        signalled_ = false;
        return common::Status::ok();
      }
      if (st != UCS_ERR_BUSY) {
        return common::transport_error(me() + "ucp_worker_arm(): " + ucs_status_string(st));
      }
      signalled_ = false;
      if (progress() != 0 && work_in_memory()) break;
    }
  }
  if (!signalled_) {
    const ucs_status_t st = ucp_worker_signal(worker_);
    if (st != UCS_OK) {
      return common::transport_error(me() + "ucp_worker_signal(): " + ucs_status_string(st));
    }
    signalled_ = true;
  }
  return common::Status::ok();
}

void UcxEndpoint::wait_idle(common::Deadline until) {
  // Used only where poll() is not: setup and destruction. Short sleeps keep
  // the other ranks of a crowded machine (ranks as threads) running.
  if (ucp_worker_progress(worker_) != 0 || until.expired()) return;
  std::this_thread::sleep_for(50us);
}

UcxCounters UcxEndpoint::counters() const { return counters_; }

std::size_t UcxEndpoint::outstanding_bytes(int peer) const {
  if (peer == -1) return counters_.outstanding_bytes;
  if (peer < 0 || peer >= size_) return 0;
  return peers_[static_cast<std::size_t>(peer)].outstanding_bytes;
}

std::string UcxEndpoint::describe_peer(int peer) const {
  if (peer < 0 || peer >= size_) return {};
  const Peer& p = peers_[static_cast<std::size_t>(peer)];
  if (p.ep == nullptr) return {};
  char* text = nullptr;
  std::size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (f == nullptr) return {};
  ucp_ep_print_info(p.ep, f);
  std::fclose(f);
  // Keep the lane lines ("lane[0]:  2:tcp/lo.0 md[1] ..."), as "tcp/lo".
  std::string all(text, len);
  std::free(text);
  std::string out;
  for (std::size_t at = all.find("lane["); at != std::string::npos;
       at = all.find("lane[", at + 1)) {
    const std::size_t colon = all.find(':', all.find(']', at));
    if (colon == std::string::npos) break;
    std::size_t b = all.find(':', colon + 1);
    std::size_t e = all.find_first_of(" \n", b == std::string::npos ? colon : b);
    if (b == std::string::npos || e == std::string::npos || b > e) continue;
    std::string tl = all.substr(b + 1, e - b - 1);
    if (const auto dot = tl.rfind('.'); dot != std::string::npos) tl.resize(dot);
    if (out.find(tl) == std::string::npos) out += (out.empty() ? "" : " ") + tl;
  }
  return out;
}

}  // namespace mccl::transport::ucx
