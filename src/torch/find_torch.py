"""Prints what CMake needs to build against the torch this interpreter imports.

One `key=value` per line; exits non-zero (with the reason on stderr) when
torch cannot be imported or has no torch.distributed.
"""
import os
import sys
import sysconfig

try:
    import torch
    import torch.distributed
except Exception as e:  # any failure means: no usable torch here
    sys.exit(f"cannot import torch: {e}")
if not torch.distributed.is_available():
    sys.exit("torch was built without torch.distributed")

root = os.path.dirname(torch.__file__)
inc = os.path.join(root, "include")
print("version=" + torch.__version__.split("+")[0])
print("include_dirs=" + ";".join([inc, os.path.join(inc, "torch", "csrc", "api", "include")]))
print("library_dir=" + os.path.join(root, "lib"))
print("cxx11_abi=" + str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))
# pybind11 shares types between modules only when these agree with torch's.
for key in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    value = getattr(torch._C, "_PYBIND11_" + key, None)
    if value:
        print(f"pybind11_{key.lower()}={value}")
# The interpreter's extension ABI: a venv's module must match the headers.
print("soabi=" + (sysconfig.get_config_var("SOABI") or ""))
