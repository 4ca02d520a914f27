// Fuzzes what the offload daemon reads from a client (src/offload/wire.cc):
// the framed messages of the unix socket (recv_msg) and the shared-memory
// rings, whose heads, tails and slots the client process can write at will.
// The daemon's handling of a decoded submission (daemon.cc) is not reached
// from here; offload_session_fuzz.cc runs a whole session.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "fuzz_util.h"
#include "offload/wire.h"

namespace o = mccl::offload;

namespace {

void fuzz_socket(std::span<const std::byte> stream) {
  // recv_msg allocates a body as its bytes arrive, never to the length a
  // frame claims: any claim is cheap, so every input is run.
  mccl::fuzz::StreamFromPeer peer(stream);
  std::size_t consumed = 0;
  for (;;) {
    o::MsgType type{};
    std::vector<std::byte> body;
    std::vector<int> fds;
    const auto st = o::recv_msg(peer.ours, type, body, &fds, 1000);
    MCCL_FUZZ_CHECK(fds.empty());  // the input carries no descriptors
    if (!st) break;
    MCCL_FUZZ_CHECK(body.size() <= o::max_body_bytes(type));
    consumed += 8 + body.size();
    MCCL_FUZZ_CHECK(consumed <= stream.size());
  }
}

// The client's side of the memory: `image` fills the mapping from its start
// (both ring headers, then the slots); the daemon pops submissions and
// pushes completions. Every slot it touches must lie inside the mapping.
void fuzz_rings(std::uint32_t slots, std::span<const std::byte> image) {
  const std::size_t bytes = o::SharedRings::bytes_for(slots);
  void* base = ::operator new (bytes, std::align_val_t{64});
  std::memset(base, 0, bytes);
  std::memcpy(base, image.data(), std::min(bytes, image.size()));
  {
    o::SharedRings rings(base, slots, false);
    o::Submission s;
    // A client may have put the head anywhere: the ring itself must refuse
    // to give out more than `slots` entries it was never pushed.
    std::uint32_t taken = 0;
    while (rings.pop_submission(s) == o::RingPop::kTaken) {
      ++taken;
      MCCL_FUZZ_CHECK(taken <= slots);
    }
    const o::Completion c = o::make_completion(s.id, mccl::common::Status::ok());
    for (std::uint32_t i = 0; i < 2 * slots + 2 && rings.push_completion(c); ++i) {
    }
    o::Completion back;
    if (rings.pop_completion(back)) {
      MCCL_FUZZ_CHECK(o::completion_status(back).message().size() <= sizeof back.message);
    }
  }
  ::operator delete (base, std::align_val_t{64});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // First byte: low bit picks the channel; for the rings, the rest of the
  // byte is the slot count (1..128). The rest of the input is the bytes.
  const auto rest = mccl::fuzz::as_bytes(data + 1, size - 1);
  if ((data[0] & 1) == 0) {
    fuzz_socket(rest);
  } else {
    fuzz_rings(1 + (data[0] >> 1), rest);
  }
  return 0;
}
