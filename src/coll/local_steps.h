// Two kinds of schedule step (schedule.h) for collectives whose later steps
// depend on what earlier ones produced, such as the compressed ones
// (compressed.h):
// - LocalStep runs a function on this rank when it starts and finishes
//   with its status: encoding, decoding. No messages. Its base,
//   LocalOperation, is any operation that does its work in on_start and
//   takes nothing from peers (refused_call.h is another).
// - DeferredStep builds its operation when it starts, from what the steps
//   before it left (the agreed sizes of encoded streams), and forwards to
//   it. Datagrams that arrive before it is built (a root that learnt the
//   sizes first and already injects) are kept, up to kEarlyBytes, and
//   handed over when it starts; beyond that they are dropped and repaired
//   like any lost datagram. Control messages never arrive early, as the
//   schedule holds them until the step starts.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "protocol/operation.h"

namespace mccl::coll {

class LocalOperation : public protocol::Operation {
 public:
  using Operation::Operation;
  std::string describe_wait() const override { return "nothing (local work)"; }
  void on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                   common::TimePoint) override {}
  void on_control(int, const protocol::ControlHeader&, std::span<const std::byte>,
                  common::TimePoint) override {}
  void progress(common::TimePoint) override {}
  bool needs(int) const override { return false; }
};

class LocalStep final : public LocalOperation {
 public:
  LocalStep(protocol::Context& ctx, std::string what, std::function<common::Status()> run)
      : LocalOperation(ctx), what_(std::move(what)), run_(std::move(run)) {}
  std::string describe() const override { return what_; }
  void on_start(common::TimePoint) override { finish(run_()); }

 private:
  std::string what_;
  std::function<common::Status()> run_;
};

class DeferredStep final : public protocol::Operation {
 public:
  using Factory = std::function<std::shared_ptr<protocol::Operation>()>;
  DeferredStep(protocol::Context& ctx, std::string what, Factory build)
      : Operation(ctx), what_(std::move(what)), build_(std::move(build)) {}

  std::string describe() const override { return inner_ ? inner_->describe() : what_; }
  void on_datagram(const protocol::DataHeader& h, std::span<const std::byte> payload,
                   common::TimePoint now) override;
  MCCL_OPERATION_HANDLERS;

 private:
  void settle();  // finishes when the inner operation has

  static constexpr std::size_t kEarlyBytes = std::size_t{256} << 20;
  struct Early {
    protocol::DataHeader header;
    std::vector<std::byte> payload;
  };
  std::vector<Early> early_;
  std::size_t early_bytes_ = 0;
  std::string what_;
  Factory build_;
  std::shared_ptr<protocol::Operation> inner_;
};

}  // namespace mccl::coll
