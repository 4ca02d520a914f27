// The inside of FakeFabric (fake_verbs.h): the shared state every fake
// host works on, the fake verbs objects and the FakeVerbs class.
// fake_verbs.cc holds the control path, fake_wire.cc the data path.
// Everything in FakeFabricImpl is guarded by `mu`.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "transport/ibud/fake_verbs.h"

namespace mccl::transport::ibud {

class FakeFabricImpl;

// The error a provider gives a request it cannot take: "call: Invalid argument".
common::Status einval(const std::string& call);

// Every fake object knows the fabric and its id in the object registry.
struct FBase {
  std::shared_ptr<FakeFabricImpl> fab;
  std::uint64_t id = 0;
};

struct FDevice final : Device {
  ~FDevice() override;
  FBase b;
  int host = 0;
  int dev = 0;
};
struct FPd final : Pd {
  ~FPd() override;
  FBase b;
  int host = 0;
  int dev = 0;
};
struct FMr final : Mr {
  ~FMr() override;
  FBase b;
  std::uint64_t pd = 0;
};
struct FChannel final : CompChannel {
  ~FChannel() override;
  FBase b;
  std::deque<std::uint64_t> events;  // ids of the CQs that fired, oldest first
};
struct FCq final : Cq {
  ~FCq() override;
  FBase b;
  std::size_t capacity = 0;
  std::uint64_t channel = 0;  // 0: none
  bool armed = false;
  bool overrun = false;
  std::deque<Wc> entries;
};
struct FAh final : Ah {
  ~FAh() override;
  FBase b;
  McastAddress to;
};

struct PendingSend {
  SendWr wr;
  std::vector<std::byte> data;  // inline sends: copied at post time
};

struct FQp final : Qp {
  ~FQp() override;
  FBase b;
  int host = 0;
  int dev = 0;
  std::uint64_t pd = 0, send_cq = 0, recv_cq = 0;
  int state = 0;       // 0 RESET, 1 INIT, 2 RTR, 3 RTS
  bool error = false;  // a send failed: the rest is flushed
  std::uint8_t port = 0;
  std::uint16_t lid = 0;
  std::uint32_t qkey = 0;
  std::uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0;
  std::deque<RecvWr> rq;
  std::deque<PendingSend> sq;         // posted, not executed yet
  std::uint32_t sq_used = 0;          // posted and not retired by a completion
  std::uint32_t unsignaled_done = 0;  // executed since the last completion
  std::set<Gid> groups;
};

struct FAttachment final : McastAttachment {
  ~FAttachment() override;
  FBase b;
  std::uint64_t qp = 0;
  Gid mgid{};
};
struct FJoin final : McastJoin {
  ~FJoin() override;
  FBase b;
  std::string member;  // "host/device/port"
};

struct FHost {
  FakeHost cfg;
  std::vector<std::vector<std::uint16_t>> lids;  // [device][port - 1]
  // QPNs are per HCA, as on hardware: two hosts' QPs share numbers, so
  // only (source QPN, source LID) names a sender.
  std::uint32_t next_qpn = 0x1000;
};

struct FGroup {
  std::uint16_t mlid = 0;
  std::multiset<std::string> members;   // "host/device/port" per join
  std::vector<std::uint64_t> attached;  // QP ids, in attach order
};

class FakeFabricImpl {
 public:
  explicit FakeFabricImpl(const FakeFabricConfig& c) : cfg(c), rng(c.seed) {}

  std::uint64_t add(std::vector<std::uint64_t> parents);
  void remove(std::uint64_t id);
  common::Status injected(const char* call) const;
  static std::string member(int host, const std::string& device, int port);
  Gid port_gid(int host, int dev, int port) const;

  // Data path (fake_wire.cc). pump() executes every posted send of every
  // host, oldest QP first: the "HCA" works between verbs calls.
  void pump();
  void execute(FQp& qp, PendingSend& s);
  void deliver(FQp& from, const FAh& ah, std::uint32_t qkey, const std::vector<std::byte>& data);
  void complete(std::uint64_t cq, const Wc& wc);
  void retire(FQp& qp, const Wc& wc, bool always);

  std::mutex mu;
  FakeFabricConfig cfg;
  std::mt19937_64 rng;
  FakeCounters counters;
  std::vector<std::unique_ptr<FHost>> hosts;
  struct Record {
    std::vector<std::uint64_t> parents;
    int children = 0;
  };
  std::map<std::uint64_t, Record> objects;
  std::uint64_t next_id = 1;
  std::map<Gid, FGroup> groups;
  std::map<std::uint64_t, FCq*> cqs;
  std::map<std::uint64_t, FChannel*> channels;
  std::map<std::uint64_t, FQp*> qps;
  // pd id -> lkey -> region
  std::map<std::uint64_t, std::map<std::uint32_t, std::pair<std::byte*, std::size_t>>> mrs;
  std::uint32_t next_key = 0x100;
  std::uint16_t next_lid = 1;
  std::uint16_t next_mlid = 0xC001;
};

class FakeVerbs final : public Verbs {
 public:
  FakeVerbs(std::shared_ptr<FakeFabricImpl> fab, int host) : fab_(std::move(fab)), host_(host) {}

  // The control path in fake_verbs.cc and fake_qp.cc, the data path in
  // fake_wire.cc.
  MCCL_VERBS_OVERRIDES;

 private:
  FHost& host() { return *fab_->hosts[static_cast<std::size_t>(host_)]; }
  FBase base(std::vector<std::uint64_t> parents) {
    return FBase{fab_, fab_->add(std::move(parents))};
  }

  std::shared_ptr<FakeFabricImpl> fab_;
  int host_;
};

}  // namespace mccl::transport::ibud
