// Inline engine: no thread of its own. Every test() and wait() of the
// application advances the protocol, so nothing moves while the
// application computes; Communicator::progress() exists for that case.
#include <thread>

#include "progress/engine.h"
#include "protocol/context.h"

namespace mccl::progress {

namespace {

class InlineEngine final : public Engine {
 public:
  explicit InlineEngine(protocol::Context& ctx) : ctx_(ctx) {}

  void start(const std::shared_ptr<protocol::Operation>& op) override {
    ctx_.start(op);
    ctx_.progress();
  }

  void poll() override { ctx_.progress(); }

  common::Status wait(const protocol::Operation& op, common::Deadline deadline) override {
    while (!op.done()) {
      if (deadline.expired()) return common::timeout_error("wait timed out");
      ctx_.progress();
      // Ranks may outnumber cores (8 ranks on 2 cores in the tests): give
      // the others a turn rather than burn the slice polling.
      if (!op.done()) std::this_thread::yield();
    }
    return common::Status::ok();
  }

 private:
  protocol::Context& ctx_;
};

}  // namespace

std::unique_ptr<Engine> make_inline_engine(protocol::Context& ctx) {
  return std::make_unique<InlineEngine>(ctx);
}

}  // namespace mccl::progress
