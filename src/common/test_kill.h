// The test hook MCCL_TEST_KILL_AT: a process that reaches the named point
// kills itself there (SIGKILL: nothing of it runs after), so that the
// failures elastic membership must survive (a rank dying in the middle of
// a shrink) happen where a test wants them, every time.
#pragma once

namespace mccl::common {

// Kills this process when MCCL_TEST_KILL_AT names `point`; else nothing.
void kill_here_if_asked(const char* point);

}  // namespace mccl::common
