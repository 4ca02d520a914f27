#include "mpi/settings.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace mccl::mpi {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

void read_bool(const char* name, bool& out, std::string& error) {
  const char* v = env(name);
  if (v == nullptr) return;
  const std::string s(v);
  if (s == "1" || s == "true" || s == "yes" || s == "on") {
    out = true;
  } else if (s == "0" || s == "false" || s == "no" || s == "off") {
    out = false;
  } else {
    error += std::string(error.empty() ? "" : "; ") + name + "=\"" + s +
             "\" is not valid: expected 1/0, true/false, yes/no or on/off";
  }
}

void read_int(const char* name, std::int64_t min, std::int64_t& out, std::string& error) {
  const char* v = env(name);
  if (v == nullptr) return;
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(v, &end, 0);
  if (errno != 0 || end == v || *end != '\0' || parsed < min) {
    error += std::string(error.empty() ? "" : "; ") + name + "=\"" + v +
             "\" is not valid: expected an integer >= " + std::to_string(min);
    return;
  }
  out = parsed;
}

}  // namespace

Settings read_settings() {
  Settings s;
  read_bool("MCCL_MPI_ENABLE", s.enable, s.error);
  read_int("MCCL_MPI_MIN_BYTES", 0, s.min_bytes, s.error);
  read_bool("MCCL_MPI_DEBUG", s.debug, s.error);
  read_bool("MCCL_MPI_STATS", s.stats, s.error);
  read_bool("MCCL_MPI_EAGER", s.eager, s.error);
  // MCCL validates its own setting when a communicator is created; here it
  // only sizes the backstop of our wait loops, so a bad value is ignored.
  std::string ignored;
  read_int("MCCL_COLL_TIMEOUT_MS", 1, s.timeout_ms, ignored);
  return s;
}

}  // namespace mccl::mpi
