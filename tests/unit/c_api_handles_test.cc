// The C API's promise that no signal escapes, for handles a caller got
// wrong: destroyed twice, freed twice, or never made by MCCL. Each gives
// MCCL_INVALID_ARGUMENT naming the argument, not SIGSEGV. Also the checks
// of the in-memory fabric's options and mccl_wait's longest timeout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "mccl/mccl.h"

namespace {

bool last_error_says(const char* what) {
  return std::string(mccl_last_error()).find(what) != std::string::npos;
}

TEST(CApiHandles, DestroyedAndMadeUpHandlesAreRefused) {
  mccl_world_t world = nullptr;
  ASSERT_EQ(mccl_world_create(1, nullptr, &world), MCCL_OK) << mccl_last_error();
  mccl_comm_t comm = nullptr;
  ASSERT_EQ(mccl_comm_create_inprocess(world, 0, nullptr, &comm), MCCL_OK) << mccl_last_error();
  mccl_request_t request = nullptr;
  ASSERT_EQ(mccl_ibarrier(comm, &request), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_wait(request, INT64_MAX), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_request_free(request), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_request_free(request), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("'request'")) << mccl_last_error();
  EXPECT_EQ(mccl_wait(request, 0), MCCL_INVALID_ARGUMENT);

  EXPECT_EQ(mccl_comm_destroy(comm), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_comm_destroy(comm), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("'comm'")) << mccl_last_error();
  int rank = -1;
  EXPECT_EQ(mccl_comm_rank(comm, &rank), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_barrier(comm), MCCL_INVALID_ARGUMENT);

  EXPECT_EQ(mccl_world_destroy(world), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_world_destroy(world), MCCL_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_says("'world'")) << mccl_last_error();

  // Garbage, and a handle of one kind passed as another.
  auto* junk = reinterpret_cast<mccl_comm_t>(std::uintptr_t{0xdead0});
  EXPECT_EQ(mccl_comm_destroy(junk), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_barrier(junk), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_world_kill_rank(reinterpret_cast<mccl_world_t>(std::uintptr_t{8}), 0),
            MCCL_INVALID_ARGUMENT);
  ASSERT_EQ(mccl_world_create(1, nullptr, &world), MCCL_OK) << mccl_last_error();
  EXPECT_EQ(mccl_comm_destroy(reinterpret_cast<mccl_comm_t>(world)), MCCL_INVALID_ARGUMENT);
  EXPECT_EQ(mccl_world_destroy(world), MCCL_OK) << mccl_last_error();
}

TEST(CApiHandles, OutOfRangeFabricOptionsAreNamed) {
  struct Case {
    const char* name;
    void (*set)(mccl_sim_options_t&);
  };
  const Case cases[] = {
      {"loss", [](mccl_sim_options_t& o) { o.loss = 2.0; }},
      {"loss", [](mccl_sim_options_t& o) { o.loss = std::nan(""); }},
      {"corrupt", [](mccl_sim_options_t& o) { o.corrupt = -1.0; }},
      {"link_gbit_per_s", [](mccl_sim_options_t& o) { o.link_gbit_per_s = -10.0; }},
  };
  for (const Case& c : cases) {
    mccl_sim_options_t o = MCCL_SIM_OPTIONS_INIT;
    c.set(o);
    mccl_world_t world = nullptr;
    EXPECT_EQ(mccl_world_create(2, &o, &world), MCCL_INVALID_ARGUMENT) << c.name;
    EXPECT_TRUE(last_error_says(c.name)) << mccl_last_error();
    EXPECT_EQ(world, nullptr);
  }
}

}  // namespace
