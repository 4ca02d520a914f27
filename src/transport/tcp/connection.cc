#include "transport/tcp/connection.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/little_endian.h"
#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {
namespace {

std::unique_ptr<std::byte[]> uninitialized(std::size_t n) {
  return std::make_unique_for_overwrite<std::byte[]>(n);
}

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

std::string hex(std::size_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%zx", v);
  return buf;
}

}  // namespace

Connection::Connection(int peer, Fd fd, TcpCounters& counters, ControlSink& sink)
    : peer_(peer), fd_(std::move(fd)), counters_(counters), sink_(sink) {}

void Connection::fail(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
  queue_.clear();
  queued_ = 0;
  lent_bytes_ = 0;
  spares_.clear();
}

bool Connection::send(std::span<const std::span<const std::byte>> parts, std::size_t total,
                      std::uint64_t lender) {
  if (broken()) return false;
  ++counters_.messages_sent;
  counters_.bytes_sent += total;
  return send_frame(static_cast<std::uint32_t>(total), parts, total, lender);
}

bool Connection::send_control(wire::ControlKind kind, std::uint32_t arg) {
  if (broken()) return false;
  std::array<std::byte, 4> a;
  common::put_le<std::uint32_t>(a.data(), arg);
  const std::span<const std::byte> part[1] = {a};
  return send_frame(wire::control_word(kind), part, a.size());
}

bool Connection::send_frame(std::uint32_t word, std::span<const std::span<const std::byte>> parts,
                            std::size_t total, std::uint64_t lender) {
  std::array<std::byte, wire::kFrameHeaderBytes> header;
  common::put_le<std::uint32_t>(header.data(), word);
  const std::size_t frame = header.size() + total;
  std::size_t written = 0;
  if (writable_ && queue_.empty()) {
    // One gather-write of header and parts: no copy when the socket has room.
    std::array<iovec, kMaxIov> iov;
    std::size_t n_iov = 0;
    std::size_t offered = header.size();
    iov[n_iov++] = {header.data(), header.size()};
    for (const auto& p : parts) {
      if (p.empty()) continue;
      if (n_iov == iov.size()) break;
      iov[n_iov++] = {const_cast<std::byte*>(p.data()), p.size()};
      offered += p.size();
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = n_iov;
    ssize_t n;
    do {
      n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      ++counters_.write_calls;
    } while (n < 0 && errno == EINTR);
    if (n < 0 && !would_block(errno)) {
      fail(errno_text(errno));
      return false;
    }
    written = n < 0 ? 0 : static_cast<std::size_t>(n);
    if (written < offered) writable_ = false;  // the socket is full
  }
  if (written == frame) return true;
  const std::size_t lent_before = lent_bytes_;
  enqueue(header, parts, written, frame - written, lender);
  ++counters_.sends_queued;
  counters_.bytes_queued += frame - written - (lent_bytes_ - lent_before);
  counters_.bytes_lent += lent_bytes_ - lent_before;
  // Parts beyond kMaxIov were not offered although the socket had room.
  return writable_ ? flush() : true;
}

void Connection::enqueue(std::span<const std::byte> header,
                         std::span<const std::span<const std::byte>> parts, std::size_t skip,
                         std::size_t rest, std::uint64_t lender) {
  // With a lender, the last part's unwritten bytes stay where they lie: only
  // what precedes them (a header, whole or in part) is copied.
  std::span<const std::byte> lent;
  if (lender != 0 && !parts.empty()) {
    const std::span<const std::byte> last = parts.back();
    const std::size_t unwritten = std::min(last.size(), rest);
    lent = last.subspan(last.size() - unwritten);
    parts = parts.first(parts.size() - 1);
  }
  const std::size_t copied = rest - lent.size();
  if (copied > 0) {
    // Never after a lent chunk: its cap is 0, and cap - size would wrap.
    if (queue_.empty() || queue_.back().lent != nullptr ||
        queue_.back().cap - queue_.back().size < copied) {
      queue_.push_back(take_chunk(copied));
    }
    Chunk& dst = queue_.back();
    auto copy = [&](std::span<const std::byte> piece) {
      if (skip >= piece.size()) {
        skip -= piece.size();
        return;
      }
      piece = piece.subspan(skip);
      skip = 0;
      std::memcpy(dst.data.get() + dst.size, piece.data(), piece.size());
      dst.size += piece.size();
    };
    copy(header);
    for (const auto& p : parts) copy(p);
  }
  if (!lent.empty()) {
    Chunk c;
    c.lent = lent.data();
    c.size = lent.size();
    c.lender = lender;
    queue_.push_back(std::move(c));
    lent_bytes_ += lent.size();
  }
  queued_ += rest;
}

void Connection::reclaim(std::uint64_t lender) {
  if (lent_bytes_ == 0) return;
  for (Chunk& c : queue_) {
    if (c.lent == nullptr || c.lender != lender) continue;
    // In place: the queue keeps its order and length (a flush or a receive
    // may be under way further up the stack).
    const std::size_t left = c.size - c.off;
    Chunk own = take_chunk(left);  // a kept one where it fits
    std::memcpy(own.data.get(), c.lent + c.off, left);
    own.size = left;
    c = std::move(own);
    lent_bytes_ -= left;
    ++counters_.lent_chunks_reclaimed;
  }
}

Connection::Chunk Connection::take_chunk(std::size_t rest) {
  // Small remainders share chunks of kQueueChunkBytes; a large one gets a
  // chunk of its own, a kept one where one fits.
  Chunk c;
  if (rest > kQueueChunkBytes) {
    common::KeptBuffers::Buffer kept = spares_.take(rest);
    if (kept.bytes != nullptr) {
      c.data = std::move(kept.bytes);
      c.cap = kept.capacity;
      return c;
    }
  }
  c.cap = rest <= kQueueChunkBytes
              ? kQueueChunkBytes
              : (rest + kQueueRoundBytes - 1) / kQueueRoundBytes * kQueueRoundBytes;
  c.data = uninitialized(c.cap);
  ++counters_.queue_chunks_made;
  return c;
}

void Connection::retire_chunk(Chunk&& c) {
  if (c.cap > kQueueChunkBytes) spares_.give_back({std::move(c.data), c.cap});
}

bool Connection::flush() {
  while (!broken() && !queue_.empty()) {
    std::array<iovec, kMaxIov> iov;
    std::size_t n_iov = 0;
    std::size_t offered = 0;
    for (auto it = queue_.begin(); it != queue_.end() && n_iov < iov.size(); ++it) {
      iov[n_iov++] = {const_cast<std::byte*>(it->bytes()) + it->off, it->size - it->off};
      offered += it->size - it->off;
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = n_iov;
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    ++counters_.write_calls;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (would_block(errno)) {
        writable_ = false;
        return true;
      }
      fail(errno_text(errno));
      return false;
    }
    auto left = static_cast<std::size_t>(n);
    queued_ -= left;
    while (left > 0) {
      Chunk& c = queue_.front();
      std::size_t take = std::min(left, c.size - c.off);
      c.off += take;
      left -= take;
      if (c.lent != nullptr) lent_bytes_ -= take;
      if (c.off == c.size) {
        retire_chunk(std::move(c));
        queue_.pop_front();
      }
    }
    if (static_cast<std::size_t>(n) < offered) {
      writable_ = false;
      return true;
    }
  }
  return !broken();
}

bool Connection::has_ready_message() const {
  if (in_big_) return big_got_ == big_len_;
  if (in_land_) return land_got_ == land_len_;
  if (rend_ - rbeg_ < wire::kFrameHeaderBytes) return false;
  std::size_t len = common::get_le<std::uint32_t>(rbuf_.get() + rbeg_);
  if (len & wire::kControlBit) return rend_ - rbeg_ >= wire::kControlFrameBytes;
  return len <= wire::kMaxMessageBytes && rend_ - rbeg_ - wire::kFrameHeaderBytes >= len;
}

bool Connection::deliver_ready(ReliableHandler& handler, std::size_t max, std::size_t& delivered) {
  for (;;) {
    if (in_big_ || in_land_) {
      if (!has_ready_message()) return true;
      if (delivered >= max) return false;
      ++delivered;
      deliver_long(handler);
      continue;
    }
    const std::size_t avail = rend_ - rbeg_;
    if (avail < wire::kFrameHeaderBytes) return true;
    const std::size_t len = common::get_le<std::uint32_t>(rbuf_.get() + rbeg_);
    if (len & wire::kControlBit) {
      // Not a message: it does not count against `max`.
      const std::size_t kind_bits = len & ~std::size_t{wire::kControlBit};
      if (kind_bits < 1 || kind_bits > static_cast<std::size_t>(wire::ControlKind::kLast)) {
        fail("sent a frame word of 0x" + hex(len) +
             ", neither a message length nor a control frame: the stream is corrupt");
        read_done_ = true;
        rbeg_ = rend_ = 0;
        return false;
      }
      if (avail < wire::kControlFrameBytes) return true;
      const auto kind = static_cast<wire::ControlKind>(kind_bits);
      const auto arg = common::get_le<std::uint32_t>(rbuf_.get() + rbeg_ + 4);
      rbeg_ += wire::kControlFrameBytes;
      if (kind == wire::ControlKind::kGoodbye) got_goodbye_ = true;
      sink_.on_control(peer_, kind, arg);
      continue;
    }
    if (len > wire::kMaxMessageBytes) {
      fail("sent a message length of " + std::to_string(len) +
           " bytes, over the 1 GiB limit: the stream is corrupt");
      read_done_ = true;
      rbeg_ = rend_ = 0;
      return false;
    }
    const std::byte* body = rbuf_.get() + rbeg_ + wire::kFrameHeaderBytes;
    const std::size_t have = avail - wire::kFrameHeaderBytes;
    if (have >= len) {
      if (delivered >= max) return false;
      rbeg_ += wire::kFrameHeaderBytes + len;
      landed_before_ = false;
      ++delivered;
      ++counters_.messages_received;
      counters_.bytes_received += len;
      // The handler must not poll (reliable.h), so the buffer stays put.
      handler.on_message(peer_, std::span<const std::byte>(body, len));
      continue;
    }
    if (len > kBigMessageBytes) {
      // A landing is decided on the message's head: wait for it.
      if (have < kLandingHeadBytes && !read_done_) return true;
      if (begin_landing(handler, body, have, len)) continue;
      if (len > big_cap_) {
        big_.reset();  // before allocating: peak memory is one buffer, not two
        big_ = uninitialized(len);
        big_cap_ = len;
      }
      std::memcpy(big_.get(), body, have);
      big_len_ = len;
      big_got_ = have;
      in_big_ = true;
      rbeg_ = rend_ = 0;
      continue;
    }
    return true;  // the rest of a small message is still in the socket
  }
}

void Connection::deliver_long(ReliableHandler& handler) {
  ++counters_.messages_received;
  landed_before_ = in_land_;
  if (in_big_) {
    in_big_ = false;
    counters_.bytes_received += big_len_;
    handler.on_message(peer_, std::span<const std::byte>(big_.get(), big_len_));
    if (big_cap_ > kKeepBigBytes) {
      big_.reset();
      big_cap_ = 0;
    }
    return;
  }
  in_land_ = false;
  counters_.bytes_received += land_head_len_ + land_len_;
  if (land_abandoned_) {
    ++counters_.landings_abandoned;
    return;
  }
  ++counters_.messages_landed;
  handler.on_message_landed(peer_, std::span<const std::byte>(land_head_.data(), land_head_len_),
                            std::span<const std::byte>(land_, land_len_));
}

bool Connection::begin_landing(ReliableHandler& handler, const std::byte* body, std::size_t have,
                               std::size_t len) {
  const MessageLanding l =
      handler.message_landing(peer_, std::span<const std::byte>(body, have), len);
  if (l.body.data() == nullptr || l.head_bytes > have || l.head_bytes > kLandingHeadBytes ||
      l.body.size() != len - l.head_bytes) {
    return false;
  }
  std::memcpy(land_head_.data(), body, l.head_bytes);
  land_head_len_ = l.head_bytes;
  land_ = l.body.data();
  land_len_ = l.body.size();
  land_got_ = have - l.head_bytes;
  std::memcpy(land_, body + l.head_bytes, land_got_);
  in_land_ = true;
  land_abandoned_ = false;
  rbeg_ = rend_ = 0;
  return true;
}

void Connection::abandon_landing() {
  if (!in_land_ || land_abandoned_) return;
  // The rest goes to a buffer of our own; what landed already stays where it is.
  if (land_len_ > big_cap_) {
    big_.reset();
    big_ = uninitialized(land_len_);
    big_cap_ = land_len_;
  }
  land_ = big_.get();
  land_abandoned_ = true;
}

void Connection::make_room() {
  if (rbeg_ == rend_) {
    rbeg_ = rend_ = 0;
  } else if (rend_ > kReadBufferBytes / 2) {
    // What is left is one partial small message: cheap to move.
    std::memmove(rbuf_.get(), rbuf_.get() + rbeg_, rend_ - rbeg_);
    rend_ -= rbeg_;
    rbeg_ = 0;
  }
}

void Connection::receive(ReliableHandler& handler, std::size_t max, std::size_t& delivered) {
  if (!rbuf_) rbuf_ = uninitialized(kReadBufferBytes);
  std::size_t budget = kReadBudgetBytes;
  // A read that returns less than it asked for emptied the socket: the
  // next read would only say EAGAIN, a system call on every message's
  // critical path. What arrives after it, epoll (level-triggered) reports.
  bool drained = false;
  for (;;) {
    if (!deliver_ready(handler, max, delivered)) return;
    if (drained || read_done_ || budget == 0 || !fd_.valid()) return;
    std::byte* dst;
    std::size_t room;
    if (in_big_) {
      dst = big_.get() + big_got_;
      room = big_len_ - big_got_;
    } else if (in_land_) {
      dst = land_ + land_got_;
      room = land_len_ - land_got_;
    } else {
      make_room();
      dst = rbuf_.get() + rend_;
      room = kReadBufferBytes - rend_;
      // After a message that landed another may begin here: read only as
      // far as its landing is decided, so the rest of it lands instead of
      // passing through this buffer (a 128 KiB segment would pass half of
      // itself). A stream whose long messages do not land (the handler
      // declines them) reads as before.
      if (landed_before_ && rend_ == rbeg_) room = wire::kFrameHeaderBytes + kLandingHeadBytes;
    }
    const std::size_t asked = std::min(room, budget);
    ssize_t n = ::recv(fd_.get(), dst, asked, MSG_DONTWAIT);
    ++counters_.read_calls;
    if (n > 0) {
      auto got = static_cast<std::size_t>(n);
      (in_big_ ? big_got_ : in_land_ ? land_got_ : rend_) += got;
      budget -= got;
      drained = got < asked;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && would_block(errno)) return;
    read_done_ = true;
    if (n == 0 && got_goodbye_) {
      ended_ = true;  // the orderly end of a connection closed by both ends
      return;
    }
    fail(n == 0 ? std::string("closed by the peer") : errno_text(errno));
  }
}

void Connection::close() {
  if (fd_.valid() && !read_done_) {
    std::array<std::byte, 4096> sink;
    while (::recv(fd_.get(), sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
    }
  }
  fd_.reset();
  queue_.clear();
  queued_ = 0;
  lent_bytes_ = 0;
  spares_.clear();
  rbuf_.reset();
  big_.reset();
  big_cap_ = 0;
  in_big_ = false;
  in_land_ = false;
  land_ = nullptr;
  rbeg_ = rend_ = 0;
}

}  // namespace mccl::transport::tcp
