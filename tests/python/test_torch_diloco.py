# SPDX-License-Identifier: BSD-3-Clause
"""isthmus.torch.DiLoCo: the outer step against torch.optim.SGD(nesterov=True)
and against a step worked by hand, contributions in flight, lost rounds,
the communication thread with steps of 6 T (loopback edges), checkpoints,
the staged (device) path and the host memory it holds."""
import errno
import io
import threading
import time
import warnings

import pytest

torch = pytest.importorskip("torch")

import isthmus                      # noqa: E402
from isthmus.loopback import LoopbackEdges   # noqa: E402
from isthmus.torch import Averager, DiLoCo, flat_size   # noqa: E402
from test_torch import _ScriptedSession, flat, wait_announced   # noqa: E402


def reference(anchor, means, lr, mu, nesterov=True):
    """The anchor after outer steps on @means, by torch.optim.SGD."""
    a = anchor.clone().requires_grad_(True)
    opt = torch.optim.SGD([a], lr=lr, momentum=mu, nesterov=nesterov)
    for m in means:
        a.grad = m.clone()
        opt.step()
    buf = opt.state[a]["momentum_buffer"] if mu else torch.zeros_like(a)
    return a.detach(), buf


def test_outer_step_worked_by_hand():
    # anchor (1, 2); mean pseudo-gradients (0.5, -1) then (1, 1); mu 0.5, lr 1:
    # buf = (0.5, -1), u = (0.75, -1.5), anchor = (0.25, 3.5);
    # buf = (1.25, 0.5), u = (1.625, 1.25), anchor = (-1.375, 2.25)
    x = torch.tensor([1.0, 2.0])
    s = _ScriptedSession(2, islands=2)
    d = DiLoCo([x], s, outer_lr=1.0, momentum=0.5)
    for r, (mine, peer) in enumerate([((0.25, -0.5), (0.75, -1.5)), ((1.5, 0.5), (0.5, 1.5))]):
        x.sub_(torch.tensor(mine))                 # local progress: g = anchor - x
        s.announce(r)
        d.step()
        assert torch.equal(s.sent[r], torch.tensor(mine))
        s.finish(r, torch.tensor(mine) + torch.tensor(peer))
        d.poll()
    assert torch.equal(d.anchor, torch.tensor([-1.375, 2.25]))
    assert torch.equal(d.mom, torch.tensor([1.25, 0.5]))
    assert torch.equal(x, d.anchor)                # synchronous: on the anchor


class _PeerAdds(_ScriptedSession):
    """A scripted session whose round ends as it is sent, the one peer
    adding 0.75 to each element."""

    def send(self, r, array):
        super().send(r, array)
        self.finish(r, array.float() + 0.75)


def test_default_outer_step_by_form():
    # synchronous (wait=True): the paper's Nesterov step, lr 0.7, momentum
    # 0.9; a mean applied a round late (no wait, or the thread): plain
    # averaging, lr 1, momentum 0 (doc/torch.md, "Defaults"); given
    # values win. One outer step each, worked by hand from anchor 1 and
    # a mean pseudo-gradient of 0.5: Nesterov u = 0.5 + 0.9 * 0.5 = 0.95,
    # anchor 1 - 0.7 * 0.95 = 0.335; plain: anchor 1 - 0.5 = 0.5.
    for kw, want in (({"wait": True}, 0.335), ({}, 0.5),
                     ({"wait": True, "outer_lr": 1.0, "momentum": 0.0}, 0.5)):
        x = torch.tensor([1.0])
        s = _PeerAdds(1, islands=2)            # the peer's 0.75 joins every send
        d = DiLoCo([x], s, **kw)
        x.sub_(0.25)                           # g = 0.25: the mean is 0.5
        s.announce(0)
        d.step()
        d.poll()
        assert d.anchor.item() == pytest.approx(want, abs=1e-6), kw
    # the thread applies a late mean whatever wait says
    for kw in ({"thread": True}, {"thread": True, "wait": True}):
        d = DiLoCo([torch.zeros(1)], _ScriptedSession(1, islands=2), **kw)
        try:
            assert (d.lr, d.mu) == (1.0, 0.0), kw
        finally:
            d.close()


def test_checkpoint_of_another_outer_step_is_named():
    # a checkpoint of the paper's step, resumed with the plain mean: the
    # state loads, the step stays the constructor's, a warning says so
    x = torch.tensor([1.0, 2.0])
    src = DiLoCo([x], _ScriptedSession(2), outer_lr=0.7, momentum=0.9)
    state = src.state_dict()
    d = DiLoCo([x.clone()], _ScriptedSession(2))
    with pytest.warns(UserWarning, match="outer_lr 0.7, momentum 0.9"):
        d.load_state_dict(state)
    assert (d.lr, d.mu) == (1.0, 0.0)
    assert torch.equal(d.anchor, state["anchor"])
    e = DiLoCo([x.clone()], _ScriptedSession(2), outer_lr=0.7, momentum=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e.load_state_dict(state)               # the same step: no warning


@pytest.mark.parametrize("lr,mu,exact", [(0.5, 0.5, True), (0.7, 0.9, False)])
def test_outer_step_is_sgd_nesterov_on_the_mean(lr, mu, exact):
    n, islands = 50, 4
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-8, 8, (n,), generator=g).float()
    a0 = x.clone()
    s = _ScriptedSession(n, islands=islands)
    d = DiLoCo([x], s, outer_lr=lr, momentum=mu)
    means = []
    for r in range(5):
        x.add_(torch.randint(-4, 4, (n,), generator=g).float() / 4)
        mine = d.anchor - x
        s.announce(r)
        d.step()
        assert torch.equal(s.sent[r], mine)
        peers = torch.randint(-16, 16, (n,), generator=g).float() / 8
        s.finish(r, mine + peers)
        d.poll()
        means.append((mine + peers) / islands)
    want, buf = reference(a0, means, lr, mu)
    if exact:
        assert torch.equal(d.anchor, want) and torch.equal(d.mom, buf)
        assert torch.equal(x, d.anchor)
    else:
        assert torch.allclose(d.anchor, want, rtol=0, atol=1e-5)
        assert torch.allclose(d.mom, buf, rtol=0, atol=1e-5)
        assert torch.allclose(x, d.anchor, rtol=0, atol=1e-5)
    assert d.stats["applied"] == 5 and d.outer_steps == 5


def test_rounds_in_flight_count_progress_once_and_keep_later_steps():
    """Two contributions in flight: the second carries only the progress
    made after the first; each round's result lands the island on its
    anchor plus the progress not yet applied."""
    x = torch.tensor([4.0, 8.0, 0.0, -2.0])
    a0 = x.clone()
    s = _ScriptedSession(4, islands=2)
    d = DiLoCo([x], s, outer_lr=1.0, momentum=0.5, max_inflight=2)
    p1 = torch.tensor([1.0, -1.0, 0.5, 0.0])
    p2 = torch.tensor([0.25, 0.25, -0.5, 1.0])
    p3 = torch.tensor([0.0, 2.0, 0.0, 0.5])
    x.add_(p1)
    s.announce(1)
    d.step()
    x.add_(p2)
    s.announce(2)
    d.step()
    assert torch.equal(s.sent[1], -p1) and torch.equal(s.sent[2], -p2)
    x.add_(p3)
    q1, q2 = torch.tensor([2.0, 0, 0, 0]), torch.tensor([0, 0, 0, -4.0])   # the peer's
    s.finish(1, -p1 + q1)
    d.poll()
    a1, _ = reference(a0, [(-p1 + q1) / 2], 1.0, 0.5)
    assert torch.equal(d.anchor, a1) and torch.equal(x, a1 + p2 + p3)
    s.finish(2, -p2 + q2)
    d.poll()
    a2, _ = reference(a0, [(-p1 + q1) / 2, (-p2 + q2) / 2], 1.0, 0.5)
    assert torch.equal(d.anchor, a2) and torch.equal(x, a2 + p3)


class _LosingSession(_ScriptedSession):
    """Rounds in @lost are gone (their slot reused) when asked for."""
    def __init__(self, elems, lost):
        super().__init__(elems, islands=1)
        self.lost = lost

    def ready(self, r, timeout=0.0):
        if r in self.lost:
            raise isthmus.Error(errno.ESTALE, "round no longer kept")
        return super().ready(r, timeout)


def test_a_lost_round_s_progress_goes_out_again():
    x = torch.zeros(3)
    s = _LosingSession(3, lost={0})
    d = DiLoCo([x], s, outer_lr=1.0, momentum=0.0)
    x.add_(torch.tensor([1.0, 2.0, 3.0]))
    s.announce(0)
    d.step()
    d.poll()
    assert d.stats["lost"] == 1 and not d.flights
    x.add_(torch.tensor([1.0, 1.0, 1.0]))
    s.announce(1)
    d.step()
    assert torch.equal(s.sent[1], -torch.tensor([2.0, 3.0, 4.0]))


def test_bf16_rounding_goes_into_the_next_contribution():
    x = torch.zeros(2)
    s = _ScriptedSession(2, islands=1)
    s.dtype = "bf16"
    d = DiLoCo([x], s, outer_lr=1.0, momentum=0.0)
    step = torch.tensor([1.0 + 2 ** -10, 3.0])       # 1 + 2^-10 is not a bf16
    x.add_(step)
    s.announce(0)
    d.step()
    assert s.sent[0].dtype == torch.bfloat16
    assert torch.equal(s.sent[0].float(), -torch.tensor([1.0, 3.0]))
    s.finish(0, s.sent[0].float())
    d.poll()
    assert torch.equal(d.anchor, torch.tensor([1.0, 3.0]))
    assert torch.equal(x, step)                       # the residual is kept
    x.add_(torch.tensor([1.0 - 2 ** -10, 0.0]))
    s.announce(1)
    d.step()
    assert torch.equal(s.sent[1].float(), -torch.tensor([1.0, 0.0]))


def _run_rounds(d, s, x, script, start=0):
    for i, (prog, peer) in enumerate(script):
        r = start + i
        x.add_(prog)
        s.announce(r)
        while r not in s.sent:
            d.step()
        s.finish(r, s.sent[r].float() + peer)
        d.poll()


def _script(n, seed, k=4):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(-8, 8, (n,), generator=g).float() / 8,
             torch.randint(-8, 8, (n,), generator=g).float() / 4) for _ in range(k)]


def test_state_dict_round_trip_resumes_the_outer_state():
    n = 40
    x = torch.randn(n)
    s = _ScriptedSession(n, islands=2)
    d = DiLoCo([x], s, outer_lr=0.7, momentum=0.9, local_steps=2)
    _run_rounds(d, s, x, _script(n, 1))
    d.step()                                      # one local step counted
    buf = io.BytesIO()
    torch.save({"model": x.clone(), "outer": d.state_dict()}, buf)
    buf.seek(0)
    ck = torch.load(buf)
    # a fresh process: other parameters, a new optimizer, then the checkpoint
    y = torch.randn(n)
    s2 = _ScriptedSession(n, islands=2)
    e = DiLoCo([y], s2, outer_lr=0.7, momentum=0.9, local_steps=2)
    assert not torch.equal(e.anchor, d.anchor)
    y.copy_(ck["model"])
    e.load_state_dict(ck["outer"])
    assert e.since == 1 and e.outer_steps == d.outer_steps
    # both continue on the same rounds: bit for bit the same
    more = _script(n, 2)
    s.announced.clear()
    _run_rounds(d, s, x, more, start=10)
    _run_rounds(e, s2, y, more, start=10)
    assert torch.equal(d.anchor, e.anchor) and torch.equal(d.mom, e.mom)
    assert torch.equal(x, y)
    assert d.outer_steps == e.outer_steps == 8
    with pytest.raises(ValueError, match="40"):
        DiLoCo([torch.zeros(n)], _ScriptedSession(n)).load_state_dict(
            {"anchor": torch.zeros(3), "momentum": torch.zeros(3), "outer_steps": 0, "since": 0})


def test_the_staged_path_gives_the_same_result():
    """The path non-CPU tensors take (host blocks through a staging buffer,
    several blocks per tensor, a float64 parameter) against the direct one."""
    def run(stage, block):
        ps = [torch.arange(30, dtype=torch.float32).reshape(5, 6) / 4,
              torch.arange(7, dtype=torch.float64) / 2]
        s = _ScriptedSession(37, islands=2)
        d = DiLoCo(ps, s, outer_lr=0.7, momentum=0.9, stage=stage, block_elems=block)
        for i, (prog, peer) in enumerate(_script(37, 5)):
            ps[0].add_(prog[:30].view(5, 6))
            ps[1].add_(prog[30:].double())
            s.announce(i)
            d.step()
            s.finish(i, s.sent[i] + peer)
            d.poll()
        return flat([p.float() for p in ps]), d.anchor
    x0, a0 = run(False, 1 << 20)
    x1, a1 = run(True, 4)
    assert torch.equal(a0, a1) and torch.equal(x0, x1)


def test_host_memory():
    """Outer state and buffers: about 4x the fp32 model with one bf16
    contribution in flight (today's Averager, delta mode, two rounds in
    flight: 12x, counted the same way)."""
    n = 10000
    x = torch.zeros(n)
    s = _ScriptedSession(n, islands=2)
    s.dtype = "bf16"
    d = DiLoCo([x], s, max_inflight=1)
    s.announce(0)
    x.add_(1.0)
    d.step()
    assert len(d.flights) == 1
    assert d.host_bytes() == (3 * 4 + 2) * n             # anchor, mom, out, sent
    a = Averager([torch.zeros(n)], _ScriptedSession(n), mode="delta")
    s2 = a.s
    s2.announce(0)
    a.step()
    s2.announce(1)
    a.step()
    held = [a.flat, a.out, a.anchor, a.moved, a.chunk_of]
    held += [t for f in a.inflight for t in (f.sent, f.anchor, f.moved)]
    avg_bytes = sum(t.numel() * t.element_size() for t in held)
    assert avg_bytes == 12 * 4 * n


def test_bad_configurations_are_refused():
    s = _ScriptedSession(10)
    with pytest.raises(ValueError, match="10 elements"):
        DiLoCo([torch.zeros(11)], s)
    with pytest.raises(ValueError, match="contiguous"):
        DiLoCo([torch.zeros(5, 2).t()], s)
    with pytest.raises(ValueError, match="max_inflight"):
        DiLoCo([torch.zeros(10)], s, max_inflight=4)
    s.dtype = "int32"
    with pytest.raises(ValueError, match="bf16 or fp32"):
        DiLoCo([torch.zeros(10)], s)


# -- against loopback edges ---------------------------------------------------

def _sessions(edges, n_islands, dtype="bf16"):
    out = []
    for k in range(n_islands):
        s = isthmus.Session(job=1, island=k, n_islands=n_islands, elems=edges.elems,
                            edge=("127.0.0.1", edges.ports[k]), bind=("127.0.0.1", 0),
                            dtype=dtype, auth=False, grace=0.0)
        edges.register(k, s.local_port)
        out.append(s)
    return out


def _just_after_a_round_starts(ss, timeout=5.0):
    """Wait for the next ROUND at every session: sends made at once then
    meet in it."""
    seen = [s.counters()["rounds_announced"] for s in ss]
    end = time.monotonic() + timeout
    while any(s.counters()["rounds_announced"] == n for s, n in zip(ss, seen)):
        assert time.monotonic() < end, "no ROUND from the loopback edges"
        for s in ss:
            s.poll(timeout=0.002)


def _progress(k, i, n):
    g = torch.Generator().manual_seed(100 * k + i)
    return torch.randint(-16, 16, (n,), generator=g).float() / 16


def test_exact_global_sum_over_loopback_edges_gives_every_island_one_anchor():
    N, n = 3, 1030
    with LoopbackEdges(N, n, period=1.0) as edges:
        ss = _sessions(edges, N)
        x0 = torch.randint(-20, 20, (n,), generator=torch.Generator().manual_seed(7)).float()
        xs = [x0.clone() for _ in range(N)]
        ds = [DiLoCo([xs[k]], ss[k], outer_lr=0.7, momentum=0.9) for k in range(N)]
        wait_announced(ss)
        _just_after_a_round_starts(ss)
        t0 = time.time_ns()             # the round started at most 1 s before
        for k in range(N):
            xs[k].add_(_progress(k, 0, n))
            ds[k].step()
        for dd in ds:
            assert dd.flush(timeout=10), dd.stats
        t1 = time.time_ns()
        for dd in ds:
            # the round's time, its start to its end at the island: within
            # the time the test waited for it, from the round's start on
            assert dd.stats["rounds_timed"] == dd.stats["applied"] == 1, dd.stats
            assert 0 < dd.stats["round_ms_sum"] <= (t1 - t0) / 1e6 + 1000, dd.stats
        # the islands that got their contribution into the round (on a
        # loaded machine one may miss it and take the round as a listener)
        senders = [k for k in range(N) if ds[k].stats["sent"] == 1]
        assert len(senders) >= 2, [dd.stats for dd in ds]
        mean = sum(-_progress(k, 0, n) for k in senders) / len(senders)
        want, _ = reference(x0, [mean], 0.7, 0.9)
        for k in range(N):
            assert ds[k].stats["applied"] == 1, ds[k].stats
            assert torch.equal(ds[k].anchor, ds[0].anchor)
            assert torch.allclose(ds[k].anchor, want, rtol=0, atol=1e-5)
        for k in senders:
            assert torch.equal(xs[k], xs[senders[0]])
            assert torch.allclose(xs[k], want, rtol=0, atol=1e-5)
        for s in ss:
            s.close()


def test_thread_loses_nothing_with_steps_of_6T():
    """Steps of 6 T (the library keeps 4 rounds): the thread joins every
    round and takes every result; outer_lr 1 and no momentum make the
    anchor x0 + the mean of every island's total progress."""
    N, n, T, steps = 2, 700, 0.3, 3
    with LoopbackEdges(N, n, period=T) as edges:
        ss = _sessions(edges, N)
        x0 = torch.zeros(n)
        xs = [x0.clone() for _ in range(N)]
        sums = [[] for _ in range(N)]
        ds = [DiLoCo([xs[k]], ss[k], outer_lr=1.0, momentum=0.0, thread=True,
                     on_result=lambda r, sent, s, res, k=k: sums[k].append((r, s.clone())))
              for k in range(N)]
        wait_announced(ss)

        def train(k):
            for i in range(steps):
                xs[k].add_(_progress(k, i, n))
                ds[k].step()
                time.sleep(6 * T)                 # the compute step
        ts = [threading.Thread(target=train, args=(k,)) for k in range(N)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        total = sum(_progress(k, i, n) for k in range(N) for i in range(steps)) / N
        # a thread starved past a round's cut (a loaded machine) takes that
        # round without joining it: a mean over fewer islands, the same on
        # both, but not the closed form below
        joined = all(d.stats["listened"] == 0 and d.stats["partial"] == 0 for d in ds)
        # every island's last contribution may go out in a different round:
        # wait until every island's thread has applied them all
        end = time.monotonic() + 10
        while not (all(torch.equal(d.anchor, x0 + total) for d in ds) or
                   not joined and all(torch.equal(d.anchor, ds[0].anchor) for d in ds)
                   and not any(f.sent is not None for d in ds for f in d.flights)):
            assert time.monotonic() < end, [d.stats for d in ds]
            time.sleep(0.01)
            joined = all(d.stats["listened"] == 0 and d.stats["partial"] == 0 for d in ds)
        for d in ds:
            with d:
                pass                              # flush and stop the thread
            assert d._thread is None
            assert not [f for f in d.flights if f.sent is not None]
        for k in range(N):
            st = ds[k].stats
            assert st["lost"] == 0 and st["send_errors"] == 0, st
            assert st["sent"] >= steps, st     # and zeros on the rounds between
            assert st["zeros_sent"] > 0 and st["empty"] > 0, st
            assert ds[k].outer_steps >= steps, st
            assert torch.equal(ds[k].anchor, ds[0].anchor), k
            assert torch.equal(xs[k], ds[k].anchor), k
            if joined:
                assert torch.equal(ds[k].anchor, x0 + total), k
        # one sum per round, the same on both islands (every round complete)
        by_round = [dict(sums[k]) for k in range(N)]
        common = set(by_round[0]) & set(by_round[1])
        assert len(common) >= steps
        for r in common:
            assert torch.equal(by_round[0][r], by_round[1][r]), r
        for s in ss:
            s.close()


def test_rotating_cliques_each_island_steps_on_its_clique_mean():
    """Rotating cliques of three (9 islands): each island's outer step
    takes the mean over the islands its result names (its clique, when
    complete), and islands of one clique share one anchor."""
    from isthmus.loopback import triangles
    N, n = 9, 400
    with LoopbackEdges(N, n, period=1.0, cliques=triangles(9)) as edges:
        ss = _sessions(edges, N)
        x0 = torch.randint(-20, 20, (n,), generator=torch.Generator().manual_seed(8)).float()
        xs = [x0.clone() for _ in range(N)]
        seen = {k: [] for k in range(N)}
        ds = [DiLoCo([xs[k]], ss[k], outer_lr=0.7, momentum=0.9,
                     on_result=lambda r, sent, s, res, k=k: seen[k].append((r, res)))
              for k in range(N)]
        wait_announced(ss)
        for k in range(N):
            xs[k].add_(_progress(k, 0, n))
            ds[k].step()
        for d in ds:
            assert d.flush(timeout=10), d.stats
        for k in range(N):
            means = []
            for r, res in seen[k]:
                # the islands whose contributions the result names: each
                # sent -progress once (a round nobody sent to is empty)
                who = [j for j in range(N) if res.bitmap >> j & 1]
                if not who:
                    continue
                clique = next(c for c in triangles(9)(r) if c >> k & 1)
                assert res.bitmap & ~clique == 0, (k, r, bin(res.bitmap))
                if res.complete and res.self_sent:
                    assert res.bitmap == clique, (k, r, bin(res.bitmap))
                means.append(sum(-_progress(j, 0, n) for j in who) / len(who))
            assert means, k
            want, _ = reference(x0, means, 0.7, 0.9)
            assert torch.allclose(ds[k].anchor, want, rtol=0, atol=1e-5), k
        for s in ss:
            s.close()


def test_wait_is_synchronous_diloco():
    """wait=True: every step that sends returns with its round applied and
    the parameters on the new anchor, one anchor on both islands; when the
    islands met in every round (both complete), the SGD reference's. (On a
    loaded machine one island may send to the next round; each then also
    takes the other's round; a round one island's contribution reached
    too late for the other then splits the anchors, the limit doc/torch.md
    states, and the test says so as a skip instead of a pass.)"""
    N, n = 2, 300
    with LoopbackEdges(N, n, period=1.0) as edges:
        ss = _sessions(edges, N)
        x0 = torch.zeros(n)
        xs = [x0.clone() for _ in range(N)]
        ds = [DiLoCo([xs[k]], ss[k], outer_lr=0.7, momentum=0.9, wait=True, local_steps=2)
              for k in range(N)]
        wait_announced(ss)
        _just_after_a_round_starts(ss)
        means = []
        for i in range(2):
            for k in range(N):
                xs[k].add_(_progress(k, i, n))
            steps = [threading.Thread(target=lambda d=d: (d.step(), d.step())) for d in ds]
            for t in steps:
                t.start()
            for t in steps:
                t.join()
            means.append(sum(-_progress(k, i, n) for k in range(N)) / N)
            for k in range(N):
                assert ds[k].stats["sent"] == i + 1, ds[k].stats
                assert not [f for f in ds[k].flights if f.sent is not None], ds[k].stats
                # on the anchor, but for the fp32 rounding of anchor + step
                # that the next contribution carries (error feedback)
                assert torch.allclose(xs[k], ds[k].anchor, rtol=0, atol=1e-6)
        for d in ds:
            d.flush(timeout=5)
        met = all(d.stats["complete"] == d.stats["applied"] == 2 for d in ds)
        for s in ss:
            s.close()
    if not met:
        pytest.skip("the islands did not meet in every round (loaded host): "
                    "partial rounds split the anchors (doc/torch.md, 'Limit'); "
                    "stats %r %r" % (ds[0].stats, ds[1].stats))
    assert torch.equal(ds[1].anchor, ds[0].anchor)
    want, _ = reference(x0, means, 0.7, 0.9)
    assert torch.allclose(ds[0].anchor, want, rtol=0, atol=1e-5)


def test_an_island_that_did_not_send_takes_its_peers_round():
    """Island 1 is between contributions (H = 100): it still takes the
    round island 0 sent to, and both land on one anchor, SGD's step on
    island 0's pseudo-gradient (the only contributor either result names)."""
    n = 300
    with LoopbackEdges(2, n, period=0.3) as edges:
        ss = _sessions(edges, 2)
        x0 = torch.zeros(n)
        xs = [x0.clone(), x0.clone()]
        ds = [DiLoCo([xs[0]], ss[0], outer_lr=0.7, momentum=0.9),
              DiLoCo([xs[1]], ss[1], outer_lr=0.7, momentum=0.9, local_steps=100)]
        wait_announced(ss)
        xs[0].add_(_progress(0, 0, n))
        ds[0].step()
        ds[1].step()
        assert ds[0].stats["sent"] == 1 and ds[1].stats["sent"] == 0
        end = time.monotonic() + 10
        while ds[1].outer_steps == 0 or ds[0].flights:
            assert time.monotonic() < end, [d.stats for d in ds]
            ds[0].poll(timeout=0.01)
            ds[1].step()
        want, _ = reference(x0, [-_progress(0, 0, n)], 0.7, 0.9)
        assert ds[1].stats["listened"] >= 1 and ds[0].stats["partial"] == 1
        assert torch.equal(ds[0].anchor, ds[1].anchor)
        assert torch.allclose(ds[1].anchor, want, rtol=0, atol=1e-6)
        assert torch.equal(xs[1], ds[1].anchor)          # moved by the anchor's step
        for s in ss:
            s.close()
