// mccl_info: what this build of MCCL is and every setting it reads.
//
//   mccl_info             version, build features, the network interface
//                         MCCL would use here and why, the algorithm table
//                         (which algorithm serves which size), each setting
//                         with its effective value and where that value
//                         comes from
//   mccl_info --markdown  docs/configuration.md (generated from the registry;
//                         a test fails when the checked-in file differs)
//   mccl_info --version   the version alone
//
// The version comes from the macros of mccl/version.h so that this tool links
// only static libraries of this tree and works even where libmccl.so does not
// load.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/secret.h"
#include "coll/algorithm_text.h"
#include "common/host.h"
#include "common/option_names.h"
#include "common/settings.h"
#include "setup/transport_settings.h"
#include "transport/udp/discovery.h"
#include "transport/udp/interface.h"
#if MCCL_HAVE_IBUD
#include "transport/ibud/ibud_transport.h"
#endif
#include "mccl/error.h"
#include "mccl/version.h"

// Set by tools/CMakeLists.txt; defaults keep the file compilable on its own.
#ifndef MCCL_BUILD_COMPILER
#define MCCL_BUILD_COMPILER "unknown"
#endif
#ifndef MCCL_BUILD_TYPE
#define MCCL_BUILD_TYPE "unknown"
#endif
#ifndef MCCL_BUILD_SANITIZER
#define MCCL_BUILD_SANITIZER ""
#endif
#ifndef MCCL_BUILD_TRANSPORTS
#define MCCL_BUILD_TRANSPORTS "sim"
#endif

namespace {

using mccl::common::Setting;
using mccl::common::SettingType;

#define MCCL_STR2(x) #x
#define MCCL_STR(x) MCCL_STR2(x)
constexpr const char* kVersion =
    MCCL_STR(MCCL_VERSION_MAJOR) "." MCCL_STR(MCCL_VERSION_MINOR) "." MCCL_STR(MCCL_VERSION_PATCH);

const char* type_name(SettingType t) {
  switch (t) {
    case SettingType::kInt:
      return "int";
    case SettingType::kBool:
      return "bool";
    case SettingType::kString:
      return "string";
    case SettingType::kDouble:
      return "double";
  }
  return "?";
}

// Parses the effective value the way the library will, so a bad MCCL_*
// variable is reported here instead of at the first communicator.
// Returns an empty string when valid, else the library's error message.
std::string validate(const Setting& s) {
  const mccl::common::Status st = s.check();
  return st.is_ok() ? std::string() : st.message();
}

// "a|b|c" -> "a, b, c" (plain) or "`a`, `b`, `c`" (Markdown, where a bare
// '|' would split the table cell).
std::string allowed_list(const char* allowed, bool markdown) {
  std::string out;
  std::string_view rest(allowed);
  while (true) {
    auto bar = rest.find('|');
    if (!out.empty()) out += ", ";
    std::string_view item = rest.substr(0, bar);
    out += markdown ? "`" + std::string(item) + "`" : std::string(item);
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return out;
}

std::string md_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// What MCCL_UDP_IFACE resolves to on this host: the candidates this rank
// would propose, the launcher hint, and the choice for a job on this host
// alone and for one whose other hosts share this host's subnets.
void print_network() {
  namespace udp = mccl::transport::udp;
  std::printf("network (MCCL_UDP_IFACE; the TCP repairs bind the same address)\n");
  const std::string configured = mccl::common::settings::kUdpIface.get();
  if (configured != "auto") {
    udp::Interface iface;
    const auto st = udp::resolve_interface(configured, iface);
    std::printf("  MCCL_UDP_IFACE=%s: %s\n\n", configured.c_str(),
                st.is_ok() ? (iface.name + " " + udp::ipv4_text(iface.addr)).c_str()
                           : st.message().c_str());
    return;
  }
  std::vector<udp::Interface> interfaces;
  if (auto st = udp::list_interfaces(interfaces); !st.is_ok()) {
    std::printf("  %s\n\n", st.message().c_str());
    return;
  }
  const std::uint32_t hint = udp::launcher_hint(mccl::setup::launcher_addresses_from_env());
  const udp::IfaceReport mine = udp::make_report(interfaces, mccl::common::network_host_id(), hint);
  std::printf("  host id     %016llx (ranks with the same id share loopback)\n",
              static_cast<unsigned long long>(mine.host));
  std::printf("  candidates  %s (IPv4, up, not loopback, multicast)\n",
              udp::describe_candidates(mine).c_str());
  std::printf("  launcher    %s\n",
              hint != 0 ? (udp::ipv4_text(hint) + " (this host's address towards it)").c_str()
                        : "none found (MCCL_BOOTSTRAP_ADDR, PMIX_SERVER_URI*, PMI_PORT)");
  udp::IfaceChoice choice;
  (void)udp::choose_interface({mine, mine}, 0, choice);
  std::printf("  auto, all ranks on this host: %s (%s)\n", choice.spec.c_str(),
              choice.reason.c_str());
  udp::IfaceReport other = mine;
  other.host = ~mine.host;
  const auto st = udp::choose_interface({mine, other}, 0, choice);
  std::printf("  auto, ranks on other hosts too (if they share these subnets): %s\n\n",
              st.is_ok() ? choice.reason.c_str() : st.message().c_str());
}

// The algorithm table as the settings leave it (MCCL_COLL_*_MCAST_FROM_BYTES
// move its crossovers; a pinned MCCL_COLL_*_ALGO replaces it), for every
// table: which one serves is agreed at creation from where the ranks run,
// one host or several, and the cores each rank has (docs/algorithms.md).
void print_algorithm_table() {
  namespace s = mccl::common::settings;
  const mccl::common::MulticastFrom from{s::kCollBcastMcastFromBytes.get_int(),
                                         s::kCollAllgatherMcastFromBytes.get_int()};
  std::printf(
      "algorithm table (docs/algorithms.md; with multicast, and unless MCCL_COLL_BCAST_ALGO "
      "or MCCL_COLL_ALLGATHER_ALGO pins one)\n");
  std::printf(
      "  this process may use %d cores; ranks on one host share them, and the table "
      "for the fewest cores any rank has serves, unless every rank is on one host\n",
      mccl::common::usable_cores());
  const struct {
    const char* what;
    mccl::common::Placement where;
  } tables[] = {
      {"ranks on several hosts share cores (fewer than 2 each; here more ranks than cores)",
       {0, false, true}},
      {"ranks on several hosts have cores to spare (2 or more each)",
       {mccl::coll::kSpareCoresPerRank, false}},
      {"every rank is on one host (multicast over loopback; more ranks than cores)",
       {0, true, true}}};
  for (const auto& t : tables) {
    std::printf("  where %s:\n", t.what);
    for (int ranks : {2, 4, 8, 16}) {
      std::printf("    %2d ranks  broadcast: %s\n", ranks,
                  mccl::coll::describe_broadcast_choice(ranks, t.where, from).c_str());
      std::printf("              allgather: %s\n",
                  mccl::coll::describe_allgather_choice(ranks, t.where, from).c_str());
    }
  }
  // The barrier's table: by team size and whether ranks share cores.
  const auto barrier =
      mccl::common::value_named(s::kCollBarrierAlgo.get(), mccl::common::kBarrierNames)
          .value_or(mccl::BarrierAlgorithm::kAuto);
  for (const bool share : {true, false}) {
    std::printf("  barrier where ranks %s:", share ? "outnumber their cores" : "have a core each");
    for (int ranks : {2, 4, 8, 16}) {
      const mccl::common::Placement where{.cores_per_rank = share ? 0 : 1,
                                          .ranks_share_cores = share};
      std::printf(" %d ranks %s%s", ranks,
                  mccl::coll::algorithm_name(mccl::coll::choose_barrier(barrier, ranks, where)),
                  ranks == 16 ? "\n" : ",");
    }
  }
  std::printf("\n");
}

int print_text() {
  const std::string sanitizer = MCCL_BUILD_SANITIZER;
  std::printf("MCCL %s\n\n", kVersion);
  std::printf("build\n");
  std::printf("  compiler    %s\n", MCCL_BUILD_COMPILER);
  std::printf("  build type  %s\n", MCCL_BUILD_TYPE);
  std::printf("  sanitizer   %s\n", sanitizer.empty() ? "none" : sanitizer.c_str());
  std::printf("  transports  %s\n\n", MCCL_BUILD_TRANSPORTS);
#if MCCL_HAVE_IBUD
  // Devices, ports, link layer, MTU, and whether a multicast join works.
  std::printf("InfiniBand\n");
  std::string line;
  for (const char c : mccl::transport::ibud::describe_ib_devices()) {
    if (c != '\n') {
      line += c;
      continue;
    }
    std::printf("  %s\n", line.c_str());
    line.clear();
  }
  if (!line.empty()) std::printf("  %s\n", line.c_str());
  std::printf("\n");
#endif
  print_network();
  print_algorithm_table();
  // Which secret the TCP store's hellos would carry (docs/security.md).
  std::printf("bootstrap secret (TCP store)\n  %s\n\n",
              mccl::bootstrap::describe_secret_source().c_str());
  std::printf("settings (explicit CommOptions field > MCCL_* environment > default)\n");
  int invalid = 0;
  for (const Setting* s : mccl::common::all_settings()) {
    std::printf("\n  %s\n", s->name());
    std::printf("    type     %s\n", type_name(s->type()));
    std::printf("    default  %s\n", *s->default_value() ? s->default_value() : "(empty)");
    // A job secret is shown only as set or not: mccl_info output is pasted
    // into bug reports.
    const bool hidden = s == &mccl::common::settings::kBootstrapSecret && s->from_env();
    std::printf("    value    %s (%s)\n", hidden ? "(set, not shown)" : s->raw().c_str(),
                s->source());
    if (s->allowed() != nullptr) {
      std::printf("    allowed  %s\n", allowed_list(s->allowed(), false).c_str());
    }
    std::printf("    doc      %s\n", s->doc());
    if (std::string err = validate(*s); !err.empty()) {
      std::printf("    INVALID  %s\n", err.c_str());
      ++invalid;
    }
  }
  if (invalid > 0) {
    std::fprintf(stderr, "mccl_info: %d setting(s) in the environment are invalid (see above)\n",
                 invalid);
    return 1;
  }
  return 0;
}

// Only what the registry declares: no effective values, so the output does
// not depend on the environment and can be compared with the checked-in doc.
int print_markdown() {
  std::printf(
      "# Configuration\n"
      "\n"
      "<!-- Generated by `mccl_info --markdown`; do not edit. Regenerate with\n"
      "     `cmake --build build --target mccl_update_docs`. -->\n"
      "\n"
      "Every setting MCCL reads is listed here. A value is taken from, in order of\n"
      "precedence:\n"
      "\n"
      "1. the matching field of `mccl::CommOptions`, when the program sets it;\n"
      "2. the `MCCL_*` environment variable, when it is set and not empty;\n"
      "3. the default below.\n"
      "\n"
      "Allowed lists a string's values, or a number's range `lo..hi` (an end left\n"
      "out has no bound). A value that does not parse, is out of range or is not\n"
      "among the allowed ones is an error (`mccl::Error`, code `kInvalidArgument`)\n"
      "naming the variable, never silently ignored: creating a communicator or a\n"
      "bootstrap checks every `MCCL_*` variable first, and the offload daemon\n"
      "refuses to start. `mccl_info` prints the effective value of each setting in\n"
      "the current environment and where it came from.\n"
      "\n"
      "| Variable | Type | Default | Allowed | Description |\n"
      "|---|---|---|---|---|\n");
  for (const Setting* s : mccl::common::all_settings()) {
    // An empty code span (``) does not render; say what empty means instead.
    const std::string def = *s->default_value() == '\0'
                                ? std::string("(empty)")
                                : "`" + std::string(s->default_value()) + "`";
    std::printf("| `%s` | %s | %s | %s | %s |\n", s->name(), type_name(s->type()), def.c_str(),
                s->allowed() != nullptr ? allowed_list(s->allowed(), true).c_str() : "",
                md_escape(s->doc()).c_str());
  }
  return 0;
}

void usage(std::FILE* out) {
  std::fprintf(out, "usage: mccl_info [--markdown | --version | --help]\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) return print_text();
  if (argc == 2 && std::strcmp(argv[1], "--markdown") == 0) return print_markdown();
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", kVersion);
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--help") == 0) {
    usage(stdout);
    return 0;
  }
  usage(stderr);
  return 2;
}
