#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace mccl::bench::scale {
namespace {

// "256k", "1m", "100": bytes.
bool size_of(const std::string& s, std::size_t& out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v < 0) return false;
  const std::string unit(end);
  double mult = 1;
  if (unit == "k" || unit == "K")
    mult = 1024;
  else if (unit == "m" || unit == "M")
    mult = 1024 * 1024;
  else if (!unit.empty())
    return false;
  out = static_cast<std::size_t>(v * mult);
  return true;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool parse_benches(const std::string& v, std::vector<Bench>& out) {
  out.clear();
  for (const auto& b : split(v)) {
    if (b == "bcast")
      out.push_back(Bench::kBroadcast);
    else if (b == "allgather")
      out.push_back(Bench::kAllgather);
    else if (b == "reduce_scatter")
      out.push_back(Bench::kReduceScatter);
    else
      return false;
  }
  return !out.empty();
}

bool parse_one(const std::string& k, const std::string& v, Options& o) {
  if (k == "--ranks") {
    o.ranks.clear();
    for (const auto& r : split(v)) o.ranks.push_back(std::atoi(r.c_str()));
    for (int r : o.ranks)
      if (r < 1) return false;
    return !o.ranks.empty();
  }
  if (k == "--loss") {
    o.losses.clear();
    for (const auto& l : split(v)) o.losses.push_back(std::atof(l.c_str()));
    return !o.losses.empty();
  }
  if (k == "--benches") return parse_benches(v, o.benches);
  if (k == "--bcast-bytes") return size_of(v, o.bcast_bytes);
  if (k == "--ag-total") return size_of(v, o.ag_total);
  if (k == "--ag-max") return size_of(v, o.ag_max);
  if (k == "--rs-total") return size_of(v, o.rs_total);
  if (k == "--port-buffer") return size_of(v, o.port_buffer);
  if (k == "--sender-burst") return size_of(v, o.sender_burst);
  if (k == "--incast-budget") {
    std::size_t bytes = 0;
    if (!size_of(v, bytes)) return false;
    o.incast_budget = bytes;
    return true;
  }
  if (k == "--link-gbit") return (o.link_gbit = std::atof(v.c_str())) > 0;
  if (k == "--latency-us") return (o.latency_us = std::atof(v.c_str())) >= 0;
  if (k == "--tick-us") return (o.tick_us = std::atof(v.c_str())) >= 0;
  if (k == "--roots") return (o.roots = std::atoi(v.c_str())) >= 0;
  if (k == "--seed") return (o.seed = std::strtoull(v.c_str(), nullptr, 10)), true;
  if (k == "--wall-limit-s") {
    o.wall_limit = std::chrono::seconds(std::atoi(v.c_str()));
    return o.wall_limit.count() > 0;
  }
  if (k == "--label") return (o.label = v), true;
  if (k == "--json") return (o.json = v), true;
  return false;
}

}  // namespace

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc || !parse_one(k, argv[i + 1], o)) {
      std::fprintf(stderr, "mccl_scale_sim: bad or incomplete option '%s' (see scale_sim.cc)\n",
                   k.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace mccl::bench::scale
