// What setup reads of the protocol's settings (setup/protocol_settings.h):
// the incast budget's setting and MCCL_PROTO_AUTH, whose values the
// protocol layer then takes as given.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/settings.h"
#include "mccl/error.h"
#include "protocol/incast.h"
#include "setup/protocol_settings.h"

namespace mccl::setup {
namespace {

TEST(SetupProtocolSettings, TheIncastSettingIsAutoOrBytes) {
  ::unsetenv("MCCL_PROTO_INCAST_BYTES");
  EXPECT_EQ(incast_bytes_from_settings(1000), protocol::auto_incast_bytes(1000));
  ::setenv("MCCL_PROTO_INCAST_BYTES", "auto", 1);
  EXPECT_EQ(incast_bytes_from_settings(0), protocol::kIncastAutoMinBytes);
  ::setenv("MCCL_PROTO_INCAST_BYTES", "131072", 1);
  EXPECT_EQ(incast_bytes_from_settings(10000), 131072u);
  ::setenv("MCCL_PROTO_INCAST_BYTES", "0", 1);
  EXPECT_EQ(incast_bytes_from_settings(1000), 0u);
  // Anything else is rejected where creation begins (check_settings()); a
  // value that reaches this reader anyway reads as auto.
  for (const char* bad : {"-1", "256k", "lots", "12 "}) {
    ::setenv("MCCL_PROTO_INCAST_BYTES", bad, 1);
    const common::Status st = common::check_settings();
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("MCCL_PROTO_INCAST_BYTES"), std::string::npos) << st.message();
    EXPECT_EQ(incast_bytes_from_settings(1000), protocol::auto_incast_bytes(1000)) << bad;
  }
  ::unsetenv("MCCL_PROTO_INCAST_BYTES");
}

TEST(SetupProtocolSettings, AuthIsOnOffOrLeftToAuto) {
  ::unsetenv("MCCL_PROTO_AUTH");
  EXPECT_EQ(authenticate_from_settings(), std::nullopt);
  ::setenv("MCCL_PROTO_AUTH", "on", 1);
  EXPECT_EQ(authenticate_from_settings(), std::optional<bool>(true));
  ::setenv("MCCL_PROTO_AUTH", "off", 1);
  EXPECT_EQ(authenticate_from_settings(), std::optional<bool>(false));
  ::setenv("MCCL_PROTO_AUTH", "auto", 1);
  EXPECT_EQ(authenticate_from_settings(), std::nullopt);
  ::unsetenv("MCCL_PROTO_AUTH");
}

TEST(SetupProtocolSettings, TheConfigTakesTheSettings) {
  ::setenv("MCCL_PROTO_EAGER_BYTES", "4096", 1);
  ::setenv("MCCL_PROTO_INCAST_BYTES", "131072", 1);
  const protocol::ProtocolConfig c = protocol_config_from_settings(1500, 1000);
  EXPECT_EQ(c.eager_bytes, 4096u);
  EXPECT_EQ(c.incast_bytes, 131072u);
  EXPECT_EQ(c.chunk_bytes, 1500u - protocol::kDataHeaderBytes);
  ::unsetenv("MCCL_PROTO_EAGER_BYTES");
  ::unsetenv("MCCL_PROTO_INCAST_BYTES");
}

}  // namespace
}  // namespace mccl::setup
