#include "mpi/hierarchy.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <set>
#include <utility>

#include "mpi/log.h"
#include "mpi/requests.h"
#include "mpi/state.h"

namespace mccl::mpi {

namespace {

// Root to leader inside a host: the host communicator is libmccl_mpi's
// own, so no tag of the program's can match it.
constexpr int kRootTag = 0x4d43;

int count_of(std::size_t bytes) { return static_cast<int>(bytes); }  // hierarchy_fits()

// MCCL's step on the leaders ended (`failure`: empty, or why it failed);
// the leader tells its host, then, on success, broadcasts `bytes` at
// `data` to it. A failure runs the program's error handler on every rank
// of the host, so none is left waiting for data that will not come.
int share_in_host(const Hierarchy& h, void* data, std::size_t bytes, std::string failure,
                  const char* what) {
  if (h.members[static_cast<std::size_t>(h.my_host)].size() > 1) {
    int failed = failure.empty() ? 0 : 1;
    if (int rc = PMPI_Bcast(&failed, 1, MPI_INT, 0, h.host); rc != MPI_SUCCESS) return rc;
    if (failed != 0 && failure.empty()) {
      failure = "MCCL failed on this host's leader, rank " +
                std::to_string(h.members[static_cast<std::size_t>(h.my_host)][0]);
    }
    if (failed == 0 && bytes > 0) {
      if (int rc = PMPI_Bcast(data, count_of(bytes), MPI_BYTE, 0, h.host); rc != MPI_SUCCESS) {
        return rc;
      }
    }
  }
  if (failure.empty()) return MPI_SUCCESS;
  return raise_error(h.label, h.user, h.mccl ? h.mccl->mpi_comm_alive.load() : true, what, failure);
}

// Runs an MCCL collective on a leader and waits for it; its error message
// on failure, else empty.
template <typename Start>
std::string on_leaders(const Hierarchy& h, const char* what, Start&& start) {
  try {
    Request req = start_on(*h.mccl, start);
    wait_served(*h.mccl, req, what);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

Scheme scheme_for(const std::vector<std::uint64_t>& hosts) {
  const HostScheme setting = global().settings.host_scheme;
  if (setting == HostScheme::kFlat) return Scheme::kFlat;
  const std::set<std::uint64_t> distinct(hosts.begin(), hosts.end());
  if (distinct.size() < 2 || distinct.size() == hosts.size()) return Scheme::kFlat;
  return setting == HostScheme::kLeaders ? Scheme::kLeaders : Scheme::kBoth;
}

bool leaders_serve(Kind kind, std::size_t bytes) {
  if (!hierarchy_fits(bytes)) return false;
  // Measured on 2 and 4 hosts of 2 ranks (docs/mpi.md): the leaders were
  // faster for every blocking allgather and for broadcasts up to about
  // 1 MiB; above, flat, whose broadcast has no step inside the host on its
  // critical path.
  if (kind == Kind::kAllgather || kind == Kind::kAllgatherv) return true;
  return kind == Kind::kBcast &&
         bytes <= static_cast<std::size_t>(global().settings.leaders_bcast_max_bytes);
}

bool hierarchy_fits(std::size_t bytes) { return bytes <= static_cast<std::size_t>(INT_MAX); }

std::shared_ptr<Hierarchy> make_hierarchy(MPI_Comm comm, const CommEntry& e,
                                          const std::vector<std::uint64_t>& hosts) {
  auto h = std::make_shared<Hierarchy>();
  h->user = comm;
  h->label = e.label;
  h->rank = e.rank;
  std::vector<std::uint64_t> seen;  // host ids in order of their lowest rank
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    const auto at = std::find(seen.begin(), seen.end(), hosts[r]);
    const auto host = static_cast<std::size_t>(at - seen.begin());
    if (at == seen.end()) {
      seen.push_back(hosts[r]);
      h->members.emplace_back();
    }
    h->host_of.push_back(static_cast<int>(host));
    h->index_in_host.push_back(static_cast<int>(h->members[host].size()));
    h->members[host].push_back(static_cast<int>(r));
  }
  h->my_host = h->host_of[static_cast<std::size_t>(e.rank)];
  h->leader = h->index_in_host[static_cast<std::size_t>(e.rank)] == 0;
  const int nhosts = static_cast<int>(h->members.size());

  // Split by MCCL's notion of a host (kernel and network namespace), not
  // with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): MPI takes a node for
  // what shares a hostname, which network namespaces do. An MPI failure
  // here is MPI's error (its handler runs); the agreement below keeps the
  // ranks together otherwise.
  int ok = PMPI_Comm_split(comm, h->my_host, e.rank, &h->host) == MPI_SUCCESS ? 1 : 0;
  if (PMPI_Comm_split(comm, h->leader ? 0 : MPI_UNDEFINED, h->my_host, &h->leaders) !=
      MPI_SUCCESS) {
    ok = 0;
  }
  if (ok != 0 && h->leader) {
    h->mccl = create_agreed(h->leaders, h->my_host, nhosts, e.label + " (leaders)");
    if (!h->mccl) ok = 0;
  }
  // The leaders agreed among themselves; everyone else learns it here.
  if (PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) ok = 0;
  if (ok == 0) {
    release_hierarchy(*h);
    return nullptr;
  }
  if (h->mccl) h->mccl->mpi_comm = comm;
  debugf("MCCL communicator created on the %d host leaders of %s (%d ranks; MCCL_MPI_HIERARCHY)",
         nhosts, e.label.c_str(), e.size);
  return h;
}

int hier_bcast(const Hierarchy& h, void* buf, std::size_t bytes, int root) {
  const int root_host = h.host_of[static_cast<std::size_t>(root)];
  const int root_leader = h.members[static_cast<std::size_t>(root_host)][0];
  if (root != root_leader && h.my_host == root_host) {
    int rc = MPI_SUCCESS;
    if (h.rank == root) {
      rc = PMPI_Send(buf, count_of(bytes), MPI_BYTE, 0, kRootTag, h.host);
    } else if (h.leader) {
      rc =
          PMPI_Recv(buf, count_of(bytes), MPI_BYTE, h.index_in_host[static_cast<std::size_t>(root)],
                    kRootTag, h.host, MPI_STATUS_IGNORE);
    }
    if (rc != MPI_SUCCESS) return rc;
  }
  std::string failure;
  if (h.leader) {
    failure = on_leaders(h, "MPI_Bcast", [&](Communicator& c) {
      return c.ibroadcast(buf, bytes, root_host);  // the leaders' rank of the root's host
    });
  }
  return share_in_host(h, buf, bytes, std::move(failure), "MPI_Bcast");
}

int hier_allgatherv(const Hierarchy& h, const void* send, char* base,
                    const std::vector<std::size_t>& counts,
                    const std::vector<std::size_t>& displs) {
  const std::size_t nhosts = h.members.size();
  // Packed: the result is one run in rank order and every host's ranks are
  // consecutive, so each host's blocks are one piece of the result and the
  // leaders can exchange them in place. Otherwise (round-robin placement,
  // gaps, displacements out of order) they go through a staging buffer in
  // host order that every rank unpacks.
  bool packed = true;
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    packed = packed && displs[r] == total;
    total += counts[r];
  }
  for (const auto& m : h.members) {
    for (std::size_t i = 0; i < m.size(); ++i)
      packed = packed && m[i] == m[0] + static_cast<int>(i);
  }
  std::vector<std::size_t> host_bytes(nhosts, 0), host_off(nhosts, 0);
  std::size_t off = 0;
  for (std::size_t g = 0; g < nhosts; ++g) {
    for (int r : h.members[g]) host_bytes[g] += counts[static_cast<std::size_t>(r)];
    host_off[g] = off;
    off += host_bytes[g];
  }
  std::vector<char> staging(packed ? 0 : total);
  char* stage = packed ? base : staging.data();

  // 1. Every rank's block to its host's leader, in host rank order.
  const auto me = static_cast<std::size_t>(h.rank);
  const auto& mine = h.members[static_cast<std::size_t>(h.my_host)];
  char* host_block = stage + host_off[static_cast<std::size_t>(h.my_host)];
  const char* own = send == kInPlace ? base + displs[me] : static_cast<const char*>(send);
  if (mine.size() > 1) {
    std::vector<int> rcounts(mine.size()), rdispls(mine.size());
    int at = 0;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      rcounts[i] = count_of(counts[static_cast<std::size_t>(mine[i])]);
      rdispls[i] = at;
      at += rcounts[i];
    }
    const void* sendbuf = h.leader && own == host_block ? MPI_IN_PLACE : own;
    if (int rc = PMPI_Gatherv(sendbuf, count_of(counts[me]), MPI_BYTE, host_block, rcounts.data(),
                              rdispls.data(), MPI_BYTE, 0, h.host);
        rc != MPI_SUCCESS) {
      return rc;
    }
  } else if (own != host_block && counts[me] > 0) {
    std::memmove(host_block, own, counts[me]);
  }

  // 2. Whole hosts' blocks among the leaders.
  std::string failure;
  if (h.leader) {
    failure = on_leaders(h, "MPI_Allgatherv", [&](Communicator& c) {
      return c.iallgatherv(kInPlace, stage, host_bytes, host_off);
    });
  }

  // 3. The whole result inside each host, then into place.
  if (int rc = share_in_host(h, stage, total, std::move(failure), "MPI_Allgatherv");
      rc != MPI_SUCCESS) {
    return rc;
  }
  if (!packed) {
    for (std::size_t g = 0; g < nhosts; ++g) {
      std::size_t at = host_off[g];
      for (int r : h.members[g]) {
        const auto ur = static_cast<std::size_t>(r);
        if (counts[ur] > 0) std::memcpy(base + displs[ur], stage + at, counts[ur]);
        at += counts[ur];
      }
    }
  }
  return MPI_SUCCESS;
}

void release_hierarchy(Hierarchy& h) {
  h.mccl.reset();
  if (h.host != MPI_COMM_NULL) PMPI_Comm_free(&h.host);
  if (h.leaders != MPI_COMM_NULL) PMPI_Comm_free(&h.leaders);
}

}  // namespace mccl::mpi
