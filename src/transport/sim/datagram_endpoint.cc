// One rank's membership of a multicast group on the simulated fabric.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "transport/burst.h"
#include "transport/sim/fabric_impl.h"

namespace mccl::transport::sim {
namespace {

constexpr std::size_t kMaxInFlight = 1024;
// Datagrams moved out of the inbox per lock: the handler runs with the lock
// released, so senders are not held up by a slow receiver.
constexpr std::size_t kPollChunk = 32;

class DatagramEndpoint final : public DatagramTransport {
 public:
  DatagramEndpoint(std::shared_ptr<FabricImpl> fabric, std::uint64_t group, int rank, int node)
      : fabric_(std::move(fabric)),
        group_(fabric_->group(group)),
        self_(fabric_->rank_state(node)),
        inbox_(std::make_shared<Inbox>(fabric_->config.receive_depth)),
        rank_(rank) {
    share_link(1);
    std::unique_lock lock(group_->mu);
    group_->members.push_back(GroupMember{rank_, inbox_, self_});
  }

  ~DatagramEndpoint() override {
    std::unique_lock lock(group_->mu);
    auto& ms = group_->members;
    ms.erase(std::remove_if(ms.begin(), ms.end(),
                            [&](const GroupMember& m) { return m.inbox == inbox_; }),
             ms.end());
  }

  DatagramCaps caps() const override {
    return DatagramCaps{fabric_->config.mtu, kMaxInFlight, false, "sim"};
  }

  common::Status send(std::span<const OutDatagram> batch, std::size_t& accepted) override;
  // `senders` roots inject at once: this one gets 1/senders of the link.
  void share_link(unsigned senders) override {
    senders_ = std::max(1u, senders);
    repace();
  }
  void set_incast_budget(std::size_t bytes) override {
    incast_budget_ = bytes;
    repace();
  }
  bool link_rate_unknown() const override {
    return fabric_->config.hide_link_rate && fabric_->config.link_gbit_per_s > 0;
  }
  void set_link_estimate(double bytes_per_s) override {
    if (!link_rate_unknown() || bytes_per_s <= 0) return;
    estimate_ns_per_byte_ = 1e9 / bytes_per_s;
    repace();
  }
  common::Status poll(DatagramHandler& handler, std::size_t max, std::size_t& delivered) override;

 private:
  // The time a byte takes on this sender's link: its share of the link
  // rate, or where that is hidden the link itself (never faster) or the
  // share of the estimate it was given, whichever is slower.
  void repace() {
    if (fabric_->config.link_gbit_per_s <= 0) return;
    const FabricConfig& config = fabric_->config;
    const double link_ns_per_byte = fabric_->link_ns_per_byte();
    ns_per_byte_ = config.hide_link_rate
                       ? std::max(link_ns_per_byte, estimate_ns_per_byte_ * senders_)
                       : link_ns_per_byte * senders_;
    // With a bucket the datagrams themselves go at the whole link rate
    // while tokens last; the bucket refills at the share.
    burst_ = config.sender_burst_bytes == 0
                 ? 0.0
                 : static_cast<double>(root_burst_bytes(config.sender_burst_bytes, senders_,
                                                        incast_budget_, config.mtu));
    tokens_ = std::min(tokens_, burst_);
    // The backlog a full send queue represents: max_in_flight datagrams
    // of MTU size waiting for the link.
    max_backlog_ = std::chrono::nanoseconds(static_cast<std::int64_t>(
        std::ceil(static_cast<double>(kMaxInFlight * fabric_->config.mtu) * ns_per_byte_)));
    // The ports see a datagram when it is sent, stamped with its arrival:
    // a sender that booked far ahead would make the others' earlier
    // datagrams queue behind its later ones. Keeping every sender's
    // queue shorter than half a port buffer's drain time bounds that error
    // below what the buffer absorbs.
    if (fabric_->config.port_buffer_bytes > 0) {
      max_backlog_ = std::min(
          max_backlog_, std::chrono::nanoseconds(
                            std::llround(static_cast<double>(fabric_->config.port_buffer_bytes) *
                                         4.0 / fabric_->config.link_gbit_per_s)));
    }
  }

  // Caller holds self_->link_mu. Books the link for a datagram of `bytes`
  // and sets `arrival`; false when the backlog is already full.
  bool book_link(common::TimePoint now, std::size_t bytes, common::TimePoint& arrival);

  std::shared_ptr<FabricImpl> fabric_;
  std::shared_ptr<Group> group_;
  std::shared_ptr<RankState> self_;
  std::shared_ptr<Inbox> inbox_;
  const int rank_;
  double ns_per_byte_ = 0.0;           // 0: the link is infinitely fast
  unsigned senders_ = 1;               // share_link()
  double estimate_ns_per_byte_ = 0.0;  // set_link_estimate(); 0: none given
  std::chrono::nanoseconds max_backlog_{0};
  // The token bucket (FabricConfig::sender_burst_bytes); burst_ 0: none.
  double burst_ = 0;
  std::size_t incast_budget_ = 0;  // set_incast_budget()
  double tokens_ = 0;
  common::TimePoint tokens_at_{};
  bool bucket_started_ = false;  // it starts full, at the first send
  std::uint64_t next_counter_ = 0;
  std::vector<Outgoing> scratch_;  // reused by send() so a batch costs no allocation
};

bool DatagramEndpoint::book_link(common::TimePoint now, std::size_t bytes,
                                 common::TimePoint& arrival) {
  common::TimePoint depart = std::max(now, self_->link_free_at);
  if (depart - now > max_backlog_) return false;
  double ns_per_byte = ns_per_byte_;
  if (burst_ > 0) {
    if (!bucket_started_) {
      bucket_started_ = true;
      tokens_ = burst_;
      tokens_at_ = now;
    }
    const auto dt = static_cast<double>(std::chrono::nanoseconds(now - tokens_at_).count());
    tokens_ = std::min(burst_, tokens_ + dt / ns_per_byte_);
    tokens_at_ = now;
    // As the UDP pacer: a datagram larger than the bucket passes once it is full.
    const auto need = static_cast<double>(bytes);
    if (tokens_ < need && tokens_ < burst_) return false;
    tokens_ -= need;
    ns_per_byte = fabric_->link_ns_per_byte();
  }
  auto wire = std::chrono::nanoseconds(std::llround(static_cast<double>(bytes) * ns_per_byte));
  self_->link_free_at = depart + wire;
  // The last bit leaves when serialisation ends; receivers see the
  // datagram only then.
  arrival = self_->link_free_at;
  return true;
}

common::Status DatagramEndpoint::send(std::span<const OutDatagram> batch, std::size_t& accepted) {
  accepted = 0;
  if (self_->is_dead()) return common::peer_failure(killed_message(rank_));
  const FabricConfig& config = fabric_->config;
  const common::TimePoint now = fabric_->now();
  common::Status status;

  std::unique_lock<std::mutex> link_lock;
  if (ns_per_byte_ > 0) link_lock = std::unique_lock(self_->link_mu);
  scratch_.clear();
  for (const OutDatagram& d : batch) {
    std::size_t bytes = d.header.size() + d.payload.size();
    if (bytes > config.mtu) {
      status = common::invalid_argument("sim fabric: rank " + std::to_string(rank_) +
                                        " sent a datagram of " + std::to_string(bytes) +
                                        " bytes, over the MTU of " + std::to_string(config.mtu));
      break;
    }
    common::TimePoint at = now;
    if (ns_per_byte_ > 0 && !book_link(now, bytes, at)) break;  // busy: caller retries later
    auto buf = std::make_shared_for_overwrite<std::byte[]>(bytes);
    if (!d.header.empty()) std::memcpy(buf.get(), d.header.data(), d.header.size());
    if (!d.payload.empty()) {
      std::memcpy(buf.get() + d.header.size(), d.payload.data(), d.payload.size());
    }
    scratch_.push_back(Outgoing{std::move(buf), static_cast<std::uint32_t>(bytes), next_counter_++,
                                at + config.latency});
  }
  if (link_lock.owns_lock()) link_lock.unlock();

  fabric_->fan_out(*group_, rank_, scratch_);
  accepted = scratch_.size();
  fabric_->counters.sent.fetch_add(accepted, std::memory_order_relaxed);
  scratch_.clear();  // drops this sender's references to the payloads
  return status;
}

common::Status DatagramEndpoint::poll(DatagramHandler& handler, std::size_t max,
                                      std::size_t& delivered) {
  delivered = 0;
  if (self_->is_dead()) return common::peer_failure(killed_message(rank_));
  if (max == 0 || inbox_->maybe_empty()) return common::Status::ok();
  const common::TimePoint now = fabric_->now();
  std::array<InboxEntry, kPollChunk> ready;
  std::array<std::span<const std::byte>, kPollChunk> views;
  while (delivered < max) {
    std::size_t want = std::min(kPollChunk, max - delivered);
    std::size_t n = inbox_->pop_ready(now, ready.data(), want);
    for (std::size_t i = 0; i < n; ++i) {
      views[i] = std::span<const std::byte>(ready[i].data.get(), ready[i].size);
    }
    if (n > 0) handler.on_datagrams(DatagramBatch(views.data(), n));
    for (std::size_t i = 0; i < n; ++i) ready[i].data.reset();
    delivered += n;
    if (n < want) break;
  }
  if (delivered) fabric_->counters.delivered.fetch_add(delivered, std::memory_order_relaxed);
  return common::Status::ok();
}

}  // namespace

std::unique_ptr<DatagramTransport> make_datagram_endpoint(std::shared_ptr<FabricImpl> fabric,
                                                          std::uint64_t group, int rank, int node) {
  return std::make_unique<DatagramEndpoint>(std::move(fabric), group, rank, node);
}

}  // namespace mccl::transport::sim
