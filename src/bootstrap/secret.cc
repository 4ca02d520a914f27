#include "bootstrap/secret.h"

#include <unistd.h>

#include <cstdlib>

#include "bootstrap/wire.h"
#include "common/settings.h"
#include "mccl/error.h"

namespace mccl::bootstrap {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The launcher's name for this job: the same on every rank, different for
// every job. Empty without a launcher.
std::string launcher_job() {
  if (const char* ns = env("PMIX_NAMESPACE")) return std::string("pmix:") + ns;
  if (const char* j = env("OMPI_MCA_ess_base_jobid")) return std::string("ompi:") + j;
  if (const char* j = env("SLURM_JOB_ID")) {
    const char* step = env("SLURM_STEP_ID");
    return std::string("slurm:") + j + "." + (step != nullptr ? step : "");
  }
  return {};
}

}  // namespace

std::string job_secret(const std::string& option, int store_port) {
  std::string secret, from;
  if (!option.empty()) {
    secret = option;
    from = "TcpBootstrapOptions::secret";
  } else if (auto e = common::settings::kBootstrapSecret.from_env()) {
    secret = *e;
    from = common::settings::kBootstrapSecret.name();
  } else {
    // Not the host part of the address: ranks may spell rank 0's host
    // differently, but they all use one port.
    return "derived:uid=" + std::to_string(::getuid()) + ";port=" + std::to_string(store_port) +
           ";job=" + launcher_job();
  }
  if (secret.size() > wire::kMaxSecretBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                from + " is " + std::to_string(secret.size()) + " bytes long: at most " +
                    std::to_string(wire::kMaxSecretBytes) + " are allowed");
  }
  return secret;
}

}  // namespace mccl::bootstrap
