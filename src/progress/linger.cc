#include "progress/linger.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "protocol/context.h"

namespace mccl::progress {
namespace {

struct Lingering {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<protocol::Context> ctx;
  common::Deadline deadline;
  bool finished() const { return ctx->serving() == 0 || deadline.expired(); }
};

// One thread for the whole process, started by the first linger(): it looks
// at what it holds every few milliseconds (the neighbour's release is one
// control message away) and destroys whatever is finished, outside the lock.
class Reaper {
 public:
  ~Reaper() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void add(Lingering item) {
    std::lock_guard lock(mu_);
    items_.push_back(std::move(item));
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }

  std::size_t size() {
    std::lock_guard lock(mu_);
    return items_.size();
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    // At exit (stopping_) it still waits for what it holds: each item ends
    // by its deadline, so exit is delayed at most that long.
    while (!(stopping_ && items_.empty())) {
      cv_.wait_for(lock, std::chrono::milliseconds(2));
      std::vector<Lingering> done;
      for (auto it = items_.begin(); it != items_.end();) {
        if (it->finished()) {
          done.push_back(std::move(*it));
          it = items_.erase(it);
        } else {
          ++it;
        }
      }
      lock.unlock();
      for (auto& d : done) d.engine.reset();  // stop driving, then close the transports
      done.clear();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Lingering> items_;
  bool stopping_ = false;
  std::thread thread_;
};

Reaper& reaper() {
  static Reaper r;
  return r;
}

}  // namespace

void linger(std::unique_ptr<Engine> engine, std::unique_ptr<protocol::Context> ctx,
            common::Deadline deadline) {
  reaper().add(Lingering{std::move(engine), std::move(ctx), deadline});
}

std::size_t lingering() { return reaper().size(); }

}  // namespace mccl::progress
