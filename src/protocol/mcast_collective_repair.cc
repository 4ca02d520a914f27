// The repair side of McastCollective (mcast_collective.h): finding the
// chunks lost on the multicast group (detect_loss) and asking the left
// neighbour for them over the reliable transport (request_missing), and
// serving the right neighbour's requests, at once for the chunks held and
// later (serve_deferred) for those still on their way here.
#include <algorithm>

#include "protocol/context.h"
#include "protocol/mcast_collective.h"
#include "protocol/repair.h"

namespace mccl::protocol {

using common::TimePoint;

void McastCollective::request_missing(Stream& s, std::uint64_t begin, std::uint64_t end,
                                      TimePoint now) {
  if (!pull_from_left_ || s.local()) return;
  std::vector<std::byte> body;
  std::uint64_t chunks = 0, bytes = 0, first = 0;
  auto put32 = [&body](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) body.push_back(std::byte((v >> (8 * i)) & 0xFF));
  };
  for (std::uint64_t c = begin; c < end;) {
    common::BitRange gap = s.have.next_gap(c, end);
    if (gap.empty()) break;
    // Skip what was already asked for: the left neighbour never forgets.
    std::uint64_t b = gap.begin;
    while (b < gap.end) {
      while (b < gap.end && s.requested.test(b)) ++b;
      std::uint64_t e = b;
      while (e < gap.end && !s.requested.test(e)) s.requested.set(e++);
      if (e > b) {
        if (chunks == 0) first = b;
        put32(static_cast<std::uint32_t>(b));
        put32(static_cast<std::uint32_t>(e - b));
        chunks += e - b;
        bytes += s.span_bytes(b, e);
      }
      b = e;
    }
    c = gap.end;
  }
  // Everything below scan_from is now held or asked for.
  if (begin <= s.scan_from) s.scan_from = std::max(s.scan_from, end);
  if (chunks == 0) return;
  s.last_request = now;
  Counters::add(ctx_.counters().repairs_requested, chunks);
  Counters::add(ctx_.counters().repair_bytes_requested, bytes);
  ControlHeader h{.kind = ControlKind::kRepairRequest,
                  .seq = seq(),
                  .root = static_cast<std::uint32_t>(s.root()),
                  .signature = spec_.signature};
  common::Status st = ctx_.send_control(ctx_.left(), h, body);
  if (!st.is_ok()) ctx_.poison(st);
  ctx_.report_loss(h.root, seq(), spec_.signature, first, chunks);
}

// Whether all but a few chunks of the collective are here: kFewChunks, or
// 2% of all it receives (loss of 1% leaves about 1%).
bool McastCollective::few_missing() const {
  std::uint64_t missing = 0, total = 0;
  for (const auto& s : streams_) {
    if (s.local()) continue;
    missing += s.missing();
    total += s.chunks();
  }
  return missing <= std::max<std::uint64_t>(kFewChunks, total / 50);
}

void McastCollective::detect_loss(TimePoint now) {
  if (!pull_from_left_ || ctx_.backlogged()) return;
  const auto window = ctx_.config().reorder_window;
  const auto quiet = now - last_activity_;
  auto stall = ctx_.stall_deadline();
  // All but a few chunks here and the group quiet for half a loss deadline:
  // the rest of the traffic is over, and what is missing is lost (or a root
  // is late). Asked for then, tails included, rather than after the whole
  // deadline for holes and the left neighbour's kHave (which waits for its
  // own left neighbour, around the ring) or a long silence for tails: asking
  // early costs at most those few chunks twice (the left neighbour forwards
  // them as they arrive). Half, not less: with 8 ranks on 2 cores an eighth
  // (about two inter-arrival gaps) asked for chunks of descheduled roots in
  // loss-free runs (74 to 398 per 8-host sweep, none at half).
  const bool quiet_few = quiet > stall / 2 && few_missing();
  if (quiet_few) stall /= 2;
  for (auto& s : streams_) {
    if (s.local() || s.complete()) continue;
    // Far behind the newest chunk: reordering does not reach that far.
    if (s.seen_end > window && s.seen_end - window > s.scan_from) {
      request_missing(s, s.scan_from, s.seen_end - window, now);
    }
    if (quiet <= stall) continue;
    // Silence. What lies below the newest chunk seen was sent (a root
    // injects in order), so its holes are lost. What lies beyond may simply
    // not be sent yet: a root that starts late or is descheduled is no
    // loss, and asking for it would make the left neighbour forward the
    // whole rest of the stream over the reliable transport as it arrives,
    // doubling the traffic. The tail is asked for only once the left
    // neighbour holds everything (kHave), or after a long silence. The
    // long silence is needed: in an allgather every rank is some stream's
    // root and kHave covers all streams, so when every rank lost some tail,
    // each would wait for its left neighbour's kHave around the ring.
    //
    // A stream of which nothing at all has arrived is usually no loss but
    // a late root (descheduled on a busy host, or still in an earlier
    // call), and pulling it made the left neighbour forward all of it a
    // second time. A collective with one root (a broadcast) has no cycle:
    // the root holds everything, so kHave always travels the ring from it;
    // its stream is never pulled on silence alone. In an allgather a root
    // whose stream was lost everywhere still holds the others' and sends
    // kHave; only several such losses at once close the cycle, so such a
    // stream waits ten long silences.
    const auto long_silence = ctx_.config().stall_max + ctx_.config().first_timeout;
    const bool tail =
        left_has_all_ || quiet_few ||
        (streams_.size() > 1 && quiet > (s.seen_end > 0 ? long_silence : 10 * long_silence));
    request_missing(s, s.scan_from, tail ? s.chunks() : s.seen_end, now);
  }
}

void McastCollective::on_repair_request(const ControlHeader& h, std::span<const std::byte> body) {
  Stream* s = stream_of(h.root);
  const bool ok = s != nullptr && parse_repair_ranges(body, s->chunks(), [&](auto begin, auto end) {
                    // Serve the runs held now; remember the rest until they arrive.
                    for (std::uint64_t c = begin; c < end;) {
                      std::uint64_t held_end = std::min<std::uint64_t>(s->have.find_zero(c), end);
                      if (held_end > c) {
                        serve(*s, c, held_end);
                        c = held_end;
                        continue;
                      }
                      std::uint64_t gap_end = std::min<std::uint64_t>(s->have.find_one(c), end);
                      for (std::uint64_t g = c; g < gap_end; ++g) {
                        if (s->wanted.set(g)) ++s->wanted_count;
                      }
                      c = gap_end;
                    }
                  });
  if (!ok) Counters::add(ctx_.counters().dropped_invalid);
}

void McastCollective::serve(Stream& s, std::uint64_t begin, std::uint64_t end) {
  // The right neighbour may ask for this rank's own chunks before they are
  // injected (a root stalled near its end): filled first, as for sending.
  if (s.local() && !fill_own_through(s.span_bytes(0, end))) return;
  const common::Status st =
      send_repair_data(ctx_, seq(), static_cast<std::uint32_t>(s.root()), spec_.signature,
                       s.chunk_data(0, s.chunks()), begin, end);
  if (!st.is_ok()) ctx_.poison(st);
}

void McastCollective::serve_deferred() {
  deferred_ready_ = false;
  // Released: the right neighbour found the chunks it asked for elsewhere
  // (late multicast) and needs nothing more; it may have finished and gone,
  // so sending them now would fail on a peer that did nothing wrong.
  if (right_released_) return;
  for (auto& s : streams_) {
    if (s.wanted_count == 0) continue;
    for (std::uint64_t c = s.wanted.find_one(0); c < s.chunks();) {
      if (!s.have.test(c)) {
        c = s.wanted.find_one(c + 1);
        continue;
      }
      std::uint64_t e = c;
      while (e < s.chunks() && s.wanted.test(e) && s.have.test(e)) {
        s.wanted.reset(e++);
        --s.wanted_count;
      }
      serve(s, c, e);
      c = s.wanted.find_one(e);
    }
  }
}

void McastCollective::on_repair_data(const ControlHeader& h, std::span<const std::byte> body,
                                     TimePoint now) {
  Stream* s = stream_of(h.root);
  std::uint64_t begin = h.arg0, end = begin + std::uint64_t{h.arg1};
  if (s == nullptr || s->local() || h.arg1 == 0 || end > s->chunks() ||
      body.size() != s->span_bytes(begin, end)) {
    Counters::add(ctx_.counters().dropped_invalid);
    return;
  }
  std::uint64_t fresh = s->place_range(begin, end, body);
  Counters::add(ctx_.counters().dropped_duplicate, (end - begin) - fresh);
  if (fresh > 0) note_progress(*s);
  if (fresh > 0 && s->wanted_count > 0) deferred_ready_ = true;
  last_activity_ = now;
}

}  // namespace mccl::protocol
