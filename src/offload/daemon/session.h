// The daemon's side of one client connection (daemon.cc), for the
// listener (listener.cc).
#pragma once

#include <string>

namespace mccl::offload {

// Serves the client on `sock` until it leaves: builds its communicator,
// then runs its collectives. Blocks; does not close `sock`.
void run_session(int sock);

// Whether a session saw something go wrong that the daemon's log should
// keep (a failed creation, a client that died).
bool session_trouble();

// A line on the daemon's stderr (its log): "mccl_offloadd[PID]: " and
// `fmt` with `a` for its %s.
void say(const char* fmt, const std::string& a);

}  // namespace mccl::offload
