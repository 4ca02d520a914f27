// The Python module mccl_torch: importing it registers the backend "mccl"
// with torch.distributed, after which
//
//   import mccl_torch
//   dist.init_process_group("mccl", init_method="env://", ...)
//
// creates MCCL communicators through the store torch hands its backends.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>

#include "process_group.h"

namespace py = pybind11;
using mccl::torch_backend::BackendBase;
using mccl::torch_backend::ProcessGroupMCCL;

namespace {

c10::intrusive_ptr<ProcessGroupMCCL> create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, std::chrono::milliseconds timeout) {
  return c10::make_intrusive<ProcessGroupMCCL>(store, rank, size, timeout);
}

py::dict stats_of(ProcessGroupMCCL& pg) {
  mccl::Stats s;
  {
    py::gil_scoped_release release;  // waits for the collectives queued before
    s = pg.stats();
  }
  py::dict d;
  d["mcast_bytes_sent"] = s.mcast_bytes_sent;
  d["mcast_datagrams_sent"] = s.mcast_datagrams_sent;
  d["repair_bytes_served"] = s.repair_bytes_served;
  d["p2p_bytes_sent"] = s.p2p_bytes_sent;
  d["control_messages_sent"] = s.control_messages_sent;
  d["collectives_completed"] = s.collectives_completed;
  d["p2p_collectives"] = s.p2p_collectives;
  return d;
}

// register_backend's signature differs between versions (compat.h): later
// ones take the device types the backend serves. Asked of the function
// itself rather than of the version number, so a backport changes nothing.
void register_backend(py::object creator) {
  py::object backend = py::module_::import("torch.distributed").attr("Backend");
  if (py::hasattr(backend, "MCCL")) return;  // registered by an earlier import
  py::object reg = backend.attr("register_backend");
  py::object params = py::module_::import("inspect").attr("signature")(reg).attr("parameters");
  if (params.contains("devices")) {
    py::list devices;
    devices.append("cpu");
    devices.append("cuda");
    reg("mccl", creator, py::arg("devices") = devices);
  } else {
    reg("mccl", creator);
  }
}

}  // namespace

PYBIND11_MODULE(mccl_torch, m) {
  m.doc() = "MCCL (multicast collectives) as the torch.distributed backend \"mccl\"";
  // The base class must be known to pybind11 before a subclass is bound:
  // torch.distributed binds it.
  py::module_::import("torch.distributed");

  py::class_<ProcessGroupMCCL, BackendBase, c10::intrusive_ptr<ProcessGroupMCCL>>(
      m, "ProcessGroupMCCL")
      .def("stats", &stats_of,
           "This rank's MCCL counters (bytes sent by multicast, repairs, point-to-point).");

  m.def("create_process_group", &create, py::arg("store"), py::arg("rank"), py::arg("size"),
        py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
        "The creator torch.distributed calls for backend \"mccl\" (collective over the group).");
  register_backend(m.attr("create_process_group"));
}
