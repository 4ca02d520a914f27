#include "mpi/settings.h"

#include <string>

#include "common/settings.h"

namespace mccl::mpi {

Settings read_settings() {
  namespace cs = common::settings;
  Settings s;
  // A value that does not parse disables MCCL on this rank (and so on every
  // rank) instead of failing MPI_Init; the fields keep their defaults.
  for (const common::Setting* setting :
       {&cs::kMpiEnable, &cs::kMpiMinBytes, &cs::kMpiDebug, &cs::kMpiStats, &cs::kMpiEager,
        &cs::kMpiSingleHost, &cs::kMpiHierarchy, &cs::kMpiLeadersBcastMaxBytes}) {
    if (common::Status st = setting->check(); !st) {
      s.error += (s.error.empty() ? "" : "; ") + st.message();
    }
  }
  if (!s.error.empty()) return s;
  s.enable = cs::kMpiEnable.get_bool();
  s.min_bytes = cs::kMpiMinBytes.get_count().value_or(kMinBytesAuto);
  s.debug = cs::kMpiDebug.get_bool();
  s.stats = cs::kMpiStats.get_bool();
  s.eager = cs::kMpiEager.get_bool();
  s.single_host = cs::kMpiSingleHost.get_bool();
  const std::string scheme = cs::kMpiHierarchy.get();
  s.host_scheme = scheme == "flat"      ? HostScheme::kFlat
                  : scheme == "leaders" ? HostScheme::kLeaders
                                        : HostScheme::kAuto;
  s.leaders_bcast_max_bytes = cs::kMpiLeadersBcastMaxBytes.get_int();
  // MCCL checks its own setting when a communicator is created; here it
  // only sizes the backstop of our wait loops.
  if (cs::kCollTimeoutMs.check()) s.timeout_ms = cs::kCollTimeoutMs.get_int();
  return s;
}

}  // namespace mccl::mpi
