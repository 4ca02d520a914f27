// mccl_offloadd: the offloaded progress engine (docs/offload.md). Started by
// the first application process of a job on this host when none answers on
// the offload socket; exits when its last client has gone.
//
//   mccl_offloadd [--socket=PATH] [--log=PATH] [--idle-timeout-ms=N] [--version] [--self-test]
//                 [--self-test-rings] [--self-test-sim]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mccl/version.h"
#include "offload/daemon/daemon.h"

int main(int argc, char** argv) {
  mccl::offload::daemon::DaemonConfig cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--version") {
      std::printf("mccl_offloadd %d.%d.%d\n", MCCL_VERSION_MAJOR, MCCL_VERSION_MINOR,
                  MCCL_VERSION_PATCH);
      return 0;
    }
    if (a == "--self-test") {
      auto st = mccl::offload::daemon::self_test();
      std::printf("mccl_offloadd self-test: %s\n", st.is_ok() ? "ok" : st.message().c_str());
      return st.is_ok() ? 0 : 1;
    }
    if (a == "--self-test-sim") {
      auto st = mccl::offload::daemon::self_test_sim();
      std::printf("mccl_offloadd sim self-test: %s\n", st.is_ok() ? "ok" : st.message().c_str());
      return st.is_ok() ? 0 : 1;
    }
    if (a == "--self-test-rings") {
      auto st = mccl::offload::daemon::self_test_rings();
      std::printf("mccl_offloadd rings self-test: %s\n", st.is_ok() ? "ok" : st.message().c_str());
      return st.is_ok() ? 0 : 1;
    }
    if (a.rfind("--socket=", 0) == 0) {
      cfg.socket_path = a.substr(9);
    } else if (a.rfind("--log=", 0) == 0) {
      cfg.log_path = a.substr(6);
    } else if (a.rfind("--idle-timeout-ms=", 0) == 0) {
      cfg.idle_timeout = std::chrono::milliseconds(std::atoll(a.c_str() + 18));
    } else {
      std::fprintf(
          stderr,
          "usage: mccl_offloadd [--socket=PATH] [--log=PATH] [--idle-timeout-ms=N] [--version] "
          "[--self-test] [--self-test-rings] [--self-test-sim]\n");
      return 2;
    }
  }
  return mccl::offload::daemon::run_daemon(cfg);
}
