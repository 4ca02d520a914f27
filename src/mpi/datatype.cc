#include "mpi/datatype.h"

#include <vector>

namespace mccl::mpi {

namespace {

// The constructor arguments of a derived type (MPI_Type_get_contents);
// frees the derived types among them on destruction.
class Contents {
 public:
  // `ints`, `addrs`, `types`: what MPI_Type_get_envelope said of a derived type.
  Contents(MPI_Datatype type, int ints, int addrs, int types) {
    ints_.resize(static_cast<std::size_t>(ints));
    addrs_.resize(static_cast<std::size_t>(addrs));
    types_.resize(static_cast<std::size_t>(types));
    ok_ = PMPI_Type_get_contents(type, ints, addrs, types, ints_.data(), addrs_.data(),
                                 types_.data()) == MPI_SUCCESS;
    if (!ok_) types_.clear();
  }
  ~Contents() {
    for (MPI_Datatype& t : types_) {
      if (!is_named(t)) PMPI_Type_free(&t);
    }
  }
  Contents(const Contents&) = delete;
  Contents& operator=(const Contents&) = delete;

  bool ok() const { return ok_; }
  const std::vector<MPI_Datatype>& types() const { return types_; }

  static bool is_named(MPI_Datatype t) {
    int ni = 0, na = 0, nt = 0, combiner = 0;
    return PMPI_Type_get_envelope(t, &ni, &na, &nt, &combiner) == MPI_SUCCESS &&
           combiner == MPI_COMBINER_NAMED;
  }

 private:
  std::vector<int> ints_;
  std::vector<MPI_Aint> addrs_;
  std::vector<MPI_Datatype> types_;
  bool ok_ = false;
};

// No gaps and no lower bound: `count` elements are count * size bytes.
bool dense(MPI_Datatype type) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size <= 0 ||
      PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS) {
    return false;
  }
  return lb == 0 && true_lb == 0 && extent == size && true_extent == size;
}

}  // namespace

std::size_t type_size(MPI_Datatype type) {
  int size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0) return 0;
  return static_cast<std::size_t>(size);
}

bool is_raw(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return false;
  int ni = 0, na = 0, nt = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner) != MPI_SUCCESS) return false;
  if (!dense(type)) return false;
  if (combiner == MPI_COMBINER_NAMED) return true;
  // A dense contiguous (or duplicated) type keeps its inner type's order;
  // other constructors (indexed, struct, ...) may reorder the elements
  // within the same bytes, so they are packed.
  if (combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) return false;
  Contents c(type, ni, na, nt);
  return c.ok() && c.types().size() == 1 && is_raw(c.types()[0]);
}

MPI_Datatype element_type(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return MPI_DATATYPE_NULL;
  int ni = 0, na = 0, nt = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner) != MPI_SUCCESS) {
    return MPI_DATATYPE_NULL;
  }
  if (combiner == MPI_COMBINER_NAMED) return type;
  Contents c(type, ni, na, nt);
  if (!c.ok() || c.types().empty()) return MPI_DATATYPE_NULL;
  // Every constructor's element is its inner types' one element (a struct
  // has several inner types: they must all agree).
  MPI_Datatype element = MPI_DATATYPE_NULL;
  for (MPI_Datatype inner : c.types()) {
    const MPI_Datatype e = element_type(inner);
    if (e == MPI_DATATYPE_NULL || (element != MPI_DATATYPE_NULL && e != element)) {
      return MPI_DATATYPE_NULL;
    }
    element = e;
  }
  return element;
}

}  // namespace mccl::mpi
