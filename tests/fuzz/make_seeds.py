#!/usr/bin/python3
"""Writes the seed corpus of each fuzz target (corpus/<target>/): a few
valid messages of every kind, built the way the encoders build them, so the
fuzzer starts past the magic numbers. Run it after a wire format changes;
regression inputs (files named regress-*) are kept as they are."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TAG = 0x5EED0001


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def data_dgram(seq, root, index, chunk, total, checksum):
    start = index * chunk
    plen = max(0, min(chunk, total - start))
    payload = bytes((i * 7 + index) & 0xFF for i in range(plen))
    head = struct.pack("<HBBIIIIIQHH", 0x4D43, 1, 1, TAG, seq, root, index, chunk, total, plen, 0)
    crc = crc32c(head + payload) if checksum else 0
    return head + struct.pack("<I", crc) + payload


def control(kind, body=b"", arg0=0, arg1=0):
    return struct.pack("<HBBIIIQII", 0x524D, 1, kind, TAG, 9, 1, 0x1234, arg0, arg1) + body


def tcp_frame(body):
    return struct.pack("<I", len(body)) + body


def main():
    for i, (idx, chunk, total, ck) in enumerate(
            [(0, 1460, 1460, 1), (1, 1460, 3000, 1), (2, 1460, 3000, 0), (0, 64, 1, 0)]):
        write("data_header", f"seed-{i}", bytes([ck]) + data_dgram(7, 2, idx, chunk, total, ck))

    ranges = struct.pack("<IIII", 0, 2, 5, 3)
    for i, m in enumerate([control(1), control(2), control(3, ranges), control(4, b"x" * 20, 3),
                           control(5, b"why", 6, 1), control(7, arg0=2), control(8, b"no", 6),
                           control(9, arg0=5, arg1=3)]):
        write("control", f"seed-{i}", struct.pack("<I", 16) + m)

    addr = struct.pack("<IHHIHHQ", 0x5054434D, 1, 0, 0x7F000001, 4242, 0, 0xABCDEF)
    hello = struct.pack("<IHHIIIIQQ", 0x4854434D, 1, 1, 0, 1, 2, 0, 0xABCDEF, 0x123456)
    write("tcp_framing", "seed-address", bytes([1]) + addr)
    write("tcp_framing", "seed-handshake", bytes([1]) + hello)
    write("tcp_framing", "seed-frames", bytes([2]) + tcp_frame(b"a" * 5) + tcp_frame(b"")
          + tcp_frame(control(1)) + tcp_frame(b"b" * 3))
    write("tcp_framing", "seed-big", bytes([0]) + tcp_frame(b"c" * 17000))
    write("tcp_framing", "seed-partial", bytes([3]) + tcp_frame(b"d" * 8)[:7])

    def store(kind, rank, aux, rnd, payload):
        return struct.pack("<IHHIIQQ", 0x5342434D, 2, kind, rank, aux, rnd, len(payload)) + payload
    write("bootstrap_wire", "seed-hello",
          store(1, 0, 0, 0, struct.pack("<II", 4, 30000) + b"job-secret"))
    write("bootstrap_wire", "seed-contribute", store(3, 2, 5000, 1, b"addr" * 6))
    write("bootstrap_wire", "seed-result", store(4, 0xFFFFFFFF, 0, 1, b"r" * 24))
    write("bootstrap_wire", "seed-error", store(5, 0xFFFFFFFF, 3, 0, b"bad world size"))

    store_server_seeds()
    data_auth_seeds()
    key_exchange_seeds()
    codec_stream_seeds()

    def frame(t, body):
        return struct.pack("<II", t, len(body)) + body
    region = struct.pack("<QQ", 0x7F0000001000, 4096)
    write("offload_wire", "seed-socket", bytes([0]) + frame(3, b"result") + frame(7, region)
          + frame(6, b""))
    # Rings with 4 slots: sub head 2 tail 0, comp head 0 tail 0, two submissions.
    hdr = struct.pack("<Q", 2) + bytes(56) + struct.pack("<Q", 0) + bytes(56)
    comp = bytes(128)
    sub = struct.pack("<QIiQQQQQIIII", 1, 1, 0, 0x1000, 64, 0, 0, 0, 0, 0, 0, 0)
    write("offload_wire", "seed-rings", bytes([1 | (3 << 1)]) + hdr + comp + sub * 2)

    # offload_session: a patch XORed over a valid hello (sizeof(HelloMsg) zeros keep it
    # valid), then actions: 0 frame (type, claimed length, n, n bytes),
    # 1 submission (72 bytes; addresses taken modulo the harness's arena),
    # 2 submission head moved ahead of the tail by a u16, 3 wait.
    def submission(sid, kind, buffer=0, nbytes=0, send=0, counts=0, displs=0, in_place=0,
                   dtype=0, redop=0):
        return bytes([1]) + struct.pack("<QIiQQQQQIIII", sid, kind, 0, buffer, nbytes, send,
                                        counts, displs, in_place, dtype, redop, 0)

    def session_frame(t, body, claim=None):
        return bytes([0]) + struct.pack("<IIB", t, len(body) if claim is None else claim,
                                        len(body)) + body
    valid = bytes(168)
    wait = bytes([3])
    write("offload_session", "seed-hello", valid)
    write("offload_session", "seed-broadcast", valid + submission(1, 1, 0x100, 64) + wait)
    write("offload_session", "seed-allgatherv",
          valid + submission(2, 2, 0, 0, 0x8000, 100, 0) + submission(3, 2, 0x200, 0, 0, 64, 0, 1)
          + wait)
    write("offload_session", "seed-barrier", valid + submission(4, 3) + wait)
    write("offload_session", "seed-reductions",
          valid + submission(5, 4, 0x400, 0, 0x1000, 16, 0, 0, 0, 0)
          + submission(6, 5, 0x2000, 32, 0x3000, 0, 0, 0, 5, 3) + wait)
    region = struct.pack("<QQ", 0x10000, 8192)
    write("offload_session", "seed-shared",
          valid + session_frame(7, region) + submission(7, 1, 0x10040, 128) + wait
          + session_frame(9, region))
    write("offload_session", "seed-overrun", valid + submission(8, 3) + wait + bytes([2])
          + struct.pack("<H", 9) + wait)
    write("offload_session", "seed-frames",
          valid + session_frame(6, b"") + session_frame(2, b"x" * 10, 1 << 20))


def store_server_seeds():
    """Scripts for store_server_fuzz.cc (its header lists the ops): a store
    of 3 ranks and its clients."""
    def connect():
        return bytes([0])

    def hello(conn, rank, size=3, wait_ms=30000, good=1):
        return bytes([3, conn, rank, size]) + struct.pack("<H", wait_ms) + bytes([good])

    def contribute(conn, rnd, n=8, aux=5000):
        return bytes([4, conn, rnd]) + struct.pack("<H", aux) + bytes([n, 0x41 + conn])

    def close(conn, how):
        return bytes([5, conn, how])

    def later(ms, scale=1):
        return bytes([6]) + struct.pack("<H", ms) + bytes([0 if scale == 100 else 1])

    def frame(conn, kind, rank, aux, rnd, body, claimed=None):
        flags = 0 if claimed is None else 1
        out = bytes([2, conn, kind, rank]) + struct.pack("<H", aux) + bytes([rnd, flags, len(body)])
        return out + (b"" if claimed is None else struct.pack("<I", claimed)) + body

    joined = connect() * 3 + hello(0, 0) + hello(1, 1) + hello(2, 2)
    rounds = b"".join(contribute(c, r) for r in range(2) for c in range(3))
    # The first byte: the store's timeout, 1 s + 1 s * (byte % 32), 31: forever.
    write("store_server", "seed-rounds",
          bytes([9]) + joined + rounds + close(0, 2) + close(1, 2) + close(2, 2))
    # A claimed rank breaks the protocol (a second hello), then sends more.
    write("store_server", "seed-protocol-error",
          bytes([9]) + joined + contribute(0, 0) + hello(1, 1) + contribute(1, 0)
          + contribute(2, 0) + frame(1, 3, 1, 0, 0, b"x" * 4))
    # Contributions that differ in length; one to the wrong round.
    write("store_server", "seed-mismatch",
          bytes([9]) + joined + contribute(0, 0, 8) + contribute(1, 0, 9) + contribute(2, 0, 8)
          + contribute(0, 5))
    # Strangers: garbage, a wrong secret, a lying length, a rank out of range,
    # a world of the wrong size, a rank claimed twice; then the deadline.
    write("store_server", "seed-strangers",
          bytes([4]) + connect() * 6 + bytes([1, 0, 5]) + b"hello"
          + hello(1, 0, good=0) + frame(2, 1, 0, 0, 0, b"", claimed=0xFFFFFFF0)
          + hello(3, 4) + hello(4, 1, size=2) + hello(5, 2) + connect() + hello(6, 2)
          + later(6000) + later(60000))
    # Ranks that never come, and a round that times out; then the store stops.
    write("store_server", "seed-deadlines",
          bytes([2]) + connect() * 3 + hello(0, 0, wait_ms=500) + later(400) + hello(1, 1)
          + hello(2, 2) + contribute(0, 0, aux=100) + later(200))
    # A timeout of INT64_MAX ms (first byte 31): no deadline at all.
    write("store_server", "seed-forever", bytes([31]) + joined + rounds + later(60000, 100))
    write("store_server", "seed-stop",
          bytes([20]) + joined + contribute(0, 0) + close(1, 0) + contribute(2, 0) + bytes([7])
          + connect() + hello(3, 1))


def data_auth_seeds():
    """Inputs of data_auth_fuzz.cc: mode, the receiver's seq reference, the
    bit to flip, then a datagram with the MAC flag and an empty tag (the
    fuzzer signs it when the mode says so)."""
    def dgram(seq, root, index, chunk, total, flags=1, mac=True):
        start = index * chunk
        plen = max(0, min(chunk, total - start))
        payload = bytes((i * 5 + index) & 0xFF for i in range(plen))
        head = struct.pack("<HBBIIIIIQHH", 0x4D43, 1, 1, TAG, seq, root, index, chunk, total,
                           plen, flags)
        if not mac:
            return head + struct.pack("<I", crc32c(head + payload)) + payload
        return head + bytes(4) + bytes(16) + payload

    def seed(mode, ref_seq, ref_seq64, flip, d):
        return bytes([mode]) + struct.pack("<IQH", ref_seq, ref_seq64, flip) + d

    write("data_auth", "seed-signed", seed(2, 7, 7, 0, dgram(7, 2, 1, 1400, 3000)))
    write("data_auth", "seed-wrapped", seed(2, 0xFFFFFFF0, (1 << 32) + 0xFFFFFFF0, 0,
                                            dgram(3, 0, 0, 1000, 1000)))
    write("data_auth", "seed-flipped", seed(6, 7, 7, 333, dgram(7, 1, 0, 64, 100)))
    write("data_auth", "seed-epoch", seed(10, 9, 9, 0, dgram(9, 0, 2, 500, 1200)))
    write("data_auth", "seed-plain", seed(17, 7, 7, 0, dgram(7, 2, 0, 1400, 3000, 0, False)))
    write("data_auth", "seed-unsigned", seed(0, 7, 7, 0, dgram(7, 2, 0, 64, 64)))


def key_exchange_seeds():
    """Inputs of key_exchange_fuzz.cc: the number of ranks less one, a mask
    of the honest ranks, then per rank 32 bytes (an honest rank's scalar, a
    dishonest one's share) and 32 bytes (a dishonest rank's round-2 value).
    The first 64 bytes also reach the hello's decoder."""
    def per_rank(i):
        return bytes((i * 31 + j * 7 + 1) & 0xFF for j in range(32)) + bytes(32)

    def seed(n, mask):
        return bytes([n - 1, mask]) + b"".join(per_rank(i) for i in range(n))

    write("key_exchange", "seed-two-honest", seed(2, 0x03))
    write("key_exchange", "seed-three-honest", seed(3, 0x07))
    write("key_exchange", "seed-five-one-forged", seed(5, 0x1D))
    write("key_exchange", "seed-eight-honest", seed(8, 0xFF))
    write("key_exchange", "seed-all-forged", seed(4, 0x00))


def codec_stream_seeds():
    """Inputs of codec_stream_fuzz.cc: the type (0 float32 .. 3 float16), the
    element count (16 bits), the first prefix's end in 256ths, then an
    encoded stream (src/codec/format.h, quantize.h): raw, bf16 and bound
    streams with a raw block, a constant block and a packed one."""
    def header(mode, dtype, block, count, param):
        return (b"MCZ1" + bytes([mode, dtype]) + bytes(2) + struct.pack("<I", block) + bytes(4)
                + struct.pack("<Qd", count, param))

    def seed(dtype, count, split, stream):
        return bytes([dtype]) + struct.pack("<H", count) + bytes([split]) + stream

    floats = struct.pack("<5f", 1.0, -2.5, 0.0, 3.25, 7.0)
    write("codec_stream", "seed-raw", seed(0, 5, 128, header(0, 0, 0, 5, 0.0) + floats))
    write("codec_stream", "seed-bf16",
          seed(0, 5, 77, header(1, 0, 0, 5, 0.0) + bytes([0x80, 0x3F, 0x20, 0xC0, 0, 0, 0x50, 0x40,
                                                           0xE0, 0x40])))
    raw_block = bytes([1]) + bytes(15) + floats + bytes(4)            # kind 1: raw, padded to 8
    constant = bytes([0, 0, 0]) + bytes(5) + struct.pack("<q", 100)  # kind 0, 0 bits
    packed = (bytes([0, 3, 1]) + bytes(5) + struct.pack("<q", -4)
              + struct.pack("<Q", 0o76543210))                       # 3 bits, 5 codes, one word
    bound = header(2, 0, 5, 15, 0.01) + raw_block + constant + packed
    write("codec_stream", "seed-bound", seed(0, 15, 100, bound))
    write("codec_stream", "seed-bound-split", seed(0, 15, 20, bound))
    write("codec_stream", "seed-bound-short", seed(0, 15, 200, bound[:-3]))


if __name__ == "__main__":
    main()
