// The job secret of the TCP store (docs/security.md): a rank's hello must
// carry it, so a process that is not part of the job (another user on a
// shared host, a stranger who can reach the store's port) cannot claim a
// rank, read the exchanged addresses or make the store allocate.
#pragma once

#include <string>

namespace mccl::bootstrap {

// The secret for this process: `option` (TcpBootstrapOptions::secret) when
// set, else MCCL_BOOTSTRAP_SECRET, else one derived from what every rank of
// the job shares: the user id, the store's port and the launcher's job
// identity (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, SLURM_JOB_ID with
// SLURM_STEP_ID), whichever is set. The derived one keeps out strangers who
// do not know the job; it is no secret from someone who can guess the job
// id, which is why mccl_run sets a random MCCL_BOOTSTRAP_SECRET.
// Throws mccl::Error (kInvalidArgument) when the secret is longer than the
// wire allows, naming where it came from.
std::string job_secret(const std::string& option, int store_port);

}  // namespace mccl::bootstrap
