#include "mpi/settings.h"

#include <exception>
#include <string>

#include "common/settings.h"

namespace mccl::mpi {

namespace {

namespace cs = common::settings;

// The registry throws on a value that does not parse; here that disables
// MCCL on this rank (and so on every rank) instead of failing MPI_Init.
template <typename T, typename Read>
void read(T& out, std::string& error, Read&& get) {
  try {
    out = static_cast<T>(get());
  } catch (const std::exception& e) {
    error += std::string(error.empty() ? "" : "; ") + e.what();
  }
}

}  // namespace

Settings read_settings() {
  Settings s;
  read(s.enable, s.error, [] { return cs::kMpiEnable.get_bool(); });
  read(s.min_bytes, s.error, [] { return cs::kMpiMinBytes.get_int(0); });
  read(s.debug, s.error, [] { return cs::kMpiDebug.get_bool(); });
  read(s.stats, s.error, [] { return cs::kMpiStats.get_bool(); });
  read(s.eager, s.error, [] { return cs::kMpiEager.get_bool(); });
  read(s.single_host, s.error, [] { return cs::kMpiSingleHost.get_bool(); });
  read(s.host_scheme, s.error, [] {
    const std::string v = cs::kMpiHierarchy.get();
    return v == "flat"      ? HostScheme::kFlat
           : v == "leaders" ? HostScheme::kLeaders
                            : HostScheme::kAuto;
  });
  read(s.leaders_bcast_max_bytes, s.error, [] { return cs::kMpiLeadersBcastMaxBytes.get_int(0); });
  // MCCL validates its own setting when a communicator is created; here it
  // only sizes the backstop of our wait loops, so a bad value is ignored.
  std::string ignored;
  read(s.timeout_ms, ignored, [] { return cs::kCollTimeoutMs.get_int(1); });
  return s;
}

}  // namespace mccl::mpi
