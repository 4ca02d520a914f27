// Where the offload daemon's socket, lock and log live, and the checks that
// keep another local user from standing in for the daemon or the client
// (docs/security.md). The socket is the only way in: whoever answers on it
// receives the application's rings and shared buffers and could fake
// completions, and the daemon writes into the memory of whoever connects.
// So both ends check the other runs as the same user (SO_PEERCRED), and the
// default path lies in a directory that only this user can write to.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace mccl::offload {

// The start of every default socket's file name (and so of its lock and log).
inline constexpr std::string_view kSocketPrefix = "mccl-offload-";

// MCCL_OFFLOAD_SOCKET, else <common::private_dir>/mccl-offload-<job>-<netns>.sock
// with the job from MCCL_OFFLOAD_JOB, else from MCCL_BOOTSTRAP_ADDR, else
// "default". The network namespace is part of the name because a daemon
// owns the network of the namespace it started in: ranks on different
// (namespace) hosts must never share one, though they share /tmp.
common::Status default_socket_path(std::string& out);

// What lies at `path` (looked at with lstat: no symlink followed) must be
// nothing or a socket owned by this user. Anything else is kInvalidArgument
// naming the path, what it is and its owner: another user may be waiting
// there for this user's application (the client) or its daemon.
common::Status check_socket_path(const std::string& path);

// The daemon's lock (<socket>.lock) or log at `path` must be nothing, a
// plain file of this user, or a character device (a log of /dev/null).
// Anything else is kInvalidArgument naming the path and its owner: the
// daemon refuses such a file, so a client that waited for it to start
// would wait for its whole timeout for nothing.
common::Status check_daemon_file(const std::string& path);

// The process at the other end of the connected unix socket `fd` must run
// as this user (SO_PEERCRED, which the kernel fills in, so it cannot be
// forged). kPermissionless errors are kInvalidArgument naming `path`,
// `peer` ("the offload daemon", "an offload client") and the peer's uid.
common::Status check_peer_uid(int fd, const std::string& path, const char* peer);

}  // namespace mccl::offload
