// How the endpoint names the descriptors of its epoll set (epoll_event's
// u32): an established connection by its peer's rank; a connection being
// dialled or answered, the listener, the timer, the pending flag and
// another transport's descriptor (share_wait) by tagged values no rank can
// take (ranks stay below 2^24).
#pragma once

#include <cstdint>

namespace mccl::transport::tcp {

inline constexpr std::uint32_t kPendingId = 0xFFFFFFFFu;
inline constexpr std::uint32_t kTimerId = 0xFFFFFFFEu;
inline constexpr std::uint32_t kListenId = 0xFFFFFFFDu;
inline constexpr std::uint32_t kSharedId = 0xFFFFFFFCu;
inline constexpr std::uint32_t kDialTag = 1u << 30;    // | the peer
inline constexpr std::uint32_t kAnswerTag = 1u << 29;  // | the answerer's serial number
inline constexpr std::uint32_t kIdMask = (1u << 24) - 1;

inline bool is_peer_id(std::uint32_t id) { return id <= kIdMask; }
inline bool is_dial_id(std::uint32_t id) { return (id & ~kIdMask) == kDialTag; }
inline bool is_answer_id(std::uint32_t id) { return (id & ~kIdMask) == kAnswerTag; }

}  // namespace mccl::transport::tcp
