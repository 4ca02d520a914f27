// mccl_offloadd: the offloaded progress engine, the model of a SmartNIC's
// Arm cores. The daemon owns the transports and runs protocol::Context and
// the coll operations for the application processes (clients) of one job
// on this host, one session thread per client: a session builds the
// client's communicator (relaying the bootstrap allgathers through the
// client), then drains its submission ring, drives the protocol, copies the
// results into the client's memory (process_vm_writev) and posts
// completions. See docs/offload.md.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"

namespace mccl::offload::daemon {

struct DaemonConfig {
  std::string socket_path;  // "" = default_socket_path()
  // Exit when no client came for this long (only before the first client:
  // afterwards the daemon exits as soon as its last client has gone).
  std::chrono::milliseconds idle_timeout{10000};
  // The file stdout/stderr go to (--log, given by the library when it
  // starts the daemon): removed at exit unless something went wrong.
  std::string log_path;
};

// Runs until the last client has gone (or the idle timeout). Returns 0, or
// 1 with a message on stderr when the socket could not be set up. A second
// daemon on the same socket path exits at once with 0 (the lock is held).
int run_daemon(const DaemonConfig& config);

// One rank over UDP loopback multicast and TCP in this process, without
// clients: a broadcast and a barrier. For smoke tests (e.g. under qemu).
common::Status self_test();

// Three ranks as threads over the in-memory fabric with loss: broadcast,
// allgather and allreduce, checked. Needs no network (runs under qemu-user).
common::Status self_test_sim();

// The shared rings (a memfd mapped twice) and a socket message carrying a
// descriptor: the parts whose layout and atomics depend on the
// architecture; needs no network (runs under qemu-user).
common::Status self_test_rings();

}  // namespace mccl::offload::daemon
