#include "coll/p2p_operation.h"

#include "protocol/context.h"

namespace mccl::coll {

using protocol::ControlHeader;
using protocol::Counters;

void P2pOperation::on_datagram(const protocol::DataHeader&, std::span<const std::byte>,
                               common::TimePoint) {
  drop_invalid();
}

ControlHeader P2pOperation::p2p_header(std::uint32_t arg0, std::uint32_t arg1) const {
  ControlHeader h{.kind = protocol::ControlKind::kP2pData,
                  .seq = seq(),
                  .signature = signature_,
                  .arg0 = arg0,
                  .arg1 = arg1};
  return h;
}

bool P2pOperation::send_p2p(int peer, const ControlHeader& h, std::span<const std::byte> body) {
  return sent(ctx_.send_control(peer, h, body), body.size());
}

bool P2pOperation::send_p2p_lent(int peer, const ControlHeader& h,
                                 std::span<const std::byte> body) {
  return sent(ctx_.send_control_lent(peer, h, body, *this), body.size());
}

bool P2pOperation::sent(const common::Status& st, std::size_t bytes) {
  if (!st.is_ok()) {
    ctx_.poison(st);
    return false;
  }
  Counters::add(ctx_.counters().p2p_bytes_sent, bytes);
  return true;
}

bool P2pOperation::signature_matches(int peer, const ControlHeader& h, const char* must_match) {
  if (h.signature == signature_) return true;
  fail_mismatch("was called with other arguments on rank " + std::to_string(peer) + ": " +
                must_match);
  return false;
}

void P2pOperation::fail_mismatch(const std::string& differs) {
  ctx_.poison(common::mismatch_error("rank " + std::to_string(ctx_.rank()) + ": collective #" +
                                     std::to_string(seq()) + " (" + describe() + ") " + differs));
}

void P2pOperation::drop_invalid() { Counters::add(ctx_.counters().dropped_invalid); }

}  // namespace mccl::coll
