#include "coll/refused_call.h"

#include "protocol/context.h"

namespace mccl::coll {

void RefusedCall::on_start(common::TimePoint) {
  protocol::ControlHeader h{.kind = protocol::ControlKind::kCallRefused,
                            .seq = seq(),
                            .arg0 = static_cast<std::uint32_t>(why_.code()),
                            .arg1 = static_cast<std::uint32_t>(ctx_.rank())};
  const std::string& text = why_.message();
  for (int peer = 0; peer < ctx_.size(); ++peer) {
    // Best effort: a peer that cannot be told times out as it would have.
    if (peer != ctx_.rank()) (void)ctx_.send_control(peer, h, std::as_bytes(std::span(text)));
  }
  finish(why_);
}

}  // namespace mccl::coll
