// A composite collective: child operations run one after the other under
// the schedule's single sequence number (UCC's schedule of tasks, reduced
// to a chain). The allreduce is a reduce-scatter followed by an allgather.
//
// The context knows only the schedule. At start the schedule gives every
// child its sequence number (Context::adopt) and starts the first; when a
// child completes the next starts in the same progress() call; the first
// failure ends the schedule. Traffic is routed:
// - control messages by `route(header)` to a step. A message for a step not
//   yet started is kept (copied) and handed over when that step starts, as
//   the context does for collectives not yet started; one for a finished
//   step is dropped, as the context drops late news.
// - datagrams, at any time, to `datagram_step` (the multicast step, if any),
//   even before it starts: a root sends only once its own earlier steps are
//   done, so the bytes it sends are final and may land in place at once.
//   Control messages must wait, because a started multicast step serves
//   repairs of its own stream, which a rank still reducing does not hold.
//
// One sequence number for the whole composite keeps numbering identical on
// every rank whatever algorithm a step uses, and needs no change to how the
// context allocates and routes them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "protocol/operation.h"

namespace mccl::coll {

class Schedule final : public protocol::Operation {
 public:
  using Router = std::function<std::size_t(const protocol::ControlHeader&)>;
  // `route` returns a step index (>= steps.size(): dropped as invalid);
  // `datagram_step` < 0: no step takes datagrams.
  Schedule(protocol::Context& ctx, std::string what,
           std::vector<std::shared_ptr<protocol::Operation>> steps, Router route,
           int datagram_step);

  std::string describe() const override { return what_; }
  void on_datagram(const protocol::DataHeader& h, std::span<const std::byte> payload,
                   common::TimePoint now) override;
  // The datagram step's, once it runs: before, an earlier step may still
  // use its buffer (the allreduce's reduce-scatter stages partial sums in
  // the buffer its allgather fills), and a wrong guess would write there.
  std::size_t landings(std::uint32_t root, std::uint64_t first,
                       std::span<transport::Landing> out) override;
  MCCL_OPERATION_HANDLERS;

 private:
  struct Held {
    std::size_t step;
    int peer;
    protocol::ControlHeader header;
    std::vector<std::byte> body;
  };
  void start_step(common::TimePoint now);

  std::string what_;
  std::vector<std::shared_ptr<protocol::Operation>> steps_;
  Router route_;
  int datagram_step_;
  std::size_t current_ = 0;
  std::vector<Held> held_;
};

}  // namespace mccl::coll
