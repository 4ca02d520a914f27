// What a rank runs in place of a collective it refused (its own arguments
// were invalid): it takes the collective's sequence number like any other
// call, so the ranks stay in step, tells every peer why it will not take
// part (a kCallRefused message, docs/wire-protocol.md), and fails at once
// with its own reason. The peers fail that collective with the same reason
// instead of waiting out the timeout or reporting an unrelated mismatch.
#pragma once

#include <memory>
#include <string>

#include "coll/local_steps.h"

namespace mccl::coll {

class RefusedCall final : public LocalOperation {
 public:
  RefusedCall(protocol::Context& ctx, common::Status why)
      : LocalOperation(ctx), why_(std::move(why)) {}

  std::string describe() const override { return "refused call"; }
  void on_start(common::TimePoint now) override;

 private:
  common::Status why_;
};

}  // namespace mccl::coll
