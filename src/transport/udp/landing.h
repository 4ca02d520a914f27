// The UDP endpoint's half of landing (transport/datagram.h): iovecs for a
// recvmmsg call that send the payloads a handler expects straight to their
// landings, and the sorting out afterwards of which datagram arrived where.
//
// Message i still reads into its receive slot, with the expected payloads
// cut out: its iovecs are header 0 (in the slot, at the offset it would
// have had), payload 0 (at landing 0), header 1, payload 1, ..., then the
// rest of the slot. So the slot mirrors the message at every offset but
// those of the landed payloads, and a datagram that turns out not to be the
// expected one is made whole again by copying its payload back to its
// offset in the slot. A read the guess did not fit (a shorter run, another
// sender's datagrams) thus costs one copy more, never a misplaced byte.
//
// The guess: the datagrams after the last one handed over (one root's
// stream arrives in order); or, where that missed lately or says nothing,
// those from the next message's first header on, peeked at (MSG_PEEK, one
// system call more: several roots' runs interleave in an allgather). Where
// the last reads carried runs (GRO), a call that lands reads one message,
// as runs vary in length and the next message's start is not known before
// this one is read. Where they carried single datagrams, a call reads as
// many messages as before, each guessed the datagram after the one before.
// Where guesses keep missing, landing pauses for a while.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/datagram.h"

namespace mccl::transport::udp {

class LandingReads {
 public:
  // Landings per message at most: the kernel's most segments in one GSO
  // send or GRO read (UDP_MAX_SEGMENTS, UDP_GRO_CNT_MAX).
  static constexpr std::size_t kMaxPerMessage = 64;

  // Datagrams below this size are never landed: every landed datagram costs
  // the kernel two more iovec pieces to fill, and for small ones that costs
  // more than the copy it saves (bench/micro BM_UdpReceive, on lo: with GRO,
  // 1,472-byte datagrams 6.5 GB/s copied, 4.8 landed; 8,972-byte ones 6.6
  // copied, 9.2 landed).
  static constexpr std::size_t kMinDatagram = 4096;

  // For `messages` receive slots of `slot_bytes` each, which take runs
  // where `runs` (GRO), read from socket `fd`; lands nothing where the
  // largest datagram, `max_datagram` bytes, is below kMinDatagram.
  LandingReads(std::size_t messages, std::size_t slot_bytes, bool runs, int fd,
               std::size_t max_datagram);

  // Before a recvmmsg call over msgs[0, count), whose message i reads into
  // slots + i * slot_bytes: points every message's iovecs at its slot and,
  // where `handler` expects datagrams, at their landings. Returns how many
  // messages the call should read (count, or 1 where it lands a run).
  std::size_t prepare(DatagramHandler& handler, mmsghdr* msgs, std::size_t count, std::byte* slots);
  // After it, for message i, which read `len` bytes cut into datagrams of
  // `segment` bytes: checks its landings, copies back every wrong one, and
  // returns the bytes copied back.
  std::size_t settle(std::size_t i, std::size_t len, std::size_t segment);
  // After settle(i): where the payload of datagram d of message i landed;
  // empty where the datagram lies whole in the slot.
  std::span<const std::byte> landed(std::size_t d) const;
  // After a call: `got` messages read, the most datagrams one held, and the
  // last datagram handed over (empty: none was), whose header is the next
  // guess's start.
  void finish_call(std::size_t got, std::size_t most_datagrams,
                   std::span<const std::byte> last_datagram);

 private:
  // Consecutive calls whose guesses mostly missed before landing pauses,
  // and the calls it then pauses for.
  static constexpr unsigned kMissedCallsToPause = 4;
  static constexpr unsigned kPauseCalls = 64;
  // Consecutive calls of single datagrams after which reads count as
  // carrying single datagrams again.
  static constexpr unsigned kSingleCallsToStopRuns = 8;
  // Calls that peek after a wrong guess, before guessing without again.
  static constexpr unsigned kPeekCalls = 32;
  static constexpr std::size_t kMaxHeaderBytes = 64;
  static constexpr std::size_t kIovPerMessage = 2 * kMaxPerMessage + 1;

  // Up to `want` landings from the next message's first header on, peeked
  // at; 0 where there is none yet or it is none of the handler's.
  std::size_t peek_landings(DatagramHandler& handler, std::size_t want);

  std::size_t slot_bytes_;
  bool enabled_;
  bool runs_;
  int fd_;
  LandingLayout layout_;
  bool usable_ = false;  // layout_ takes landings (set by prepare())
  std::byte* slots_ = nullptr;
  std::vector<iovec> iov_;          // kIovPerMessage per message
  std::vector<Landing> landings_;   // of this call, in message order
  std::vector<std::size_t> first_;  // message i's landings: [first_[i], first_[i + 1])
  std::array<std::int32_t, kMaxPerMessage> by_datagram_{};  // settle(): landing index or -1

  std::array<std::byte, kMaxHeaderBytes> previous_{};
  std::array<std::byte, kMaxHeaderBytes> peeked_{};
  bool have_previous_ = false;
  std::size_t run_ = 1;        // datagrams per message expected: the longest run lately, or 1
  unsigned single_calls_ = 0;  // consecutive calls whose messages held one datagram each
  std::size_t messages_ = 1;   // messages per call expected
  unsigned missed_calls_ = 0;
  unsigned paused_calls_ = 0;
  unsigned peek_calls_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0;  // this call's
};

}  // namespace mccl::transport::udp
