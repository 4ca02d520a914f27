#include "codec/code_buffer.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace mccl::codec {

namespace {

struct Kept {
  std::unique_ptr<std::int64_t[]> mem;
  std::size_t capacity;
};

std::size_t bytes_of(const Kept& k) { return k.capacity * sizeof(std::int64_t); }
std::size_t bytes_of(const std::vector<std::byte>& v) { return v.capacity(); }

// Returned buffers of one kind, most recently returned first, at most
// kCodeBufferKeptBytes of them.
template <typename Item>
class Pool {
 public:
  // The smallest kept item of at least `bytes`, if any.
  std::optional<Item> take(std::size_t bytes) {
    std::lock_guard lock(mu_);
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (bytes_of(*it) >= bytes && (best == kept_.end() || bytes_of(*it) < bytes_of(*best))) {
        best = it;
      }
    }
    if (best == kept_.end()) return std::nullopt;
    Item k = std::move(*best);
    kept_.erase(best);
    bytes_ -= bytes_of(k);
    return k;
  }

  // Keeps `k` in front; the oldest go while more than the cap is kept.
  void put(Item k) {
    std::vector<Item> freed;  // freed outside the lock
    std::lock_guard lock(mu_);
    bytes_ += bytes_of(k);
    kept_.insert(kept_.begin(), std::move(k));
    while (bytes_ > kCodeBufferKeptBytes) {
      bytes_ -= bytes_of(kept_.back());
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
  std::vector<Item> kept_;
  std::size_t bytes_ = 0;
};

// Never destroyed: collectives may return buffers while the process exits.
Pool<Kept>& pool() {
  static auto* p = new Pool<Kept>;
  return *p;
}
Pool<std::vector<std::byte>>& stream_pool() {
  static auto* p = new Pool<std::vector<std::byte>>;
  return *p;
}

}  // namespace

CodeBuffer::CodeBuffer(std::size_t count) : size_(count) {
  if (count == 0) return;
  std::optional<Kept> k = pool().take(count * sizeof(std::int64_t));
  // Only when none is kept (value_or would allocate every time); not
  // zeroed: every code is written before it is read.
  if (!k) k = Kept{std::make_unique_for_overwrite<std::int64_t[]>(count), count};
  mem_ = std::move(k->mem);
  capacity_ = k->capacity;
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

std::vector<std::byte> borrow_stream_bytes(std::size_t bytes) {
  std::vector<std::byte> v = stream_pool().take(bytes).value_or(std::vector<std::byte>{});
  v.clear();
  return v;
}

void return_stream_bytes(std::vector<std::byte> v) {
  if (v.capacity() > 0) stream_pool().put(std::move(v));
}

std::size_t stream_bytes_kept() { return stream_pool().bytes(); }

}  // namespace mccl::codec
