"""Runs a test function on N processes through torch.multiprocessing.

Every rank runs `fn(rank, size, port, *args)` with the loopback settings
below; the harness waits for all of them up to a deadline, then stops
whatever is left, so a test never hangs. A rank that raises fails the test
with its traceback.
"""
import contextlib
import os
import shutil
import socket
import sys
import tempfile
import time

import torch.multiprocessing as mp

SKIP = 77  # CTest's SKIP_RETURN_CODE of these tests


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_env(rank, size, port):
    """What a rank needs: torch's env:// variables, MCCL on loopback."""
    os.environ.update({
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "RANK": str(rank),
        "WORLD_SIZE": str(size),
        # One host: UDP multicast and the repairs over TCP, both on lo.
        "MCCL_UDP_IFACE": "lo",
    })


@contextlib.contextmanager
def private_inductor_cache():
    """torch.compile's generated code goes to a folder of this run's own,
    removed afterwards, instead of /tmp/torchinductor_<user> (the ranks
    inherit the variables; inductor's precompiled headers follow TMPDIR)."""
    cache = tempfile.mkdtemp(prefix="mccl-inductor-")
    saved = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TMPDIR")}
    os.environ.update(TORCHINDUCTOR_CACHE_DIR=cache, TMPDIR=cache)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(cache, ignore_errors=True)


def _die_with_parent():
    """A rank ends when the harness does, even if it is killed (Linux)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _entry(rank, fn, size, port, args):
    _die_with_parent()
    loopback_env(rank, size, port)
    fn(rank, size, port, *args)


def run(fn, size, deadline_s, *args):
    """Returns 0 when every rank returned, 1 otherwise (deadline included).
    torch's generated code stays in a folder of the run's own (functional
    collectives alone leave /tmp/torchinductor_<user> behind otherwise)."""
    with private_inductor_cache():
        return _run(fn, size, deadline_s, args)


def _run(fn, size, deadline_s, args):
    port = free_port()
    ctx = mp.start_processes(_entry, args=(fn, size, port, args), nprocs=size, join=False,
                             start_method="spawn")
    end = time.monotonic() + deadline_s
    try:
        while not ctx.join(timeout=max(0.1, min(1.0, end - time.monotonic()))):
            if time.monotonic() > end:
                print(f"FAIL: ranks still running after {deadline_s} s", file=sys.stderr)
                return 1
    except Exception as e:  # a rank raised or died: its traceback is in e
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
                p.join(5)
    return 0
