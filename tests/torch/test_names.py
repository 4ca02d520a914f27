"""The backend's names: where another library registered "mccl" first,
importing mccl_torch warns once and registers only "mccl_mcast", which
then works (a group of one rank). One process: cheap."""
import os
import sys
import warnings

import torch
import torch.distributed as dist

import harness


def main():
    # Another library took "mccl" (as torchcomms or another vendor's may).
    dist.Backend.register_backend("mccl", lambda *args: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import mccl_torch
    taken = [w for w in caught if "already taken" in str(w.message)]
    assert len(taken) == 1, [str(w.message) for w in caught]
    assert '"mccl"' in str(taken[0].message) and '"mccl_mcast"' in str(taken[0].message)
    assert mccl_torch.BACKEND_NAMES == ["mccl_mcast"], mccl_torch.BACKEND_NAMES
    port = harness.free_port()
    harness.loopback_env(0, 1, port)
    dist.init_process_group("mccl_mcast", init_method="env://")
    assert dist.get_backend() == "mccl_mcast"
    t = torch.arange(5.0)
    dist.all_reduce(t)
    assert torch.equal(t, torch.arange(5.0)), t
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
