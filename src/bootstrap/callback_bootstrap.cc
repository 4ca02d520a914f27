// The callback bootstrap (mccl/callback_bootstrap.h): every allgather() is
// two calls of the application's own allgather, one for the lengths and one
// for the contributions, so that ranks disagreeing on a length get kMismatch
// instead of whatever their runtime does with a short buffer.
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/rendezvous.h"
#include "common/log.h"
#include "mccl/error.h"

namespace mccl::bootstrap {
namespace {

class CallbackRendezvous final : public Rendezvous {
 public:
  CallbackRendezvous(int rank, int size, AllgatherCallback cb)
      : rank_(rank), size_(size), cb_(std::move(cb)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  common::Status allgather(std::span<const std::byte> mine, std::chrono::milliseconds,
                           std::vector<std::byte>& all) override {
    if (failed_) return *failed_;
    // Lengths first, as little-endian 64-bit words (the same on every rank
    // whatever the runtime does with byte order).
    std::uint64_t len = mine.size();
    std::byte word[8];
    for (int i = 0; i < 8; ++i) word[i] = std::byte((len >> (8 * i)) & 0xFF);
    std::vector<std::byte> lengths(8 * static_cast<std::size_t>(size_));
    if (common::Status st = call(word, lengths.data(), 8, "the lengths"); !st) return st;
    for (int r = 0; r < size_; ++r) {
      std::uint64_t theirs = 0;
      for (int i = 0; i < 8; ++i) theirs |= std::uint64_t(lengths[8 * r + i]) << (8 * i);
      if (theirs != len) {
        return fail(common::mismatch_error(
            me() + "bootstrap allgather: rank " + std::to_string(r) + " contributes " +
            std::to_string(theirs) + " bytes, this rank " + std::to_string(len) +
            ": every rank must create its communicators in the same order"));
      }
    }
    all.assign(mine.size() * static_cast<std::size_t>(size_), std::byte{0});
    if (mine.empty()) return common::Status::ok();
    return call(mine.data(), all.data(), mine.size(), "the contributions");
  }

 private:
  std::string me() const { return "rank " + std::to_string(rank_) + ": "; }

  // The object's sticky error: the ranks' exchanges are out of step from
  // then on.
  common::Status fail(common::Status st) {
    failed_ = std::move(st);
    common::logf(common::LogLevel::kInfo, rank_, "%s", failed_->message().c_str());
    return *failed_;
  }

  // Runs the application's callback; whatever it throws fails the object.
  common::Status call(const void* mine, void* all, std::size_t n, const char* what) {
    try {
      cb_(mine, all, n);
    } catch (const Error& e) {
      return fail(common::Status(e.code(), e.what()));
    } catch (const std::exception& e) {
      return fail(common::internal_error(me() + "the bootstrap's allgather callback failed on " +
                                         what + ": " + e.what()));
    } catch (...) {
      return fail(common::internal_error(me() + "the bootstrap's allgather callback failed on " +
                                         what + " with an exception that is not a std::exception"));
    }
    return common::Status::ok();
  }

  const int rank_;
  const int size_;
  AllgatherCallback cb_;
  std::optional<common::Status> failed_;
};

}  // namespace

common::Status open_callback(int rank, int size, AllgatherCallback allgather,
                             std::unique_ptr<Rendezvous>& out) {
  if (size < 1) {
    return common::invalid_argument("make_callback_bootstrap: size = " + std::to_string(size) +
                                    " is not valid: must be at least 1");
  }
  if (rank < 0 || rank >= size) {
    return common::invalid_argument("make_callback_bootstrap: rank = " + std::to_string(rank) +
                                    " is not valid: must be in [0, " + std::to_string(size) + ")");
  }
  if (!allgather) {
    return common::invalid_argument("make_callback_bootstrap: rank " + std::to_string(rank) +
                                    ": the allgather callback is empty");
  }
  out = std::make_unique<CallbackRendezvous>(rank, size, std::move(allgather));
  return common::Status::ok();
}

}  // namespace mccl::bootstrap
