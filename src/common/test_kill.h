// The test hook MCCL_TEST_KILL_AT: a process that reaches the named point
// kills itself there (SIGKILL: nothing of it runs after), so that the
// failures elastic membership must survive happen where a test wants
// them, every time:
//   shrink-agreed, shrink-created   points of Communicator::shrink;
//   created        a communicator exists (constructor or grow), before the
//                  call returns;
//   collective:N   when this process starts its Nth collective (from 1,
//                  any communicator; point-to-point calls not counted);
//   datagrams:N    once its multicast roots have sent N datagrams.
// Unset (the default) costs one predictable branch per call.
#pragma once

#include <cstdint>

namespace mccl::common {

// Kills this process when MCCL_TEST_KILL_AT names `point`; else nothing.
void kill_here_if_asked(const char* point);

// Adds `count` to the counter `name` ("collective", "datagrams") and kills
// this process once it reaches the N of MCCL_TEST_KILL_AT=name:N.
void count_toward_kill(const char* name, std::uint64_t count);

}  // namespace mccl::common
