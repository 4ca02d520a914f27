#include "harness.h"

#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

namespace mccl::testing {

std::vector<float> gaussian_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void fill(std::byte* p, std::size_t n, int rank, std::uint64_t salt) {
  for (std::size_t i = 0; i < n; ++i) p[i] = pattern(rank, i, salt);
}

std::size_t first_mismatch(const std::byte* p, std::size_t n, int rank, std::uint64_t salt) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(rank, i, salt)) return i;
  }
  return n;
}

void drive(std::vector<Request>& requests, std::chrono::milliseconds deadline) {
  drive(requests, deadline, {});
}

void drive(std::vector<Request>& requests, std::chrono::milliseconds deadline,
           const std::vector<Communicator*>& comms) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::vector<bool> done(requests.size(), false);
  std::size_t left = requests.size();
  while (left > 0) {
    for (Communicator* c : comms) c->progress();
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!done[i] && requests[i].test()) {
        done[i] = true;
        --left;
      }
    }
    if (std::chrono::steady_clock::now() > until) {
      throw Error(ErrorCode::kTimeout, "test driver: " + std::to_string(left) + " of " +
                                           std::to_string(requests.size()) +
                                           " requests unfinished at the test's deadline");
    }
  }
}

std::vector<Communicator> create_communicators_each(
    InProcessWorld& world, const std::function<CommOptions(int rank)>& options_of) {
  const int n = world.size();
  std::vector<std::unique_ptr<Bootstrap>> boots;
  for (int r = 0; r < n; ++r) boots.push_back(world.bootstrap(r));
  std::vector<std::optional<Communicator>> made(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back(
        [&, r] { made[static_cast<std::size_t>(r)].emplace(*boots[r], options_of(r)); });
  }
  for (auto& t : threads) t.join();
  std::vector<Communicator> comms;
  for (auto& c : made) comms.push_back(std::move(*c));
  return comms;
}

void run_on_threads(std::vector<Communicator>& comms,
                    const std::function<void(Communicator&)>& body) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        body(comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

std::string describe(int ranks, std::size_t bytes, const SimFabricOptions& f) {
  std::ostringstream o;
  o << "ranks=" << ranks << " bytes=" << bytes << " loss=" << f.loss << " dup=" << f.duplicate
    << " reorder=" << f.reorder << " corrupt=" << f.corrupt << " seed=" << f.seed;
  return o.str();
}

ScopedEnv::~ScopedEnv() {
  // Newest first, so a name set twice gets its first saved value back.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) {
      ::setenv(it->first.c_str(), it->second->c_str(), 1);
    } else {
      ::unsetenv(it->first.c_str());
    }
  }
}

void ScopedEnv::set(const std::string& name, const std::string& value) {
  const char* old = std::getenv(name.c_str());
  saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  ::setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace mccl::testing
