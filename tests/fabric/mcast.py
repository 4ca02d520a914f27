#!/usr/bin/env python3
"""Tiny UDP multicast sender/receiver for the fabric self-test.

  mcast.py recv --group G --port P [--iface veth0] [--count N] [--timeout S] [--ready FILE]
  mcast.py send --group G --port P [--iface veth0] [--count N] [--size B] [--pace-us U]

recv joins G on the interface, writes FILE once joined, and stops after N distinct
datagrams or S seconds; it prints "received=<distinct> bytes=<payload bytes>
elapsed=<seconds from first to last datagram>". send prints "sent=<n> bytes=<payload
bytes>". Every datagram carries an 8-byte sequence number; its size is B bytes.
"""
import argparse
import os
import socket
import struct
import sys
import time


def iface_index(name):
    return socket.if_nametoindex(name)


def recv(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((a.group, a.port))  # only this group's datagrams
    mreqn = struct.pack("4s4si", socket.inet_aton(a.group), socket.inet_aton("0.0.0.0"),
                        iface_index(a.iface))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreqn)
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            f.write("ready\n")
        os.rename(a.ready + ".tmp", a.ready)
    seen = set()
    nbytes = 0
    first = last = None
    deadline = time.monotonic() + a.timeout
    while len(seen) < a.count:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        now = time.monotonic()
        if len(data) < 8:
            continue
        (seq,) = struct.unpack_from("!Q", data)
        if seq in seen:
            continue
        seen.add(seq)
        nbytes += len(data)
        first = now if first is None else first
        last = now
    elapsed = (last - first) if first is not None else 0.0
    print(f"received={len(seen)} bytes={nbytes} elapsed={elapsed:.6f}", flush=True)


def send(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    mreqn = struct.pack("4s4si", socket.inet_aton("0.0.0.0"), socket.inet_aton("0.0.0.0"),
                        iface_index(a.iface))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, mreqn)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    pad = b"\xa5" * max(0, a.size - 8)
    nbytes = 0
    for seq in range(a.count):
        nbytes += s.sendto(struct.pack("!Q", seq) + pad, (a.group, a.port))
        if a.pace_us:
            time.sleep(a.pace_us / 1e6)
    print(f"sent={a.count} bytes={nbytes}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["send", "recv"])
    p.add_argument("--group", default="239.1.2.3")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--iface", default="veth0")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=5.0)
    p.add_argument("--pace-us", type=int, default=0)
    p.add_argument("--ready")
    a = p.parse_args()
    if a.size < 8:
        p.error("--size must be at least 8")
    (recv if a.mode == "recv" else send)(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
