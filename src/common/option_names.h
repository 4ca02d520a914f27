// The words that name the public option enums (mccl/options.h), as the
// settings (settings.def's vocabularies), mccl_info and the logs spell
// them. api/options.cc parses settings with these tables; coll, setup and
// the communicator name values with them.
#pragma once

#include "common/enum_names.h"
#include "mccl/options.h"

namespace mccl::common {

inline constexpr EnumName<TransportKind> kTransportNames[] = {{TransportKind::kAuto, "auto"},
                                                              {TransportKind::kSim, "sim"},
                                                              {TransportKind::kUdp, "udp"},
                                                              {TransportKind::kIb, "ib"}};

inline constexpr EnumName<ProgressKind> kProgressNames[] = {{ProgressKind::kInline, "inline"},
                                                            {ProgressKind::kThread, "thread"},
                                                            {ProgressKind::kOffload, "offload"}};

inline constexpr EnumName<BroadcastAlgorithm> kBroadcastNames[] = {
    {BroadcastAlgorithm::kAuto, "auto"},
    {BroadcastAlgorithm::kMulticast, "multicast"},
    {BroadcastAlgorithm::kChain, "chain"},
    {BroadcastAlgorithm::kBinomial, "binomial"},
    {BroadcastAlgorithm::kFlat, "flat"}};

inline constexpr EnumName<AllgatherAlgorithm> kAllgatherNames[] = {
    {AllgatherAlgorithm::kAuto, "auto"},
    {AllgatherAlgorithm::kMulticast, "multicast"},
    {AllgatherAlgorithm::kRing, "ring"},
    {AllgatherAlgorithm::kBruck, "bruck"},
    {AllgatherAlgorithm::kStar, "star"}};

inline constexpr EnumName<AllreduceAlgorithm> kAllreduceNames[] = {
    {AllreduceAlgorithm::kAuto, "auto"},
    {AllreduceAlgorithm::kRsMulticast, "rs_mcast"},
    {AllreduceAlgorithm::kRing, "ring"},
    {AllreduceAlgorithm::kRecursiveDoubling, "recursive_doubling"}};

inline constexpr EnumName<BarrierAlgorithm> kBarrierNames[] = {
    {BarrierAlgorithm::kAuto, "auto"},
    {BarrierAlgorithm::kDissemination, "dissemination"},
    {BarrierAlgorithm::kStar, "star"}};

inline constexpr EnumName<CompressMode> kCompressNames[] = {{CompressMode::kOff, "off"},
                                                            {CompressMode::kBf16, "bf16"},
                                                            {CompressMode::kBound, "bound"},
                                                            {CompressMode::kZfp, "zfp"}};

}  // namespace mccl::common
