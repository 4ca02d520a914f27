// What a rank runs in place of a collective it refused (its own arguments
// were invalid): it takes the collective's sequence number like any other
// call, so the ranks stay in step, tells every peer why it will not take
// part (a kCallRefused message, docs/wire-protocol.md), and fails at once
// with its own reason. The peers fail that collective with the same reason
// instead of waiting out the timeout or reporting an unrelated mismatch.
#pragma once

#include <memory>
#include <string>

#include "protocol/operation.h"

namespace mccl::coll {

class RefusedCall final : public protocol::Operation {
 public:
  RefusedCall(protocol::Context& ctx, common::Status why) : Operation(ctx), why_(std::move(why)) {}

  std::string describe() const override { return "refused call"; }
  std::string describe_wait() const override { return "nothing"; }
  void on_start(common::TimePoint now) override;
  void on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                   common::TimePoint) override {}
  void on_control(int, const protocol::ControlHeader&, std::span<const std::byte>,
                  common::TimePoint) override {}
  void progress(common::TimePoint) override {}
  bool needs(int) const override { return false; }

 private:
  common::Status why_;
};

}  // namespace mccl::coll
