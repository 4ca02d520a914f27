// The job secret of the TCP store (docs/security.md): a rank's hello must
// carry it, so a process that is not part of the job (another user on a
// shared host, a stranger who can reach the store's port) cannot claim a
// rank, read the exchanged addresses or make the store allocate.
//
// The secret is never something another user can compute: not the uid,
// not the port, not a launcher's job id (a scheduler lists those). It is
// given (the option, MCCL_BOOTSTRAP_SECRET — mccl_run sets a random one —
// or MCCL_BOOTSTRAP_SECRET_FILE), or else rank 0 draws a random one and
// writes it into a file of this user's private directory
// (common/private_dir.h) that the ranks on its host read. A rank that can
// read neither (another host) refuses to start, saying how to give one.
#pragma once

#include <string>

#include "common/status.h"

namespace mccl::bootstrap {

struct JobSecret {
  std::string value;  // empty while `generated` and not yet read or drawn
  std::string from;   // where it came from, for messages and mccl_info
  // Where rank 0 writes the secret it draws and the other ranks read it;
  // empty when the secret was given.
  std::string generated;
};

// The secret for this process from `option` (TcpBootstrapOptions::secret),
// MCCL_BOOTSTRAP_SECRET or MCCL_BOOTSTRAP_SECRET_FILE; else `generated`
// names <private dir>/mccl-bootstrap-<port>.secret. kInvalidArgument
// naming the source when the secret is longer than the wire allows, or the
// file is missing, empty, not this user's or readable by others;
// kUnavailable when there is no private directory.
common::Status job_secret(const std::string& option, int store_port, JobSecret& out);

// Rank 0: draws a random secret into `s.value` and writes it to
// `s.generated` (mode 0600, replacing what was there), before the store
// listens, so a rank that reaches the store finds it. kUnavailable when it
// cannot.
common::Status publish_generated_secret(JobSecret& s);
// Removes rank 0's file (the store is gone; the secret is of no more use).
void remove_generated_secret(const JobSecret& s);

// The other ranks, once connected to the store (so rank 0 has written it):
// reads `s.generated` into `s.value`. kInvalidArgument naming `rank` and
// how to give a secret when the file is not there (rank 0 runs on another
// host) or not a private file of this user.
common::Status read_generated_secret(int rank, JobSecret& s);

// 128 random bits as 32 hex digits: a fresh job secret (mccl_run's, and
// the one rank 0 generates). Empty when the kernel has no randomness to give.
std::string random_secret();

// For mccl_info: which case applies in this environment, in one line.
std::string describe_secret_source();

}  // namespace mccl::bootstrap
