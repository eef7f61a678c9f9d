# SPDX-License-Identifier: BSD-3-Clause
"""isthmus.Session(hosts=K, host=k): an island of K hosts, each owning the
chunk ids [floor(k*C/K), floor((k+1)*C/K)) of every round. The ranges
expected here are worked out by hand from that rule; the pair of sessions
talks to fake_edge.py, one fake edge socket per host (the edge's view of
each host: its own address and its own AGG seqs), and the sums expected
come from the closed-form values below."""
import errno
import socket
import time

import numpy as np
import pytest

import isthmus
from fake_edge import CE, DATA, F_LAST, FP32, HDR, FakeEdge

SELF, N = 1, 4
PEERS = 1 << 0 | 1 << 2 | 1 << 3


def val(k, r, n):
    """Sixteenths in [-32, 32): sums of a few are exact in binary32."""
    i = np.arange(n, dtype=np.int64)
    return (((k + 1) * 131 + r * 17 + i * 7) % 1024 - 512) / 16.0


def session(edge, elems, hosts, host, **kw):
    s = isthmus.Session(job=7, island=SELF, n_islands=N, elems=elems,
                        edge=("127.0.0.1", edge.port), bind=("127.0.0.1", 0),
                        auth=False, grace=0.0, hosts=hosts, host=host, **kw)
    edge.island_port = s.local_port
    return s


# (elems, hosts) -> per host (first chunk, chunks, first elem, elems), by
# hand: C = ceil(elems / 358); host k from floor(k*C/K) to floor((k+1)*C/K)
RANGES = [
    # C = 3, K = 1: everything
    (2 * CE + 100, 1, [(0, 3, 0, 2 * CE + 100)]),
    # C = 3, K = 2: floor(3/2) = 1 -> host 0 chunk 0, host 1 chunks 1-2
    (2 * CE + 100, 2, [(0, 1, 0, CE), (1, 2, CE, CE + 100)]),
    # C = 3, K = 3: a chunk each, the last short
    (2 * CE + 100, 3, [(0, 1, 0, CE), (1, 1, CE, CE), (2, 1, 2 * CE, 100)]),
    # C = 10, K = 3: 0, 3, 6, 10
    (10 * CE, 3, [(0, 3, 0, 3 * CE), (3, 3, 3 * CE, 3 * CE),
                  (6, 4, 6 * CE, 4 * CE)]),
    # C = 7, K = 4: 0, 1, 3, 5, 7; the tensor's last chunk has 5 elements
    (6 * CE + 5, 4, [(0, 1, 0, CE), (1, 2, CE, 2 * CE), (3, 2, 3 * CE, 2 * CE),
                     (5, 2, 5 * CE, CE + 5)]),
]


@pytest.mark.parametrize("elems,hosts,want", RANGES)
def test_ranges_follow_the_rule(elems, hosts, want):
    e = FakeEdge(SELF)
    try:
        for k in range(hosts):
            with session(e, elems, hosts, k) as s:
                assert (s.hosts, s.host, s.elems) == (hosts, k, elems)
                c0, nc, e0, ne = want[k]
                assert s.chunk_range == (c0, nc)
                assert s.elem_range == (e0, ne)
                cnt = s.counters()
                assert (cnt["hosts"], cnt["host"], cnt["first_chunk"],
                        cnt["range_chunks"]) == (hosts, k, c0, nc)
    finally:
        e.close()


def test_bad_hosts_are_refused_with_a_reason():
    e = FakeEdge(SELF)
    try:
        for hosts, host in ((0, 0), (17, 0), (2, 2), (3, 5)):
            with pytest.raises(ValueError, match="hosts"):
                session(e, 1000, hosts, host)
        # C = 3 chunks cannot be split among 4 hosts
        with pytest.raises(isthmus.Error, match="fewer than the hosts") as ei:
            session(e, 2 * CE + 100, 4, 0)
        assert ei.value.errno == errno.EINVAL
    finally:
        e.close()


def test_pair_of_hosts_sums_each_range_exactly():
    elems, nch, r = 2 * CE + 100, 3, 5
    own = val(SELF, r, elems).astype(np.float32)
    peers = sum(val(k, r, elems) for k in (0, 2, 3)).astype(np.float32)
    edges = [FakeEdge(SELF), FakeEdge(SELF)]
    ss = []
    try:
        ss = [session(edges[k], elems, 2, k, probe=None) for k in range(2)]
        for k in range(2):
            edges[k].round(r, PEERS, nch)
            assert ss[k].wait_round(timeout=2).n_chunks == nch
        for k in range(2):
            first, count = ss[k].elem_range
            # the whole tensor is refused: the host takes its range only
            with pytest.raises(ValueError, match="elem_range"):
                ss[k].send(r, own)
            ss[k].send(r, own[first:first + count])
        # host 0: chunk 0 alone, LAST; host 1: chunks 1 and 2, LAST on 2;
        # DATA seqs host k + 2 i (the hosts never share one)
        for k, chunks in ((0, [0]), (1, [1, 2])):
            pk = [edges[k].recv() for _ in chunks]
            assert [p.type for p in pk] == [DATA] * len(chunks)
            assert [p.chunk for p in pk] == chunks
            assert [p.seq for p in pk] == [k + 2 * i for i in range(len(chunks))]
            assert [bool(p.flags & F_LAST) for p in pk] == \
                [i + 1 == len(chunks) for i in range(len(chunks))]
            for p in pk:
                c = p.chunk
                np.testing.assert_array_equal(
                    p.elems(), own[c * CE:min((c + 1) * CE, elems)])
        # host 0 is sent chunk 1 (host 1's) too: refused, not summed
        edges[0].agg(r, 1, PEERS, peers[CE:2 * CE])
        for k, chunks in ((0, [0]), (1, [1, 2])):
            for c in chunks:
                edges[k].agg(r, c, PEERS, peers[c * CE:min((c + 1) * CE, elems)])
        for k in range(2):
            first, count = ss[k].elem_range
            out = np.full(count, np.nan, np.float32)
            res = ss[k].result(r, out, timeout=2)
            assert res.complete and res.partial == 0
            assert len(res.chunk_bitmaps) == ss[k].chunk_range[1]
            assert res.bitmap == PEERS | 1 << SELF
            np.testing.assert_array_equal(
                out, (own + peers)[first:first + count])
        c0 = ss[0].counters()
        assert c0["drop_agg_range"] == 1 and c0["aggs_summed"] == 1
        assert ss[1].counters()["drop_agg_range"] == 0
    finally:
        for s in ss:
            s.close()
        for e in edges:
            e.close()


def test_partial_names_the_hosts_chunk_ids():
    """Host 1 of 2 misses island 3 on chunk 2: its result says chunk 2 (the
    tensor's id), not its index in the range."""
    elems, nch, r = 2 * CE + 100, 3, 9
    e = FakeEdge(SELF)
    try:
        with session(e, elems, 2, 1, probe=None) as s:
            e.round(r, PEERS, nch, deadline_in=0.3)
            s.wait_round(timeout=2)
            first, count = s.elem_range
            assert (first, count) == (CE, CE + 100)
            own = val(SELF, r, elems).astype(np.float32)
            s.send(r, own[first:])
            e.recv(), e.recv()
            full = sum(val(k, r, elems) for k in (0, 2, 3)).astype(np.float32)
            part = (val(0, r, elems) + val(2, r, elems)).astype(np.float32)
            e.agg(r, 1, PEERS, full[CE:2 * CE])
            e.agg(r, 2, 1 << 0 | 1 << 2, part[2 * CE:])
            out = np.empty(count, np.float32)
            res = s.result(r, out, timeout=2)
            assert not res.complete and res.partial == 1
            assert res.missing == 1 << 3
            assert res.missing_str == "island 3 chunk 2"
            assert res.chunk_bitmaps == (PEERS | 1 << SELF, 1 << 0 | 1 << 2 | 1 << SELF)
            np.testing.assert_array_equal(out[:CE], (own + full)[CE:2 * CE])
            np.testing.assert_array_equal(out[CE:], (own + part)[2 * CE:])
    finally:
        e.close()


def test_loopback_edges_serve_islands_of_two_hosts():
    """isthmus.loopback with hosts=2: three islands of two hosts each; every
    host gets the exact clique sum of its own range, and a DATA for a chunk
    from the other host's address is refused."""
    from isthmus.loopback import LoopbackEdges, host_ranges

    n_isl, hosts, elems = 3, 2, 5 * CE + 17          # C = 6: chunks 0-2, 3-5
    assert host_ranges(6, 2) == [(0, 3), (3, 3)]
    assert host_ranges(7, 3) == [(0, 2), (2, 2), (4, 3)]
    with LoopbackEdges(n_isl, elems, period=2.0, start_in=0.2,
                       hosts=hosts) as edges:
        ss = {}
        try:
            for k in range(n_isl):
                for h in range(hosts):
                    s = isthmus.Session(
                        job=1, island=k, n_islands=n_isl, elems=elems,
                        edge=("127.0.0.1", edges.ports[k]),
                        bind=("127.0.0.1", 0), auth=False, grace=0.0,
                        hosts=hosts, host=h)
                    edges.register(k, s.local_port, host=h)
                    ss[k, h] = s
            rounds = {kh: s.wait_round(timeout=5).round for kh, s in ss.items()}
            r = rounds[0, 0]
            assert set(rounds.values()) == {r}
            for (k, h), s in ss.items():
                first, count = s.elem_range
                s.send(r, val(k, r, elems).astype(np.float32)[first:first + count])
            want = sum(val(k, r, elems) for k in range(n_isl))
            for (k, h), s in ss.items():
                first, count = s.elem_range
                out = np.empty(count, np.float32)
                res = s.result(r, out, timeout=5)
                assert res.complete, (k, h, res.missing_str)
                assert res.bitmap == (1 << n_isl) - 1
                np.testing.assert_array_equal(
                    out, want[first:first + count].astype(np.float32))
            # every DATA so far came from its chunk's host
            assert edges.stats["wrong_host"] == 0
            # a DATA of chunk 4 (host 1's) from another address: refused
            rogue = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            rogue.bind(("127.0.0.1", 0))
            rogue.sendto(HDR.pack(0x4953, 1, DATA, 0, FP32, 0, 1, r, 4, 0, 0, 1,
                                  0, 1) + bytes(4), ("127.0.0.1", edges.ports[0]))
            rogue.close()
            end = time.monotonic() + 2
            while edges.stats["wrong_host"] == 0:
                assert time.monotonic() < end, edges.stats
                time.sleep(0.01)
        finally:
            for s in ss.values():
                s.close()
