#include "protocol/early_messages.h"

#include <algorithm>
#include <cstring>

namespace mccl::protocol {

EarlyMessages::Message EarlyMessages::fresh(int peer, std::size_t size) {
  Message m;
  m.peer = peer;
  m.size = size;
  if (size >= kLandFromBytes) {
    m.memory = pool_.take(size);
    used_ = true;
  }
  if (m.memory.bytes == nullptr) {
    // Uninitialised: every byte is written before it is read.
    m.memory.bytes = std::make_unique_for_overwrite<std::byte[]>(std::max<std::size_t>(size, 1));
    m.memory.capacity = size;
  }
  return m;
}

void EarlyMessages::keep(std::uint32_t seq, int peer, std::span<const std::byte> first,
                         std::span<const std::byte> rest) {
  Message m = fresh(peer, first.size() + rest.size());
  if (!first.empty()) std::memcpy(m.memory.bytes.get(), first.data(), first.size());
  if (!rest.empty()) std::memcpy(m.memory.bytes.get() + first.size(), rest.data(), rest.size());
  adopt(seq, std::move(m));
}

std::span<std::byte> EarlyMessages::land(int peer, std::size_t head_bytes, std::size_t length) {
  Message m = fresh(peer, length);
  const std::span<std::byte> body{m.memory.bytes.get() + head_bytes, length - head_bytes};
  landing_.push_back(std::move(m));
  return body;
}

bool EarlyMessages::landing_from(int peer) const {
  return std::any_of(landing_.begin(), landing_.end(),
                     [peer](const Message& m) { return m.peer == peer; });
}

EarlyMessages::Message EarlyMessages::landed(int peer, std::span<const std::byte> head) {
  auto it = std::find_if(landing_.begin(), landing_.end(),
                         [peer](const Message& m) { return m.peer == peer; });
  Message m = std::move(*it);
  landing_.erase(it);
  std::memcpy(m.memory.bytes.get(), head.data(), head.size());
  return m;
}

std::vector<int> EarlyMessages::stop_landings() {
  std::vector<int> peers;
  for (const Message& m : landing_) peers.push_back(m.peer);
  landing_.clear();
  return peers;
}

void EarlyMessages::adopt(std::uint32_t seq, Message m) { by_seq_[seq].push_back(std::move(m)); }

std::vector<EarlyMessages::Message> EarlyMessages::take(std::uint32_t seq) {
  auto it = by_seq_.find(seq);
  if (it == by_seq_.end()) return {};
  std::vector<Message> out = std::move(it->second);
  by_seq_.erase(it);
  return out;
}

void EarlyMessages::recycle(Message m) {
  // A message adopted meanwhile has no memory left here.
  if (m.memory.bytes != nullptr && m.memory.capacity >= kLandFromBytes) {
    pool_.give_back(std::move(m.memory));
    used_ = true;
  }
}

void EarlyMessages::release_idle(common::TimePoint now) {
  if (used_) {
    used_ = false;
    idle_since_ = now;
    return;
  }
  if (pool_.count() > 0 && now - idle_since_ >= kKeepIdle) pool_.clear();
}

}  // namespace mccl::protocol
