// The out-of-band exchange a transport needs while it is created (its
// listening address, its random nonce), injected as a callback so that the
// transport layer does not depend on the bootstrap layer: the caller wraps
// Bootstrap::allgather (or, in tests, an in-memory exchange).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace mccl::transport {

// Collective and blocking: every rank calls it with a contribution of the
// same length and gets all contributions concatenated in rank order. It may
// throw mccl::Error (a transport turns that into a Status); it must have a
// deadline of its own.
using OobAllgather = std::function<std::vector<std::byte>(std::span<const std::byte>)>;

}  // namespace mccl::transport
