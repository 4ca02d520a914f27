// make_bootstrap_from_env(): who this process is, from the MCCL_* variables
// or, failing those, from the variables its launcher sets. Under a PMIx
// launcher with none of the MCCL_* variables set (and PMIx built in), the
// PMIx bootstrap does everything; otherwise a launcher only names the rank
// and the world size, and the TCP store does the exchanges.
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include "bootstrap/rendezvous.h"
#include "common/settings.h"

#ifndef MCCL_HAVE_PMIX
#define MCCL_HAVE_PMIX 0
#endif

namespace mccl::bootstrap {
namespace {

namespace settings = common::settings;

struct Launcher {
  const char* name;
  const char* rank_var;
  const char* size_var;
  const char* export_hint;  // how to hand MCCL_BOOTSTRAP_ADDR to every rank
};

// Checked in order: Open MPI sets PMIX_RANK too, and its own pair is the
// more specific one.
constexpr Launcher kLaunchers[] = {
    {"Open MPI's mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "mpirun -x MCCL_BOOTSTRAP_ADDR=<rank 0's host>:29500"},
    {"MPICH's hydra", "PMI_RANK", "PMI_SIZE",
     "mpiexec -genv MCCL_BOOTSTRAP_ADDR <rank 0's host>:29500"},
    {"a PMIx launcher", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
     "export MCCL_BOOTSTRAP_ADDR=<rank 0's host>:29500 to every rank"},
};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// A PMIx server started this process: PMIx_Init needs both to find it
// (plus the server's address, which PMIx reads itself).
bool pmix_launched() { return env("PMIX_NAMESPACE") != nullptr && env("PMIX_RANK") != nullptr; }

const Launcher* detect_launcher() {
  for (const Launcher& l : kLaunchers) {
    if (env(l.rank_var) != nullptr && env(l.size_var) != nullptr) return &l;
  }
  return nullptr;
}

common::Status parse_launcher_int(const char* name, int min, int& out) {
  const std::string v = env(name);
  errno = 0;
  char* end = nullptr;
  long parsed = std::strtol(v.c_str(), &end, 10);
  if (errno != 0 || end == v.c_str() || *end != '\0' || parsed < min || parsed > INT_MAX) {
    return common::invalid_argument(
        std::string(name) + "=\"" + v + "\" is not valid: expected an integer in [" +
        std::to_string(min) + ", " + std::to_string(INT_MAX) +
        "] (set MCCL_RANK and MCCL_WORLD_SIZE to override the launcher)");
  }
  out = static_cast<int>(parsed);
  return common::Status::ok();
}

}  // namespace

common::Status open_from_env(std::unique_ptr<Rendezvous>& out) {
  const bool have_rank = settings::kRank.from_env().has_value();
  const bool have_size = settings::kWorldSize.from_env().has_value();
  const bool have_addr = settings::kBootstrapAddr.from_env().has_value();
  // Any MCCL_* variable means the TCP store was asked for.
  if (MCCL_HAVE_PMIX && !have_rank && !have_size && !have_addr && pmix_launched()) {
    return open_pmix(std::chrono::milliseconds(0), out);
  }
  const Launcher* launcher = detect_launcher();
  if (!have_rank && !have_size && launcher == nullptr) {
    return common::invalid_argument(
        "no bootstrap configured: MCCL_RANK and MCCL_WORLD_SIZE are not set and no "
        "launcher was recognised (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, "
        "PMIX_RANK). Set MCCL_BOOTSTRAP_ADDR=host:port of rank 0, MCCL_RANK and "
        "MCCL_WORLD_SIZE on every process, or start it with mpirun (" +
        std::string(MCCL_HAVE_PMIX ? "nothing more to set: PMIx finds the ranks"
                                   : "and set MCCL_BOOTSTRAP_ADDR") +
        ").");
  }
  TcpBootstrapOptions options;  // fields left at -1 are read from MCCL_* by the factory
  if (launcher != nullptr) {
    common::Status st;
    if (!have_rank) st = parse_launcher_int(launcher->rank_var, 0, options.rank);
    if (st && !have_size) st = parse_launcher_int(launcher->size_var, 1, options.size);
    if (!st) return st;
  }
  // Under a launcher, a missing store address deserves its own message.
  const int size = launcher == nullptr  ? 1
                   : options.size != -1 ? options.size
                                        : static_cast<int>(settings::kWorldSize.get_int());
  if (size > 1 && !have_addr) {
    const std::string rank =
        options.rank != -1 ? std::to_string(options.rank) : settings::kRank.raw();
    return common::invalid_argument(
        std::string("launched by ") + launcher->name + " as rank " + rank + " of " +
        std::to_string(size) +
        ", but MCCL_BOOTSTRAP_ADDR is not set: MCCL needs host:port where rank 0 "
        "serves its bootstrap store, set on every rank (e.g. " +
        launcher->export_hint + ")" +
        (!MCCL_HAVE_PMIX && pmix_launched()
             ? "; this MCCL was built without PMIx, which would have found the "
               "ranks through the launcher by itself"
             : ""));
  }
  return open_tcp(options, out);
}

}  // namespace mccl::bootstrap
