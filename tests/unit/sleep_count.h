// "Never blocks" as a count: how often the calling thread has gone to
// sleep of its own accord (waiting in poll(), on a futex, in a blocking
// read). A loaded machine does not change it, as it does a duration.
#pragma once

#include <sys/resource.h>

namespace mccl::transport::test {

inline long voluntary_sleeps() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

}  // namespace mccl::transport::test
