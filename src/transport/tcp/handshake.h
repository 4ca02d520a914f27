// The two ends of a connection being made (wire.h has the handshake), over
// non-blocking sockets and driven by readiness: the Dialer opens a
// connection to a peer and waits for its kAccept; the Answerer reads a
// hello on an accepted socket, names the peer, and writes the kAccept once
// the endpoint decides to take the connection. Neither decides which of two
// crossing connections wins: that is the endpoint's rule (the lower rank's).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "transport/tcp/directory.h"
#include "transport/tcp/handshake_io.h"

namespace mccl::transport::tcp {

struct Dialer {
  enum class State { kIdle, kConnecting, kSendingHello, kAwaitingAccept, kDone };
  State state = State::kIdle;
  Fd fd;
  HandshakeBuf out{};
  HandshakeBuf in{};
  std::size_t out_off = 0;
  std::size_t in_got = 0;
  common::TimePoint retry_at{};  // while kIdle: when to try again
  std::chrono::milliseconds backoff{10};
  std::string last_error = "no connection attempt yet";
  bool refused = false;  // the last attempt ended in ECONNREFUSED

  // What to wait for on fd (poll events); 0 while kIdle or kDone.
  short events() const;
};

// Starts (or restarts) the attempt: a non-blocking connect and the hello.
void dial_start(const Directory& d, int peer, Dialer& dial);
// Advances on the socket's readiness; kDone once the peer accepted (dial.fd
// is then the connection), kIdle with retry_at set after a failure (the
// peer refused, closed, or answered something else).
void dial_step(const Directory& d, int peer, Dialer& dial, short revents);

struct Answerer {
  Fd fd;
  HandshakeBuf in{};
  HandshakeBuf out{};
  std::size_t in_got = 0;
  std::size_t out_off = 0;
  int peer = -1;                 // known once its hello is valid
  bool accepting = false;        // the endpoint took it: writing the kAccept
  bool dead = false;             // to be closed
  common::TimePoint hello_by{};  // a silent connection is closed then
  std::uint32_t id = 0;          // the endpoint's name for it in its epoll set
};

// Reads the hello; sets `peer` when it is a valid hello of a rank of this
// transport (else `dead`, a stray connection).
void answer_read(const Directory& d, Answerer& a);
// Once the endpoint took the connection: writes the kAccept; true when it
// is all out (the connection is the peer's from now on).
bool answer_write(Answerer& a);

}  // namespace mccl::transport::tcp
