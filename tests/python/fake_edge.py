# SPDX-License-Identifier: BSD-3-Clause
"""A fake edge for the Python tests: a UDP socket on 127.0.0.1 that speaks
the wire format of doc/protocol.md, written here from the document (not
from lib/wire), so that the binding is checked against the specification.
"""
import select
import socket
import struct
import time

import numpy as np

HDR = struct.Struct(">HBBHBBIIIBBHQQ")     # 40 bytes, big-endian
ROUND_BODY = struct.Struct(">QQQQII")
MAGIC, VERSION = 0x4953, 1
DATA, AGG, NACK, GONE, ROUND = 1, 2, 3, 4, 5
FP32, BF16, INT32 = 1, 2, 3
F_PARTIAL, F_RESENT, F_LAST = 1, 2, 4
CE = 358                                    # elements per chunk at MTU 1500


def now_ns():
    return time.time_ns()


class Packet:
    def __init__(self, buf):
        (magic, ver, self.type, self.flags, self.dtype, tlen, self.job,
         self.round, self.chunk, self.sender, _, self.count, self.seq,
         self.bitmap) = HDR.unpack_from(buf)
        assert magic == MAGIC and ver == VERSION and tlen == 0
        self.body = bytes(buf[HDR.size:])

    def elems(self):
        """DATA/AGG elements as a NumPy array (little-endian on the wire)."""
        if self.dtype == FP32:
            return np.frombuffer(self.body, "<f4")
        if self.dtype == INT32:
            return np.frombuffer(self.body, "<i4")
        return np.frombuffer(self.body, "<u2")   # bf16 words


class FakeEdge:
    def __init__(self, island, job=7):
        self.island, self.job = island, job
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.island_port = None
        self.seq = 0
        self.version = VERSION      # header byte 2: another to test refusals

    def close(self):
        self.sock.close()

    def _send(self, buf):
        self.sock.sendto(buf, ("127.0.0.1", self.island_port))

    def hdr(self, type_, round_, chunk=0, count=0, seq=0, bitmap=0,
            dtype=0, flags=0):
        return HDR.pack(MAGIC, self.version, type_, flags, dtype, 0, self.job,
                        round_, chunk, self.island, 0, count, seq, bitmap)

    def round(self, r, expected, n_chunks, deadline_in=1.0, clique=None):
        start = now_ns()
        clique = expected | 1 << self.island if clique is None else clique
        body = ROUND_BODY.pack(start, start + int(deadline_in * 1e9),
                               int(deadline_in * 1e9), clique, n_chunks, CE)
        self._send(self.hdr(ROUND, r, bitmap=expected) + body)
        return start

    def agg(self, r, chunk, bitmap, values, dtype=FP32, flags=0, seq=None):
        """Send an AGG of @values (a NumPy array of the chunk's elements)."""
        if seq is None:
            seq, self.seq = self.seq, self.seq + 1
        fmt = {FP32: "<f4", INT32: "<i4", BF16: "<u2"}[dtype]
        body = np.ascontiguousarray(values).astype(fmt).tobytes()
        self._send(self.hdr(AGG, r, chunk, len(values), seq, bitmap, dtype,
                            flags) + body)

    def recv(self, timeout=2.0):
        r, _, _ = select.select([self.sock], [], [], timeout)
        assert r, "nothing from the island within %.1f s" % timeout
        buf, _ = self.sock.recvfrom(65536)
        return Packet(buf)

    def data(self, n_chunks, timeout=2.0):
        """The island's DATA for one round: chunk packets in order."""
        pk = [self.recv(timeout) for _ in range(n_chunks)]
        assert all(p.type == DATA for p in pk), [p.type for p in pk]
        assert [p.chunk for p in pk] == list(range(n_chunks))
        return pk
