// Context's datagram side (context.h): the batches the datagram transport
// hands over, whole or landed, checked (by the engine alone, or with the
// helpers, check_batch.h) and routed to their collective, kept as early
// arrivals, or dropped and counted.
#include "common/log.h"
#include "common/seq.h"
#include "protocol/context.h"

namespace mccl::protocol {

void Context::on_foreign_datagrams(std::size_t count) {
  Counters::add(counters_.dropped_invalid, count);
}

void Context::on_datagrams(transport::DatagramBatch batch) {
  if (checker_ != nullptr) {
    checking_.clear();
    for (const auto& d : batch) checking_.push_back({.header = d});
    if (routed_with_helpers()) return;
  }
  // Consecutive datagrams nearly always belong to one collective: its
  // sequence number is looked up once per run, not once per datagram.
  Route route;
  for (const auto& d : batch) on_datagram(d, route);
}

bool Context::routed_with_helpers() {
  std::size_t bytes = 0;  // what a datagram's check reads
  for (const CheckedDatagram& d : checking_) bytes += d.landed ? d.body.size() : d.header.size();
  if (bytes < CheckBatch::kMinBytes) return false;
  checker_->run(checking_, tag_, config_.checksum, data_auth());
  Route route;
  for (const CheckedDatagram& d : checking_) {
    route_datagram(d.check, d.h, d.payload, d.landed ? std::span<const std::byte>{} : d.header,
                   route);
  }
  return true;
}

transport::LandingLayout Context::landing_layout() const {
  return {data_header_bytes(mac_ != nullptr), kDataKeyOffset};
}

std::size_t Context::landings(std::span<const std::byte> header, bool inclusive,
                              std::span<transport::Landing> out) {
  DataKey k;
  if (!peek_data_key(header, tag_, k) || k.root >= static_cast<std::uint32_t>(size_)) return 0;
  auto it = active_.find(k.seq);
  if (it == active_.end() || it->second->done()) return 0;
  return it->second->landings(k.root, std::uint64_t{k.chunk_index} + (inclusive ? 0 : 1), out);
}

void Context::on_landed(std::span<const transport::LandedDatagram> batch) {
  if (checker_ != nullptr) {
    checking_.clear();
    for (const auto& d : batch) {
      checking_.push_back({.header = d.header, .body = d.payload, .landed = true});
    }
    if (routed_with_helpers()) return;
  }
  Route route;
  for (const transport::LandedDatagram& d : batch) {
    DataHeader h;
    std::span<const std::byte> payload;
    const DataCheck check =
        decode_data(d.header, d.payload, tag_, config_.checksum, data_auth(), h, payload);
    route_datagram(check, h, payload, {}, route);
  }
}

void Context::on_copied_back(std::size_t bytes) {
  Counters::add(counters_.mcast_bytes_copied, bytes);
}

void Context::on_datagram(std::span<const std::byte> datagram, Route& route) {
  DataHeader h;
  std::span<const std::byte> payload;
  const DataCheck check = decode_data(datagram, tag_, config_.checksum, data_auth(), h, payload);
  route_datagram(check, h, payload, datagram, route);
}

void Context::route_datagram(DataCheck check, const DataHeader& h,
                             std::span<const std::byte> payload,
                             std::span<const std::byte> datagram, Route& route) {
  if (check != DataCheck::kOk) {
    Counters::add(counters_.dropped_invalid);
    if (check == DataCheck::kBadMac && !warned_forgery_) {
      // Corruption the fabric's own checksums missed is rare; this is
      // more likely someone without the key sending to the group.
      warned_forgery_ = true;
      common::logf(common::LogLevel::kWarn, rank_,
                   "dropped a datagram that failed authentication (collective #%u, root %u); "
                   "further ones are only counted (dropped_invalid)",
                   h.seq, h.root);
    }
    common::logf(common::LogLevel::kDebug, rank_, "dropped datagram: %s", to_string(check));
    return;
  }
  if (h.root >= static_cast<std::uint32_t>(size_)) {
    Counters::add(counters_.dropped_invalid);
    return;
  }
  if (route.op == nullptr || route.seq != h.seq) {
    auto it = active_.find(h.seq);
    route.op = it != active_.end() ? it->second.get() : nullptr;
    route.seq = h.seq;
  }
  if (route.op != nullptr) {
    if (!route.op->done()) route.op->on_datagram(h, payload, now_);
    return;
  }
  if (common::seq_before(h.seq, next_seq_)) {
    Counters::add(counters_.dropped_stale);
    return;
  }
  if (common::seq_distance(next_seq_, h.seq) >= kFutureWindow) {
    Counters::add(counters_.dropped_invalid);
    return;
  }
  if (!datagram.empty() && early_.keep(h.seq, datagram)) {
    Counters::add(counters_.early_arrivals_stored);
  } else {
    Counters::add(counters_.early_arrivals_dropped);
  }
}

}  // namespace mccl::protocol
