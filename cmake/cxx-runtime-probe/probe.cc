// Reads a number through a locale-aware stream and throws on failure: both
// live in the C++ runtime library, so the link needs that library even
// under --as-needed, and its NEEDED entry (or its absence) tells how the
// toolchain links it.
#include <sstream>
#include <stdexcept>

__attribute__((visibility("default"))) long long mccl_cxx_runtime_probe(const char* text) {
  std::istringstream in(text);
  long long value = 0;
  if (!(in >> value)) throw std::invalid_argument(text);
  return value;
}
