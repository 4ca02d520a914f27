#include "progress/linger.h"

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

// One thread for the whole process, started by linger() when none runs: it
// looks at what it holds every few milliseconds (the neighbour's release is one
// control message away) and destroys whatever is finished, outside the lock.
class Reaper {
 public:
  // At exit: the thread ends once what it holds is finished.
  ~Reaper() {
    if (thread_.joinable()) thread_.join();
  }

  void add(Lingering item) {
    std::lock_guard lock(mu_);
    items_.push_back(std::move(item));
    if (running_) return;
    // The last thread found nothing more to do and is past the lock.
    if (thread_.joinable()) thread_.join();
    running_ = true;
    thread_ = std::thread([this] { loop(); });
  }

  std::size_t size() {
    std::lock_guard lock(mu_);
    return items_.size();
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    // It ends when it holds nothing, so a process that stops destroying
    // communicators keeps no thread of it; each item ends by its deadline,
    // so exit waits at most that long.
    while (!items_.empty()) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      lock.lock();
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
    running_ = false;
  }

  std::mutex mu_;
  std::vector<Lingering> items_;
  bool running_ = false;  // thread_ is in loop(); guarded by mu_
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
