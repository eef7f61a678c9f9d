# SPDX-License-Identifier: BSD-3-Clause
"""isthmus.torch.Averager against loopback edges (isthmus.loopback): the
averages are checked against means computed here from the values each
island started with, with the divisor the contributors actually summed."""
import errno
import time

import pytest

torch = pytest.importorskip("torch")

import isthmus                      # noqa: E402
from isthmus.loopback import LoopbackEdges   # noqa: E402
from isthmus.torch import Averager, flat_size   # noqa: E402

N = 3
SHAPES = [(20, 30), (30,), (400,)]          # 1030 elements: 3 chunks


def make_params(k):
    """Integers (exact in bf16 and in fp32 means of 2 or 3 of them when
    multiplied by 6), different per island."""
    g = torch.Generator().manual_seed(k)
    return [torch.randint(-20, 20, s, generator=g).float() * 6 for s in SHAPES]


def flat(ps):
    return torch.cat([p.reshape(-1) for p in ps])


def sessions(edges, dtype):
    out = []
    for k in range(N):
        s = isthmus.Session(job=1, island=k, n_islands=N, elems=edges.elems,
                            edge=("127.0.0.1", edges.ports[k]),
                            bind=("127.0.0.1", 0), dtype=dtype, auth=False,
                            grace=0.0)
        edges.register(k, s.local_port)
        out.append(s)
    return out


def wait_announced(ss, timeout=5.0):
    end = time.monotonic() + timeout
    while not all(s.counters()["rounds_announced"] for s in ss):
        assert time.monotonic() < end, "no ROUND from the loopback edges"
        for s in ss:
            s.poll(timeout=0.001)


def exchange_once(avgs, timeout=10.0):
    """Each island sends once, then polls until its round is applied."""
    end = time.monotonic() + timeout
    for a in avgs:
        a.step()
        assert a.stats["sent"] == 1, a.stats
    while not all(a.stats["applied"] for a in avgs):
        assert time.monotonic() < end, [a.stats for a in avgs]
        for a in avgs:
            a.s.poll(timeout=0.002)
            a.poll()


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_params_are_replaced_by_the_clique_mean(dtype):
    n = flat_size(make_params(0))
    with LoopbackEdges(N, n, period=1.0) as edges:
        ss = sessions(edges, dtype)
        ps = [make_params(k) for k in range(N)]
        start = [flat(p).clone() for p in ps]
        avgs = [Averager(ps[k], ss[k]) for k in range(N)]
        wait_announced(ss)
        exchange_once(avgs)
        want = sum(start) / N
        for k in range(N):
            assert torch.equal(flat(ps[k]), want), k
            assert avgs[k].stats["complete"] == 1
            # applied within the round it was sent in (loopback: at once)
            assert 0 <= avgs[k].staleness() < 1
            assert avgs[k].stats["behind_sum"] == 0
        for s in ss:
            s.close()


def test_partial_divides_by_the_contributors_summed():
    n = flat_size(make_params(0))
    lost = 2
    with LoopbackEdges(N, n, period=1.0, drop=lambda r, k: k == lost) as edges:
        ss = sessions(edges, "fp32")
        ps = [make_params(k) for k in range(N)]
        start = [flat(p).clone() for p in ps]
        avgs = [Averager(ps[k], ss[k]) for k in range(N)]
        wait_announced(ss)
        t0 = time.monotonic()
        exchange_once(avgs)
        # islands 0 and 1 lost island 2: the mean of the two they have
        for k in (0, 1):
            assert torch.equal(flat(ps[k]), (start[0] + start[1]) / 2), k
            assert avgs[k].stats["partial"] == 1
        # island 2 heard both peers: the mean of three
        assert torch.equal(flat(ps[lost]), sum(start) / 3)
        assert avgs[lost].stats["complete"] == 1
        assert time.monotonic() - t0 < 5
        for s in ss:
            s.close()


def test_delta_mode_keeps_local_progress_made_after_the_send():
    n = flat_size(make_params(0))
    with LoopbackEdges(N, n, period=1.0) as edges:
        ss = sessions(edges, "bf16")
        base = make_params(99)                # the agreed starting point
        ps = [[b.clone() for b in base] for _ in range(N)]
        avgs = [Averager(ps[k], ss[k], mode="delta") for k in range(N)]
        # each island learns its own step, then sends its pseudo-gradient
        steps = [make_params(k) for k in range(N)]
        for k in range(N):
            for p, d in zip(ps[k], steps[k]):
                p.add_(d)
        wait_announced(ss)
        for a in avgs:
            a.step()
        # local progress after the send, before the result
        for k in range(N):
            ps[k][2].add_(float(k + 1))
        end = time.monotonic() + 10
        while not all(a.stats["applied"] for a in avgs):
            assert time.monotonic() < end
            for a in avgs:
                a.s.poll(timeout=0.002)
                a.poll()
        mean_step = sum(flat(s) for s in steps) / N
        for k in range(N):
            extra = torch.zeros(n)
            extra[-400:] = k + 1
            assert torch.equal(flat(ps[k]), flat(base) + mean_step + extra), k
            assert torch.equal(avgs[k].anchor, flat(base) + mean_step)
        for s in ss:
            s.close()


def test_bad_configurations_are_refused():
    with LoopbackEdges(1, 10, period=1.0) as edges:
        s = isthmus.Session(job=1, island=0, n_islands=1, elems=10,
                            edge=("127.0.0.1", edges.ports[0]), bind=("127.0.0.1", 0),
                            auth=False, grace=0.0)
        with pytest.raises(ValueError, match="10 elements"):
            Averager([torch.zeros(11)], s)
        with pytest.raises(ValueError, match="mode"):
            Averager([torch.zeros(10)], s, mode="sgd")
        s.close()


class _Round:
    def __init__(self, r, period_ns=10**9):
        now = time.time_ns()
        self.round, self.start_ns, self.period_ns = r, now, period_ns
        self.deadline_ns = now + 10 * period_ns


class _Result:
    def __init__(self, n_chunks, bitmap):
        self.chunk_bitmaps = [bitmap] * n_chunks
        self.complete = True


class _ScriptedSession:
    """A session whose rounds and sums the test decides: announce() a
    round, finish() it with a sum; what the Averager sent is kept."""
    dtype = "fp32"

    def __init__(self, elems, islands=3):
        self.elems = self.chunk_elems = elems
        self.islands = islands
        self.announced, self.sent, self.sums = [], {}, {}

    def announce(self, r):
        self.announced.append(_Round(r))

    def finish(self, r, total):
        self.sums[r] = total

    def wait_round(self, timeout=10.0):
        if not self.announced:
            raise isthmus.Timeout(errno.ETIMEDOUT, "no ROUND")
        return self.announced.pop(0)

    def send(self, r, array):
        self.sent[r] = array.clone()

    def ready(self, r, timeout=0.0):
        return r in self.sums

    def result(self, r, out, timeout=10.0):
        out.copy_(self.sums[r])
        return _Result(1, (1 << self.islands) - 1)


def test_rounds_in_flight_do_not_add_up_past_the_average():
    """Two rounds in flight, both sent before either result: applying the
    second must land on its own clique mean plus the local steps taken
    after it was sent, not add both rounds' corrections (which would put
    the island at m1 + m2 - x0 + p2)."""
    n = 4
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    s = _ScriptedSession(n)
    avg = Averager([x], s, max_inflight=3)
    p1 = torch.tensor([0.5, 0.0, -0.5, 1.0])
    p2 = torch.tensor([0.25, 0.25, 0.25, 0.25])
    m1 = torch.tensor([10.0, 20.0, 30.0, 40.0])      # clique means
    m2 = torch.tensor([-4.0, 8.0, 0.5, 2.0])
    s.announce(1)
    avg.step()                                       # sends x0
    assert torch.equal(s.sent[1], torch.tensor([1.0, 2.0, 3.0, 4.0]))
    x.add_(p1)
    s.announce(2)
    avg.step()                                       # sends x0 + p1
    assert torch.equal(s.sent[2], torch.tensor([1.5, 2.0, 2.5, 5.0]))
    x.add_(p2)
    s.finish(1, 3 * m1)
    avg.poll()
    # round 1 only: its mean plus every local step since its send
    assert torch.equal(x, m1 + p1 + p2)
    s.finish(2, 3 * m2)
    avg.poll()
    assert torch.equal(x, m2 + p2)
    assert avg.stats["applied"] == 2 and avg.stats["complete"] == 2
