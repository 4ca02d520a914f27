#!/usr/bin/env python3
"""The elastic soak: a job that keeps running while its members die and are replaced.

    bench/elastic/soak.py [--members 8] [--changes 100] [--engine thread]
                          [--build-dir build] [--out DIR] [--seed S] [--interval 0.1]

Starts --members processes of build/tests/mp/soak_worker (bench/elastic/
soak_worker.cc: steps back to back, every rank's state compared bit for bit at
every step) on this host, then, until --changes membership changes have
happened: SIGKILLs a random member, waits for every survivor to hold its shrunk
communicator, starts a replacement and asks the members to grow with it (the
file DIR/join-N), and waits for it to hold the grown communicator and the
state, and lets the job run --interval seconds. Then it stops the job (DIR/stop) and checks that every process left
exited 0 with the same step count and state. Every wait has a deadline
(--deadline seconds, default 30): a hang is a failure, never a stall.

Prints one JSON line per change (kill: kill to the last survivor's shrink;
join: the request to the joiner holding the grown communicator and the state)
and a summary; writes them, machine.txt and the processes' output to DIR.
Exit 0 when every change happened and the job ended consistent, 1 otherwise.
"""
import argparse
import json
import os
import random
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port_block(count):
    """A port p such that p .. p+count look free now, below the ephemeral range
    (where the job's own connections and listeners take theirs)."""
    rng = random.Random()
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    for _ in range(200):
        base = rng.randrange(10000, max(10001, low - count - 1))
        ok = True
        for p in (base, base + 1, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise SystemExit("soak.py: no free port block")


class Proc:
    def __init__(self, ident, argv, env, out_dir):
        self.ident = ident
        self.path = os.path.join(out_dir, f"rank-{ident}.txt")
        self.file = open(self.path, "w")
        self.popen = subprocess.Popen(argv, env=env, stdout=self.file, stderr=subprocess.STDOUT)

    def text(self):
        with open(self.path) as f:
            return f.read()

    def times(self, what):
        return [float(t) for t in re.findall(rf"rank {self.ident} {what} at ([0-9.]+)", self.text())]


def wait_for(predicate, deadline, what):
    until = time.monotonic() + deadline
    while time.monotonic() < until:
        if predicate():
            return True
        time.sleep(0.002)
    print(f"soak.py: timed out after {deadline} s waiting for {what}", file=sys.stderr)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=8)
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--engine", default="thread")
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(__file__), "../../build"))
    ap.add_argument("--out", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--deadline", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=0.1,
                    help="seconds of steps between a join and the next kill")
    a = ap.parse_args()
    worker = os.path.join(a.build_dir, "tests/mp/soak_worker")
    if not os.access(worker, os.X_OK):
        raise SystemExit(f"soak.py: {worker} not built")
    out = a.out or tempfile.mkdtemp(prefix="mccl-soak.")
    os.makedirs(out, exist_ok=True)
    ctl = os.path.join(out, "control")
    os.makedirs(ctl, exist_ok=True)
    for stale in os.listdir(ctl):  # an earlier run's stop and join files
        os.remove(os.path.join(ctl, stale))
    rng = random.Random(a.seed)
    base = free_port_block(a.changes + 2)
    # Under offload the daemon keeps its log when a client vanished, which
    # here is every kill: it goes with the run's output, not into the
    # daemon's default place (/tmp/mccl-<uid>), where runs would pile up.
    env = dict(os.environ, MCCL_BOOTSTRAP_ADDR=f"127.0.0.1:{base}",
               MCCL_WORLD_SIZE=str(a.members), MCCL_BOOTSTRAP_SECRET=secrets.token_hex(16),
               MCCL_PROGRESS=a.engine, MCCL_COLL_TIMEOUT_MS="20000",
               MCCL_OFFLOAD_LOG=os.path.join(out, "offloadd.log"))
    with open(os.path.join(out, "machine.txt"), "w") as m:
        model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                      if l.startswith("model name")), "?")
        m.write(f"date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n"
                f"host: {os.uname().sysname} {os.uname().release}, {os.cpu_count()} cores, {model}\n"
                f"loadavg at start: {open('/proc/loadavg').read().split()[0]}\n"
                f"command: {' '.join(sys.argv)}\n")
    live = {}
    for r in range(a.members):
        live[r] = Proc(r, [worker, ctl], dict(env, MCCL_RANK=str(r)), out)
    next_id = a.members
    results = open(os.path.join(out, "results.jsonl"), "w")
    rows, ok = [], True
    t_start = time.monotonic()
    time.sleep(0.5)  # the first communicator and a few steps
    round_ = 1
    while len(rows) < a.changes and ok:
        victim = rng.choice(sorted(live))
        before = {i: len(p.times("shrunk")) for i, p in live.items() if i != victim}
        killed_at = time.monotonic()
        live[victim].popen.send_signal(signal.SIGKILL)
        live.pop(victim).popen.wait()
        ok = wait_for(lambda: all(len(live[i].times("shrunk")) > before[i] for i in live),
                      a.deadline, f"the survivors of rank {victim}'s kill to shrink")
        if not ok:
            break
        rec = max(live[i].times("shrunk")[-1] for i in live) - killed_at
        rows.append({"change": len(rows), "kind": "kill", "rank": victim, "seconds": rec,
                     "members": len(live)})
        before = {i: len(p.times("grown")) for i, p in live.items()}
        ident, next_id = next_id, next_id + 1
        asked_at = time.monotonic()
        live[ident] = Proc(ident, [worker, ctl, "join", str(round_)],
                           dict(env, MCCL_RANK=str(ident)), out)
        with open(os.path.join(ctl, f"join-{round_}"), "w"):
            pass
        ok = wait_for(lambda: live[ident].times("joined") and
                      all(len(live[i].times("grown")) > before[i] for i in before),
                      a.deadline, f"replacement {ident} to join (round {round_})")
        if not ok:
            break
        rows.append({"change": len(rows), "kind": "join", "rank": ident,
                     "seconds": live[ident].times("joined")[0] - asked_at, "members": len(live)})
        round_ += 1
        time.sleep(a.interval)
        for row in rows[-2:]:
            results.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    with open(os.path.join(ctl, "stop"), "w"):
        pass
    done = {}
    for i, p in live.items():
        try:
            rc = p.popen.wait(timeout=a.deadline)
        except subprocess.TimeoutExpired:
            p.popen.kill()
            rc = "timeout"
        m = re.search(rf"rank {i} done: (\d+) steps, state ([0-9a-f]+)", p.text())
        done[i] = (rc, m.groups() if m else None)
    finals = {v[1] for v in done.values()}
    consistent = all(rc == 0 for rc, _ in done.values()) and len(finals) == 1 and None not in finals
    kills = [r["seconds"] for r in rows if r["kind"] == "kill"]
    joins = [r["seconds"] for r in rows if r["kind"] == "join"]
    summary = {
        "engine": a.engine, "members": a.members, "changes": len(rows), "asked": a.changes,
        "kill_to_shrunk_median_s": statistics.median(kills) if kills else None,
        "kill_to_shrunk_max_s": max(kills) if kills else None,
        "join_median_s": statistics.median(joins) if joins else None,
        "join_max_s": max(joins) if joins else None,
        "steps": int(next(iter(finals))[0]) if consistent else None,
        "consistent": consistent, "seconds": time.monotonic() - t_start,
        "ok": ok and consistent and len(rows) >= a.changes,
    }
    if not consistent:
        summary["exits"] = {str(i): str(v) for i, v in done.items()}
    results.write(json.dumps({"summary": summary}) + "\n")
    print(json.dumps({"summary": summary}))
    print(f"output in {out}")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
