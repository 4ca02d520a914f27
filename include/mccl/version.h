#pragma once

#include "mccl/export.h"
// MCCL_VERSION_MAJOR/MINOR/PATCH, generated from cmake/McclVersion.cmake.
#include "mccl/version_number.h"

namespace mccl {
// "MAJOR.MINOR.PATCH" of the library actually loaded.
MCCL_API const char* version_string() noexcept;
}  // namespace mccl
