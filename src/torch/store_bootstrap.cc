#include "store_bootstrap.h"

#include <mccl/callback_bootstrap.h>
#include <mccl/error.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace mccl::torch_backend {
namespace {

std::string key_of(long round, int rank) {
  return "mccl/" + std::to_string(round) + "/" + std::to_string(rank);
}

// The ranks whose key of `round` is not in the store, for the error message.
std::string missing_ranks(c10d::Store& store, long round, int size) {
  std::string missing;
  for (int r = 0; r < size; ++r) {
    bool present = false;
    try {
      present = store.check({key_of(round, r)});
    } catch (const std::exception&) {
      // the store itself is gone: count the rank as missing
    }
    if (!present) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  }
  return missing.empty() ? "none (the store failed)" : missing;
}

}  // namespace

std::unique_ptr<mccl::Bootstrap> make_store_bootstrap(c10::intrusive_ptr<c10d::Store> store,
                                                      int rank, int size,
                                                      std::chrono::milliseconds timeout) {
  auto round = std::make_shared<long>(0);
  auto allgather = [store, rank, size, timeout, round](const void* mine, void* all, std::size_t n) {
    const long r = (*round)++;
    const auto* p = static_cast<const std::uint8_t*>(mine);
    std::vector<std::string> keys;
    for (int q = 0; q < size; ++q) keys.push_back(key_of(r, q));
    try {
      store->set(keys[rank], std::vector<std::uint8_t>(p, p + n));
      store->wait(keys, timeout);
    } catch (const std::exception& e) {
      throw mccl::Error(mccl::ErrorCode::kTimeout,
                        "rank " + std::to_string(rank) +
                            ": creating the MCCL communicator through the torch store: ranks " +
                            missing_ranks(*store, r, size) + " did not arrive within " +
                            std::to_string(timeout.count()) + " ms (" + e.what() + ")");
    }
    for (int q = 0; q < size; ++q) {
      std::vector<std::uint8_t> value = store->get(keys[q]);
      if (value.size() != n) {
        throw mccl::Error(mccl::ErrorCode::kMismatch,
                          "rank " + std::to_string(rank) + ": rank " + std::to_string(q) +
                              " published " + std::to_string(value.size()) +
                              " bytes in the torch store, not " + std::to_string(n));
      }
      if (n > 0) std::memcpy(static_cast<std::uint8_t*>(all) + q * n, value.data(), n);
    }
    // Every rank has published round r, so every rank has read round r - 1:
    // our key of that round is garbage now.
    if (r > 0) {
      try {
        store->deleteKey(key_of(r - 1, rank));
      } catch (const std::exception&) {
        // a store without deletion (or a failed one) only keeps a few bytes
      }
    }
  };
  return mccl::make_callback_bootstrap(rank, size, std::move(allgather));
}

}  // namespace mccl::torch_backend
