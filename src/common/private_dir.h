// A directory of this user that nobody else may enter, for files only the
// job's own processes may read or reach: the offload daemon's socket, lock
// and log (offload/socket_path.h) and the bootstrap secret that rank 0
// generates for the ranks on its host (bootstrap/secret.h). Ranks of one
// job on one host must find the same directory, so its name is fixed;
// another user who creates that name first (a sticky /tmp lets nobody but
// them remove it) must not be able to stop the job, so a taken name is
// replaced by one that only this user can have made.
#pragma once

#include <string>

#include "common/status.h"

namespace mccl::common {

// $XDG_RUNTIME_DIR when it is set and is a directory of this user that
// nobody else may enter; else private_dir_under("/tmp").
Status private_dir(std::string& out);

// <parent>/mccl-<uid>, created with mode 0700 when absent. When something
// else stands there (another user's directory, a symlink, a file, a
// directory of ours that others may enter), the first directory
// <parent>/mccl-<uid>.<suffix> that is this user's with mode 0700 (looked
// at with lstat: nothing followed), else a fresh one from mkdtemp; a
// warning says so once per process. Only this user can own such a
// directory, so every process of the user on the host finds the same one
// (two that create one at the same instant may each keep their own).
// kUnavailable naming the parent when nothing can be created there.
Status private_dir_under(const std::string& parent, std::string& out);

// Empty when `dir` is a real directory (not a symlink) of this user with
// no access for others; else what it is ("a symlink owned by uid 0, mode
// 777", or the lstat error).
std::string why_not_private(const std::string& dir);

// "a plain file owned by uid 65534, mode 644", from lstat's st_mode and st_uid.
std::string describe_stat(unsigned mode, unsigned uid);

}  // namespace mccl::common
