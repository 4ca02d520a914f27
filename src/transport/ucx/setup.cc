// Creating the UCX transport: context and worker, the worker-address
// exchange over the out-of-band allgather, one endpoint per peer, and the
// hello/acknowledgement round that proves every endpoint before
// create_ucx_reliable returns.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mccl/error.h"
#include "transport/ucx/endpoint.h"

namespace mccl::transport::ucx {
namespace {

using namespace std::chrono_literals;

std::string ucs_text(ucs_status_t s) { return ucs_status_string(s); }

ucs_status_t am_trampoline(void* arg, const void* header, size_t header_length, void* data,
                           size_t length, const ucp_am_recv_param_t* param) {
  return static_cast<UcxEndpoint*>(arg)->on_am(header, header_length, data, length, param);
}

void ep_error_trampoline(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* p = static_cast<Peer*>(arg);
  p->owner->on_ep_error(*p, status);
}

void flush_trampoline(void* request, ucs_status_t status, void* user_data) {
  static_cast<UcxEndpoint*>(user_data)->on_flush_done(status);
  ucp_request_free(request);
}

std::uint64_t random_nonce() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

// Runs the allgather, naming this rank in what fails.
common::Status exchange(const OobAllgather& oob, std::span<const std::byte> mine,
                        std::vector<std::byte>& all, const std::string& me) {
  const common::Status st = oob(mine, all);
  if (!st) return {st.code(), me + "out-of-band allgather failed: " + st.message()};
  return st;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

}  // namespace

UcxEndpoint::UcxEndpoint(const UcxReliableConfig& config)
    : config_(config),
      rank_(config.rank),
      size_(config.size),
      peers_(static_cast<std::size_t>(config.size)) {
  for (int q = 0; q < size_; ++q) {
    Peer& p = peers_[static_cast<std::size_t>(q)];
    p.owner = this;
    p.rank = q;
    p.closed = true;  // until an endpoint is created
  }
}

common::Status UcxEndpoint::init_ucx() {
  ucp_config_t* cfg = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &cfg);
  if (st != UCS_OK) {
    return common::unavailable_error(me() + "ucp_config_read(): " + ucs_text(st) +
                                     " (check the UCX_* environment variables)");
  }
  const char* user_devices = std::getenv("UCX_NET_DEVICES");
  if (!config_.net_device.empty() && (user_devices == nullptr || *user_devices == '\0')) {
    st = ucp_config_modify(cfg, "NET_DEVICES", config_.net_device.c_str());
    if (st != UCS_OK) {
      ucp_config_release(cfg);
      return common::unavailable_error(me() + "UCX refuses NET_DEVICES=" + config_.net_device +
                                       ": " + ucs_text(st) + " (set UCX_NET_DEVICES)");
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM;
  if (config_.wait_fd) params.features |= UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<std::size_t>(size_);
  params.name = "mccl";
  st = ucp_init(&params, cfg, &context_);
  ucp_config_release(cfg);
  if (st != UCS_OK) {
    context_ = nullptr;
    return common::unavailable_error(
        me() + "ucp_init(): " + ucs_text(st) +
        " (no usable UCX transport? check UCX_TLS and UCX_NET_DEVICES)");
  }

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // One thread at a time, but not always the same one (setup, then the
  // progress engine).
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) {
    worker_ = nullptr;
    return common::transport_error(me() + "ucp_worker_create(): " + ucs_text(st));
  }

  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  st = ucp_worker_query(worker_, &attr);
  if (st != UCS_OK) return common::transport_error(me() + "ucp_worker_query(): " + ucs_text(st));
  if (attr.max_am_header < wire::kAmHeaderBytes) {
    return common::unavailable_error(me() + "UCX allows active-message headers of only " +
                                     std::to_string(attr.max_am_header) + " bytes, MCCL needs " +
                                     std::to_string(wire::kAmHeaderBytes));
  }

  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  hp.id = wire::kAmId;
  hp.cb = am_trampoline;
  hp.arg = this;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  st = ucp_worker_set_am_recv_handler(worker_, &hp);
  if (st != UCS_OK) {
    return common::transport_error(me() + "ucp_worker_set_am_recv_handler(): " + ucs_text(st));
  }

  if (config_.wait_fd) {
    st = ucp_worker_get_efd(worker_, &efd_);
    if (st != UCS_OK) {
      efd_ = -1;
      return common::transport_error(me() + "ucp_worker_get_efd(): " + ucs_text(st));
    }
  }
  return common::Status::ok();
}

common::Status UcxEndpoint::connect(const OobAllgather& oob) {
  ucp_address_t* address = nullptr;
  std::size_t address_length = 0;
  const ucs_status_t st = ucp_worker_get_address(worker_, &address, &address_length);
  if (st != UCS_OK)
    return common::transport_error(me() + "ucp_worker_get_address(): " + ucs_text(st));
  std::vector<std::byte> my_address(address_length);
  std::memcpy(my_address.data(), address, address_length);
  ucp_worker_release_address(worker_, address);
  if (address_length > wire::kMaxWorkerAddressBytes) {
    return common::unavailable_error(me() + "UCX worker address of " +
                                     std::to_string(address_length) + " bytes is too long");
  }
  std::uint32_t longest = 0;
  common::Status s = exchange_headers(oob, address_length, longest);
  if (s) s = create_endpoints(oob, std::move(my_address), longest);
  if (s) s = prove_endpoints();
  return s;
}

common::Status UcxEndpoint::exchange_headers(const OobAllgather& oob, std::size_t address_length,
                                             std::uint32_t& longest) {
  const auto n = static_cast<std::size_t>(size_);
  // Fixed-size headers, so every contribution has the same length.
  wire::AddressHeader mine{.flags = static_cast<std::uint16_t>(
                               config_.detect_peer_failures ? wire::kFlagPeerFailures : 0),
                           .rank = static_cast<std::uint32_t>(rank_),
                           .size = static_cast<std::uint32_t>(size_),
                           .address_length = static_cast<std::uint32_t>(address_length),
                           .nonce = random_nonce()};
  std::byte blob[wire::kAddressHeaderBytes];
  wire::encode(mine, std::span<std::byte, wire::kAddressHeaderBytes>(blob));
  std::vector<std::byte> all;
  common::Status s = exchange(oob, blob, all, me());
  if (!s) return s;
  if (all.size() != n * wire::kAddressHeaderBytes) {
    return common::mismatch_error(me() + "the out-of-band allgather returned " +
                                  std::to_string(all.size()) + " bytes, expected " +
                                  std::to_string(n * wire::kAddressHeaderBytes) +
                                  " (do all ranks use the UCX transport?)");
  }
  std::vector<std::uint64_t> nonces(n);
  longest = 0;
  for (std::size_t q = 0; q < n; ++q) {
    std::string why;
    wire::AddressHeader h;
    auto part = std::span<const std::byte>(all)
                    .subspan(q * wire::kAddressHeaderBytes)
                    .first<wire::kAddressHeaderBytes>();
    if (!wire::decode(part, h, why)) {
      return common::mismatch_error(me() + "rank " + std::to_string(q) + ": " + why);
    }
    if (h.rank != q || h.size != n) {
      return common::mismatch_error(me() + "rank " + std::to_string(q) + " says it is rank " +
                                    std::to_string(h.rank) + " of " + std::to_string(h.size));
    }
    if (h.flags != mine.flags) {
      return common::mismatch_error(
          me() + "rank " + std::to_string(q) +
          " disagrees about detect_peer_failures (every rank must set it alike)");
    }
    nonces[q] = h.nonce;
    longest = std::max(longest, h.address_length);
  }
  session_ = wire::session_of(nonces);
  return s;
}

common::Status UcxEndpoint::create_endpoints(const OobAllgather& oob,
                                             std::vector<std::byte> my_address,
                                             std::uint32_t longest) {
  const auto n = static_cast<std::size_t>(size_);
  my_address.resize(longest);
  std::vector<std::byte> all;
  common::Status s = exchange(oob, my_address, all, me());
  if (!s) return s;
  if (all.size() != n * longest) {
    return common::mismatch_error(me() + "the second out-of-band allgather returned " +
                                  std::to_string(all.size()) + " bytes, expected " +
                                  std::to_string(n * longest));
  }
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    Peer& p = peers_[static_cast<std::size_t>(q)];
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address =
        reinterpret_cast<const ucp_address_t*>(all.data() + static_cast<std::size_t>(q) * longest);
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    if (config_.detect_peer_failures) {
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      ep.err_handler.cb = ep_error_trampoline;
      ep.err_handler.arg = &p;
    }
    const ucs_status_t st = ucp_ep_create(worker_, &ep, &p.ep);
    if (st != UCS_OK) {
      p.ep = nullptr;
      return common::transport_error(
          me() + "ucp_ep_create() to rank " + std::to_string(q) + ": " + ucs_text(st) +
          " (no common UCX transport? check UCX_TLS and UCX_NET_DEVICES)");
    }
    p.closed = false;
  }
  return s;
}

common::Status UcxEndpoint::prove_endpoints() {
  // A hello each way, acknowledged, then a worker flush so that our last
  // acknowledgements have left before we stop progressing (the caller may
  // not poll for a while).
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    common::Status s = send_control(q, wire::Kind::kHello);
    if (!s) return s;
  }
  const common::Deadline deadline = common::Deadline::after(config_.connect_timeout);
  bool flushing = false;
  for (;;) {
    progress();
    send_due_acks();
    std::vector<int> failed;
    std::vector<int> silent;
    for (int q = 0; q < size_; ++q) {
      const Peer& p = peers_[static_cast<std::size_t>(q)];
      if (q == rank_) continue;
      if (p.failed) failed.push_back(q);
      if (!p.hello || !p.acked) silent.push_back(q);
    }
    if (!failed.empty()) {
      return common::peer_failure(
          me() + "the UCX endpoint to rank " + std::to_string(failed[0]) +
          " failed during setup: " + peers_[static_cast<std::size_t>(failed[0])].why);
    }
    if (silent.empty() && send_ops_.empty()) {
      if (!flushing) {
        flushing = true;
        ucp_request_param_t fp{};
        fp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        fp.cb.send = flush_trampoline;
        fp.user_data = this;
        ucs_status_ptr_t r = ucp_worker_flush_nbx(worker_, &fp);
        if (r == nullptr)
          flush_status_ = UCS_OK;
        else if (UCS_PTR_IS_ERR(r))
          flush_status_ = UCS_PTR_STATUS(r);
      }
      if (flush_status_ == UCS_OK) return common::Status::ok();
      if (flush_status_ != UCS_INPROGRESS) {
        return common::transport_error(me() + "ucp_worker_flush_nbx(): " + ucs_text(flush_status_));
      }
    }
    if (deadline.expired()) {
      if (silent.empty()) {
        return common::timeout_error(me() + "UCX did not flush the setup messages within " +
                                     std::to_string(config_.connect_timeout.count()) + " ms");
      }
      return common::timeout_error(
          me() + "no hello and acknowledgement over UCX from ranks " + rank_list(silent) +
          " within " + std::to_string(config_.connect_timeout.count()) +
          " ms (are they running? can UCX reach them? check UCX_TLS and UCX_NET_DEVICES)");
    }
    wait_idle(deadline);
  }
}

}  // namespace mccl::transport::ucx
