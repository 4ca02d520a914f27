// The sending rate of a communicator's roots where the link rate is unknown
// (DatagramTransport::link_rate_unknown): an estimate of the receivers' link
// rate, adapted from loss as congestion control adapts a window.
//
// - It starts at RateConfig::initial and stays within [floor, ceiling].
// - A loss report (kLossReport, sent by a receiver that had to ask for
//   repairs of this rank's stream) cuts it by `decrease`, once per episode:
//   reports about chunks injected before the last cut describe the overrun
//   that cut already answered, so they change nothing. The order is by
//   (collective, chunk): the position the root had reached when it cut.
// - Recovery has two speeds. Below `plateau` times the estimate the last
//   cut started from (the rate that overran the receivers), or before any
//   cut, every `recovery_bytes` injected without a cut raise it by
//   `recovery` (a fraction): it climbs back fast to where no loss was seen.
//   From there it rises by `probe` once per collective this root injects
//   in, and only after a collective without a cut: the growth within one
//   collective is then bounded whatever its size (growth per byte alone
//   took a 4 MiB root ×2.2 past the link before the first report came
//   back), and each probe is answered by the reports of the collective it
//   was made in. Bytes and collectives, not time: idle time between
//   collectives proves nothing about the link. And only what was sent
//   while the rate set the pace counts (the transport refused part of a
//   batch): a root held back by its CPU or its caller, not by the
//   estimate, learns nothing about the link from sending slower than it
//   (as TCP validates its window before growing it, RFC 7661); on a busy
//   host the estimate would otherwise drift far above the link, and the
//   first burst that did reach it would overrun the receivers. An estimate that probes
//   more than `plateau_expiry` above the rate that last overran has seen
//   the link grow (or the other traffic go): the plateau is forgotten.
// The estimate is the whole link's: the transport gives each of k roots
// injecting at once 1/k of it (share_link), so one estimate serves a
// broadcast and an allgather alike and carries over between them.
//
// Single-threaded: the context's progress thread owns it.
#pragma once

#include <cstdint>

namespace mccl::protocol {

struct RateConfig {
  bool adapt = true;  // where the link rate is unknown; off: unpaced there
  // Also where the rate is the one the device reports, which may be wrong
  // (DatagramTransport::link_rate_reported).
  bool adapt_reported = false;
  double initial_bytes_per_s = 125e6;   // 1 Gbit/s
  double floor_bytes_per_s = 12.5e6;    // 100 Mbit/s
  double ceiling_bytes_per_s = 12.5e9;  // 100 Gbit/s
  double decrease = 0.7;                // factor applied on loss
  double recovery = 0.05;               // growth per recovery_bytes without loss
  std::uint64_t recovery_bytes = 256 << 10;
  double plateau = 0.95;         // of the rate that overran: fast growth stops there
  double probe = 0.02;           // growth per clean collective from the plateau on
  double plateau_expiry = 1.10;  // of the rate that overran: the plateau is forgotten
};

class RateController {
 public:
  explicit RateController(const RateConfig& config);

  double bytes_per_s() const { return rate_; }
  std::uint64_t decreases() const { return decreases_; }

  // This root injected `bytes` of collective `seq`, up to chunk `next`
  // (exclusive) of its stream; `paced`: the transport refused part of
  // the batch (the rate set the pace). True when the estimate rose. The
  // first call of a collective is where a probe is made.
  bool on_injected(std::uint32_t seq, std::uint64_t next, std::uint64_t bytes, bool paced);
  // A receiver lost chunk `chunk` (and maybe more after it) of this root's
  // stream in collective `seq`. True when the estimate fell.
  bool on_loss(std::uint32_t seq, std::uint64_t chunk);

 private:
  struct Position {
    std::uint32_t seq = 0;
    std::uint64_t chunk = 0;
  };
  static bool before(const Position& a, const Position& b);
  // Where fast recovery stops: 0 before any cut or once forgotten.
  double plateau() const { return overran_at_ * config_.plateau; }
  double ceiling() const;
  void grow_by_bytes(std::uint64_t bytes);
  void probe_after(std::uint32_t seq);

  RateConfig config_;
  double rate_;
  std::uint64_t decreases_ = 0;
  std::uint64_t clean_bytes_ = 0;  // injected since the last change
  double overran_at_ = 0;          // the estimate the last cut started from; 0: none
  bool cut_in_current_ = false;    // a cut since current_seq_ began
  bool paced_in_current_ = false;  // the rate set the pace in current_seq_
  std::uint32_t current_seq_ = 0;  // the collective of the last on_injected
  bool injected_ = false;          // sent_ holds a position
  Position sent_;                  // the furthest this root has injected
  bool cut_ = false;               // cut_at_ holds a position
  Position cut_at_;                // sent_ when the estimate was last cut
};

}  // namespace mccl::protocol
