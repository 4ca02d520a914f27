// The PMIx bootstrap (mccl/pmix_bootstrap.h). Round k of allgather() is
//   PMIx_Put(PMIX_GLOBAL, "mccl.bs.<k>", [u64 length][bytes]) + PMIx_Commit
//   PMIx_Fence over the whole namespace with PMIX_COLLECT_DATA
//   PMIx_Get("mccl.bs.<k>") of every rank, from the local cache.
// k counts rounds over the whole process (every PMIx bootstrap in it): a
// key is never reused, so no cached value of an earlier round can answer a
// later one. Ranks agree on k because fences over one namespace complete in
// the order they are called, the same on every rank.
//
// The fence is started non-blocking and waited for with MCCL's own
// deadline: PMIX_TIMEOUT is passed too, but not every server honours it
// (Open MPI 4.1's does not promise to), and a hang is never acceptable.
#include <string>

#include "bootstrap/rendezvous.h"

#if MCCL_HAVE_PMIX

#include <pmix.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"

namespace mccl::bootstrap {
namespace {

using namespace std::chrono_literals;
namespace settings = common::settings;

// How long MCCL waits beyond the timeout for the server's own PMIX_TIMEOUT
// verdict, which is more precise when the server gives one.
constexpr auto kServerGrace = 2s;
// Every fence of every PMIx bootstrap of this process, in call order.
std::atomic<std::uint64_t> g_next_round{0};

int pmix_seconds(std::chrono::milliseconds ms) {
  // PMIX_TIMEOUT is whole seconds and 0 means "forever": round up.
  const std::int64_t v = std::max<std::int64_t>(ms.count(), 1);
  const auto s = v / 1000 + (v % 1000 != 0);  // not (v + 999) / 1000: that overflows
  return static_cast<int>(std::min<std::int64_t>(s, INT_MAX));
}

std::string pmix_error(pmix_status_t rc) {
  return std::string(PMIx_Error_string(rc)) + " (" + std::to_string(rc) + ")";
}

// The integer types a server may use for a count.
std::optional<std::uint64_t> as_count(const pmix_value_t& v) {
  switch (v.type) {
    case PMIX_UINT32:
      return v.data.uint32;
    case PMIX_UINT64:
      return v.data.uint64;
    case PMIX_UINT16:
      return v.data.uint16;
    case PMIX_SIZE:
      return v.data.size;
    case PMIX_INT:
      return v.data.integer < 0 ? std::nullopt : std::optional<std::uint64_t>(v.data.integer);
    case PMIX_INT32:
      return v.data.int32 < 0 ? std::nullopt : std::optional<std::uint64_t>(v.data.int32);
    case PMIX_INT64:
      return v.data.int64 < 0 ? std::nullopt : std::optional<std::uint64_t>(v.data.int64);
    default:
      return std::nullopt;
  }
}

// A fence in flight. Shared between the caller and PMIx's progress thread,
// which may call back after the caller gave up: whoever is last frees it.
// The arrays PMIx reads stay here until then. The infos hold a bool and an
// int, which own no memory, so they need no PMIX_INFO_DESTRUCT.
struct FenceWait {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;
  pmix_proc_t procs[1];
  pmix_info_t info[2];
};

void fence_done(pmix_status_t status, void* cbdata) {
  auto* holder = static_cast<std::shared_ptr<FenceWait>*>(cbdata);
  {
    std::lock_guard lock((*holder)->mu);
    (*holder)->done = true;
    (*holder)->status = status;
  }
  (*holder)->cv.notify_all();
  delete holder;
}

class PmixRendezvous final : public Rendezvous {
 public:
  explicit PmixRendezvous(std::chrono::milliseconds timeout) : default_timeout_(timeout) {}
  ~PmixRendezvous() override {
    if (initialized_) {
      if (pmix_status_t rc = PMIx_Finalize(nullptr, 0); rc != PMIX_SUCCESS) {
        common::logf(common::LogLevel::kWarn, rank_, "PMIx_Finalize failed: %s",
                     pmix_error(rc).c_str());
      }
    }
  }

  // PMIx_Init and the job's size.
  common::Status init();

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  common::Status allgather(std::span<const std::byte> mine, std::chrono::milliseconds timeout,
                           std::vector<std::byte>& all) override;

 private:
  std::string me() const { return "rank " + std::to_string(rank_) + ": "; }
  std::string job() const { return std::string("PMIx namespace ") + self_.nspace; }
  // Makes `st` the object's sticky error and returns it.
  common::Status fail(common::Status st) {
    failed_ = std::move(st);
    common::logf(common::LogLevel::kInfo, rank_, "%s", failed_->message().c_str());
    return *failed_;
  }
  common::Status fence(std::uint64_t round, std::chrono::milliseconds timeout);

  const std::chrono::milliseconds default_timeout_;
  bool initialized_ = false;
  pmix_proc_t self_{};
  int rank_ = 0;
  int size_ = 1;
  std::optional<common::Status> failed_;
};

common::Status PmixRendezvous::init() {
  pmix_status_t rc = PMIx_Init(&self_, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    const char* ns = std::getenv("PMIX_NAMESPACE");
    return common::unavailable_error(
        std::string("PMIx bootstrap: not launched under a PMIx server (PMIx_Init: ") +
        pmix_error(rc) +
        (ns ? std::string(", PMIX_NAMESPACE=") + ns : std::string(", PMIX_NAMESPACE is not set")) +
        "): start the program with mpirun (Open MPI) or srun --mpi=pmix, or use "
        "the TCP store instead (MCCL_BOOTSTRAP_ADDR, or mccl_run)");
  }
  initialized_ = true;
  rank_ = static_cast<int>(self_.rank);

  pmix_proc_t wildcard;
  PMIX_LOAD_PROCID(&wildcard, self_.nspace, PMIX_RANK_WILDCARD);
  pmix_info_t info;
  int seconds = pmix_seconds(default_timeout_);
  PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &seconds, PMIX_INT);
  pmix_value_t* val = nullptr;
  rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, &info, 1, &val);
  if (rc != PMIX_SUCCESS || val == nullptr) {
    return {rc == PMIX_ERR_TIMEOUT ? ErrorCode::kTimeout : ErrorCode::kUnavailable,
            me() + "PMIx bootstrap: the server of " + job() +
                " did not say the job's size (PMIx_Get of PMIX_JOB_SIZE: " + pmix_error(rc) +
                (rc == PMIX_ERR_TIMEOUT ? ", after " + std::to_string(seconds) + " s)" : ")")};
  }
  const std::optional<std::uint64_t> n = as_count(*val);
  const int type = val->type;
  PMIX_VALUE_RELEASE(val);
  if (!n || *n < 1 || *n > INT_MAX || self_.rank >= *n) {
    return common::unavailable_error(
        me() + "PMIx bootstrap: the server of " + job() + " gave an unusable job size (type " +
        std::to_string(type) + ", value " + (n ? std::to_string(*n) : std::string("?")) + ")");
  }
  size_ = static_cast<int>(*n);
  return common::Status::ok();
}

common::Status PmixRendezvous::fence(std::uint64_t round, std::chrono::milliseconds timeout) {
  auto wait = std::make_shared<FenceWait>();
  PMIX_LOAD_PROCID(&wait->procs[0], self_.nspace, PMIX_RANK_WILDCARD);
  bool collect = true;
  int seconds = pmix_seconds(timeout);
  PMIX_INFO_LOAD(&wait->info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&wait->info[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
  auto* holder = new std::shared_ptr<FenceWait>(wait);
  pmix_status_t rc = PMIx_Fence_nb(wait->procs, 1, wait->info, 2, fence_done, holder);
  if (rc != PMIX_SUCCESS) {
    delete holder;  // not called back
    return fail(common::transport_error(me() + "PMIx bootstrap: PMIx_Fence_nb of round " +
                                        std::to_string(round) + " in " + job() +
                                        " failed: " + pmix_error(rc)));
  }
  std::unique_lock lock(wait->mu);
  if (!wait->cv.wait_for(lock, timeout + kServerGrace, [&] { return wait->done; })) {
    return fail(common::timeout_error(
        me() + "PMIx bootstrap: the fence of round " + std::to_string(round) + " in " + job() +
        " (" + std::to_string(size_) + " ranks) did not complete within " +
        std::to_string(timeout.count()) +
        " ms: some rank never reached it (PMIx does not say which), or the launcher is stuck"));
  }
  const pmix_status_t status = wait->status;
  lock.unlock();
  if (status == PMIX_SUCCESS) return common::Status::ok();
  const std::string what = me() + "PMIx bootstrap: the fence of round " + std::to_string(round) +
                           " in " + job() + " failed: " + pmix_error(status);
  if (status == PMIX_ERR_TIMEOUT) {
    return fail(common::timeout_error(what + ": some rank did not reach it within " +
                                      std::to_string(seconds) + " s (PMIx does not say which)"));
  }
  if (status == PMIX_ERR_PROC_ABORTED || status == PMIX_ERR_LOST_CONNECTION ||
      status == PMIX_ERR_UNREACH || status == PMIX_ERR_PROC_TERM_WO_SYNC) {
    return fail(common::peer_failure(what + ": a rank or the launcher is gone"));
  }
  return fail(common::transport_error(what));
}

common::Status PmixRendezvous::allgather(std::span<const std::byte> mine,
                                         std::chrono::milliseconds timeout,
                                         std::vector<std::byte>& all) {
  if (failed_) return *failed_;
  if (size_ == 1) {
    all.assign(mine.begin(), mine.end());
    return common::Status::ok();
  }
  if (timeout.count() <= 0) timeout = default_timeout_;
  timeout = std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365));
  const std::uint64_t round = g_next_round.fetch_add(1);
  const std::string key = "mccl.bs." + std::to_string(round);

  // [u64 little-endian length][contribution]: never an empty byte object,
  // and a length to check against this rank's.
  const std::uint64_t len = mine.size();
  std::vector<char> blob(8 + mine.size());
  for (int i = 0; i < 8; ++i) blob[i] = static_cast<char>((len >> (8 * i)) & 0xFF);
  if (!mine.empty()) std::memcpy(blob.data() + 8, mine.data(), mine.size());
  pmix_byte_object_t bo;
  bo.bytes = blob.data();
  bo.size = blob.size();
  pmix_value_t value;
  PMIX_VALUE_CONSTRUCT(&value);
  PMIX_VALUE_LOAD(&value, &bo, PMIX_BYTE_OBJECT);  // copies
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
  PMIX_VALUE_DESTRUCT(&value);
  if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) {
    return fail(common::transport_error(me() + "PMIx bootstrap: publishing round " +
                                        std::to_string(round) + " (" + key + ") in " + job() +
                                        " failed: " + pmix_error(rc)));
  }

  if (common::Status st = fence(round, timeout); !st) return st;

  all.assign(mine.size() * static_cast<std::size_t>(size_), std::byte{0});
  pmix_info_t info;
  int seconds = pmix_seconds(timeout);
  PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &seconds, PMIX_INT);
  for (int r = 0; r < size_; ++r) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, self_.nspace, static_cast<pmix_rank_t>(r));
    pmix_value_t* val = nullptr;
    rc = PMIx_Get(&proc, key.c_str(), &info, 1, &val);
    if (rc != PMIX_SUCCESS || val == nullptr) {
      return fail(common::Status(
          rc == PMIX_ERR_TIMEOUT ? ErrorCode::kTimeout : ErrorCode::kTransportError,
          me() + "PMIx bootstrap: reading rank " + std::to_string(r) + "'s contribution to round " +
              std::to_string(round) + " (" + key + ") in " + job() + " failed: " + pmix_error(rc)));
    }
    const bool is_bytes = val->type == PMIX_BYTE_OBJECT && val->data.bo.size >= 8;
    std::uint64_t theirs = 0;
    if (is_bytes) {
      for (int i = 0; i < 8; ++i) {
        theirs |= std::uint64_t(static_cast<unsigned char>(val->data.bo.bytes[i])) << (8 * i);
      }
    }
    const bool fits = is_bytes && theirs == len && val->data.bo.size == 8 + len;
    if (fits && len > 0) std::memcpy(all.data() + r * len, val->data.bo.bytes + 8, len);
    PMIX_VALUE_RELEASE(val);
    if (!is_bytes) {
      return fail(common::transport_error(me() + "PMIx bootstrap: rank " + std::to_string(r) +
                                          "'s value under " + key + " in " + job() +
                                          " is not an MCCL contribution"));
    }
    if (!fits) {
      return fail(common::mismatch_error(
          me() + "PMIx bootstrap: rank " + std::to_string(r) + " contributes " +
          std::to_string(theirs) + " bytes to round " + std::to_string(round) + ", this rank " +
          std::to_string(len) + ": every rank must create its communicators in the same order"));
    }
  }
  return common::Status::ok();
}

}  // namespace

common::Status open_pmix(std::chrono::milliseconds timeout, std::unique_ptr<Rendezvous>& out) {
  if (timeout.count() < 0) {
    return common::invalid_argument(
        "make_pmix_bootstrap: timeout = " + std::to_string(timeout.count()) +
        " ms is not valid: must be positive (0 = MCCL_BOOTSTRAP_TIMEOUT_MS)");
  }
  if (timeout.count() == 0) {
    timeout = std::chrono::milliseconds(settings::kBootstrapTimeoutMs.get_int());
  }
  auto rendezvous = std::make_unique<PmixRendezvous>(timeout);
  // A failure destroys it, which finalizes what was initialised.
  if (common::Status st = rendezvous->init(); !st) return st;
  out = std::move(rendezvous);
  return common::Status::ok();
}

}  // namespace mccl::bootstrap

#else  // !MCCL_HAVE_PMIX

namespace mccl::bootstrap {

common::Status open_pmix(std::chrono::milliseconds, std::unique_ptr<Rendezvous>&) {
  return common::unavailable_error(
      "PMIx bootstrap: this MCCL was built without PMIx (configure with the PMIx "
      "development files installed, Debian: libpmix-dev, and MCCL_WITH_PMIX=ON); use "
      "the TCP store (MCCL_BOOTSTRAP_ADDR, or mccl_run) or make_callback_bootstrap()");
}

}  // namespace mccl::bootstrap

#endif
