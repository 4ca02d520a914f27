#!/usr/bin/env python3
"""A foreign sender that sprays an MCCL multicast group with garbage.

  noise.py --group G --port P [--iface veth0] [--pps N] [--duration S]
           [--stop-file F] [--ready F] [--seed N]

Runs until F exists (or S seconds pass), sending about N datagrams per second
to G:P, cycling through these kinds (docs/wire-protocol.md has the format):

  random    random bytes, 1..1472 long (never starting with the data magic)
  short     the data magic, version and kind, then fewer than 40 bytes in all
  foreign   a well-formed data datagram with a valid CRC32C and a random
            communicator tag that is not the group's
  badfield  once the group's tag is known (sniffed from the group itself):
            the right tag but version 2, a flag set, payload_len disagreeing
            with the length, or chunk_index past the stream's end
  badcrc    the right tag, the header of a real datagram seen on the group
            (seq, root, chunk layout) with a fresh payload and a wrong CRC
  farseq    the right tag, a valid CRC, but a sequence number 2^20 ahead

and, not counted as garbage, `replay`: real datagrams captured earlier, sent
again verbatim (a receiver must drop them as duplicates or stale; one that
drops datagrams from non-members' addresses counts them invalid too). Every
kind but replay must end in a receiver's dropped_invalid counter, so the sum
of all kinds bounds what any one receiver can count there.

The group is joined only to learn the tag (and to check this script's CRC32C
against a sample of real datagrams); own datagrams are not looped back. At the
end it prints one line: "noise sent=<garbage> random=<n> ... replay=<n>
tag=0x... sniffed=<n> crc_checked=<n> crc_ok=<n> seconds=<s>".
"""
import argparse
import os
import random
import socket
import struct
import sys
import time

MAGIC = b"\x43\x4d"  # 0x4D43 little-endian
VERSION = 1
KIND_DATA = 1
HDR = 40
MAX_DGRAM = 1472  # MTU 1500 - 28
CHUNK = MAX_DGRAM - HDR

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    t = _TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def header(tag, seq, root, index, chunk_bytes, total, payload_len, flags=0, version=VERSION):
    return MAGIC + struct.pack("<BBIIIIIQHH", version, KIND_DATA, tag, seq, root, index,
                               chunk_bytes, total, payload_len, flags)


def datagram(tag, seq, root, index, chunk_bytes, total, payload, flags=0, version=VERSION,
             payload_len=None, crc_xor=0):
    h = header(tag, seq, root, index, chunk_bytes, total,
               len(payload) if payload_len is None else payload_len, flags, version)
    crc = crc32c(payload, crc32c(h)) ^ crc_xor
    return h + struct.pack("<I", crc) + payload


def parse(d):
    """(tag, seq, root, index, chunk_bytes, total, payload_len, flags, crc) of a data datagram."""
    if len(d) < HDR or d[:2] != MAGIC or d[2] != VERSION or d[3] != KIND_DATA:
        return None
    return struct.unpack_from("<IIIIIQHHI", d, 4)


class Pools:
    """Precomputed datagrams per kind (pure-Python CRC32C is slow)."""

    def __init__(self, rng):
        self.rng = rng
        self.kinds = {}
        self.add_blind()

    def add_blind(self):
        r = self.rng
        rand = []
        for _ in range(256):
            d = bytearray(r.randbytes(r.randint(1, MAX_DGRAM)))
            if d[:2] == MAGIC:
                d[0] ^= 0xFF
            rand.append(bytes(d))
        short = [header(r.getrandbits(32), r.getrandbits(32), 0, 0, CHUNK, CHUNK, CHUNK)[:n]
                 for n in range(4, HDR)]
        self.kinds["random"] = rand
        self.kinds["short"] = short
        self.add_foreign(None)

    def add_foreign(self, tag):
        """Well-formed, valid CRC, any tag but `tag` (unknown at first: 2^-32 to hit it)."""
        r = self.rng
        foreign = []
        for _ in range(64):
            t = r.getrandbits(32)
            while t == tag:
                t = r.getrandbits(32)
            n = r.choice([1, 100, CHUNK])
            foreign.append(datagram(t, r.randint(1, 200), r.randint(0, 3), 0, CHUNK, n,
                                    r.randbytes(n)))
        self.kinds["foreign"] = foreign

    def add_tagged(self, tag, real):
        """real: parsed headers of datagrams seen on the group."""
        r = self.rng
        self.kinds["foreign"] = [d for d in self.kinds["foreign"] if parse(d)[0] != tag]
        bad = []
        small = r.randbytes(16)
        for seq in range(1, 64):
            bad.append(datagram(tag, seq, 0, 0, CHUNK, 16, small, version=2))
            bad.append(datagram(tag, seq, 0, 0, CHUNK, 16, small, flags=1 << r.randint(0, 15)))
            bad.append(datagram(tag, seq, 0, 0, CHUNK, 16, small, payload_len=17))
            bad.append(datagram(tag, seq, 0, 5, CHUNK, 16, small))  # chunk past the end
        self.kinds["badfield"] = bad
        badcrc = []
        for h in real[:128]:
            _, seq, root, index, chunk_bytes, total, plen, _, _ = h
            for dseq in (0, 1, 2):
                badcrc.append(datagram(tag, (seq + dseq) & 0xFFFFFFFF, root, index, chunk_bytes,
                                       total, r.randbytes(plen), crc_xor=1 << r.randint(0, 31)))
        self.kinds["badcrc"] = badcrc
        far = []
        for h in real[:32]:
            _, seq, root, index, chunk_bytes, total, plen, _, _ = h
            far.append(datagram(tag, (seq + (1 << 20)) & 0xFFFFFFFF, root, index, chunk_bytes,
                                total, r.randbytes(plen)))
        self.kinds["farseq"] = far


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--group", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--iface", default="veth0")
    p.add_argument("--pps", type=float, default=20000)
    p.add_argument("--duration", type=float, default=120)
    p.add_argument("--stop-file")
    p.add_argument("--ready")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    ifindex = socket.if_nametoindex(a.iface)

    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF,
                  struct.pack("4s4si", socket.inet_aton("0.0.0.0"), socket.inet_aton("0.0.0.0"), ifindex))
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    tx.setblocking(False)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    rx.bind((a.group, a.port))
    rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                  struct.pack("4s4si", socket.inet_aton(a.group), socket.inet_aton("0.0.0.0"), ifindex))
    rx.setblocking(False)
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            f.write("ready\n")
        os.rename(a.ready + ".tmp", a.ready)

    pools = Pools(rng)
    counts = {k: 0 for k in ("random", "short", "foreign", "badfield", "badcrc", "farseq", "replay")}
    tag = None
    real = []        # parsed headers seen on the group
    captured = []    # raw datagrams for replay
    sniffed = crc_checked = crc_ok = 0
    dest = (a.group, a.port)
    start = time.monotonic()
    sent_total = 0
    cycle = 0
    while True:
        now = time.monotonic()
        if now - start > a.duration or (a.stop_file and os.path.exists(a.stop_file)):
            break
        # Sniff a little.
        for _ in range(64):
            try:
                d = rx.recv(65536)
            except BlockingIOError:
                break
            h = parse(d)
            if h is None:
                continue
            sniffed += 1
            if crc_checked < 32:  # pure-Python CRC32C is slow: check a sample
                crc_checked += 1
                if crc32c(d[HDR:], crc32c(d[:36])) == h[8]:
                    crc_ok += 1
            if tag is None:
                tag = h[0]
            if h[0] == tag and len(real) < 512:
                real.append(h)
                captured.append(d)
                if len(real) in (8, 128, 512):
                    pools.add_tagged(tag, real)
        # Pace: send what the rate allows since the start, in bursts of at most 64.
        due = int((now - start) * a.pps) - sent_total
        kinds = [k for k, v in pools.kinds.items() if v]
        if captured:
            kinds.append("replay")
        for _ in range(min(max(due, 0), 64)):
            k = kinds[cycle % len(kinds)]
            cycle += 1
            d = rng.choice(captured) if k == "replay" else rng.choice(pools.kinds[k])
            try:
                tx.sendto(d, dest)
            except (BlockingIOError, OSError):
                continue  # a full queue: not sent, not counted
            counts[k] += 1
            sent_total += 1
        if due <= 0:
            time.sleep(0.001)
    garbage = sum(v for k, v in counts.items() if k != "replay")
    print("noise sent=%d %s tag=%s sniffed=%d crc_checked=%d crc_ok=%d seconds=%.2f" % (
        garbage, " ".join("%s=%d" % kv for kv in counts.items()),
        "0x%08x" % tag if tag is not None else "none", sniffed, crc_checked, crc_ok,
        time.monotonic() - start), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
