#pragma once

#include "mccl/export.h"

#define MCCL_VERSION_MAJOR 0
#define MCCL_VERSION_MINOR 1
#define MCCL_VERSION_PATCH 0

namespace mccl {
// "0.1.0"
MCCL_API const char* version_string() noexcept;
}  // namespace mccl
