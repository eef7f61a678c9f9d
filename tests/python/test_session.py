# SPDX-License-Identifier: BSD-3-Clause
"""isthmus.Session against a fake edge (fake_edge.py) on loopback. Expected
sums come from the closed-form values below, computed here; the island's
DATA is decoded from the wire format as documented."""
import errno
import threading

import numpy as np
import pytest

import isthmus
from fake_edge import BF16, CE, DATA, FP32, INT32, NACK, FakeEdge, F_PARTIAL

SELF, N, ELEMS = 1, 4, 2 * CE + 100          # chunks of 358, 358, 100
NCH = 3
PEERS = 1 << 0 | 1 << 2 | 1 << 3


def val(k, r, n=ELEMS):
    """Sixteenths in [-32, 32): sums of a few are exact in binary32."""
    i = np.arange(n, dtype=np.int64)
    return (((k + 1) * 131 + r * 17 + i * 7) % 1024 - 512) / 16.0


def chunk(c):
    return slice(c * CE, min((c + 1) * CE, ELEMS))


@pytest.fixture
def edge():
    e = FakeEdge(SELF)
    yield e
    e.close()


def session(edge, dtype="fp32", **kw):
    s = isthmus.Session(job=7, island=SELF, n_islands=N, elems=ELEMS,
                        edge=("127.0.0.1", edge.port),
                        bind=("127.0.0.1", 0), dtype=dtype, auth=False, grace=0.0,
                        **kw)
    edge.island_port = s.local_port
    return s


def test_fp32_round_in_place_with_numpy(edge):
    with session(edge, probe=None) as s:
        assert (s.n_chunks, s.chunk_elems, s.elems, s.dtype) == (NCH, CE, ELEMS, "fp32")
        start = edge.round(3, PEERS, NCH)
        r = s.wait_round(timeout=2)
        assert (r.round, r.expected, r.clique, r.n_chunks, r.chunk_elems) == \
            (3, PEERS, PEERS | 1 << SELF, NCH, CE)
        assert r.start_ns == start
        own = val(SELF, 3).astype(np.float32)
        s.send(3, own)
        pk = edge.data(NCH)
        for c, p in enumerate(pk):
            assert (p.dtype, p.round, p.sender, p.bitmap) == (FP32, 3, SELF, 1 << SELF)
            np.testing.assert_array_equal(p.elems(), own[chunk(c)])
        for c in range(NCH):       # partials with disjoint bitmaps
            edge.agg(3, c, 1 << 0 | 1 << 2, (val(0, 3) + val(2, 3))[chunk(c)],
                     flags=F_PARTIAL)
            edge.agg(3, c, 1 << 3, val(3, 3)[chunk(c)], flags=F_PARTIAL)
        out = np.full(ELEMS, np.nan, np.float32)
        res = s.result(3, out, timeout=2)
        assert res.complete and res.early and res.self_sent
        assert (res.bitmap, res.missing, res.partial, res.chunks_complete) == (0xf, 0, 0, NCH)
        assert res.chunk_bitmaps == (0xf,) * NCH
        assert res.missing_str == "none"
        want = sum(val(k, 3) for k in range(4)).astype(np.float32)
        np.testing.assert_array_equal(out, want)
        c = s.counters()
        assert c["aggs_summed"] == 2 * NCH and c["rx_agg"] == 2 * NCH
        assert c["rounds_complete"] == 1 and c["data_tx"] == NCH
        assert c["drop_agg_overlap"] == 0 and c["wire_drop_magic"] == 0
    assert s.closed


def test_partial_result_names_what_is_missing(edge):
    with session(edge, probe=None) as s:
        edge.round(5, PEERS, NCH, deadline_in=0.3)
        s.send(5, val(SELF, 5).astype(np.float32))
        edge.data(NCH)
        for c in range(NCH - 1):
            edge.agg(5, c, PEERS, sum(val(k, 5) for k in (0, 2, 3))[chunk(c)])
        edge.agg(5, NCH - 1, 1 << 3, val(3, 5)[chunk(NCH - 1)], flags=F_PARTIAL)
        out = np.zeros(ELEMS, np.float32)
        res = s.result(5, out, timeout=2)      # ends at the deadline
        assert not res.complete and not res.early
        assert res.partial == 1 and res.chunks_complete == NCH - 1
        assert res.missing == 1 << 0 | 1 << 2
        assert res.missing_contributions == 2
        assert res.chunk_bitmaps[-1] == 1 << SELF | 1 << 3
        assert res.bitmap == 1 << SELF | 1 << 3
        assert res.missing_str == "island 0 chunk 2; island 2 chunk 2"
        # the partial chunk holds the exact sum over its bitmap
        np.testing.assert_array_equal(out[chunk(2)],
                                      (val(SELF, 5) + val(3, 5))[chunk(2)].astype(np.float32))
        np.testing.assert_array_equal(out[chunk(0)],
                                      sum(val(k, 5) for k in range(4))[chunk(0)].astype(np.float32))
        assert s.counters()["rounds_partial"] == 1


def test_int32_sums_wrap(edge):
    with session(edge, "int32", probe=None) as s:
        edge.round(2, 1 << 0, NCH)
        own = np.full(ELEMS, 0x7fffffff, np.int32)
        s.send(2, own)
        edge.data(NCH)
        for c in range(NCH):
            n = chunk(c).stop - chunk(c).start
            edge.agg(2, c, 1 << 0, np.full(n, 2, np.int32), dtype=INT32)
        out = np.zeros(ELEMS, np.int32)
        assert s.result(2, out).complete
        assert (out == np.int32(-0x7fffffff)).all()    # 2^31 - 1 + 2 wraps


def test_bf16_torch_tensors_zero_copy(edge):
    torch = pytest.importorskip("torch")
    with session(edge, "bf16", probe=None) as s:
        edge.round(1, 1 << 0, NCH)
        quarters = torch.tensor((val(SELF, 1) * 4).round() / 4, dtype=torch.float32)
        s.send(1, quarters)                       # float32, rounded to bf16
        pk = edge.data(NCH)
        bits = quarters.numpy().view(np.uint32) >> 16   # exact in bf16
        for c, p in enumerate(pk):
            assert p.dtype == BF16 and len(p.body) == 2 * p.count
            np.testing.assert_array_equal(p.elems(), bits[chunk(c)])
        peer = torch.tensor((val(0, 1) * 4).round() / 4, dtype=torch.float32)
        for c in range(NCH):
            edge.agg(1, c, 1 << 0, peer.numpy()[chunk(c)], dtype=FP32)
        out = torch.zeros(ELEMS, dtype=torch.float32)
        ptr = out.data_ptr()
        res = s.result(1, out)
        assert res.complete and out.data_ptr() == ptr
        assert torch.equal(out, quarters + peer)

        # bf16 tensors go out as they are; bf16 AGGs are widened
        edge.round(2, 1 << 0, NCH)
        b = quarters.to(torch.bfloat16)
        s.send(2, b)
        for c, p in enumerate(edge.data(NCH)):
            np.testing.assert_array_equal(p.elems(), b.view(torch.int16).numpy()
                                          .view(np.uint16)[chunk(c)])
        for c in range(NCH):
            edge.agg(2, c, 1 << 0, bits[chunk(c)], dtype=BF16)
        out2 = torch.empty(ELEMS, dtype=torch.float32)
        assert s.result(2, out2).complete
        assert torch.equal(out2, 2 * quarters)

        with pytest.raises(ValueError, match="not contiguous"):
            s.send(3, torch.zeros(2 * ELEMS)[::2])
        with pytest.raises(TypeError, match="float64"):
            s.send(3, torch.zeros(ELEMS, dtype=torch.float64))
        with pytest.raises(ValueError, match="float32"):
            s.result(2, torch.zeros(ELEMS, dtype=torch.bfloat16))


def test_bf16_round_matches_the_edge():
    # ties to even, as doc/agg.md states for the edge's bf16 output
    assert isthmus.bf16_round(1 + 2 ** -8) == 1.0
    assert isthmus.bf16_round(1 + 3 * 2 ** -8) == 1 + 2 ** -6
    assert isthmus.bf16_round(1 + 2 ** -8 + 2 ** -20) == 1 + 2 ** -7


def test_overlapping_rounds_and_ready(edge):
    with session(edge, probe=None) as s:
        for r in (1, 2):
            edge.round(r, 1 << 0, NCH, deadline_in=5)
            s.send(r, val(SELF, r).astype(np.float32))
            edge.data(NCH)
        assert s.ready(1) is False
        for c in range(NCH):        # round 2's sums first
            edge.agg(2, c, 1 << 0, val(0, 2)[chunk(c)])
        for c in range(NCH):
            edge.agg(1, c, 1 << 0, val(0, 1)[chunk(c)])
        assert s.ready(2, timeout=2) and s.ready(1, timeout=2)
        for r in (1, 2):
            out = np.zeros(ELEMS, np.float32)
            assert s.result(r, out).complete
            np.testing.assert_array_equal(out, (val(SELF, r) + val(0, r)).astype(np.float32))


def test_errors_carry_the_reason(edge):
    s = session(edge, probe=None)
    with pytest.raises(ValueError, match="takes %d fp32 elements" % ELEMS):
        s.send(1, np.zeros(ELEMS - 1, np.float32))
    with pytest.raises(ValueError, match="takes"):
        s.send(1, np.zeros(ELEMS, np.int32))       # not the session's dtype
    with pytest.raises(TypeError, match="not float32, int32"):
        s.send(1, np.zeros(ELEMS, np.float64))
    s.send(1, np.zeros(ELEMS, np.float32))
    with pytest.raises(isthmus.Error) as e:
        s.send(1, np.zeros(ELEMS, np.float32))
    assert e.value.errno == errno.EALREADY and "already sent" in str(e.value)
    with pytest.raises(isthmus.Timeout) as e:
        s.result(9, np.zeros(ELEMS, np.float32), timeout=0.05)
    assert isinstance(e.value, TimeoutError) and "no ROUND" in str(e.value)
    with pytest.raises(ValueError):
        isthmus.Session(job=1, island=4, n_islands=4, elems=1, edge=("127.0.0.1", 1),
                        auth=False)
    with pytest.raises(isthmus.Error) as e:     # refused by libisthmus itself
        isthmus.Session(job=1, island=0, n_islands=4, elems=1, mtu=60,
                        edge=("127.0.0.1", 1), bind=("127.0.0.1", 0), auth=False)
    assert e.value.errno == errno.EINVAL
    s.close()
    with pytest.raises(isthmus.Error) as e:
        s.wait_round(timeout=0)
    assert e.value.errno == errno.EBADF and "closed" in str(e.value)


def test_gil_is_released_while_blocking(edge):
    """A thread blocked in wait_round() must not stop this one: the ROUND
    that ends its wait is sent from here, while it waits."""
    with session(edge, probe=None) as s:
        got, entering = [], threading.Event()

        def waiter():
            entering.set()
            got.append(s.wait_round(timeout=3))

        t = threading.Thread(target=waiter)
        t.start()
        assert entering.wait(3)
        edge.round(4, 1 << 0, NCH)
        t.join(5)
        assert got and got[0].round == 4


def test_two_threads_wait_for_two_rounds(edge):
    """result() for rounds 1 and 2 from two threads at once: each gets its
    own sum and its own chunk bitmaps."""
    with session(edge, probe=None) as s:
        for r, dl in ((1, 1.0), (2, 5.0)):
            edge.round(r, PEERS, NCH, deadline_in=dl)
            s.send(r, val(SELF, r).astype(np.float32))
            edge.data(NCH)
        outs = {r: np.zeros(ELEMS, np.float32) for r in (1, 2)}
        got, ready = {}, threading.Barrier(3)

        def taker(r):
            ready.wait()
            got[r] = s.result(r, outs[r], timeout=5)

        ts = [threading.Thread(target=taker, args=(r,)) for r in (1, 2)]
        for t in ts:
            t.start()
        ready.wait()
        # round 1 only from islands 0 and 2 (partial chunk 0), round 2 complete
        for c in range(NCH):
            edge.agg(2, c, PEERS, sum(val(k, 2) for k in (0, 2, 3))[chunk(c)])
        for c in range(NCH):
            edge.agg(1, c, 1 << 0 | 1 << 2, (val(0, 1) + val(2, 1))[chunk(c)],
                     flags=F_PARTIAL)
            if c:
                edge.agg(1, c, 1 << 3, val(3, 1)[chunk(c)], flags=F_PARTIAL)
        for t in ts:
            t.join(10)
        assert got[2].complete and got[2].chunk_bitmaps == (0xf,) * NCH
        np.testing.assert_array_equal(outs[2], sum(val(k, 2) for k in range(4)).astype(np.float32))
        # round 1 ends at its deadline with chunk 0 missing island 3
        assert not got[1].complete and got[1].missing == 1 << 3
        assert got[1].chunk_bitmaps == (0b0111, 0xf, 0xf)
        np.testing.assert_array_equal(outs[1][chunk(0)],
                                      sum(val(k, 1) for k in range(3))[chunk(0)].astype(np.float32))


def test_sockets_gso_gro_deliver_the_plain_datagrams(edge):
    """sockets=3, gso=True, gro=True: the edge reads each chunk's DATA once,
    the same bytes a plain session sends, from the socket whose chunk range
    holds it; sums stay exact."""
    n = 20 * CE + 7                                  # 21 chunks
    nch = 21
    own = val(SELF, 4, n).astype(np.float32)
    got = {}
    for kw in ({}, {"sockets": 3, "gso": True, "gro": True}):
        with isthmus.Session(job=7, island=SELF, n_islands=N, elems=n,
                             edge=("127.0.0.1", edge.port),
                             bind=("127.0.0.1", 0), probe=None, auth=False,
                             grace=0.0, **kw) as s:
            edge.island_port = s.local_port
            edge.seq = 0
            s.send(4, own)
            pk = {}
            for _ in range(nch):
                p = edge.recv()
                assert p.chunk not in pk, "chunk %d twice" % p.chunk
                pk[p.chunk] = p
            assert sorted(pk) == list(range(nch))
            got[bool(kw)] = pk
            edge.round(4, 1 << 0, nch)
            for c in range(nch):
                sl = slice(c * CE, min((c + 1) * CE, n))
                edge.agg(4, c, 1 << 0, val(0, 4, n)[sl].astype(np.float32))
            out = np.zeros(n, np.float32)
            assert s.result(4, out, timeout=2).chunks_complete == nch
            np.testing.assert_array_equal(
                out, (val(0, 4, n) + val(SELF, 4, n)).astype(np.float32))
            k = s.counters()
            if kw:
                assert (k["n_sockets"], k["gso"], k["gro"]) == (3, 1, 1)
                assert k["gso_sends"] >= 3 and k["gso_refused"] == 0
            else:
                assert (k["n_sockets"], k["gso"], k["gso_sends"]) == (1, 0, 0)
            assert k["data_tx"] == nch
    for c in range(nch):
        a, b = got[False][c], got[True][c]
        assert (a.seq, a.flags, a.count, a.body) == (b.seq, b.flags, b.count, b.body)
    with pytest.raises(ValueError):
        isthmus.Session(job=7, island=SELF, n_islands=N, elems=n, sockets=17,
                        edge=("127.0.0.1", edge.port), auth=False)
