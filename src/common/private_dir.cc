#include "common/private_dir.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/log.h"

namespace mccl::common {

std::string describe_stat(unsigned mode, unsigned uid) {
  const char* what = S_ISSOCK(mode)  ? "a socket"
                     : S_ISLNK(mode) ? "a symlink"
                     : S_ISDIR(mode) ? "a directory"
                     : S_ISREG(mode) ? "a plain file"
                                     : "a special file";
  char octal[8];
  std::snprintf(octal, sizeof octal, "%03o", mode & 0777);
  return std::string(what) + " owned by uid " + std::to_string(uid) + ", mode " + octal;
}

std::string why_not_private(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return std::strerror(errno);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return describe_stat(st.st_mode, st.st_uid);
  }
  return {};
}

namespace {

// A directory of ours that an earlier process made in place of the taken
// name: the first in name order, so every process picks the same one.
std::string find_replacement(const std::string& parent, const std::string& prefix) {
  DIR* d = ::opendir(parent.c_str());
  if (d == nullptr) return {};
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) {
      names.push_back(name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    if (why_not_private(parent + "/" + n).empty()) return parent + "/" + n;
  }
  return {};
}

}  // namespace

Status private_dir_under(const std::string& parent, std::string& out) {
  const std::string base = "mccl-" + std::to_string(::geteuid());
  const std::string dir = parent + "/" + base;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return unavailable_error("cannot create the private directory " + dir + ": " +
                             std::strerror(errno));
  }
  const std::string why = why_not_private(dir);
  if (why.empty()) {
    out = dir;
    return Status::ok();
  }
  // Taken (often by another user, whom the sticky bit protects): use a
  // name only this user's processes can own instead of failing.
  std::string other = find_replacement(parent, base + ".");
  if (other.empty()) {
    std::string templ = dir + ".XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      return unavailable_error(dir + " is " + why + ", and no private directory can be made in " +
                               parent + " instead: " + std::strerror(errno));
    }
    other = templ;
  }
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    logf(LogLevel::kWarn, -1,
         "%s is %s, not a private directory of uid %u (another user may have made it): using %s "
         "instead",
         dir.c_str(), why.c_str(), static_cast<unsigned>(::geteuid()), other.c_str());
  }
  out = other;
  return Status::ok();
}

Status private_dir(std::string& out) {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/') {
    // Not ours or open to others: not an error, just not the place.
    if (why_not_private(xdg).empty()) {
      out = xdg;
      return Status::ok();
    }
  }
  return private_dir_under("/tmp", out);
}

}  // namespace mccl::common
