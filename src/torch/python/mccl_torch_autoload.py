"""PyTorch's `torch.backends` entry point for MCCL (PyTorch >= 2.5 calls
it at the end of `import torch`; TORCH_DEVICE_BACKEND_AUTOLOAD=0 turns
that off): importing mccl_torch registers the torch.distributed backends
"mccl_mcast" and "mccl" (where that name is free).

A failure warns instead of raising: PyTorch turns an exception here into a
failed `import torch`, and a program that never asked for MCCL must not
break because an installed MCCL does not match its PyTorch.
"""
import warnings


def load():
    try:
        import mccl_torch  # noqa: F401  (registers the backends)
    except Exception as e:  # noqa: BLE001  (any failure: see above)
        warnings.warn(f"mccl_torch is installed but could not be loaded, so the "
                      f"torch.distributed backend \"mccl_mcast\" is unavailable: {e}",
                      RuntimeWarning, stacklevel=2)
