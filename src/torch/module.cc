// The Python module mccl_torch: importing it registers the backend
// "mccl_mcast" (and "mccl" where free) with torch.distributed, after which
//
//   import mccl_torch
//   dist.init_process_group("mccl_mcast", init_method="env://", ...)
//
// creates MCCL communicators through the store torch hands its backends.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <cctype>
#include <chrono>
#include <string>

#include "process_group.h"

namespace py = pybind11;
using mccl::torch_backend::BackendBase;
using mccl::torch_backend::ProcessGroupMCCL;

namespace {

// The names MCCL registers under: "mccl_mcast" always (MCCL's own, naming
// what sets it apart: multicast), and "mccl" where no other library took it
// first ("mccl" is also Meta's torchcomms backend, which PyTorch can route
// `cuda:mccl` to, and another vendor's library).
constexpr const char* kUnambiguousName = "mccl_mcast";
constexpr const char* kShortName = "mccl";

// torch calls the creator of a registered name with (store, rank, size,
// timeout): one creator per name, so that the group knows its own.
py::cpp_function creator_for(const std::string& name) {
  return py::cpp_function(
      [name](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
             std::chrono::milliseconds timeout) {
        return c10::make_intrusive<ProcessGroupMCCL>(store, rank, size, timeout, name);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
      py::call_guard<py::gil_scoped_release>());
}

py::dict stats_of(ProcessGroupMCCL& pg) {
  mccl::Stats s;
  {
    py::gil_scoped_release release;  // waits for the collectives queued before
    s = pg.stats();
  }
  py::dict d;
#define MCCL_PUT_(name, kind) d[#name] = s.name;
  MCCL_STATS_FIELDS(MCCL_PUT_)
#undef MCCL_PUT_
  d["compress_max_bound"] = s.compress_max_bound;
  return d;
}

// Registers `name` unless the name is taken: then warns (once: this runs
// at the module's import) and returns false. register_backend's signature
// differs between versions (compat.h): later ones take the device types
// the backend serves, asked of the function itself rather than of the
// version number, so a backport changes nothing.
bool register_name(const std::string& name) {
  py::object backend = py::module_::import("torch.distributed").attr("Backend");
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (py::hasattr(backend, upper.c_str())) {
    py::module_::import("warnings")
        .attr("warn")("mccl_torch: the torch.distributed backend name \"" + name +
                          "\" is already taken by another library; MCCL is available as \"" +
                          kUnambiguousName + "\"",
                      py::module_::import("builtins").attr("RuntimeWarning"));
    return false;
  }
  py::object reg = backend.attr("register_backend");
  py::object params = py::module_::import("inspect").attr("signature")(reg).attr("parameters");
  if (params.contains("devices")) {
    py::list devices;
    devices.append("cpu");
    devices.append("cuda");
    reg(name, creator_for(name), py::arg("devices") = devices);
  } else {
    reg(name, creator_for(name));
  }
  return true;
}

}  // namespace

PYBIND11_MODULE(mccl_torch, m) {
  m.doc() =
      "MCCL (multicast collectives) as the torch.distributed backend \"mccl_mcast\" (and "
      "\"mccl\" where that name is free)";
  // The base class must be known to pybind11 before a subclass is bound:
  // torch.distributed binds it.
  py::module_::import("torch.distributed");

  py::class_<ProcessGroupMCCL, BackendBase, c10::intrusive_ptr<ProcessGroupMCCL>>(
      m, "ProcessGroupMCCL")
      .def("stats", &stats_of,
           "This rank's MCCL counters (bytes sent by multicast, repairs, point-to-point).")
      .def(
          "shrink",
          [](ProcessGroupMCCL& pg) {
            std::vector<int> failed;
            c10::intrusive_ptr<ProcessGroupMCCL> survivors;
            {
              py::gil_scoped_release release;  // blocks until every survivor arrived
              survivors = pg.shrink(failed);
            }
            py::list gone;
            for (int r : failed) gone.append(r);
            return py::make_tuple(survivors, gone);
          },
          "After an operation failed with a dead peer, every surviving rank calls this: "
          "returns (the survivors' group, the ranks that died). docs/elastic.md.")
      .def(
          "grow",
          [](ProcessGroupMCCL& pg, const c10::intrusive_ptr<c10d::Store>& store, int size) {
            py::gil_scoped_release release;  // blocks until every member and joiner arrived
            return pg.grow(store, size);
          },
          py::arg("store"), py::arg("size"),
          "Every member calls this with the same store and the grown size, while each joining "
          "process calls mccl_torch.join(store, rank, size): returns the grown group, in "
          "which members keep their ranks. docs/pytorch.md.");

  m.def(
      "join",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
         std::chrono::milliseconds timeout) {
        return c10::make_intrusive<ProcessGroupMCCL>(store, rank, size, timeout, kUnambiguousName);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"),
      py::arg("timeout") = std::chrono::milliseconds(60000),
      py::call_guard<py::gil_scoped_release>(),
      "A new process joins a group that grows (ProcessGroupMCCL.grow) on `store`, as rank "
      "`rank` (the members take 0 .. their number - 1) of `size`; returns the grown group.");

  py::list names;
  for (const char* name : {kUnambiguousName, kShortName}) {
    if (register_name(name)) names.append(name);
  }
  m.attr("BACKEND_NAMES") = names;  // the names this process registered
  m.attr("BACKEND") = kUnambiguousName;
}
