#include "codec/code_buffer.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace mccl::codec {

namespace {

struct Kept {
  std::unique_ptr<std::int64_t[]> mem;
  std::size_t capacity;
};

class Pool {
 public:
  // The smallest kept buffer that holds `count`, else a new one (not
  // zeroed: every code is written before it is read).
  Kept take(std::size_t count) {
    {
      std::lock_guard lock(mu_);
      auto best = kept_.end();
      for (auto it = kept_.begin(); it != kept_.end(); ++it) {
        if (it->capacity >= count && (best == kept_.end() || it->capacity < best->capacity)) {
          best = it;
        }
      }
      if (best != kept_.end()) {
        Kept k = std::move(*best);
        kept_.erase(best);
        bytes_ -= k.capacity * sizeof(std::int64_t);
        return k;
      }
    }
    return {std::make_unique_for_overwrite<std::int64_t[]>(count), count};
  }

  // Keeps `k` in front; the oldest go while more than the cap is kept.
  void put(Kept k) {
    std::vector<Kept> freed;  // freed outside the lock
    std::lock_guard lock(mu_);
    bytes_ += k.capacity * sizeof(std::int64_t);
    kept_.insert(kept_.begin(), std::move(k));
    while (bytes_ > kCodeBufferKeptBytes) {
      bytes_ -= kept_.back().capacity * sizeof(std::int64_t);
      freed.push_back(std::move(kept_.back()));
      kept_.pop_back();
    }
  }

  std::size_t bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Kept> kept_;  // most recently returned first
  std::size_t bytes_ = 0;
};

// Never destroyed: collectives may return buffers while the process exits.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

CodeBuffer::CodeBuffer(std::size_t count) : size_(count) {
  if (count == 0) return;
  Kept k = pool().take(count);
  mem_ = std::move(k.mem);
  capacity_ = k.capacity;
}

CodeBuffer::~CodeBuffer() { give_back(); }

CodeBuffer::CodeBuffer(CodeBuffer&& other) noexcept
    : mem_(std::move(other.mem_)),
      capacity_(std::exchange(other.capacity_, 0)),
      size_(std::exchange(other.size_, 0)) {}

CodeBuffer& CodeBuffer::operator=(CodeBuffer&& other) noexcept {
  if (this != &other) {
    give_back();
    mem_ = std::move(other.mem_);
    capacity_ = std::exchange(other.capacity_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void CodeBuffer::give_back() {
  if (mem_) pool().put({std::move(mem_), capacity_});
  capacity_ = 0;
  size_ = 0;
}

std::size_t code_buffer_kept_bytes() { return pool().bytes(); }

}  // namespace mccl::codec
