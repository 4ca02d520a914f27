#include "transport/udp/landing.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mccl::transport::udp {
namespace {

// Enough for a call that reads every slot full of guessed runs, and no more:
// the handler fills each one it is asked for.
constexpr std::size_t kMaxLandings = 512;

}  // namespace

LandingReads::LandingReads(std::size_t messages, std::size_t slot_bytes, bool runs, int fd,
                           std::size_t max_datagram)
    : slot_bytes_(slot_bytes),
      enabled_(max_datagram >= kMinDatagram),
      runs_(runs),
      fd_(fd),
      iov_(messages * kIovPerMessage),
      landings_(std::min(messages * kMaxPerMessage, kMaxLandings)),
      first_(messages + 1, 0) {}

std::size_t LandingReads::prepare(DatagramHandler& handler, mmsghdr* msgs, std::size_t count,
                                  std::byte* slots) {
  slots_ = slots;
  hits_ = misses_ = 0;
  layout_ = handler.landing_layout();
  usable_ = enabled_ && layout_.header_bytes > 0 && layout_.header_bytes <= kMaxHeaderBytes &&
            layout_.key_offset + kLandingKeyBytes <= layout_.header_bytes;
  // Where the last reads carried runs (GRO coalesced them), a call that
  // lands reads one message and lands the whole run: runs vary in length,
  // so where the next message begins is unknown before this one is read.
  // Where they carried single datagrams (no GRO, or nothing coalesced), a
  // call reads as many messages as before, one landing each.
  const std::size_t per_message = runs_ && run_ > 1 ? kMaxPerMessage : 1;
  std::size_t total = 0;
  if (usable_) {
    if (paused_calls_ > 0) {
      --paused_calls_;
    } else {
      const std::size_t want =
          std::min(per_message > 1 ? run_ : std::min(count, messages_), landings_.size());
      const bool peek_first = peek_calls_ > 0 || !have_previous_;
      if (peek_calls_ > 0) --peek_calls_;
      if (!peek_first) {
        total = handler.landings({previous_.data(), layout_.header_bytes}, false,
                                 {landings_.data(), want});
      }
      if (total == 0) total = peek_landings(handler, want);
      if (per_message > 1 && total > 0) count = std::min<std::size_t>(count, 1);
    }
  }
  std::size_t next = 0;
  for (std::size_t i = 0; i < count; ++i) {
    iovec* v = &iov_[i * kIovPerMessage];
    std::byte* slot = slots + i * slot_bytes_;
    std::size_t at = 0;
    std::size_t k = 0;
    first_[i] = next;
    while (next < total && next - first_[i] < per_message) {
      const Landing& l = landings_[next];
      if (at + layout_.header_bytes + l.bytes > slot_bytes_) break;
      v[k++] = iovec{slot + at, layout_.header_bytes};
      v[k++] = iovec{l.payload, l.bytes};
      at += layout_.header_bytes + l.bytes;
      ++next;
    }
    if (at < slot_bytes_ || k == 0) v[k++] = iovec{slot + at, slot_bytes_ - at};
    msgs[i].msg_hdr.msg_iov = v;
    msgs[i].msg_hdr.msg_iovlen = k;
  }
  first_[count] = next;
  return count;
}

std::size_t LandingReads::peek_landings(DatagramHandler& handler, std::size_t want) {
  ssize_t got;
  do {
    got = ::recv(fd_, peeked_.data(), layout_.header_bytes, MSG_PEEK | MSG_DONTWAIT);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(layout_.header_bytes)) return 0;  // empty, or too short
  return handler.landings({peeked_.data(), layout_.header_bytes}, true, {landings_.data(), want});
}

std::size_t LandingReads::settle(std::size_t i, std::size_t len, std::size_t segment) {
  by_datagram_.fill(-1);
  std::byte* slot = slots_ + i * slot_bytes_;
  std::size_t at = 0;  // where landing j's header lies in the message
  std::size_t copied = 0;
  for (std::size_t j = first_[i]; j < first_[i + 1]; ++j) {
    const Landing& l = landings_[j];
    const std::size_t body = at + layout_.header_bytes;
    if (len <= body) break;  // the message ended before this payload (and the later ones)
    const std::size_t d = segment == 0 ? 0 : at / segment;
    const bool aligned = segment != 0 && at % segment == 0 && d < kMaxPerMessage &&
                         std::min(segment, len - at) == layout_.header_bytes + l.bytes;
    if (aligned &&
        std::memcmp(slot + at + layout_.key_offset, l.key.data(), kLandingKeyBytes) == 0) {
      by_datagram_[d] = static_cast<std::int32_t>(j);
      ++hits_;
    } else {
      const std::size_t filled = std::min(l.bytes, len - body);
      std::memcpy(slot + body, l.payload, filled);
      copied += filled;
      ++misses_;
    }
    at = body + l.bytes;
  }
  return copied;
}

std::span<const std::byte> LandingReads::landed(std::size_t d) const {
  if (d >= kMaxPerMessage || by_datagram_[d] < 0) return {};
  const Landing& l = landings_[static_cast<std::size_t>(by_datagram_[d])];
  return {l.payload, l.bytes};
}

void LandingReads::finish_call(std::size_t got, std::size_t most_datagrams,
                               std::span<const std::byte> last_datagram) {
  if (misses_ > 0) peek_calls_ = kPeekCalls;
  if (misses_ > hits_) {
    if (++missed_calls_ >= kMissedCallsToPause) {
      missed_calls_ = 0;
      paused_calls_ = kPauseCalls;
    }
  } else if (hits_ > 0) {
    missed_calls_ = 0;
  }
  if (got > 0) {
    messages_ = got + 1;
    // Runs once one is seen; single datagrams again only after a few calls
    // of nothing else (the tail of a stream or an odd single read does not
    // count).
    if (most_datagrams > 1) {
      run_ = std::clamp<std::size_t>(std::max(run_, most_datagrams), 1, kMaxPerMessage);
      single_calls_ = 0;
    } else if (++single_calls_ >= kSingleCallsToStopRuns) {
      run_ = 1;
    }
  }
  // A call that handed nothing over (or only a datagram too short to be
  // the handler's) keeps the guess it had.
  if (usable_ && last_datagram.size() >= layout_.header_bytes) {
    std::memcpy(previous_.data(), last_datagram.data(), layout_.header_bytes);
    have_previous_ = true;
  }
}

}  // namespace mccl::transport::udp
