# SPDX-License-Identifier: BSD-3-Clause
"""Loopback edges: the edges of N islands in one Python thread on
127.0.0.1, for developing and testing training code without isthmusd,
namespaces or a WAN.

It keeps the protocol of doc/protocol.md as an island sees it: a ROUND
per island at every round start (epoch + r * T, deadline one T later), the
island's DATA, and per chunk one AGG with the sum of the clique peers'
contributions (fp32 sums for fp32 and bf16 DATA, int32 for int32), with
the contributor bitmap and a per-island sequence number. A chunk whose
peers have not all arrived by ``partial_at`` of the round leaves as a
PARTIAL over those that have. It neither paces, nor repairs, nor
authenticates: it is a stand-in for the edges' arithmetic and timing, not
a model of isthmusd. ``drop(round, sender)`` loses a contribution on
purpose (tests, lossy runs).

``hosts=K`` makes every island K hosts (sessions opened with ``hosts=K,
host=h``), as an edge with ``[access] island_hosts`` does: host h owns
the chunk ids ``[h*C//K, (h+1)*C//K)`` of every round of C chunks; each
host gets every ROUND and the AGGs of its own chunks only, numbered per
host, all from the island's one edge port; a DATA from another address
than the owning host's is refused (``stats["wrong_host"]``). A host's
address is learnt from its first DATA or told (``register(k, port,
host=h)``).
"""
import select
import socket
import struct
import threading
import time

import numpy as np

_HDR = struct.Struct(">HBBHBBIIIBBHQQ")
_ROUND = struct.Struct(">QQQQII")
_MAGIC, _VERSION = 0x4953, 1
_DATA, _AGG, _NACK, _GONE, _ROUNDT = 1, 2, 3, 4, 5
_FP32, _BF16, _INT32 = 1, 2, 3
_PARTIAL = 1
CHUNK_ELEMS_1500 = 358


def host_ranges(n_chunks, hosts):
    """(first, count) of the chunk ids each of @hosts owns: host h owns
    [h*C//K, (h+1)*C//K), the rule of libisthmus and isthmusd."""
    assert 1 <= hosts <= n_chunks, "need 1 <= hosts <= n_chunks"
    cut = [h * n_chunks // hosts for h in range(hosts + 1)]
    return [(cut[h], cut[h + 1] - cut[h]) for h in range(hosts)]


def all_to_all(n):
    """One clique of every island, every round."""
    full = (1 << n) - 1
    return lambda r: [full]


def triangles(n=9):
    """Rotating cliques of three on a 3x3 grid: rows, then columns."""
    assert n == 9, "triangles are defined for 9 islands"
    rows = [0b111 << (3 * i) for i in range(3)]
    cols = [sum(1 << (3 * j + i) for j in range(3)) for i in range(3)]
    return lambda r: rows if r % 2 == 0 else cols


class LoopbackEdges:
    """Edges for islands 0..n-1; ``ports[k]`` is island k's edge port."""

    def __init__(self, n, elems, period=0.1, job=1, cliques=None,
                 partial_at=0.9, first_round=0, drop=None, start_in=0.05,
                 hosts=1):
        self.n, self.elems, self.period, self.job = n, elems, period, job
        self.ce = CHUNK_ELEMS_1500
        self.n_chunks = (elems + self.ce - 1) // self.ce
        self.hosts = hosts
        self.owner = [h for h, (f, c) in enumerate(host_ranges(self.n_chunks, hosts))
                      for _ in range(c)]      # chunk -> its host
        self.cliques = cliques or all_to_all(n)
        self.partial_at, self.drop = partial_at, drop
        self.socks = []
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
            self.socks.append(s)
        self.ports = [s.getsockname()[1] for s in self.socks]
        # [island][host]: learnt from the host's first DATA, or told
        self.island_addr = [[None] * hosts for _ in range(n)]
        self.seq = [[0] * hosts for _ in range(n)]   # AGG seqs, per host
        self.epoch = time.time_ns() + int(start_in * 1e9)
        self.next_round = first_round
        self.first_round = first_round
        self.rounds = {}                  # r -> state
        # counters
        self.stats = dict(rounds=0, data=0, aggs=0, partial_aggs=0,
                          dropped=0, late=0, wrong_host=0)
        self._stop = threading.Event()
        self._thread = None

    # -- setup ------------------------------------------------------------
    def register(self, island, port, host=0):
        """Where island @island (its host @host) listens: its session's
        local_port."""
        self.island_addr[island][host] = ("127.0.0.1", port)

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
        for s in self.socks:
            s.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()
        return False

    # -- wire -------------------------------------------------------------
    def _send(self, k, hdr_fields, body=b"", host=0):
        if self.island_addr[k][host] is None:
            return
        try:
            self.socks[k].sendto(_HDR.pack(*hdr_fields) + body,
                                 self.island_addr[k][host])
        except OSError:
            pass

    def _hdr(self, type_, k, r, chunk=0, count=0, seq=0, bitmap=0, dtype=0, flags=0):
        return (_MAGIC, _VERSION, type_, flags, dtype, 0, self.job, r, chunk, k,
                0, count, seq, bitmap)

    def _clique_of(self, r, k):
        for c in self.cliques(r):
            if c >> k & 1:
                return c
        return 1 << k

    def _start_round(self, r):
        start = self.epoch + int((r - self.first_round) * self.period * 1e9)
        T = int(self.period * 1e9)
        st = {"start": start, "deadline": start + T, "contrib": {}, "dtype": {},
              "sent": set(), "closed": False}
        self.rounds[r] = st
        self.stats["rounds"] += 1
        for k in range(self.n):
            clique = self._clique_of(r, k)
            body = _ROUND.pack(start, start + T, T, clique, self.n_chunks, self.ce)
            for h in range(self.hosts):
                self._send(k, self._hdr(_ROUNDT, k, r, bitmap=clique & ~(1 << k)),
                           body, h)
        for old in [x for x in self.rounds if x < r - 4]:
            del self.rounds[old]

    def _on_data(self, k, buf, addr):
        if len(buf) < _HDR.size:
            return
        (magic, ver, type_, flags, dtype, tlen, job, r, chunk, sender, _, count,
         seq, bitmap) = _HDR.unpack_from(buf)
        if magic != _MAGIC or type_ != _DATA or sender != k or job != self.job:
            return
        if chunk >= self.n_chunks:
            return
        h = self.owner[chunk]
        if self.island_addr[k][h] is None:
            self.island_addr[k][h] = addr
        elif self.island_addr[k][h] != addr:
            self.stats["wrong_host"] += 1      # another host's chunk
            return
        st = self.rounds.get(r)
        if st is None or st["closed"]:
            self.stats["late"] += 1
            return
        if self.drop and self.drop(r, k):
            self.stats["dropped"] += 1
            return
        body = buf[_HDR.size:]
        if dtype == _BF16:
            v = (np.frombuffer(body, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif dtype == _FP32:
            v = np.frombuffer(body, "<f4").copy()
        else:
            v = np.frombuffer(body, "<i4").copy()
        self.stats["data"] += 1
        st["contrib"].setdefault(chunk, {})[k] = v
        st["dtype"][chunk] = _INT32 if dtype == _INT32 else _FP32
        self._emit(r, st, chunk, final=False)

    def _emit(self, r, st, chunk, final):
        """AGGs of @chunk for every island whose peers are all in (or, at
        @final, whose peers are partly in)."""
        have = st["contrib"].get(chunk, {})
        for j in range(self.n):
            if (chunk, j) in st["sent"]:
                continue
            peers = self._clique_of(r, j) & ~(1 << j)
            got = [k for k in have if peers >> k & 1]
            bm = sum(1 << k for k in got)
            if not got or (bm != peers and not final):
                continue
            if peers == 0:
                continue
            acc = np.zeros(len(have[got[0]]),
                           np.int32 if st["dtype"][chunk] == _INT32 else np.float32)
            for k in got:
                acc += have[k]
            dt = st["dtype"][chunk]
            body = acc.astype("<i4" if dt == _INT32 else "<f4").tobytes()
            flags = 0 if bm == peers else _PARTIAL
            h = self.owner[chunk]
            self._send(j, self._hdr(_AGG, j, r, chunk, len(acc), self.seq[j][h], bm, dt,
                                    flags), body, h)
            self.seq[j][h] += 1
            st["sent"].add((chunk, j))
            self.stats["aggs"] += 1
            if flags:
                self.stats["partial_aggs"] += 1

    def _run(self):
        while not self._stop.is_set():
            now = time.time_ns()
            nxt = self.epoch + int((self.next_round - self.first_round) * self.period * 1e9)
            if now >= nxt:
                self._start_round(self.next_round)
                self.next_round += 1
                continue
            for r, st in self.rounds.items():
                cut = st["start"] + int(self.partial_at * (st["deadline"] - st["start"]))
                if not st["closed"] and now >= cut:
                    for c in range(self.n_chunks):
                        self._emit(r, st, c, final=True)
                    st["closed"] = True
            wait = max(0.0, min((nxt - now) / 1e9, 0.005))
            ready, _, _ = select.select(self.socks, [], [], wait)
            for s in ready:
                k = self.socks.index(s)
                while True:
                    try:
                        buf, addr = s.recvfrom(65536)
                    except BlockingIOError:
                        break
                    self._on_data(k, buf, addr)
