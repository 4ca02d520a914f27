#include "protocol/mcast_collective.h"

#include <algorithm>
#include <cstring>

#include "protocol/context.h"

namespace mccl::protocol {

using common::TimePoint;

McastCollective::McastCollective(Context& ctx, McastSpec spec)
    : Operation(ctx), spec_(std::move(spec)), stream_index_(ctx.size(), -1) {
  const std::uint32_t chunk = ctx.config().chunk_bytes;
  streams_.reserve(spec_.streams.size());
  for (const auto& s : spec_.streams) {
    stream_index_[s.root] = static_cast<int>(streams_.size());
    streams_.emplace_back(s, chunk, s.root == ctx.rank());
  }
  for (auto& s : streams_) {
    if (s.local()) own_ = &s;
    if (s.root() != ctx.rank()) pull_from_left_ = true;
    if (s.root() != ctx.right()) right_pulls_ = true;
  }
  if (ctx.size() == 1) pull_from_left_ = right_pulls_ = false;
  // How many roots feed each receiver's link at once: the roots admitted
  // together, less one when every rank is among them (a rank does not
  // receive its own stream). Each root sends at that share of the rate.
  // Every root at once (0) is bounded by the incast budget: beyond
  // incast_roots() roots their bursts would overflow the receivers' ports.
  const auto roots = static_cast<int>(streams_.size());
  const int incast = incast_roots(ctx.config());
  turns_ = spec_.concurrent_roots > 0 ? spec_.concurrent_roots : incast;
  if (spec_.concurrent_roots <= 0 && turns_ > 0 && turns_ < roots) {
    // As many turns as the budget needs, with the roots spread evenly over
    // them: each root sends at 1/turns_ of the link, so a last turn of a
    // few roots would leave most of it idle (64 roots in turns of 21, 21,
    // 21 and 1 took 1.24x the bound in bench/scale, in turns of 16 1.04x).
    const int rounds = (roots + turns_ - 1) / turns_;
    turns_ = (roots + rounds - 1) / rounds;
  }
  const int together = turns_ > 0 ? std::min(turns_, roots) : roots;
  senders_ = static_cast<unsigned>(std::max(1, together >= ctx.size() ? ctx.size() - 1 : together));
  headers_.resize(ctx.config().send_batch * header_bytes());
  batch_.resize(ctx.config().send_batch);
}

std::size_t McastCollective::header_bytes() const {
  return data_header_bytes(ctx_.config().auth_key.has_value());
}

Stream* McastCollective::stream_of(std::uint32_t root) {
  if (root >= stream_index_.size() || stream_index_[root] < 0) return nullptr;
  return &streams_[stream_index_[root]];
}

void McastCollective::on_start(TimePoint now) {
  start_ = last_activity_ = now;
  // Nobody else to send to: the stream is delivered by definition (its
  // bytes still made valid: they are this rank's result).
  if (own_ != nullptr && ctx_.size() == 1) {
    if (!fill_own_through(own_->bytes())) return;
    own_->next_to_send = own_->chunks();
  }
  announced_.assign(streams_.size(), false);
  prefix_.assign(streams_.size(), 0);
  for (auto& s : streams_) note_progress(s);
}

void McastCollective::note_progress(Stream& s) {
  // Called per datagram: a collective nobody watches (the uncompressed
  // ones) stops at the first test.
  if (!spec_.on_stream_prefix && !spec_.on_stream_complete) return;
  const auto i = static_cast<std::size_t>(&s - streams_.data());
  // Datagrams may reach a schedule's step before it starts (schedule.h):
  // on_start announces what is held by then.
  if (announced_.size() != streams_.size() || announced_[i] || done()) return;
  if (spec_.on_stream_prefix) {
    std::uint64_t& held = prefix_[i];
    const std::uint64_t before = held;
    while (held < s.chunks() && s.have.test(held)) ++held;
    if (held != before) {
      common::Status st = spec_.on_stream_prefix(s.root(), s.span_bytes(0, held));
      if (!st.is_ok()) return finish(std::move(st));
    }
  }
  if (!spec_.on_stream_complete || !s.complete()) return;
  announced_[i] = true;
  common::Status st = spec_.on_stream_complete(s.root());
  if (!st.is_ok()) finish(std::move(st));
}

// ---- injection -------------------------------------------------------------

bool McastCollective::injection_allowed(TimePoint now) {
  if (injection_open_) return true;
  const int k = turns_;
  const auto pos = static_cast<int>(own_ - streams_.data());
  if (k <= 0 || pos < k) return injection_open_ = true;
  // Wait until the stream k places ahead has finished arriving here, so at
  // most k roots inject at once. A later stream seen to its end says the
  // same (roots of equal streams at equal rates finish in order), so a lost
  // tail of the one ahead does not hold the gate shut until the group goes
  // silent for a loss deadline, which also opens it. Both shortcuts hold
  // only once the root ahead has begun: before its first datagram, silence
  // or a later stream's end say that it has not reached the collective yet
  // (ranks arrive at different times), and opening then let every rank that
  // came early inject at once (switch ports dropped a launch's first
  // allgather, docs/scale.md). A stream lost whole completes by repair.
  const Stream& ahead = streams_[pos - k];
  const bool ahead_began = ahead.seen_end > 0 || ahead.have.count() > 0;
  if (ahead.complete() || ahead.seen_end == ahead.chunks() ||
      (ahead_began && (latest_ended_ > pos - k || now - last_activity_ > ctx_.stall_deadline()))) {
    injection_open_ = true;
  }
  return injection_open_;
}

McastCollective::~McastCollective() { stop_helpers(); }

void McastCollective::stop_helpers() {
  if (seal_ == nullptr) return;
  seal_->stop();
  seal_.reset();
}

DataHeader McastCollective::own_header() const {
  DataHeader h;
  h.comm_tag = ctx_.tag();
  h.seq = seq();
  h.root = static_cast<std::uint32_t>(own_->root());
  h.chunk_bytes = ctx_.config().chunk_bytes;
  h.total_bytes = own_->bytes();
  return h;
}

void McastCollective::start_sealing() {
  const Stream& s = *own_;
  const ProtocolConfig& config = ctx_.config();
  if (config.helper_threads == 0 || s.chunks() < SealJob::kMinChunks || spec_.fill_own) return;
  SealPlan plan;
  plan.header = own_header();
  plan.data = s.chunk_data(0, s.chunks()).data();
  plan.header_bytes = header_bytes();
  plan.checksum = config.checksum;
  plan.auth = ctx_.data_auth();
  seal_ = std::make_shared<SealJob>(plan);
  HelperPool::shared(config.helper_threads).post(seal_);
}

bool McastCollective::fill_own_through(std::uint64_t end) {
  if (!spec_.fill_own || end <= filled_) return true;
  if (done()) return false;  // a fill failed before
  const std::uint64_t to = std::min(own_->bytes(), std::max(end, filled_ + kFillAheadBytes));
  common::Status st = spec_.fill_own(filled_, to);
  if (!st.is_ok()) {
    finish(std::move(st));
    return false;
  }
  filled_ = to;
  return true;
}

void McastCollective::inject(TimePoint now) {
  Stream& s = *own_;
  if (s.next_to_send == 0 && seal_ == nullptr) start_sealing();
  const std::size_t batch_max = ctx_.config().send_batch;
  const std::uint64_t batch_end = std::min<std::uint64_t>(s.chunks(), s.next_to_send + batch_max);
  if (!fill_own_through(s.span_bytes(0, batch_end))) return;
  const std::size_t header_bytes = this->header_bytes();
  const DataAuth auth = ctx_.data_auth();
  auto& batch = batch_;
  // The headers of datagrams the transport refused last time are still
  // right (nothing in them changes): moved to the front and sent as they
  // are, so that no MAC is computed twice. A socket that is often full
  // (an unpaced root on loopback) refused a third of them.
  std::size_t encoded = 0;
  if (s.next_to_send >= encoded_first_ && s.next_to_send < encoded_first_ + encoded_count_) {
    const auto skip = static_cast<std::size_t>(s.next_to_send - encoded_first_);
    encoded = encoded_count_ - skip;
    std::memmove(headers_.data(), headers_.data() + skip * header_bytes, encoded * header_bytes);
  }
  std::size_t n = 0;
  std::size_t sealed_ahead = 0;  // of the batch's new headers, by the helpers
  for (std::uint64_t c = s.next_to_send; c < s.chunks() && n < batch_max; ++c, ++n) {
    auto payload = s.chunk_data(c, c + 1);
    std::byte* hdr = headers_.data() + n * header_bytes;
    if (n < encoded) {
      batch[n] = {std::span<const std::byte>(hdr, header_bytes), payload};
      continue;
    }
    if (seal_ != nullptr && seal_->take(c, hdr)) {
      batch[n] = {std::span<const std::byte>(hdr, header_bytes), payload};
      ++sealed_ahead;
      continue;
    }
    DataHeader h = own_header();
    h.chunk_index = static_cast<std::uint32_t>(c);
    h.payload_len = static_cast<std::uint16_t>(payload.size());
    encode_data_header(h, payload, ctx_.config().checksum, auth, hdr);
    batch[n] = {std::span<const std::byte>(hdr, header_bytes), payload};
  }
  encoded_first_ = s.next_to_send;
  encoded_count_ = n;
  std::size_t accepted = 0;
  common::Status st = ctx_.send_datagrams(std::span(batch.data(), n), accepted, senders_);
  if (!st.is_ok()) {
    ctx_.poison(st);
    return;
  }
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < accepted; ++i) bytes += batch[i].payload.size();
  Counters::add(ctx_.counters().mcast_datagrams_sent, accepted);
  Counters::add(ctx_.counters().mcast_bytes_sent, bytes);
  // Counted when built: a refused datagram's header is sent later as it is.
  if (sealed_ahead > 0) Counters::add(ctx_.counters().mcast_datagrams_sealed_ahead, sealed_ahead);
  s.next_to_send += accepted;
  if (seal_ != nullptr) {
    if (s.next_to_send == s.chunks()) {
      stop_helpers();
    } else if (accepted > 0) {
      seal_->advance(s.next_to_send);
      HelperPool::shared(ctx_.config().helper_threads).wake();
    }
  }
  // Refused in part: the rate (or the socket), not this rank, set the pace.
  const bool paced = accepted < n;
  if (accepted > 0 || paced) ctx_.note_injected(seq(), s.next_to_send, bytes, paced);
  if (accepted == 0) return;
  last_activity_ = now;
  if (steps_.first_sent == TimePoint{}) steps_.first_sent = now;
  if (s.next_to_send == s.chunks()) steps_.last_sent = now;
}

// ---- receive path ----------------------------------------------------------

void McastCollective::on_datagram(const DataHeader& h, std::span<const std::byte> payload,
                                  TimePoint now) {
  Stream* s = stream_of(h.root);
  if (s == nullptr) {
    mismatch("rank " + std::to_string(h.root) + " sent data as a root of it");
    return;
  }
  if (h.total_bytes != s->bytes() || h.chunk_bytes != ctx_.config().chunk_bytes) {
    mismatch("root rank " + std::to_string(h.root) + " sends " + std::to_string(h.total_bytes) +
             " bytes where this rank expects " + std::to_string(s->bytes()));
    return;
  }
  // Asked for, yet here by multicast after all: late, not lost. Every chunk
  // asked for lies below scan_from, so a loss-free stream (scan_from 0) costs
  // one comparison here, not a bitmap lookup.
  if (!late_chunk_ && h.chunk_index < s->scan_from && s->requested.test(h.chunk_index)) {
    late_chunk_ = true;
    ctx_.note_late_chunk(now - s->last_request);
  }
  const bool landed = payload.data() == s->destination(h.chunk_index);
  if (s->local() || !s->place(h.chunk_index, payload)) {
    Counters::add(ctx_.counters().dropped_duplicate);
    return;
  }
  if (!landed) Counters::add(ctx_.counters().mcast_bytes_copied, payload.size());
  Counters::add(ctx_.counters().mcast_datagrams_received);
  Counters::add(ctx_.counters().mcast_bytes_received, payload.size());
  note_progress(*s);
  s->seen_end = std::max<std::uint64_t>(s->seen_end, h.chunk_index + 1ull);
  if (s->seen_end == s->chunks()) {
    latest_ended_ = std::max(latest_ended_, static_cast<int>(s - streams_.data()));
  }
  if (s->wanted_count > 0) deferred_ready_ = true;
  last_activity_ = now;
  if (steps_.first_arrival == TimePoint{}) steps_.first_arrival = now;
  steps_.last_arrival = now;
}

std::size_t McastCollective::landings(std::uint32_t root, std::uint64_t first,
                                      std::span<transport::Landing> out) {
  Stream* s = stream_of(root);
  if (s == nullptr || s->local()) return 0;
  std::size_t n = 0;
  for (std::uint64_t c = first; c < s->chunks() && n < out.size() && !s->have.test(c); ++c, ++n) {
    out[n].payload = s->destination(c);
    out[n].bytes = static_cast<std::size_t>(s->length(c));
    encode_data_key(ctx_.tag(), {seq(), root, static_cast<std::uint32_t>(c)}, out[n].key.data());
  }
  return n;
}

void McastCollective::on_control(int peer, const ControlHeader& h, std::span<const std::byte> body,
                                 TimePoint now) {
  if (h.signature != spec_.signature) {
    mismatch("neighbour rank " + std::to_string(peer) + " called it with other arguments");
    return;
  }
  switch (h.kind) {
    case ControlKind::kHave:
      if (peer != ctx_.left()) break;
      // The left neighbour holds everything. That is no proof of loss yet:
      // this message may have overtaken datagrams still in flight or still
      // queued here, so detect_loss() acts on it only once the queue is
      // drained and the group has been quiet for a loss deadline.
      left_has_all_ = true;
      return;
    case ControlKind::kRelease:
      if (peer != ctx_.right()) break;
      right_released_ = true;
      steps_.released = now;
      return;
    case ControlKind::kRepairRequest:
      if (peer != ctx_.right()) break;
      on_repair_request(h, body);
      return;
    case ControlKind::kRepairData:
      if (peer != ctx_.left()) break;
      on_repair_data(h, body, now);
      return;
    default:
      break;
  }
  Counters::add(ctx_.counters().dropped_invalid);
}

// ---- completion ------------------------------------------------------------

bool McastCollective::holds_everything() const {
  for (const auto& s : streams_) {
    if (!s.complete()) return false;
  }
  return own_ == nullptr || own_->next_to_send == own_->chunks();
}

void McastCollective::send(ControlKind kind, int peer) {
  ControlHeader h{.kind = kind, .seq = seq(), .signature = spec_.signature};
  common::Status st = ctx_.send_control(peer, h);
  // kHave is a hint: a right neighbour that already holds everything and
  // was released may have finished and gone, which is no failure.
  if (!st.is_ok() && !(kind == ControlKind::kHave && st.code() == ErrorCode::kPeerFailure)) {
    ctx_.poison(st);
  }
}

std::uint64_t McastCollective::moved_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& s : spec_.streams) bytes += s.bytes;
  return bytes;
}

bool McastCollective::needs(int peer) const {
  if (peer == ctx_.left() && pull_from_left_ && !holds_everything()) return true;
  return peer == ctx_.right() && right_pulls_ && !right_released_;
}

void McastCollective::progress(TimePoint now) {
  if (own_ != nullptr && own_->next_to_send < own_->chunks() && injection_allowed(now)) {
    inject(now);
  }
  detect_loss(now);
  if (deferred_ready_) serve_deferred();
  if (done() || !holds_everything()) return;
  if (steps_.held == TimePoint{}) steps_.held = now;
  if (pull_from_left_ && !sent_release_) {
    sent_release_ = true;
    send(ControlKind::kRelease, ctx_.left());
  }
  if (right_pulls_ && !sent_have_) {
    sent_have_ = true;
    send(ControlKind::kHave, ctx_.right());
  }
  if (!right_pulls_ || right_released_ || complete_eagerly()) complete(now);
}

void McastCollective::complete(TimePoint now) {
  using common::monotonic_ns;
  ctx_.counters().publish({monotonic_ns(start_), monotonic_ns(steps_.first_sent),
                           monotonic_ns(steps_.last_sent), monotonic_ns(steps_.first_arrival),
                           monotonic_ns(steps_.last_arrival), monotonic_ns(steps_.held),
                           monotonic_ns(steps_.released), monotonic_ns(now)});
  if (pull_from_left_ && !late_chunk_) ctx_.note_no_late_chunk();
  finish(common::Status::ok());
}

bool McastCollective::complete_eagerly() {
  if (adopted()) return false;  // its sequence number is its parent's
  std::uint64_t bytes = 0;
  for (const auto& s : streams_) {
    if (s.root() != ctx_.right()) bytes += s.bytes();
  }
  if (!ctx_.eager_fits(static_cast<std::size_t>(bytes))) return false;
  std::vector<Context::EagerStream> copy;
  for (const auto& s : streams_) {
    if (s.root() == ctx_.right()) continue;  // the neighbour's own: never asked for
    const auto data = s.chunk_data(0, s.chunks());
    copy.push_back({static_cast<std::uint32_t>(s.root()), {data.begin(), data.end()}});
  }
  // Only the neighbour's own stream (a broadcast from it): it asks for nothing.
  if (copy.empty()) return true;
  ctx_.keep_for_right(*this, spec_.signature, std::move(copy));
  return true;
}

void McastCollective::mismatch(const std::string& detail) {
  ctx_.poison(common::mismatch_error("rank " + std::to_string(ctx_.rank()) + ": collective #" +
                                     std::to_string(seq()) + " is a " + spec_.what + " here, but " +
                                     detail +
                                     ": every rank must call the same collectives in the same "
                                     "order with the same sizes and root"));
}

std::string McastCollective::describe_wait() const {
  std::string out;
  std::uint64_t missing = 0;
  for (const auto& s : streams_) missing += s.missing();
  if (missing > 0) {
    out += std::to_string(missing) + " missing chunks (repairs come from rank " +
           std::to_string(ctx_.left()) + ")";
  }
  if (own_ != nullptr && own_->next_to_send < own_->chunks()) {
    if (!out.empty()) out += ", ";
    out += "injecting own data (" + std::to_string(own_->chunks() - own_->next_to_send) +
           " chunks left)";
  }
  if (right_pulls_ && !right_released_) {
    if (!out.empty()) out += ", ";
    out += "release from rank " + std::to_string(ctx_.right());
  }
  return out.empty() ? "nothing (internal error)" : out;
}

}  // namespace mccl::protocol
