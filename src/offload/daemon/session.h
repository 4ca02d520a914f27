// The daemon's side of one client connection: run_session() for the
// listener (listener.cc), and the Session it runs, whose work is split
// between daemon.cc (the client's hello and communicator, the loop, the
// socket), collectives.cc (a submission staged, run and delivered) and
// session_membership.cc (revoke and shrink).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "offload/daemon/client_io.h"
#include "offload/daemon/comm_setup.h"
#include "offload/daemon/regions.h"
#include "offload/daemon/staged_blocks.h"
#include "offload/daemon/staging.h"
#include "offload/wire.h"
#include "transport/oob.h"

namespace mccl::offload::daemon {

// Serves the client on `sock` until it leaves: builds its communicator,
// then runs its collectives. Blocks; does not close `sock`.
void run_session(int sock);

// Whether a session saw something go wrong that the daemon's log should
// keep (a failed creation, a client that died).
bool session_trouble();

// A warning on the daemon's stderr (its log), through common/log.h in one
// write: "mccl_offloadd[PID]: " and `fmt` with `a` for its %s.
void say(const char* fmt, const std::string& a);

// A message body: the fixed part `head` and a status message, cut to what
// the receiver accepts (kMaxTextBytes).
std::vector<std::byte> with_text(const void* head, std::size_t head_bytes, const std::string& text);

class Session {
 public:
  explicit Session(int sock) : sock_(sock) {}
  ~Session();
  void run();

 private:
  struct Pending {
    Submission sub;
    std::shared_ptr<protocol::Operation> op;
    StagingBuffer staging;  // uninitialised: see staging.h
    StagingBuffer input;    // reduce-scatter: the whole input vector
    // A broadcast's or allgather's blocks, copied in pieces as it runs.
    std::shared_ptr<StagedBlocks> blocks;
    std::vector<std::size_t> counts, displs;
    bool direct = false;  // ran on shared buffers: nothing to deliver
  };
  // The client's hello, its rings, and its communicator (daemon.cc).
  common::Status setup();
  // The hello, from the client whose pid the kernel reported.
  common::Status receive_hello(pid_t peer_pid);
  common::Status map_rings();
  // The out-of-band exchange of communicator creation, run by the client.
  transport::OobAllgather relay_to_client() const;
  // A submission made a collective on staging buffers filled from the
  // client, or on its shared buffers; its result moved into the client
  // (collectives.cc).
  common::Status start(const Submission& s, Pending& p);
  common::Status deliver(Pending& p);
  bool start_direct(const Submission& s, Pending& p);
  // The staged collectives (collectives.cc): the client's data copied into
  // the daemon's buffers, the operation made in p.op (not started).
  common::Status stage_broadcast(const Submission& s, Pending& p);
  common::Status stage_allgatherv(const Submission& s, Pending& p);
  common::Status stage_reduce_scatterv(const Submission& s, Pending& p);
  common::Status stage_allreduce(const Submission& s, Pending& p);
  // Reads an allgatherv's counts and displacements from the client into `p`
  // and checks them as the client library does (coll/validate.h): a client
  // that skipped those checks must not make the daemon write outside its
  // staging buffer.
  common::Status read_layout(const Submission& s, Pending& p);
  // The most bytes one rank's stream may carry on this communicator
  // (coll::max_stream_bytes of its chunk size), as the API bounds them.
  std::size_t max_stream_bytes() const;
  // Reads a reduce-scatter's per-rank counts from the client into `p`.
  common::Status read_counts(const Submission& s, Pending& p);
  // The client's revoke and shrink (session_membership.cc). shrink() answers with
  // kShrunk and, on success, puts the survivors' communicator in comm_;
  // false when the client has gone.
  void revoke();
  bool shrink();
  // Runs `op` on comm_'s context to its end, the session's loop held
  // meanwhile: ok, or the operation's failure (it carries its deadline).
  common::Status run_to_end(const std::shared_ptr<protocol::Operation>& op);
  // The session's loop and the client's socket (daemon.cc).
  enum class SocketEvent { kHandled, kBye, kGone };
  SocketEvent handle_socket();
  // Takes what the client submitted, a bounded number per call; sets
  // violation_ when the ring is not one a correct client wrote.
  bool drain_submissions();
  // One submission: answered at once (statistics, a broken communicator,
  // refused arguments) or started.
  void take(const Submission& s);
  bool complete_finished();
  // Gives a collective's staging buffers back to pool_.
  void retire(Pending& p);
  void loop();
  // Ends the session of a client that can no longer be served: logs
  // `log_line` and fails its communicator for its peers with `why`.
  void abandon(const std::string& log_line, const std::string& why);

  int sock_;
  HelloMsg hello_{};
  int memfd_ = -1, sub_efd_ = -1, comp_efd_ = -1;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::unique_ptr<SharedRings> rings_;
  Comm comm_;
  std::list<Pending> pending_;
  std::vector<Completion> unsent_;  // completions the ring had no room for
  std::string violation_;           // how the client broke the protocol; empty: it did not
  Regions regions_;                 // the client's shared buffers
  StagingPool pool_;                // staging buffers between collectives
};

}  // namespace mccl::offload::daemon
