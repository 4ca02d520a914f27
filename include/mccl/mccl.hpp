// Everything of MCCL's C++ API.
#pragma once

#include "mccl/bootstrap.h"
#include "mccl/callback_bootstrap.h"
#include "mccl/communicator.h"
#include "mccl/error.h"
#include "mccl/inprocess.h"
#include "mccl/options.h"
#include "mccl/pmix_bootstrap.h"
#include "mccl/progress_thread.h"
#include "mccl/stats.h"
#include "mccl/tcp_bootstrap.h"
#include "mccl/version.h"
