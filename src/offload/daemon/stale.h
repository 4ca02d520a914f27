// The files a daemon that was killed leaves behind: its socket and its lock
// (<socket>.lock), which nothing else removes (a daemon removes its own at
// exit). A starting daemon sweeps the directory of its own socket for
// those of this user whose lock nobody holds, so that killed daemons (a
// job's processes killed with SIGKILL, a network namespace torn down with
// its daemon inside) do not litter the private directory for ever. Logs
// are kept: a killed daemon's log may be the only account of what happened.
#pragma once

#include <string>

namespace mccl::offload::daemon {

// Removes, in the directory of `own_socket`, every mccl-offload-*.sock.lock
// that is a plain file of this user and that no process holds (flock), and
// the socket beside it where that is a socket of this user. The daemon's
// own files are skipped. Returns how many daemons' files were removed.
int remove_stale_daemon_files(const std::string& own_socket);

}  // namespace mccl::offload::daemon
