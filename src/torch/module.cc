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

#include "common/option_names.h"
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

// The MCCL backend of `group` (None: the default group): the group itself
// under PyTorch 1.x, its CPU backend under 2.x.
ProcessGroupMCCL& backend_of(py::object group, const char* call) {
  py::module_ c10d = py::module_::import("torch.distributed.distributed_c10d");
  if (group.is_none()) group = c10d.attr("_get_default_group")();
  if (!py::isinstance<ProcessGroupMCCL>(group) && py::hasattr(group, "_get_backend")) {
    py::object cpu = py::module_::import("torch").attr("device")("cpu");
    try {
      group = group.attr("_get_backend")(cpu);
    } catch (const py::error_already_set&) {
      // not an MCCL group: said below
    }
  }
  if (!py::isinstance<ProcessGroupMCCL>(group)) {
    throw py::value_error(std::string("mccl_torch.") + call +
                          ": group is not an MCCL group (backend \"" + kUnambiguousName +
                          "\" or \"" + kShortName + "\")");
  }
  return group.cast<ProcessGroupMCCL&>();
}

// mccl_torch.set_compression(mode, group=None, *, bound, zfp_rate,
// max_link_mbit): the group's compression from its next operation on.
void set_compression(const py::object& mode, const py::object& group, double bound, double zfp_rate,
                     std::int64_t max_link_mbit) {
  ProcessGroupMCCL& pg = backend_of(group, "set_compression");
  if (mode.is_none()) {
    pg.set_compression(std::nullopt);
    return;
  }
  const std::string name = py::str(mode);
  const auto parsed = mccl::common::value_named(name, mccl::common::kCompressNames);
  if (!parsed) {
    throw py::value_error(
        "mccl_torch.set_compression: mode must be None, \"off\", \"bf16\", "
        "\"bound\" or \"zfp\", not \"" +
        name + "\"");
  }
  if (*parsed == mccl::CompressMode::kBound && !(bound > 0 && bound <= 1e300)) {
    throw py::value_error(
        "mccl_torch.set_compression: mode \"bound\" needs bound, a positive absolute error "
        "bound (e.g. 1e-3), not " +
        std::to_string(bound));
  }
  pg.set_compression(mccl::Compression{
      .mode = *parsed, .bound = bound, .zfp_rate = zfp_rate, .max_link_mbit = max_link_mbit});
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

  m.def("set_compression", &set_compression, py::arg("mode"), py::arg("group") = py::none(),
        py::kw_only(), py::arg("bound") = 0.0, py::arg("zfp_rate") = 16.0,
        py::arg("max_link_mbit") = 0,
        "Compression of `group`'s float collectives (broadcast, the all-gathers, the "
        "reductions) from its next operation on: mode \"off\", \"bf16\", \"bound\" (every "
        "element within `bound` of the original) or \"zfp\" (`zfp_rate` bits per value); None "
        "returns to MCCL_COLL_COMPRESS. group None: the default group. Every rank of the group "
        "sets the same. docs/pytorch.md, \"Compression per group\".");

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
