"""Run by pip_install.sh after `pip install .`: mccl_torch comes from this
interpreter's site-packages, found without PYTHONPATH, and PyTorch >= 2.5
loaded it on `import torch` through the `torch.backends` entry point."""
import os
import sys
import sysconfig

assert "PYTHONPATH" not in os.environ, "run without PYTHONPATH"
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
if version >= (2, 5):
    assert "mccl_torch" in sys.modules, "import torch did not load mccl_torch (entry point)"
    assert hasattr(dist.Backend, "MCCL_MCAST"), "the backend mccl_mcast is not registered"
import mccl_torch  # noqa: E402

site = os.path.realpath(sysconfig.get_paths()["platlib"])
where = os.path.realpath(mccl_torch.__file__)
assert where.startswith(site + os.sep), f"mccl_torch from {where}, not {site}"
print(f"installed_check: torch {torch.__version__}, mccl_torch from {where}, "
      f"names {mccl_torch.BACKEND_NAMES}")
