// The one place that includes UCX's C API. UCX's headers are not clean
// under -Wpedantic (zero-length arrays, enum tricks), so this wrapper is
// marked a system header: their warnings are silenced, ours are not. Only
// .cc files of src/transport/ucx include it; no UCX type leaves the folder.
#pragma once
#pragma GCC system_header

#include <ucp/api/ucp.h>
#include <ucs/type/status.h>
