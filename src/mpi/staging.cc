#include "mpi/staging.h"

#include <climits>

namespace mccl::mpi {

namespace {

std::string what(const char* step, std::size_t want, long long got) {
  return std::string(step) + " of a derived datatype gave " + std::to_string(got) +
         " bytes where its signature has " + std::to_string(want) +
         " (MCCL serves homogeneous clusters only)";
}

}  // namespace

std::string pack(const void* buf, int count, MPI_Datatype type, void* out, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    return "a derived datatype of over 2 GiB cannot be packed (MPI_Pack counts in int)";
  }
  int position = 0;
  if (PMPI_Pack(buf, count, type, out, static_cast<int>(bytes), &position, MPI_COMM_SELF) !=
      MPI_SUCCESS) {
    return "MPI_Pack of a derived datatype failed";
  }
  if (static_cast<std::size_t>(position) != bytes) return what("MPI_Pack", bytes, position);
  return {};
}

std::string unpack(const void* in, std::size_t bytes, void* buf, int count, MPI_Datatype type) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    return "a derived datatype of over 2 GiB cannot be unpacked (MPI_Unpack counts in int)";
  }
  int position = 0;
  if (PMPI_Unpack(in, static_cast<int>(bytes), &position, buf, count, type, MPI_COMM_SELF) !=
      MPI_SUCCESS) {
    return "MPI_Unpack into a derived datatype failed";
  }
  if (static_cast<std::size_t>(position) != bytes) return what("MPI_Unpack", bytes, position);
  return {};
}

Unpacker::Unpacker(std::size_t bytes, MPI_Datatype type) : stage_(bytes) {
  if (PMPI_Type_dup(type, &type_) != MPI_SUCCESS) type_ = MPI_DATATYPE_NULL;
}

Unpacker::~Unpacker() {
  if (type_ != MPI_DATATYPE_NULL) PMPI_Type_free(&type_);
}

std::string Unpacker::unpack_to(std::size_t offset, std::size_t bytes, void* buf, int count) const {
  if (type_ == MPI_DATATYPE_NULL) return "MPI_Type_dup of the receive datatype failed";
  return unpack(stage_.data() + offset, bytes, buf, count, type_);
}

}  // namespace mccl::mpi
