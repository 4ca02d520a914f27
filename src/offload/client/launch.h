// How the client reaches mccl_offloadd: where the daemon's binary is, how a
// daemon is started when none answers (detached, so it outlives the
// process that started it), and the connection to its socket.
#pragma once

#include <string>

namespace mccl::offload::client {

// The daemon's binary: `daemon_path` when given (OffloadOptions), else
// MCCL_OFFLOAD_DAEMON, else mccl_offloadd next to the object holding this
// code (libmccl.so or a static executable) or in its ../bin, else next to
// the executable, else where `make install` puts it, else where the build
// tree made it, else $PATH.
std::string find_daemon(const std::string& daemon_path);

// MCCL_OFFLOAD_LOG, else the socket path with .log appended.
std::string daemon_log_path(const std::string& socket_path);

// Starts `exe` serving `socket_path`, detached; its output goes to its log
// (daemon_log_path), or nowhere when that cannot be opened. Returns once
// the intermediate child has exited; whether the daemon came up shows when
// it answers.
void spawn_daemon(const std::string& exe, const std::string& socket_path);

// A connected socket to the daemon at `path`, or -1 when none answers.
int connect_to_daemon(const std::string& path);

}  // namespace mccl::offload::client
