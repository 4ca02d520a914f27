// Symbol visibility: the library is built with hidden visibility, and only
// what is marked MCCL_API is exported.
#pragma once

#ifndef MCCL_API
#define MCCL_API __attribute__((visibility("default")))
#endif
