#include <string>

#include "api/backend.h"
#include "common/log.h"
#include "mccl/communicator.h"

namespace mccl {

Request::Request(std::shared_ptr<detail::CommState> comm, std::shared_ptr<detail::InFlight> op)
    : comm_(std::move(comm)), op_(std::move(op)) {}

Request::Request(Request&&) noexcept = default;

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    Request old(std::move(*this));  // waits for the request being replaced
    comm_ = std::move(other.comm_);
    op_ = std::move(other.op_);
  }
  return *this;
}

Request::~Request() {
  if (!op_ || op_->done()) return;
  try {
    wait();
  } catch (const Error& e) {
    common::log_message(common::LogLevel::kWarn, comm_->rank,
                        std::string("request destroyed while in flight failed: ") + e.what());
  }
}

bool Request::test() {
  if (!op_) throw Error(ErrorCode::kInvalidArgument, "test() on an empty mccl::Request");
  return op_->test();
}

void Request::wait() {
  if (!op_) throw Error(ErrorCode::kInvalidArgument, "wait() on an empty mccl::Request");
  // The collective carries its own deadline (the same timeout, counted from
  // its start) and fails with a message saying what it waited for; wait a
  // little longer than that so its error, not a bare wait timeout, wins.
  // Saturating: a timeout near INT64_MAX ms means "never", not an overflow.
  const auto limit = std::chrono::milliseconds::max() - std::chrono::seconds(1);
  const std::chrono::milliseconds timeout = comm_->options.timeout;
  wait(timeout >= limit ? std::chrono::milliseconds::max() : timeout + std::chrono::seconds(1));
}

int Request::source() const { return op_ ? op_->source() : -1; }

void Request::wait(std::chrono::milliseconds timeout) {
  if (!op_) throw Error(ErrorCode::kInvalidArgument, "wait() on an empty mccl::Request");
  op_->wait(timeout);
}

}  // namespace mccl
