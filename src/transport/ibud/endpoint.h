// The IbTransport implementation: its verbs resources, the send path
// (staging ring, chained posts, selective signaling, inline) and the
// receive path (the ring of posted buffers). create_ib_transport
// (ibud_transport.cc) builds the resources; this class only moves
// datagrams.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "transport/ibud/ibud_transport.h"
#include "transport/ibud/verbs.h"

namespace mccl::transport::ibud {

// Page-aligned memory for registration.
struct AlignedBuffer {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> ptr;
  std::size_t size = 0;
  static AlignedBuffer make(std::size_t bytes);
  std::byte* data() const { return ptr.get(); }
};

// Every verbs object of one transport. Members are destroyed in reverse
// order: the AH, the attachment (detach), the join (leave), the QP, the
// MRs, their memory, the CQs, the PD, the channel, the device. That is the
// order rdma-core requires, on success and after any error in creation.
struct Resources {
  std::shared_ptr<Verbs> verbs;
  std::unique_ptr<Device> device;
  std::unique_ptr<CompChannel> channel;
  std::unique_ptr<Pd> pd;
  std::unique_ptr<Cq> send_cq;
  std::unique_ptr<Cq> recv_cq;
  AlignedBuffer recv_mem;  // rx_depth slots of kGrhBytes + mtu
  AlignedBuffer send_mem;  // sq_depth slots of mtu
  std::unique_ptr<Mr> recv_mr;
  std::unique_ptr<Mr> send_mr;
  std::unique_ptr<Qp> qp;
  std::unique_ptr<McastJoin> join;
  std::unique_ptr<McastAttachment> attachment;
  std::unique_ptr<Ah> ah;
};

class IbEndpoint final : public IbTransport {
 public:
  // `res` complete, the QP in RTS with every receive posted.
  IbEndpoint(Resources res, IbInfo info, int rank);

  DatagramCaps caps() const override;
  common::Status send(std::span<const OutDatagram> batch, std::size_t& accepted) override;
  common::Status poll(DatagramHandler& handler, std::size_t max, std::size_t& delivered) override;
  int wait_fd() const override { return res_.channel->fd; }

  IbCounters counters() const override;
  const IbInfo& info() const override { return info_; }

 private:
  static constexpr std::size_t kPollBatch = 32;  // completions per poll_cq call

  common::Status fail(common::Status st);  // makes the transport unusable, returns st
  common::Status reap_sends();             // send completions -> free slots
  common::Status take_events();            // completion-channel events
  common::Status arm(Cq& cq, bool& armed);
  std::string where() const;  // "ibud transport (mlx5_0:1, MGID ...)"

  Resources res_;
  IbInfo info_;
  int rank_;
  std::size_t slot_bytes_;  // receive slot: kGrhBytes + mtu
  common::Status error_;    // sticky: once a verbs call failed, every call fails

  // Send side: WR n uses staging slot n % sq_depth; it may be posted when
  // posted_ - completed_ < sq_depth. A completion of WR n means every WR
  // up to n is done (a UD send queue executes in order).
  std::uint64_t posted_ = 0;
  std::uint64_t completed_ = 0;
  bool send_armed_ = false;
  std::vector<SendWr> send_wrs_;

  // Receive side.
  bool recv_armed_ = false;
  std::vector<Wc> wcs_;
  std::vector<RecvWr> repost_;
  std::vector<std::span<const std::byte>> views_;  // one poll_cq batch, handed over at once

  struct Atomics {
    std::atomic<std::uint64_t> datagrams_sent{0}, bytes_sent{0}, inline_sent{0},
        datagrams_received{0}, bytes_received{0}, own_dropped{0}, short_dropped{0}, send_busy{0},
        send_completions{0}, cq_events{0};
  } counters_;
};

}  // namespace mccl::transport::ibud
