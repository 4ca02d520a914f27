// Contiguous bytes for MCCL around a buffer whose datatype is not raw
// (datatype.h): packed before MCCL reads them, unpacked after MCCL wrote
// them, through MPI's own MPI_Pack/MPI_Unpack (no messages, so safe from
// any thread). On the homogeneous clusters MCCL serves, MPI packs a type
// signature into exactly its MPI_Type_size bytes in native order: the
// bytes a rank with a raw datatype hands MCCL directly. A pack of another
// size is reported as an error rather than mixed with those bytes.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace mccl::mpi {

// Packs `count` elements of `type` at `buf` into exactly `bytes` bytes at
// `out`. Returns an empty string, or what went wrong.
std::string pack(const void* buf, int count, MPI_Datatype type, void* out, std::size_t bytes);

// Unpacks `bytes` bytes at `in` into `count` elements of `type` at `buf`.
std::string unpack(const void* in, std::size_t bytes, void* buf, int count, MPI_Datatype type);

// A receive buffer of a derived datatype that a nonblocking collective
// unpacks into when it completes: holds the staging bytes and its own
// duplicate of the datatype, since the program may free its handle as soon
// as the call has returned (MPI_Type_free lets pending operations finish).
class Unpacker {
 public:
  Unpacker(std::size_t bytes, MPI_Datatype type);
  ~Unpacker();
  Unpacker(const Unpacker&) = delete;
  Unpacker& operator=(const Unpacker&) = delete;

  std::byte* data() { return stage_.data(); }
  // Unpacks `bytes` staged bytes from `offset` into `count` elements at `buf`.
  std::string unpack_to(std::size_t offset, std::size_t bytes, void* buf, int count) const;

 private:
  std::vector<std::byte> stage_;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace mccl::mpi
