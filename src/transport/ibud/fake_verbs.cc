// FakeFabric and the control path of FakeVerbs (fake_state.h): devices,
// memory registration, queues, QP states, address handles, IPoIB and
// multicast joins. Destructors unregister their object and note an object
// destroyed before its children (EBUSY on hardware).
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "transport/ibud/fake_state.h"
#include "transport/ibud/group.h"

namespace mccl::transport::ibud {

using common::Status;
using Lock = std::lock_guard<std::mutex>;

Status einval(const std::string& call) {
  return common::transport_error(call + ": " + errno_text(EINVAL));
}

// ---- the registry ------------------------------------------------------
std::uint64_t FakeFabricImpl::add(std::vector<std::uint64_t> parents) {
  const std::uint64_t id = next_id++;
  for (auto p : parents) objects[p].children++;
  objects[id] = Record{std::move(parents), 0};
  return id;
}

void FakeFabricImpl::remove(std::uint64_t id) {
  auto it = objects.find(id);
  if (it == objects.end()) return;
  if (it->second.children > 0) counters.destroy_errors++;
  for (auto p : it->second.parents) {
    if (auto pit = objects.find(p); pit != objects.end()) pit->second.children--;
  }
  objects.erase(it);
}

Status FakeFabricImpl::injected(const char* call) const {
  if (cfg.fail_call == call)
    return common::transport_error(std::string(call) + ": injected failure");
  return Status::ok();
}

std::string FakeFabricImpl::member(int host, const std::string& device, int port) {
  return std::to_string(host) + "/" + device + "/" + std::to_string(port);
}

Gid FakeFabricImpl::port_gid(int host, int dev, int port) const {
  Gid g{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x03, 0x00};
  g[12] = static_cast<std::uint8_t>(host >> 8);
  g[13] = static_cast<std::uint8_t>(host);
  g[14] = static_cast<std::uint8_t>(dev);
  g[15] = static_cast<std::uint8_t>(port);
  return g;
}

// ---- destructors ---------------------------------------------------------
FDevice::~FDevice() {
  Lock l(b.fab->mu);
  b.fab->remove(b.id);
}
FPd::~FPd() {
  Lock l(b.fab->mu);
  b.fab->mrs.erase(b.id);
  b.fab->remove(b.id);
}
FMr::~FMr() {
  Lock l(b.fab->mu);
  if (auto it = b.fab->mrs.find(pd); it != b.fab->mrs.end()) it->second.erase(lkey);
  b.fab->remove(b.id);
}
FChannel::~FChannel() {
  Lock l(b.fab->mu);
  b.fab->channels.erase(b.id);
  b.fab->remove(b.id);
  ::close(fd);
}
FCq::~FCq() {
  Lock l(b.fab->mu);
  if (auto it = b.fab->channels.find(channel); it != b.fab->channels.end()) {
    auto& ev = it->second->events;
    for (auto e = ev.begin(); e != ev.end();) {
      if (*e != b.id) {
        ++e;
        continue;
      }
      e = ev.erase(e);
      std::uint64_t v;
      [[maybe_unused]] auto r = ::read(it->second->fd, &v, sizeof v);
    }
  }
  b.fab->cqs.erase(b.id);
  b.fab->remove(b.id);
}
FAh::~FAh() {
  Lock l(b.fab->mu);
  b.fab->remove(b.id);
}
FQp::~FQp() {
  Lock l(b.fab->mu);
  for (const Gid& g : groups) {
    if (auto it = b.fab->groups.find(g); it != b.fab->groups.end())
      std::erase(it->second.attached, b.id);
  }
  b.fab->qps.erase(b.id);
  b.fab->remove(b.id);
}
FAttachment::~FAttachment() {
  Lock l(b.fab->mu);
  if (auto it = b.fab->groups.find(mgid); it != b.fab->groups.end())
    std::erase(it->second.attached, qp);
  if (auto q = b.fab->qps.find(qp); q != b.fab->qps.end()) q->second->groups.erase(mgid);
  b.fab->remove(b.id);
}
FJoin::~FJoin() {
  Lock l(b.fab->mu);
  if (auto it = b.fab->groups.find(address.mgid); it != b.fab->groups.end()) {
    if (auto m = it->second.members.find(member); m != it->second.members.end())
      it->second.members.erase(m);
  }
  b.fab->remove(b.id);
}

// ---- FakeFabric ----------------------------------------------------------
FakeFabric::FakeFabric(const FakeFabricConfig& config)
    : impl_(std::make_shared<FakeFabricImpl>(config)) {}
FakeFabric::~FakeFabric() = default;

std::shared_ptr<Verbs> FakeFabric::add_host(const FakeHost& host) {
  Lock l(impl_->mu);
  auto h = std::make_unique<FHost>();
  h->cfg = host;
  const int index = static_cast<int>(impl_->hosts.size());
  if (h->cfg.ipoib_addr.empty()) h->cfg.ipoib_addr = "10.202." + std::to_string(index) + ".1";
  for (const auto& d : host.devices) {
    h->lids.emplace_back();
    for (std::size_t p = 0; p < d.ports.size(); ++p) h->lids.back().push_back(impl_->next_lid++);
  }
  impl_->hosts.push_back(std::move(h));
  return std::make_shared<FakeVerbs>(impl_, index);
}

FakeCounters FakeFabric::counters() const {
  Lock l(impl_->mu);
  return impl_->counters;
}
std::size_t FakeFabric::live_objects() const {
  Lock l(impl_->mu);
  return impl_->objects.size();
}
std::size_t FakeFabric::attached(const Gid& mgid) const {
  Lock l(impl_->mu);
  auto it = impl_->groups.find(mgid);
  return it == impl_->groups.end() ? 0 : it->second.attached.size();
}
void FakeFabric::set_loss(double loss) {
  Lock l(impl_->mu);
  impl_->cfg.loss = loss;
}
void FakeFabric::set_fail_call(const std::string& call) {
  Lock l(impl_->mu);
  impl_->cfg.fail_call = call;
}

// ---- FakeVerbs: control path ---------------------------------------------
Status FakeVerbs::device_names(std::vector<std::string>& out) {
  Lock l(fab_->mu);
  out.clear();
  if (host().cfg.no_kernel_support) {
    return common::unavailable_error("ibv_get_device_list: " + errno_text(ENOSYS));
  }
  for (const auto& d : host().cfg.devices) out.push_back(d.name);
  return Status::ok();
}

Status FakeVerbs::open_device(const std::string& name, std::unique_ptr<Device>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("open_device"); !st) return st;
  const auto& devs = host().cfg.devices;
  for (std::size_t i = 0; i < devs.size() && !host().cfg.no_kernel_support; ++i) {
    if (devs[i].name != name) continue;
    auto d = std::make_unique<FDevice>();
    d->name = name;
    d->host = host_;
    d->dev = static_cast<int>(i);
    d->b = base({});
    out = std::move(d);
    return Status::ok();
  }
  return common::unavailable_error("no RDMA device named " + name);
}

Status FakeVerbs::query_device(Device& dev, DeviceAttr& out) {
  Lock l(fab_->mu);
  const auto& d = static_cast<FDevice&>(dev);
  const auto& c = fab_->cfg;
  out =
      DeviceAttr{static_cast<int>(host().cfg.devices[static_cast<std::size_t>(d.dev)].ports.size()),
                 static_cast<int>(c.max_qp_wr),
                 c.max_sge,
                 c.max_cqe,
                 c.max_mcast_grp,
                 c.max_mcast_qp_attach};
  return Status::ok();
}

Status FakeVerbs::query_port(Device& dev, int port, PortAttr& out) {
  Lock l(fab_->mu);
  const auto& d = static_cast<FDevice&>(dev);
  const auto& ports = host().cfg.devices[static_cast<std::size_t>(d.dev)].ports;
  if (port < 1 || port > static_cast<int>(ports.size())) {
    return einval("ibv_query_port(" + std::to_string(port) + ")");
  }
  const FakePort& p = ports[static_cast<std::size_t>(port - 1)];
  out.state = p.state;
  out.active_mtu = p.mtu;
  out.infiniband = p.infiniband;
  out.lid = host().lids[static_cast<std::size_t>(d.dev)][static_cast<std::size_t>(port - 1)];
  out.gid = fab_->port_gid(host_, d.dev, port);
  return Status::ok();
}

Status FakeVerbs::alloc_pd(Device& dev, std::unique_ptr<Pd>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("alloc_pd"); !st) return st;
  auto pd = std::make_unique<FPd>();
  pd->host = host_;
  pd->dev = static_cast<FDevice&>(dev).dev;
  pd->b = base({static_cast<FDevice&>(dev).b.id});
  fab_->mrs[pd->b.id];
  out = std::move(pd);
  return Status::ok();
}

Status FakeVerbs::reg_mr(Pd& pd, void* addr, std::size_t length, std::unique_ptr<Mr>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("reg_mr"); !st) return st;
  if (addr == nullptr || length == 0) return einval("ibv_reg_mr");
  auto mr = std::make_unique<FMr>();
  mr->pd = static_cast<FPd&>(pd).b.id;
  mr->addr = static_cast<std::byte*>(addr);
  mr->length = length;
  mr->lkey = fab_->next_key++;
  mr->rkey = mr->lkey;
  mr->b = base({mr->pd});
  fab_->mrs[mr->pd][mr->lkey] = {mr->addr, length};
  out = std::move(mr);
  return Status::ok();
}

Status FakeVerbs::create_comp_channel(Device& dev, std::unique_ptr<CompChannel>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("create_comp_channel"); !st) return st;
  auto ch = std::make_unique<FChannel>();
  ch->fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
  if (ch->fd < 0) return common::transport_error("eventfd: " + errno_text(errno));
  ch->b = base({static_cast<FDevice&>(dev).b.id});
  fab_->channels[ch->b.id] = ch.get();
  out = std::move(ch);
  return Status::ok();
}

Status FakeVerbs::create_cq(Device& dev, int cqe, CompChannel* channel, std::unique_ptr<Cq>& out) {
  Lock l(fab_->mu);
  if (auto st = fab_->injected("create_cq"); !st) return st;
  if (cqe < 1 || cqe > fab_->cfg.max_cqe)
    return einval("ibv_create_cq(" + std::to_string(cqe) + ")");
  auto cq = std::make_unique<FCq>();
  cq->capacity = static_cast<std::size_t>(cqe);
  std::vector<std::uint64_t> parents{static_cast<FDevice&>(dev).b.id};
  if (channel != nullptr) {
    cq->channel = static_cast<FChannel*>(channel)->b.id;
    parents.push_back(cq->channel);
  }
  cq->b = base(std::move(parents));
  fab_->cqs[cq->b.id] = cq.get();
  out = std::move(cq);
  return Status::ok();
}

}  // namespace mccl::transport::ibud
