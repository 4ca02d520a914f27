// OffloadComm's collectives (client.h): submissions on the shared ring,
// completions from it, waits that notice a dead daemon; shared buffers and
// statistics. Creation is in create.cc.
#include "offload/client/client.h"

#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "offload/wire.h"

namespace mccl::offload::client {

std::shared_ptr<OffloadOp> OffloadComm::submit(std::shared_ptr<OffloadOp> op, Submission& s) {
  op->id_ = s.id = next_id_++;
  // The ring holds at most `slots` operations: wait for the oldest first.
  while (failure_.is_ok() && inflight_.size() >= rings_->slots()) {
    auto oldest = inflight_.front();
    auto st = wait(*oldest, common::Deadline::after(timeout_));
    if (!st) {
      op->done_ = true;
      op->status_ = {st.code(), "rank " + std::to_string(rank_) +
                                    ": offload submission ring full: " + st.message()};
      return op;
    }
  }
  if (!failure_.is_ok()) {
    op->done_ = true;
    op->status_ = failure_;
    return op;
  }
  if (!rings_->push_submission(s)) {
    op->done_ = true;
    op->status_ = common::internal_error("offload submission ring unexpectedly full");
    return op;
  }
  std::uint64_t one = 1;
  (void)!::write(sub_efd_, &one, sizeof one);
  inflight_.push_back(op);
  return op;
}

std::shared_ptr<OffloadOp> OffloadComm::broadcast(void* buffer, std::size_t bytes, int root) {
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kBroadcast);
  s.root = root;
  s.buffer = reinterpret_cast<std::uint64_t>(buffer);
  s.bytes = bytes;
  auto op = std::make_shared<OffloadOp>();
  op->what_ = "offloaded broadcast of " + std::to_string(bytes) + " bytes from root " +
              std::to_string(root);
  return submit(std::move(op), s);
}

std::shared_ptr<OffloadOp> OffloadComm::allgatherv(const void* send, bool in_place, void* recv,
                                                   std::span<const std::size_t> counts,
                                                   std::span<const std::size_t> displacements) {
  auto op = std::make_shared<OffloadOp>();
  op->counts_.assign(counts.begin(), counts.end());
  op->displs_.assign(displacements.begin(), displacements.end());
  op->what_ = "offloaded allgatherv of " + std::to_string(counts[rank_]) + " bytes from rank " +
              std::to_string(rank_);
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kAllgatherv);
  s.buffer = reinterpret_cast<std::uint64_t>(recv);
  s.send = reinterpret_cast<std::uint64_t>(send);
  s.in_place = in_place ? 1 : 0;
  s.counts = reinterpret_cast<std::uint64_t>(op->counts_.data());
  s.displs = reinterpret_cast<std::uint64_t>(op->displs_.data());
  return submit(std::move(op), s);
}

std::shared_ptr<OffloadOp> OffloadComm::barrier() {
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kBarrier);
  auto op = std::make_shared<OffloadOp>();
  op->what_ = "offloaded barrier";
  return submit(std::move(op), s);
}

std::shared_ptr<OffloadOp> OffloadComm::reduce_scatterv(const void* send, void* recv,
                                                        std::span<const std::size_t> counts,
                                                        DataType type, ReduceOp redop) {
  auto op = std::make_shared<OffloadOp>();
  op->counts_.assign(counts.begin(), counts.end());
  op->what_ = "offloaded reduce-scatter of " + std::to_string(counts[rank_]) +
              " elements to rank " + std::to_string(rank_);
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kReduceScatterv);
  s.buffer = reinterpret_cast<std::uint64_t>(recv);
  s.send = reinterpret_cast<std::uint64_t>(send);
  s.counts = reinterpret_cast<std::uint64_t>(op->counts_.data());
  s.dtype = static_cast<std::uint32_t>(type);
  s.redop = static_cast<std::uint32_t>(redop);
  return submit(std::move(op), s);
}

std::shared_ptr<OffloadOp> OffloadComm::allreduce(const void* send, bool in_place, void* recv,
                                                  std::size_t count, DataType type,
                                                  ReduceOp redop) {
  auto op = std::make_shared<OffloadOp>();
  op->what_ = "offloaded allreduce of " + std::to_string(count) + " elements";
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kAllreduce);
  s.buffer = reinterpret_cast<std::uint64_t>(recv);
  s.send = reinterpret_cast<std::uint64_t>(send);
  s.in_place = in_place ? 1 : 0;
  s.bytes = count;
  s.dtype = static_cast<std::uint32_t>(type);
  s.redop = static_cast<std::uint32_t>(redop);
  return submit(std::move(op), s);
}

void* OffloadComm::allocate(std::size_t bytes, common::Status& why) {
  const std::string who = "rank " + std::to_string(rank_) + ": ";
  if (!failure_.is_ok()) {
    why = failure_;
    return nullptr;
  }
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t len = std::max<std::size_t>((bytes + page - 1) / page * page, page);
  int fd = ::memfd_create("mccl-offload-buffer", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(len)) != 0) {
    why = common::transport_error(who + "memfd for a shared buffer of " + std::to_string(bytes) +
                                  " bytes: " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    why = common::transport_error(who + "mmap of a shared buffer: " + std::strerror(errno));
    ::close(fd);
    return nullptr;
  }
  RegionMsg r{reinterpret_cast<std::uint64_t>(p), len};
  const int fds[1] = {fd};
  auto st = send_msg(sock_, MsgType::kRegister, std::as_bytes(std::span(&r, 1)), fds);
  ::close(fd);  // the daemon has its own mapping once it answers
  MsgType type{};
  std::vector<std::byte> body;
  const int tmo = static_cast<int>(std::min<std::int64_t>(timeout_.count(), 1 << 30));
  if (st) st = recv_msg(sock_, type, body, nullptr, tmo);
  if (st && (type != MsgType::kRegistered || body.size() < sizeof(std::int32_t))) {
    st = common::internal_error("unexpected answer to a shared buffer registration");
  }
  if (st) {
    std::int32_t code = 0;
    std::memcpy(&code, body.data(), sizeof code);
    if (code != 0) {
      st = {static_cast<ErrorCode>(code),
            std::string(reinterpret_cast<const char*>(body.data()) + sizeof code,
                        body.size() - sizeof code)};
    }
  }
  if (!st) {
    ::munmap(p, len);
    why = {st.code(), who + "the offload daemon (pid " + std::to_string(daemon_pid_) +
                          ") did not map a shared buffer: " + st.message()};
    return nullptr;
  }
  blocks_.emplace_back(p, len);
  return p;
}

bool OffloadComm::deallocate(void* p) {
  auto it =
      std::find_if(blocks_.begin(), blocks_.end(), [&](const auto& b) { return b.first == p; });
  if (it == blocks_.end()) return false;
  if (failure_.is_ok()) {
    RegionMsg r{reinterpret_cast<std::uint64_t>(p), it->second};
    (void)send_msg(sock_, MsgType::kUnregister, std::as_bytes(std::span(&r, 1)));
  }
  ::munmap(p, it->second);
  blocks_.erase(it);
  return true;
}

common::Status OffloadComm::revoke() {
  if (!failure_.is_ok()) return failure_;
  return send_msg(sock_, MsgType::kRevoke, {});
}

common::Status OffloadComm::shrink(std::vector<int>& failed) {
  if (!failure_.is_ok()) return failure_;
  auto st = send_msg(sock_, MsgType::kShrink, {});
  MsgType type{};
  std::vector<std::byte> body;
  if (st) st = recv_msg(sock_, type, body, nullptr, shrink_answer_timeout_ms(timeout_.count()));
  ShrunkMsg m{};
  if (st && type == MsgType::kShrunk && body.size() >= sizeof m) {
    std::memcpy(&m, body.data(), sizeof m);
  } else if (st) {
    st = common::internal_error("unexpected answer to a shrink");
  }
  const std::size_t listed = sizeof m + std::size_t{m.failed} * sizeof(std::int32_t);
  if (st && body.size() < listed) st = common::internal_error("a shrink's answer is cut short");
  if (st && m.code != 0) {
    st = {static_cast<ErrorCode>(m.code),
          std::string(reinterpret_cast<const char*>(body.data()) + listed, body.size() - listed)};
  }
  poll();  // the old communicator's failed collectives were answered first
  if (!st) {
    return {st.code(), "rank " + std::to_string(rank_) + ": shrink in the offload daemon (pid " +
                           std::to_string(daemon_pid_) + "): " + st.message()};
  }
  failed.assign(m.failed, 0);
  for (std::size_t i = 0; i < failed.size(); ++i) {
    std::int32_t r = 0;
    std::memcpy(&r, body.data() + sizeof m + i * sizeof r, sizeof r);
    failed[i] = r;
  }
  rank_ = m.rank;
  size_ = m.size;
  epoch_ = m.epoch;
  placement_ = m.placement;
  return st;
}

common::Status OffloadComm::stats(Stats& out, common::Deadline deadline) {
  Submission s;
  s.kind = static_cast<std::uint32_t>(OpKind::kStats);
  s.buffer = reinterpret_cast<std::uint64_t>(&out);
  s.bytes = sizeof out;
  auto op = std::make_shared<OffloadOp>();
  op->what_ = "offloaded stats";
  op = submit(std::move(op), s);
  auto st = wait(*op, deadline);
  return st ? op->status() : st;
}

void OffloadComm::poll() {
  std::uint64_t v;
  (void)!::read(comp_efd_, &v, sizeof v);  // clear before popping: no lost wake-up
  Completion c;
  while (rings_->pop_completion(c)) {
    auto it = std::find_if(inflight_.begin(), inflight_.end(),
                           [&](const auto& op) { return op->id_ == c.id; });
    if (it == inflight_.end()) continue;
    (*it)->status_ = completion_status(c);
    (*it)->done_ = true;
    inflight_.erase(it);
  }
}

void OffloadComm::fail_all(const common::Status& why) {
  poll();  // what the daemon finished before it went still counts
  if (failure_.is_ok()) failure_ = why;
  for (auto& op : inflight_) {
    op->status_ = failure_;
    op->done_ = true;
  }
  inflight_.clear();
}

bool OffloadComm::sleep_once(int timeout_ms) {
  pollfd pfds[2] = {{comp_efd_, POLLIN, 0}, {sock_, POLLIN, 0}};
  int n = ::poll(pfds, 2, timeout_ms);
  if (n > 0 && pfds[1].revents != 0) {
    fail_all(common::peer_failure(
        "rank " + std::to_string(rank_) + ": the offload daemon (pid " +
        std::to_string(daemon_pid_) +
        ") has gone; its collectives failed (restart the job; see the daemon's log beside "
        "the offload socket)"));
    return false;
  }
  return true;
}

common::Status OffloadComm::wait(const OffloadOp& op, common::Deadline deadline) {
  while (!op.done()) {
    poll();
    if (op.done()) break;
    if (!failure_.is_ok()) {
      fail_all(failure_);
      break;
    }
    if (deadline.expired()) {
      return common::timeout_error("rank " + std::to_string(rank_) +
                                   ": offloaded collective still in flight at the deadline");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining());
    sleep_once(static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 1, 100)));
  }
  return common::Status::ok();
}

}  // namespace mccl::offload::client
