// The public mccl::Bootstrap over a rendezvous of the bootstrap layer
// (bootstrap/rendezvous.h), whose failures are Status values: this is where
// they become the exceptions mccl::Bootstrap::allgather promises. Every
// bootstrap the public factories make is one of these.
#pragma once

#include <memory>

#include "bootstrap/rendezvous.h"
#include "mccl/bootstrap.h"

namespace mccl::detail {

// `b`'s rendezvous when a factory of MCCL made `b`, else null (the
// application's own mccl::Bootstrap).
bootstrap::Rendezvous* rendezvous_of(Bootstrap& b);

// `r` as a public Bootstrap that owns it.
std::unique_ptr<Bootstrap> public_bootstrap(std::unique_ptr<bootstrap::Rendezvous> r);

}  // namespace mccl::detail
