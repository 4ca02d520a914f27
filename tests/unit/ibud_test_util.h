// Helpers of the ibud transport tests over the fake verbs.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "datagram_collector.h"
#include "transport/ibud/fake_verbs.h"
#include "transport/ibud/ibud_transport.h"

namespace mccl::transport::ibud::test {

using Bytes = std::vector<std::byte>;

using Collect = transport::test::Collector;

inline IbConfig config(std::uint32_t tag = 7) {
  IbConfig c;
  c.comm_tag = tag;
  c.rx_depth = 256;
  c.signal_every = 8;
  return c;
}

inline std::unique_ptr<DatagramTransport> make(FakeFabric& f, IbConfig c = config(),
                                               const FakeHost& h = {}) {
  c.verbs = f.add_host(h);
  std::unique_ptr<DatagramTransport> t;
  auto st = create_ib_transport(c, t);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return t;
}

inline common::Status make_error(FakeFabric& f, IbConfig c, const FakeHost& h = {}) {
  c.verbs = f.add_host(h);
  std::unique_ptr<DatagramTransport> t;
  auto st = create_ib_transport(c, t);
  EXPECT_EQ(t, nullptr);
  return st;
}

inline common::Status send_one(DatagramTransport& t, const Bytes& header, const Bytes& payload) {
  OutDatagram d{header, payload};
  std::size_t accepted = 0;
  auto st = t.send(std::span(&d, 1), accepted);
  if (st && accepted != 1) return common::internal_error("busy");
  return st;
}

inline std::vector<Bytes> drain(DatagramTransport& t) {
  Collect c;
  std::size_t n = 0;
  EXPECT_TRUE(t.poll(c, 100000, n).is_ok());
  return std::move(c.got);
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace mccl::transport::ibud::test
