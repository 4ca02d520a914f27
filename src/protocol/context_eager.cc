// The context's part in eager completion (docs/wire-protocol.md): a rank
// that holds the whole result finishes at once and keeps a copy of what its
// right neighbour may still ask for; it serves that neighbour's repair
// requests from the copy until released (kRelease) or the deadline passes,
// also after the collective itself is gone (serve_until_released).
#include <poll.h>

#include <chrono>
#include <thread>
#include <vector>

#include "protocol/context.h"
#include "protocol/repair.h"

namespace mccl::protocol {

using common::Status;
using common::TimePoint;

bool Context::eager_fits(std::size_t bytes) const {
  return config_.eager_bytes > 0 && bytes <= config_.eager_bytes &&
         eager_bytes_ + bytes <= config_.eager_budget;
}

void Context::keep_for_right(const Operation& op, std::uint64_t signature,
                             std::vector<EagerStream> streams) {
  EagerCopy& copy = eager_[op.seq()];
  copy.signature = signature;
  copy.streams = std::move(streams);
  copy.bytes = 0;
  for (const auto& s : copy.streams) copy.bytes += s.data.size();
  copy.deadline = op.deadline_;
  eager_bytes_ += copy.bytes;
  eager_count_.store(eager_.size(), std::memory_order_release);
  Counters::add(counters_.eager_completions);
}

bool Context::on_eager_message(int peer, const ControlHeader& h, std::span<const std::byte> body) {
  auto it = eager_.find(h.seq);
  if (it == eager_.end() || peer != right()) return false;
  EagerCopy& copy = it->second;
  if (h.signature != copy.signature) {
    Counters::add(counters_.dropped_invalid);
    return true;
  }
  if (h.kind == ControlKind::kRelease) {
    eager_bytes_ -= copy.bytes;
    eager_.erase(it);
    eager_count_.store(eager_.size(), std::memory_order_release);
    return true;
  }
  if (h.kind != ControlKind::kRepairRequest) return false;
  const EagerStream* stream = nullptr;
  for (const auto& s : copy.streams) {
    if (s.root == h.root) stream = &s;
  }
  const std::span<const std::byte> data =
      stream != nullptr ? std::span<const std::byte>(stream->data) : std::span<const std::byte>();
  Status failed;
  const bool ok =
      stream != nullptr &&
      parse_repair_ranges(body, chunk_count(data.size(), config_.chunk_bytes), [&](auto b, auto e) {
        if (failed.is_ok())
          failed = send_repair_data(*this, h.seq, h.root, copy.signature, data, b, e);
      });
  if (!ok) Counters::add(counters_.dropped_invalid);
  if (!failed.is_ok()) poison(failed);
  return true;
}

void Context::serve_until_released(common::Deadline deadline) {
  std::vector<pollfd> fds;
  for (int fd : wait_fds()) fds.push_back({fd, POLLIN, 0});
  while (serving() > 0 && !deadline.expired()) {
    if (progress() > 0) continue;
    if (fds.empty()) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    } else {
      (void)::poll(fds.data(), fds.size(), 1);  // 1 ms: the eager deadlines
    }
  }
}

void Context::expire_eager(TimePoint now) {
  // The neighbour's own deadline has passed too: it fails without us.
  for (auto it = eager_.begin(); it != eager_.end();) {
    if (now >= it->second.deadline) {
      eager_bytes_ -= it->second.bytes;
      it = eager_.erase(it);
    } else {
      ++it;
    }
  }
  eager_count_.store(eager_.size(), std::memory_order_release);
}

void Context::clear_eager() {
  eager_.clear();
  eager_bytes_ = 0;
  eager_count_.store(0, std::memory_order_release);
}

}  // namespace mccl::protocol
