// The mesh's handshakes (wire.h) over nonblocking sockets: a fixed-size
// message moved a piece at a time, as far as the socket allows, with the
// progress kept by the caller between polls.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {

using HandshakeBuf = std::array<std::byte, wire::kHandshakeBytes>;

// Reads into buf[got..] as far as the socket has bytes; false on EOF or an
// error (with its text in `why`).
bool read_handshake(int fd, HandshakeBuf& buf, std::size_t& got, std::string& why);

// Writes buf[off..] as far as the socket takes it; false on an error (with
// its text in `why`).
bool write_handshake(int fd, const HandshakeBuf& buf, std::size_t& off, std::string& why);

}  // namespace mccl::transport::tcp
