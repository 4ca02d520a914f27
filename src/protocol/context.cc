#include "protocol/context.h"

#include <algorithm>
#include <array>
#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "common/seq.h"
#include "common/test_kill.h"
#include "protocol/incast.h"

namespace mccl::protocol {

using common::Status;
using common::TimePoint;

namespace {
// The lender name of collective `seq`'s lent sends (ReliableTransport::
// send_lent): never 0, which names none. Every operation under one sequence
// number (a composite's children too) lends under it, so whichever
// finishes first reclaims them all.
std::uint64_t lender_of(std::uint32_t seq) { return std::uint64_t{1} << 32 | seq; }

// Datagrams and messages handled per transport per progress() call, so a
// flood on one side cannot starve the other or the collectives' timers.
constexpr std::size_t kPollBudget = 512;
// The transports' bits in PollGate::select, in the order the gate is built.
constexpr unsigned kDatagramBit = 1u << 0;
constexpr unsigned kReliableBit = 1u << 1;
// True when the reliable transport took the datagram socket into its own
// readiness check (ReliableTransport::share_wait): only where both
// descriptors are exact, so that skipping a transport is never wrong.
bool share_wait(transport::DatagramTransport& dgram, transport::ReliableTransport& reliable) {
  return dgram.wait_fd_gates_poll() && dgram.wait_fd() >= 0 && reliable.wait_fd_gates_poll() &&
         reliable.share_wait(dgram.wait_fd());
}
}  // namespace

std::size_t default_send_batch(std::size_t mtu) {
  // About 384 KiB per injection call: fewer calls, fewer system calls and
  // larger GSO runs per call, yet short enough that a root's own receives
  // and timers run between batches. Measured on loopback (docs/benchmarks.md):
  // 1472-byte datagrams 18.7 Gbit/s at 64 per call, 22.1 at 256; 8972-byte
  // ones 31.0 at 64, 30.4 at 256, 24.4 at 1024.
  return std::clamp<std::size_t>((384u << 10) / std::max<std::size_t>(mtu, 1), 64, 1024);
}

int incast_roots(const ProtocolConfig& c) {
  if (c.incast_bytes == 0) return 0;
  const std::size_t datagram = c.chunk_bytes + kDataHeaderBytes;
  return static_cast<int>(
      std::clamp<std::size_t>(c.incast_bytes / (kIncastRootDatagrams * datagram), 1, 1 << 20));
}

void enable_auth(ProtocolConfig& c, const AuthKey& key) {
  if (!c.auth_key) c.chunk_bytes -= static_cast<std::uint32_t>(kMacBytes);
  c.auth_key = key;
}

Context::Context(int rank, int size, std::uint32_t tag,
                 std::unique_ptr<transport::DatagramTransport> dgram,
                 std::unique_ptr<transport::ReliableTransport> reliable,
                 const ProtocolConfig& config)
    : rank_(rank),
      size_(size),
      tag_(tag),
      dgram_(std::move(dgram)),
      reliable_(std::move(reliable)),
      shared_wait_(share_wait(*dgram_, *reliable_)),
      gate_({!shared_wait_ && dgram_->wait_fd_gates_poll() ? dgram_->wait_fd() : -1,
             !shared_wait_ && reliable_->wait_fd_gates_poll() ? reliable_->wait_fd() : -1}),
      config_(config),
      mailbox_(rank),
      early_(config.early_bytes),
      adapt_rate_(config.rate.adapt &&
                  (dgram_->link_rate_unknown() ||
                   (config.rate.adapt_reported && dgram_->link_rate_reported()))),
      rate_(config.rate) {
  if (config_.auth_key) {
    mac_ = std::make_unique<DatagramMac>(*config_.auth_key, config_.helper_threads);
  }
  if (config_.helper_threads > 0) {
    checker_ = std::make_shared<CheckBatch>(mac_ != nullptr ? mac_->seal_lanes() : ~0u);
    HelperPool::shared(config_.helper_threads).post(checker_);
  }
  dgram_->set_incast_budget(config_.incast_bytes);
  if (adapt_rate_) apply_rate();
}

Context::~Context() {
  if (checker_ != nullptr) checker_->close();  // no batch is being checked: none comes
  // Operations destroyed unfinished: their memory may go before the
  // transport's last flush.
  for (std::uint32_t seq : lent_seqs_) reliable_->reclaim(lender_of(seq));
  for (int peer : early_messages_.stop_landings()) reliable_->abandon_landing(peer);
}

void Context::start(const std::shared_ptr<Operation>& op) {
  if (op->membership()) {
    membership_.start(std::static_pointer_cast<MembershipOp>(op), read_clock());
    return;
  }
  if (op->point_to_point()) {
    start_point_to_point(op, read_clock());
    return;
  }
  common::count_toward_kill("collective", 1);
  op->seq_ = next_seq_++;
  ++next_seq64_;
  TimePoint t = read_clock();
  op->deadline_ = common::saturating_add(t, config_.op_timeout);  // huge: never
  if (!poison_.is_ok()) {
    op->finish(poison_);
    return;
  }
  active_[op->seq()] = op;
  op->on_start(t);
  Route route;
  for (auto& d : early_.take(op->seq())) on_datagram(d, route);
  for (auto& m : early_messages_.take(op->seq())) {
    on_message(m.peer, m.bytes());
    early_messages_.recycle(std::move(m));
  }
  // A peer gone breaks this collective only where it still needs the peer,
  // judged after what arrived early: a broadcast root may send everything,
  // return and exit while a receiver still finishes the collective before,
  // and that receiver's broadcast then holds all it needs. (Poisoning at
  // any gone peer failed 2 in 10 such 3-rank jobs, MultiProcessReuse.)
  if (!failed_peers_.empty()) check_failed_peers();
}

void Context::start_point_to_point(const std::shared_ptr<Operation>& op, TimePoint now) {
  // A dead peer fails only the sends and receives that need it (the
  // transport refuses a send; needs() fails a receive), not the others.
  if (!poison_.is_ok()) {
    op->finish(poison_);
    return;
  }
  op->on_start(now);
  if (auto recv = std::dynamic_pointer_cast<P2pRecv>(op)) {
    mailbox_.post(recv, common::saturating_add(now, config_.op_timeout));
  }
}

Context::WaitFds Context::wait_fds() const {
  WaitFds fds;
  fds.add(dgram_->wait_fd());
  fds.add(reliable_->wait_fd());
  return fds;
}

std::size_t Context::progress() {
  if (in_progress_) return 0;  // a handler called back into progress: ignore
  in_progress_ = true;
  now_ = read_clock();
  // One timestamp for the whole call: arrivals and the loss checks after
  // them see the same "now", so a rank that was descheduled for a while and
  // then finds data waiting does not mistake its own absence for silence.
  std::size_t n = 0, m = 0;
  poll_transports(n, m);
  for (auto& [seq, op] : active_) {
    if (!op->done()) op->progress(now_);
  }
  check_deadlines(now_);
  Status late = mailbox_.check_deadlines(
      now_, std::chrono::duration_cast<std::chrono::milliseconds>(config_.op_timeout));
  if (!late.is_ok()) poison(late);
  retire_finished();
  if (!eager_.empty()) expire_eager(now_);
  early_messages_.release_idle(now_);
  if (!failed_peers_.empty()) check_failed_peers();
  membership_.progress(now_);
  in_progress_ = false;
  return n + m;
}

namespace {

// Grows whenever this rank sends data.
std::uint64_t sent_so_far(const Context& ctx) {
  const auto& c = ctx.counters();
  constexpr auto r = std::memory_order_relaxed;
  return c.mcast_datagrams_sent.load(r) + c.repairs_served.load(r) + c.p2p_bytes_sent.load(r);
}

}  // namespace

std::size_t progress_counting_sends(Context& ctx) {
  const std::uint64_t before = sent_so_far(ctx);
  const std::size_t events = ctx.progress();
  return events + (sent_so_far(ctx) != before ? 1 : 0);
}

void Context::poll_transports(std::size_t& n, std::size_t& m) {
  auto datagrams = [&] {
    Status s = dgram_->poll(*this, kPollBudget, n);
    if (!s.is_ok()) poison(s);
    backlogged_ = n >= kPollBudget;
    if (n > 0) note_arrival(now_);
  };
  auto messages = [&] {
    in_reliable_poll_ = true;
    Status s = reliable_->poll(*this, kPollBudget, m);
    in_reliable_poll_ = false;
    if (!s.is_ok()) poison(s);
  };
  backlogged_ = false;
  if (shared_wait_) {
    // The reliable transport's poll asks the kernel about the datagram
    // socket too: an arrival costs one readiness call, not the gate's and
    // then the transport's own.
    messages();
    if (reliable_->shared_fd_readable() || (due_ & kDatagramBit)) datagrams();
  } else {
    const unsigned poll = gate_.select(due_);
    if (poll & kDatagramBit) datagrams();
    if (poll & kReliableBit) messages();
  }
  due_ = (backlogged_ ? kDatagramBit : 0u) | (m >= kPollBudget ? kReliableBit : 0u);
}

void Context::check_deadlines(TimePoint t) {
  for (auto& [seq, op] : active_) {
    if (op->done() || t < op->deadline_) continue;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(config_.op_timeout).count();
    Status why = common::timeout_error(
        "rank " + std::to_string(rank_) + ": collective #" + std::to_string(seq) + " (" +
        op->describe() + ") timed out after " + std::to_string(ms) + " ms waiting for " +
        op->describe_wait() + "; raise MCCL_COLL_TIMEOUT_MS if the peers are just slow");
    op->finish(why);
    poison(why);
  }
}

void Context::retire_finished() {
  for (auto it = active_.begin(); it != active_.end();) {
    if (it->second->done()) {
      if (it->second->status().is_ok()) Counters::add(counters_.collectives_completed);
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
}

void Context::on_message(int peer, std::span<const std::byte> message) {
  ControlHeader h;
  std::span<const std::byte> body;
  if (!decode_control(message, tag_, h, body)) {
    Counters::add(counters_.dropped_invalid);
    return;
  }
  dispatch(peer, h, body, message);
}

transport::MessageLanding Context::message_landing(int peer, std::span<const std::byte> head,
                                                   std::size_t length) {
  ControlHeader h;
  std::span<const std::byte> body;
  if (length <= kControlHeaderBytes || seeking_abort_ || !decode_control(head, tag_, h, body)) {
    return {};
  }
  switch (h.kind) {  // the kinds dispatch() hands to no collective's on_control
    case ControlKind::kMembership:
    case ControlKind::kLossReport:
    case ControlKind::kAbort:
    case ControlKind::kP2pMessage:
    case ControlKind::kCallRefused:
      return {};
    default:
      break;
  }
  auto it = active_.find(h.seq);
  if (it == active_.end()) {
    // A long message of a collective this rank has not started yet lands
    // in memory of the early store's own (early_messages.h).
    const bool ahead = !common::seq_before(h.seq, next_seq_) &&
                       common::seq_distance(next_seq_, h.seq) < kFutureWindow;
    if (!ahead || length < EarlyMessages::kLandFromBytes) return {};
    return {kControlHeaderBytes, early_messages_.land(peer, kControlHeaderBytes, length)};
  }
  if (it->second->done()) return {};
  Operation& op = *it->second;
  const std::size_t body_bytes = length - kControlHeaderBytes;
  const std::span<std::byte> dest = op.landing(peer, h, body_bytes);
  if (dest.data() == nullptr || dest.size() != body_bytes) return {};
  landings_.emplace_back(peer, &op);
  ++op.landings_;
  return {kControlHeaderBytes, dest};
}

void Context::on_message_landed(int peer, std::span<const std::byte> head,
                                std::span<const std::byte> body) {
  ControlHeader h;
  std::span<const std::byte> none;
  const bool decoded = decode_control(head, tag_, h, none);  // decoded once already: cannot fail
  if (early_messages_.landing_from(peer)) {
    // `body` lies in `m`, after the header. The collective may have started
    // meanwhile, or the context been poisoned: dispatch decides, and keeps
    // `m` only if nobody takes it.
    EarlyMessages::Message m = early_messages_.landed(peer, head);
    if (decoded) {
      dispatch(peer, h, body, m.bytes(), &m);
    } else {
      Counters::add(counters_.dropped_invalid);
    }
    early_messages_.recycle(std::move(m));
    return;
  }
  for (auto it = landings_.begin(); it != landings_.end(); ++it) {
    if (it->first == peer) {
      --it->second->landings_;
      landings_.erase(it);
      break;
    }
  }
  if (!decoded) {
    Counters::add(counters_.dropped_invalid);
    return;
  }
  dispatch(peer, h, body, {});
}

void reclaim_lent(Context& ctx, const Operation& op) {
  auto& v = ctx.lent_seqs_;
  if (v.empty()) return;
  auto it = std::find(v.begin(), v.end(), op.seq());
  if (it == v.end()) return;
  ctx.reliable_->reclaim(lender_of(op.seq()));
  v.erase(it);
}

void abandon_landings(Context& ctx, Operation& op) {
  auto& v = ctx.landings_;
  for (auto it = v.begin(); it != v.end();) {
    if (it->second == &op) {
      ctx.reliable_->abandon_landing(it->first);
      it = v.erase(it);
    } else {
      ++it;
    }
  }
  op.landings_ = 0;
}

void Context::dispatch(int peer, const ControlHeader& h, std::span<const std::byte> body,
                       std::span<const std::byte> message, EarlyMessages::Message* early) {
  if (h.kind == ControlKind::kMembership) {  // whatever state this communicator is in
    membership_.on_message(peer, h, body);
    return;
  }
  if (seeking_abort_ && h.kind != ControlKind::kAbort) return;  // see poison()
  if (h.kind == ControlKind::kLossReport) {
    // About this rank's sending, not about one collective: it may well
    // arrive after the collective it names has finished here.
    on_loss_report(peer, h, body);
    return;
  }
  if (h.kind == ControlKind::kAbort) {
    std::string text(reinterpret_cast<const char*>(body.data()), body.size());
    auto code = static_cast<ErrorCode>(h.arg0);
    if (h.arg0 == 0 || h.arg0 > static_cast<std::uint32_t>(ErrorCode::kUnavailable)) {
      code = ErrorCode::kInternal;
    }
    poison(Status(code, text));
    return;
  }
  if (h.kind == ControlKind::kP2pMessage) {
    Status s = mailbox_.on_segment(peer, h, body);
    if (!s.is_ok()) poison(s);
    return;
  }
  auto it = active_.find(h.seq);
  if (it != active_.end()) {
    if (h.kind == ControlKind::kCallRefused) {
      refused_by_peer(*it->second, h, body);
    } else if (!it->second->done()) {
      it->second->on_control(peer, h, body, now_);
    }
    return;
  }
  if (on_eager_message(peer, h, body)) return;
  if (common::seq_before(h.seq, next_seq_)) return;  // late news of a finished collective
  if (common::seq_distance(next_seq_, h.seq) >= kFutureWindow) {
    Counters::add(counters_.dropped_invalid);
    return;
  }
  if (early != nullptr) {
    early_messages_.adopt(h.seq, std::move(*early));
    return;
  }
  if (!message.empty()) {
    early_messages_.keep(h.seq, peer, message);
    return;
  }
  // Landed in a collective that ended meanwhile: kept whole anyway.
  std::array<std::byte, kControlHeaderBytes> header{};
  encode_control_header(h, header.data());
  early_messages_.keep(h.seq, peer, header, body);
}

void Context::refused_by_peer(Operation& op, const ControlHeader& h,
                              std::span<const std::byte> body) {
  // The peer will not take part in this collective (its arguments were
  // invalid): it cannot complete, and the peer's reason is what every rank
  // needs to hear. The communicator stays usable; the peer took the same
  // sequence number, so the next collective lines up.
  std::string why(reinterpret_cast<const char*>(body.data()), body.size());
  op.finish(common::invalid_argument("rank " + std::to_string(rank_) + ": collective #" +
                                     std::to_string(h.seq) + " (" + op.describe() +
                                     ") cannot complete: rank " + std::to_string(h.arg1) +
                                     " refused its call: " + why));
}

void Context::on_peer_failure(int peer, const Status& why) {
  // Not fatal yet: a peer that finished its part may exit, closing its
  // connections right after its last message (which this same poll may
  // just have delivered). check_failed_peers() breaks the communicator only
  // when a collective still needs the peer.
  failed_peers_.emplace_back(
      peer, common::peer_failure("rank " + std::to_string(rank_) + ": peer rank " +
                                 std::to_string(peer) + " failed (" + why.message() + ")"));
  // Nobody else asks for the eager copies.
  if (peer == right()) clear_eager();
  membership_.on_peer_failure(peer);
}

std::vector<int> Context::failed_peer_ranks() const {
  std::vector<int> ranks;
  for (const auto& [peer, why] : failed_peers_) ranks.push_back(peer);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

void Context::revoke(const Status& why) {
  poison(why);
  if (size_ < 2) return;
  // poison() told the neighbours; a revoke reaches every rank directly, so
  // no rank depends on a chain of survivors to hear it.
  const std::vector<int> failed = failed_peer_ranks();
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || p == left() || p == right()) continue;
    if (!std::binary_search(failed.begin(), failed.end(), p)) send_abort(p, poison_);
  }
}

void Context::check_failed_peers() {
  for (const auto& [peer, why] : failed_peers_) {
    if (mailbox_.needs(peer)) {
      poison(why);
      return;
    }
    for (const auto& [seq, op] : active_) {
      if (!op->done() && op->needs(peer)) {
        poison(why);
        return;
      }
    }
  }
}

void Context::poison(Status why) {
  if (!poison_.is_ok()) return;
  // A peer that is gone (a send fails: "Broken pipe") is often the
  // consequence of an error that peer already sent here before it left: a
  // rank stopped (SIGSTOP) while its peers timed out finds, once resumed,
  // their kAbort in its inbox and their connections closed. Read what has
  // arrived first so that the cause, not the consequence, is reported. Other
  // messages are dropped: the communicator is poisoned either way. Not from
  // inside the reliable transport's own poll, which must not be re-entered.
  const bool peer_gone =
      why.code() == ErrorCode::kPeerFailure || why.code() == ErrorCode::kTransportError;
  if (peer_gone && !in_reliable_poll_) {
    in_reliable_poll_ = true;
    seeking_abort_ = true;
    std::size_t m = 0;
    (void)reliable_->poll(*this, kPollBudget, m);
    seeking_abort_ = false;
    in_reliable_poll_ = false;
    if (!poison_.is_ok()) return;  // an abort arrived and poisoned with its reason
  }
  poison_ = why;
  common::logf(common::LogLevel::kInfo, rank_, "communicator broken: %s", why.message().c_str());
  clear_eager();  // the neighbour fails too: it asks for nothing more
  for (auto& [seq, op] : active_) op->finish(why);
  mailbox_.fail_all(why);
  if (size_ < 2) return;
  // Flood the error around the ring both ways; every rank forwards it once.
  send_abort(left(), why);
  if (right() != left()) send_abort(right(), why);
}

void Context::send_abort(int peer, const Status& why) {
  ControlHeader h{.kind = ControlKind::kAbort,
                  .arg0 = static_cast<std::uint32_t>(why.code()),
                  .arg1 = static_cast<std::uint32_t>(rank_)};
  (void)send_control(peer, h, std::as_bytes(std::span(why.message())));
}

Status Context::send_control(int peer, ControlHeader h, std::span<const std::byte> body) {
  // Payload-carrying messages are counted by their senders as repair or
  // point-to-point bytes; "control" means the small protocol messages only.
  if (h.kind != ControlKind::kRepairData && h.kind != ControlKind::kP2pData &&
      h.kind != ControlKind::kP2pMessage) {
    Counters::add(counters_.control_messages_sent);
  }
  return send_message(peer, h, body, 0);
}

Status Context::send_control_lent(int peer, ControlHeader h, std::span<const std::byte> body,
                                  const Operation& op) {
  if (std::find(lent_seqs_.begin(), lent_seqs_.end(), op.seq()) == lent_seqs_.end()) {
    lent_seqs_.push_back(op.seq());
  }
  return send_message(peer, h, body, lender_of(op.seq()));
}

Status Context::send_message(int peer, ControlHeader h, std::span<const std::byte> body,
                             std::uint64_t lender) {
  h.comm_tag = tag_;
  std::byte header[kControlHeaderBytes];
  encode_control_header(h, header);
  const std::span<const std::byte> parts[2] = {std::span<const std::byte>(header), body};
  const std::span<const std::span<const std::byte>> message(parts);
  return lender == 0 ? reliable_->send(peer, message) : reliable_->send_lent(peer, message, lender);
}

Status Context::send_p2p(int peer, std::uint32_t tag, std::span<const std::byte> data,
                         std::size_t segment_bytes) {
  ControlHeader h{.kind = ControlKind::kP2pMessage,
                  .seq = p2p_next_to_[peer]++,
                  .root = tag,
                  .signature = data.size()};
  std::size_t off = 0;
  do {  // a message of 0 bytes is one empty segment
    const std::size_t len = std::min(segment_bytes, data.size() - off);
    const std::span<const std::byte> seg = data.subspan(off, len);
    Status st;
    if (peer == rank_) {
      st = mailbox_.on_segment(rank_, h, seg);
    } else {
      h.comm_tag = tag_;
      st = send_control(peer, h, seg);
      Counters::add(counters_.p2p_bytes_sent, len);
    }
    if (!st.is_ok()) return st;
    off += len;
    ++h.arg0;
  } while (off < data.size());
  return Status::ok();
}

Status Context::send_datagrams(std::span<const transport::OutDatagram> batch, std::size_t& accepted,
                               unsigned senders) {
  dgram_->share_link(senders);
  Status st = dgram_->send(batch, accepted);
  common::count_toward_kill("datagrams", accepted);
  return st;
}

common::Duration Context::stall_deadline() const {
  if (gap_us_ <= 0) return std::max(config_.first_timeout, stall_floor_);
  auto d = std::chrono::microseconds(static_cast<std::int64_t>(gap_us_ * config_.stall_factor));
  return std::clamp<common::Duration>(d, std::min(stall_floor_, config_.stall_max),
                                      config_.stall_max);
}

void Context::note_late_chunk(common::Duration lateness) {
  const common::Duration needed = stall_floor_ + std::max(lateness, common::Duration{0});
  stall_floor_ = std::min<common::Duration>(2 * needed, config_.stall_max);
}

void Context::note_no_late_chunk() {
  stall_floor_ -= (stall_floor_ - config_.stall_min) / 16;
  if (stall_floor_ < config_.stall_min) stall_floor_ = config_.stall_min;
}

void Context::note_arrival(TimePoint t) {
  // Called once per poll that found datagrams, not per datagram: a batch
  // read at once says nothing about the gap between its members, while the
  // gap between batches is what a receiver (descheduled, or simply busy)
  // actually sees.
  if (last_arrival_ != TimePoint{}) {
    double gap = std::chrono::duration<double, std::micro>(t - last_arrival_).count();
    // Idle time between collectives says nothing about the link: skip it.
    if (gap < 100000.0) gap_us_ = gap_us_ == 0 ? gap : 0.9 * gap_us_ + 0.1 * gap;
  }
  last_arrival_ = t;
}

}  // namespace mccl::protocol
