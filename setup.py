"""Builds and installs mccl_torch, MCCL's torch.distributed backend, as a
Python package: `pip install --no-build-isolation .` (docs/pytorch.md).

CMake builds the module for the interpreter running pip and against the
torch it imports (src/torch/CMakeLists.txt); this file copies the module
and libmccl, which it finds beside itself ($ORIGIN), into the wheel, with
a `torch.backends` entry point so that PyTorch >= 2.5 loads the backend on
`import torch`. Developers keep building the module with CMake alone.

MCCL_PIP_JOBS sets the build's parallel jobs (default: every core);
MCCL_PIP_CMAKE_ARGS adds CMake arguments (space-separated).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def version():
    text = (ROOT / "cmake" / "McclVersion.cmake").read_text()
    return re.search(r"set\(MCCL_VERSION ([0-9.]+)\)", text).group(1)


class CMakeBuild(build_ext):
    """Builds the one extension, mccl_torch, with CMake."""

    def build_extension(self, ext):
        tree = Path(self.build_temp).resolve() / "cmake"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        configure = ["cmake", "-S", str(ROOT), "-B", str(tree), *generator,
                     "-DCMAKE_BUILD_TYPE=Release", "-DMCCL_BUILD_TESTS=OFF",
                     "-DMCCL_BUILD_BENCH=OFF", "-DMCCL_TORCH=ON", "-DMCCL_TORCH_WHEEL=ON",
                     f"-DPython3_EXECUTABLE={sys.executable}",
                     *os.environ.get("MCCL_PIP_CMAKE_ARGS", "").split()]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("MCCL_PIP_JOBS") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(tree), "--target", "mccl_torch", "-j", jobs],
                       check=True)
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / "src" / "torch" / target.name, target)
        # libmccl under its soname, the name the module asks the loader for.
        lib = (tree / "src" / "api" / "libmccl.so").resolve()
        soname = "libmccl.so." + lib.name.split(".so.")[1].split(".")[0]
        shutil.copyfile(lib, target.parent / soname)


setup(
    name="mccl-torch",
    version=version(),
    description="MCCL (multicast collectives) as a torch.distributed backend",
    license="See LICENSE",
    python_requires=">=3.9",
    package_dir={"": "src/torch/python"},
    py_modules=["mccl_torch_autoload"],
    ext_modules=[Extension("mccl_torch", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    entry_points={"torch.backends": ["mccl = mccl_torch_autoload:load"]},
    # Out of the developers' CMake tree (build/).
    options={"build": {"build_base": "build-pip"}},
    zip_safe=False,
)
