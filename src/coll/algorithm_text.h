// The algorithm table (algorithm.h) in words, for mccl_info: for a team
// size and where its ranks run (the cores each has, one host), which
// algorithm serves which sizes, e.g. "flat below 64 KiB, binomial below 128 KiB, multicast from 128
// KiB". Read off choose_broadcast and choose_allgather themselves, so it cannot drift from what a
// communicator does.
#pragma once

#include <string>

#include "coll/algorithm.h"

namespace mccl::coll {

// `from`: the crossovers as the settings move them (-1: the table's).
std::string describe_broadcast_choice(int ranks, const Placement& where,
                                      const MulticastFrom& from = {});
std::string describe_allgather_choice(int ranks, const Placement& where,
                                      const MulticastFrom& from = {});

// "64 KiB", "1 MiB", "1500 B": bytes as the table's text writes them.
std::string size_text(std::size_t bytes);

}  // namespace mccl::coll
