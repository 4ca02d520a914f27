// The one registry of MCCL_* environment settings.
//
// Every knob is declared here once (name, type, default, one line of
// documentation) and defined in settings.cc; `mccl_info` prints them all.
// Explicit options win over the environment, which wins over the default:
// callers pass an option through `value_or` style helpers in their layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mccl::common {

enum class SettingType { kInt, kBool, kString, kDouble };

class Setting {
 public:
  constexpr Setting(const char* name, SettingType type, const char* default_value, const char* doc,
                    const char* allowed = nullptr)
      : name_(name), type_(type), default_(default_value), doc_(doc), allowed_(allowed) {}

  const char* name() const { return name_; }
  SettingType type() const { return type_; }
  const char* default_value() const { return default_; }
  const char* doc() const { return doc_; }
  // For string settings with a fixed vocabulary: "a|b|c", else nullptr.
  const char* allowed() const { return allowed_; }

  // The environment's value, if set (empty strings count as unset).
  std::optional<std::string> from_env() const;
  // Where the effective value comes from: "environment" or "default".
  const char* source() const;
  // The effective value as text (environment, else default).
  std::string raw() const;

  // Typed access. An environment value that does not parse (or is not in
  // the allowed vocabulary, or out of range) throws mccl::Error
  // (kInvalidArgument) naming the variable.
  std::int64_t get_int(std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX) const;
  bool get_bool() const;
  double get_double() const;
  std::string get() const;  // strings, checked against allowed()

 private:
  const char* name_;
  SettingType type_;
  const char* default_;
  const char* doc_;
  const char* allowed_;
};

// Every registered setting, in a stable order (grouped by layer).
const std::vector<const Setting*>& all_settings();

namespace settings {
// common
extern const Setting kLogLevel;
// transport
extern const Setting kTransport;
extern const Setting kReliable;
extern const Setting kTransportSetupTimeoutMs;
// transport/udp
extern const Setting kUdpIface;
extern const Setting kUdpRateMbit;
extern const Setting kUdpRcvbuf;
extern const Setting kUdpMaxDatagram;
extern const Setting kUdpGso;
extern const Setting kUdpGro;
extern const Setting kUdpTestDropPermille;
// transport/ibud
extern const Setting kIbDev;
extern const Setting kIbMgid;
extern const Setting kIbIpoibIface;
extern const Setting kIbRxDepth;
extern const Setting kIbSignalEvery;
// protocol
extern const Setting kProtoEarlyBytes;
extern const Setting kProtoReorderWindow;
extern const Setting kProtoStallFactor;
extern const Setting kProtoStallMinUs;
extern const Setting kProtoStallMaxUs;
extern const Setting kProtoFirstTimeoutUs;
extern const Setting kProtoRepairMaxBytes;
extern const Setting kProtoEagerBytes;
extern const Setting kProtoEagerBudget;
extern const Setting kProtoSendBatch;
extern const Setting kProtoChecksum;
extern const Setting kProtoAuth;
// coll
extern const Setting kCollTimeoutMs;
extern const Setting kCollAllgatherAlgo;
extern const Setting kCollAllgatherRoots;
extern const Setting kCollBcastAlgo;
extern const Setting kCollChainSegmentBytes;
// coll/reduce
extern const Setting kCollReduceSegmentBytes;
extern const Setting kCollRsShare;
extern const Setting kCollAllreduceAlgo;
extern const Setting kCollAllreduceSmallBytes;
// progress
extern const Setting kProgress;
extern const Setting kProgressCpu;
extern const Setting kProgressSpinUs;
extern const Setting kOffloadSocket;
extern const Setting kOffloadDaemon;
extern const Setting kOffloadJob;
extern const Setting kOffloadLog;
// bootstrap
extern const Setting kBootstrapAddr;
extern const Setting kRank;
extern const Setting kWorldSize;
extern const Setting kBootstrapTimeoutMs;
extern const Setting kBootstrapSecret;
// libmccl_mpi (src/mpi), the PMPI library
extern const Setting kMpiEnable;
extern const Setting kMpiMinBytes;
extern const Setting kMpiDebug;
extern const Setting kMpiStats;
extern const Setting kMpiSingleHost;
extern const Setting kMpiEager;
}  // namespace settings

}  // namespace mccl::common
