// The C API's bootstraps, shared progress thread, zero-copy buffers and
// newer options, in one process: what each checks before anything is
// exchanged, callbacks' failures as result codes, options structs of an
// older caller, and handles of the new kinds freed twice. The same calls
// across 4 processes are tests/mp/c_api.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "launcher.h"
#include "mccl/mccl.h"

namespace {

bool last_error_says(const char* what) {
  return std::string(mccl_last_error()).find(what) != std::string::npos;
}

// A communicator of a one-rank in-process world.
struct OneRank {
  mccl_world_t world = nullptr;
  mccl_comm_t comm = nullptr;
  mccl_result_t create(const mccl_comm_options_t* options) {
    EXPECT_EQ(mccl_world_create(1, nullptr, &world), MCCL_OK) << mccl_last_error();
    return mccl_comm_create_inprocess(world, 0, options, &comm);
  }
  ~OneRank() {
    if (comm != nullptr) {
      EXPECT_EQ(mccl_comm_destroy(comm), MCCL_OK) << mccl_last_error();
    }
    if (world != nullptr) {
      EXPECT_EQ(mccl_world_destroy(world), MCCL_OK) << mccl_last_error();
    }
  }
};

TEST(CApiNetwork, OptionsOfAnOlderCallerLeaveTheNewFieldsUnset) {
  // Bytes past struct_size (here: garbage where authenticate,
  // progress_thread and setup_timeout_ms now are) are never read.
  mccl_comm_options_t o;
  std::memset(&o, 0xA5, sizeof o);
  std::memset(&o, 0, offsetof(mccl_comm_options_t, authenticate));
  o.struct_size = offsetof(mccl_comm_options_t, authenticate);
  OneRank one;
  ASSERT_EQ(one.create(&o), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_barrier(one.comm), MCCL_OK) << mccl_last_error();
}

TEST(CApiNetwork, SetupTimeoutIsChecked) {
  mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
  o.setup_timeout_ms = -1;
  OneRank bad;
  EXPECT_EQ(bad.create(&o), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("options->setup_timeout_ms")) << mccl_last_error();
  o.setup_timeout_ms = 2000;
  OneRank good;
  ASSERT_EQ(good.create(&o), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_barrier(good.comm), MCCL_OK) << mccl_last_error();
}

TEST(CApiNetwork, AuthenticateIsCheckedAndApplied) {
  mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
  o.authenticate = 3;
  OneRank bad;
  EXPECT_EQ(bad.create(&o), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("options->authenticate")) << mccl_last_error();
  o.authenticate = 0;
  o.reserved3 = 1;
  OneRank reserved;
  EXPECT_EQ(reserved.create(&o), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("reserved3")) << mccl_last_error();
  o.reserved3 = 0;
  for (int32_t auth : {MCCL_AUTH_ON, MCCL_AUTH_OFF}) {
    o.authenticate = auth;
    OneRank one;
    const mccl_result_t rc = one.create(&o);
    // On: MCCL_UNAVAILABLE is the documented answer of a build without authentication.
    if (auth == MCCL_AUTH_ON && rc == MCCL_UNAVAILABLE) continue;
    ASSERT_EQ(rc, MCCL_OK) << auth << ": " << mccl_last_error();
    unsigned char b[100] = {7};
    EXPECT_EQ(mccl_broadcast(one.comm, b, sizeof b, 0), MCCL_OK) << mccl_last_error();
  }
}

TEST(CApiNetwork, ProgressThreadIsSharedAndOutlivesItsHandle) {
  mccl_progress_thread_options_t po = MCCL_PROGRESS_THREAD_OPTIONS_INIT;
  mccl_progress_thread_t engine = nullptr;
  po.pin = 1;
  po.cpu = -1;
  EXPECT_EQ(mccl_progress_thread_create(&po, &engine), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("options->cpu")) << mccl_last_error();
  po = MCCL_PROGRESS_THREAD_OPTIONS_INIT;
  po.spin_us = -2;
  EXPECT_EQ(mccl_progress_thread_create(&po, &engine), MCCL_INVALID_ARGUMENT);
  po.spin_us = -1;  // sleep at once
  ASSERT_EQ(mccl_progress_thread_create(&po, &engine), MCCL_OK) << mccl_last_error();

  mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
  o.progress_thread = engine;
  o.progress = MCCL_PROGRESS_INLINE;  // contradicts the shared thread
  OneRank contradiction;
  EXPECT_EQ(contradiction.create(&o), MCCL_INVALID_ARGUMENT) << mccl_last_error();
  o.progress = MCCL_PROGRESS_UNSET;
  OneRank one;
  ASSERT_EQ(one.create(&o), MCCL_OK) << mccl_last_error();
  int count = -1;
  EXPECT_EQ(mccl_progress_thread_communicators(engine, &count), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(count, 1);
  EXPECT_EQ(mccl_progress_thread_destroy(engine), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_progress_thread_destroy(engine), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("not a live mccl_progress_thread_t")) << mccl_last_error();
  // The communicator still runs on the thread its options named.
  mccl_request_t r = nullptr;
  int v = 5;
  int out = 0;
  ASSERT_EQ(mccl_iallgather(one.comm, &v, &out, sizeof v, &r), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_wait(r, 20000), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_request_free(r), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(out, 5);
  // A destroyed thread handle in the options is refused by name.
  OneRank dead;
  EXPECT_EQ(dead.create(&o), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("options->progress_thread")) << mccl_last_error();
}

TEST(CApiNetwork, BlocksAreCheckedAndReleasedWithTheCommunicator) {
  OneRank one;
  ASSERT_EQ(one.create(nullptr), MCCL_OK) << mccl_last_error();
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(mccl_comm_allocate(one.comm, 1000, &a), MCCL_OK) << mccl_last_error();
  ASSERT_EQ(mccl_comm_allocate(one.comm, 0, &b), MCCL_OK) << mccl_last_error();
  EXPECT_NE(a, b);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(mccl_comm_allocate(one.comm, 8, nullptr), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("'ptr' is NULL")) << mccl_last_error();
  EXPECT_EQ(mccl_comm_deallocate(one.comm, a), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_comm_deallocate(one.comm, a), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("'ptr' is not a live block")) << mccl_last_error();
  int local = 0;
  EXPECT_EQ(mccl_comm_deallocate(one.comm, &local), MCCL_INVALID_ARGUMENT);
  // `b` stays allocated: mccl_comm_destroy releases it (LeakSanitizer checks).
}

int fail_with(const void*, void*, std::size_t, void* user) { return *static_cast<int*>(user); }
int no_broadcast(void*, std::size_t, int, void*) { return 0; }

TEST(CApiNetwork, CallbackBootstrapChecksAndReportsFailures) {
  mccl_bootstrap_callbacks_t cb = MCCL_BOOTSTRAP_CALLBACKS_INIT;
  mccl_bootstrap_t boot = nullptr;
  EXPECT_EQ(mccl_bootstrap_create_callbacks(0, 1, &cb, &boot), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("both NULL")) << mccl_last_error();
  cb.broadcast = no_broadcast;
  EXPECT_EQ(mccl_bootstrap_create_callbacks(0, 0, &cb, &boot), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_bootstrap_create_callbacks(2, 2, &cb, &boot), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_bootstrap_create_callbacks(0, 2, nullptr, &boot), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("'callbacks' is NULL")) << mccl_last_error();

  // Failures of the caller's runtime: MCCL's codes pass through, others are
  // transport errors; the bootstrap keeps its first error.
  for (int code : {static_cast<int>(MCCL_PEER_FAILURE), -9}) {
    mccl_bootstrap_callbacks_t bad = MCCL_BOOTSTRAP_CALLBACKS_INIT;
    bad.allgather = fail_with;
    bad.user_data = &code;
    ASSERT_EQ(mccl_bootstrap_create_callbacks(0, 1, &bad, &boot), MCCL_OK) << mccl_last_error();
    int rank = -1;
    int size = -1;
    EXPECT_EQ(mccl_bootstrap_rank(boot, &rank), MCCL_OK);
    EXPECT_EQ(mccl_bootstrap_size(boot, &size), MCCL_OK);
    EXPECT_EQ(rank, 0);
    EXPECT_EQ(size, 1);
    const mccl_result_t want = code == -9 ? MCCL_TRANSPORT_ERROR : MCCL_PEER_FAILURE;
    for (int again = 0; again < 2; ++again) {
      mccl_comm_t comm = nullptr;
      EXPECT_EQ(mccl_comm_create(boot, nullptr, &comm), want) << mccl_last_error();
      EXPECT_TRUE(last_error_says("allgather callback returned")) << mccl_last_error();
    }
    EXPECT_EQ(mccl_bootstrap_destroy(boot), MCCL_OK) << mccl_last_error();
    EXPECT_EQ(mccl_bootstrap_destroy(boot), MCCL_INVALID_ARGUMENT);
    EXPECT_TRUE(last_error_says("not a live mccl_bootstrap_t")) << mccl_last_error();
    mccl_comm_t comm = nullptr;
    EXPECT_EQ(mccl_comm_create(boot, nullptr, &comm), MCCL_INVALID_ARGUMENT);
  }
}

TEST(CApiNetwork, TcpAndPmixBootstrapsCheckTheirArguments) {
  mccl_bootstrap_t boot = nullptr;
  EXPECT_EQ(mccl_bootstrap_create_tcp("127.0.0.1:1", 0, 1, nullptr, nullptr),
            MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("'out' is NULL")) << mccl_last_error();
  EXPECT_EQ(mccl_bootstrap_create_tcp("127.0.0.1:1", -2, 1, nullptr, &boot), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_bootstrap_create_tcp("127.0.0.1:1", 0, 0, nullptr, &boot), MCCL_INVALID_ARGUMENT);
  mccl_tcp_options_t t = MCCL_TCP_OPTIONS_INIT;
  t.timeout_ms = -1;
  EXPECT_EQ(mccl_bootstrap_create_tcp("127.0.0.1:1", 0, 1, &t, &boot), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("tcp->timeout_ms")) << mccl_last_error();
  // A world of one needs no store and opens no socket.
  t.timeout_ms = 1000;
  t.secret = "s";
  ASSERT_EQ(mccl_bootstrap_create_tcp(nullptr, 0, 1, &t, &boot), MCCL_OK) << mccl_last_error();
  int size = 0;
  EXPECT_EQ(mccl_bootstrap_size(boot, &size), MCCL_OK);
  EXPECT_EQ(size, 1);
  EXPECT_EQ(mccl_bootstrap_destroy(boot), MCCL_OK) << mccl_last_error();

  EXPECT_EQ(mccl_bootstrap_create_pmix(-1, &boot), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("timeout_ms")) << mccl_last_error();
}

// mccl_comm_grow: two members over one TCP store, a joiner, then all
// three on a second store; the joiner gets the state by one broadcast and
// every rank the same epoch, the members' plus 1. Arguments are checked.
TEST(CApiNetwork, MembersGrowWithAJoiner) {
  const std::string first = "127.0.0.1:" + std::to_string(mccl::launch::free_port());
  const std::string second = "127.0.0.1:" + std::to_string(mccl::launch::free_port());
  std::vector<std::thread> threads;
  std::vector<std::uint32_t> epochs(3, 99);
  std::vector<std::string> errors(3);
  auto run = [&](int r) {
    auto fail = [&](const char* what) { errors[r] = std::string(what) + ": " + mccl_last_error(); };
    mccl_tcp_options_t t = MCCL_TCP_OPTIONS_INIT;
    t.secret = "grow-test";
    t.timeout_ms = 20000;
    mccl_comm_options_t o = MCCL_COMM_OPTIONS_INIT;
    o.timeout_ms = 20000;
    mccl_bootstrap_t boot = nullptr, again = nullptr;
    mccl_comm_t comm = nullptr, grown = nullptr;
    if (r < 2) {
      if (mccl_bootstrap_create_tcp(first.c_str(), r, 2, &t, &boot) != MCCL_OK ||
          mccl_comm_create(boot, &o, &comm) != MCCL_OK) {
        return fail("members' communicator");
      }
    }
    if (mccl_bootstrap_create_tcp(second.c_str(), r, 3, &t, &again) != MCCL_OK) {
      return fail("second store");
    }
    if (r < 2) {
      EXPECT_EQ(mccl_comm_grow(comm, again, nullptr), MCCL_INVALID_ARGUMENT);
      EXPECT_EQ(mccl_comm_grow(comm, nullptr, &grown), MCCL_INVALID_ARGUMENT);
      if (mccl_comm_grow(comm, again, &grown) != MCCL_OK) return fail("grow");
    } else if (mccl_comm_create(again, &o, &grown) != MCCL_OK) {
      return fail("joiner");
    }
    std::vector<int> state(1000, r == 0 ? 42 : 0);
    if (mccl_broadcast(grown, state.data(), state.size() * sizeof(int), 0) != MCCL_OK) {
      return fail("broadcast");
    }
    for (int v : state) ASSERT_EQ(v, 42) << "rank " << r;
    EXPECT_EQ(mccl_comm_epoch(grown, &epochs[r]), MCCL_OK);
    EXPECT_EQ(mccl_comm_epoch(grown, nullptr), MCCL_INVALID_ARGUMENT);
    EXPECT_EQ(mccl_comm_destroy(grown), MCCL_OK);
    if (comm != nullptr) {
      std::uint32_t before = 99;
      EXPECT_EQ(mccl_comm_epoch(comm, &before), MCCL_OK);
      EXPECT_EQ(before, 0u);
      EXPECT_EQ(mccl_comm_destroy(comm), MCCL_OK);
    }
    for (mccl_bootstrap_t b : {boot, again}) {
      if (b != nullptr) {
        EXPECT_EQ(mccl_bootstrap_destroy(b), MCCL_OK);
      }
    }
  };
  for (int r = 0; r < 3; ++r) threads.emplace_back(run, r);
  for (auto& th : threads) th.join();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(epochs[r], 1u) << "rank " << r;
  }
}

}  // namespace
