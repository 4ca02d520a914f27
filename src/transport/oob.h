// The out-of-band exchange a transport needs while it is created (its
// listening address, its random nonce), injected as a callback so that the
// transport layer does not depend on the bootstrap layer: the caller wraps
// Bootstrap::allgather (or, in tests, an in-memory exchange).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace mccl::transport {

// Collective and blocking: every rank calls it with a contribution of the
// same length; on success `all` holds all contributions concatenated in rank
// order. It never throws (the caller of a throwing Bootstrap converts); it
// fails with kTimeout past a deadline of its own, and with the error of the
// exchange underneath otherwise.
using OobAllgather =
    std::function<common::Status(std::span<const std::byte> mine, std::vector<std::byte>& all)>;

// What a maker of an OobAllgather checks of the application's bootstrap
// before passing its result on: `ranks` contributions, each as long as
// `mine`; else kInternal saying what came back.
inline common::Status check_gathered(std::size_t got, std::size_t ranks, std::size_t mine) {
  if (got == ranks * mine) return common::Status::ok();
  return common::internal_error("the application's bootstrap allgather returned " +
                                std::to_string(got) + " bytes for " + std::to_string(ranks) +
                                " ranks of " + std::to_string(mine));
}

}  // namespace mccl::transport
