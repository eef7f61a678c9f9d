# SPDX-License-Identifier: BSD-3-Clause
"""isthmus.torch.DiLoCo in an island of K ranks (torch.distributed, gloo on
127.0.0.1, a port per run): each rank sends its chunk range of the ranks'
mean contribution through its own session and every rank takes the same
outer step. The sessions are scripted stand-ins of a session opened with
hosts=K, host=rank (the edge's sum is the island's range plus a peer
island's values, fixed here); the expected anchors are computed here from
the progress each rank made, with torch.optim.SGD(nesterov=True)."""
import multiprocessing
import socket
import time
import traceback

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

N, CE, K, ROUNDS = 23, 5, 2, 3      # 5 chunks: ranges 0-1 (0..9) and 2-4 (10..22)
LR, MU = 0.5, 0.5


class _Round:
    def __init__(self, r):
        now = time.time_ns()
        self.round, self.start_ns, self.period_ns = r, now, 10**9
        self.deadline_ns = now + 10**10


class _Result:
    def __init__(self, bitmaps):
        self.chunk_bitmaps, self.complete = bitmaps, all(b == 3 for b in bitmaps)


def peer(r):
    """The other island's contribution to round @r (all elements)."""
    g = torch.Generator().manual_seed(50 + r)
    return torch.randint(-8, 8, (N,), generator=g).float() / 4


def progress(rank, r):
    g = torch.Generator().manual_seed(10 * rank + r)
    return torch.randint(-8, 8, (N,), generator=g).float() / 8


def lost_chunk(r):
    """Round 1 lost the peer's contribution to chunk 4 (a partial chunk)."""
    return 4 if r == 1 else None


class RangeSession:
    """A session of host @host of @hosts: send() takes and result() writes
    the host's element range; bitmaps cover its chunk range."""
    dtype = "fp32"

    def __init__(self, hosts, host):
        self.elems, self.chunk_elems, self.hosts, self.host = N, CE, hosts, host
        self.n_chunks = (N + CE - 1) // CE
        fc = host * self.n_chunks // hosts
        lc = (host + 1) * self.n_chunks // hosts
        self.chunk_range = (fc, lc - fc)
        self.elem_range = (fc * CE, min(N, lc * CE) - fc * CE)
        self.announced, self.sent = [], {}

    def announce(self, r):
        self.announced.append(_Round(r))

    def wait_round(self, timeout=10.0):
        import isthmus
        if not self.announced:
            raise isthmus.Timeout(110, "no ROUND")
        return self.announced.pop(0)

    def send(self, r, a):
        assert a.numel() == self.elem_range[1]
        self.sent[r] = a.clone()

    def ready(self, r, timeout=0.0):
        return r in self.sent

    def result(self, r, out, timeout=10.0):
        first, count = self.elem_range
        q = peer(r)[first:first + count]
        fc, nc = self.chunk_range
        bitmaps = [3] * nc
        c = lost_chunk(r)
        if c is not None and fc <= c < fc + nc:
            bitmaps[c - fc] = 1
            q[(c - fc) * CE:(c - fc + 1) * CE] = 0
        out.copy_(self.sent[r] + q)
        return _Result(bitmaps)


def _worker(rank, port, queue):
    try:
        from isthmus.torch import DiLoCo
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                                rank=rank, world_size=K)
        x = torch.arange(N, dtype=torch.float32) / 2
        s = RangeSession(K, rank)
        d = DiLoCo([x], s, outer_lr=LR, momentum=MU, group=dist.group.WORLD)
        for r in range(ROUNDS):
            x.add_(progress(rank, r))
            s.announce(r)
            d.step()
        assert d.flush(timeout=5)
        # plain lists: a tensor crosses a Queue as a shared-memory handle
        # that dies with this process
        queue.put((rank, None, d.anchor.tolist(), x.tolist(),
                   {r: t.tolist() for r, t in s.sent.items()}, d.stats))
        dist.destroy_process_group()
    except BaseException:
        queue.put((rank, traceback.format_exc(), None, None, None, None))


def _free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def test_two_ranks_exchange_their_ranges_and_take_one_outer_step():
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    ps = [ctx.Process(target=_worker, args=(k, port, q)) for k in range(K)]
    for p in ps:
        p.start()
    got = {}
    for _ in range(K):
        rank, err, anchor, x, sent, stats = q.get(timeout=120)
        assert err is None, "rank %d:\n%s" % (rank, err)
        got[rank] = (torch.tensor(anchor), torch.tensor(x),
                     {r: torch.tensor(t) for r, t in sent.items()}, stats)
    for p in ps:
        p.join(timeout=30)
        assert p.exitcode == 0
    # the expected run, computed here: rank r's contribution is -progress
    # (it lands on the anchor after each round), the island sends the ranks'
    # mean, the edge adds the peer's, and a chunk the peer missed is a mean
    # of one
    a = (torch.arange(N, dtype=torch.float32) / 2).requires_grad_(True)
    opt = torch.optim.SGD([a], lr=LR, momentum=MU, nesterov=True)
    ranges = [RangeSession(K, k).elem_range for k in range(K)]
    for r in range(ROUNDS):
        island = sum(-progress(k, r) for k in range(K)) / K
        for k, (first, count) in enumerate(ranges):
            assert torch.equal(got[k][2][r], island[first:first + count]), (r, k)
        m = (island + peer(r)) / 2
        c = lost_chunk(r)
        if c is not None:
            m[c * CE:(c + 1) * CE] = island[c * CE:(c + 1) * CE]
        a.grad = m
        opt.step()
    for k in range(K):
        anchor, x, _, stats = got[k]
        assert torch.equal(anchor, a.detach()), k
        assert torch.equal(x, a.detach()), k
        assert stats["applied"] == ROUNDS and stats["partial"] == (1 if k == 1 else 0), stats


# -- real sessions (hosts=K) against loopback edges ---------------------------

ISLANDS, ELEMS, T = 2, 3 * 358 + 40, 1.0      # 4 chunks: ranges 0-1 and 2-3


def island_progress(i, k, r):
    g = torch.Generator().manual_seed(100 * i + 10 * k + r)
    return torch.randint(-8, 8, (ELEMS,), generator=g).float() / 8


def _island_worker(i, k, port, edge_port, ports, results):
    try:
        import isthmus
        from isthmus.torch import DiLoCo
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                                rank=k, world_size=K)
        s = isthmus.Session(job=1, island=i, n_islands=ISLANDS, elems=ELEMS,
                            edge=("127.0.0.1", edge_port), bind=("127.0.0.1", 0),
                            dtype="bf16", auth=False, grace=0.0, hosts=K, host=k)
        ports.put((i, k, s.local_port))
        end = time.monotonic() + 60
        while not s.counters()["rounds_announced"]:
            assert time.monotonic() < end, "no ROUND"
            s.poll(timeout=0.01)
        x = torch.zeros(ELEMS)
        d = DiLoCo([x], s, outer_lr=0.7, momentum=0.9, wait=True, group=dist.group.WORLD)
        for r in range(2):
            x.add_(island_progress(i, k, r))
            d.step()
        results.put((i, k, None, d.anchor.tolist(), x.tolist(), d.stats))
        s.close()
        dist.destroy_process_group()
    except BaseException:
        results.put((i, k, traceback.format_exc(), None, None, None))


def run_island_ranks(edges, target, extra=()):
    """ISLANDS islands of K rank processes at @edges, rank k of island i
    running target(i, k, port, edge_port, ports, results, *extra) (port:
    its island's gloo rendezvous); each puts (i, k, session port) on
    ports, then (i, k, error or None, results...) on results. The edges'
    clock starts once every host listens. {(i, k): results}, every
    process exited 0."""
    ctx = multiprocessing.get_context("spawn")
    ports, results = ctx.Queue(), ctx.Queue()
    procs = []
    got = {}
    try:
        for i in range(ISLANDS):
            port = _free_port()
            procs += [ctx.Process(target=target,
                                  args=(i, k, port, edges.ports[i], ports, results) + extra)
                      for k in range(K)]
        for p in procs:
            p.start()
        for _ in range(ISLANDS * K):
            i, k, lp = ports.get(timeout=120)
            edges.register(i, lp, host=k)
        # round 0 once every host listens (the stand-in's clock starts here)
        edges.epoch = time.time_ns() + int(0.2 * edges.period * 1e9)
        edges.start()
        for _ in range(ISLANDS * K):
            i, k, err, *rest = results.get(timeout=120)
            assert err is None, "island %d rank %d:\n%s" % (i, k, err)
            got[i, k] = rest
    finally:
        for p in procs:
            p.join(timeout=30)
        edges.stop()
    assert all(p.exitcode == 0 for p in procs)
    return got


def test_islands_of_two_ranks_over_loopback_edges_are_exact():
    """Two islands of two ranks (four processes, a gloo group per island),
    each rank a session of hosts=2 at the loopback edges: synchronous
    DiLoCo, every rank of both islands on one anchor, the SGD reference's."""
    from isthmus.loopback import LoopbackEdges
    got = {ik: (torch.tensor(anchor), torch.tensor(x), stats) for ik, (anchor, x, stats)
           in run_island_ranks(LoopbackEdges(ISLANDS, ELEMS, period=T, hosts=K),
                               _island_worker).items()}
    means = [sum(-island_progress(i, k, r) for i in range(ISLANDS) for k in range(K))
             / (ISLANDS * K) for r in range(2)]
    a = torch.zeros(ELEMS, requires_grad=True)
    opt = torch.optim.SGD([a], lr=0.7, momentum=0.9, nesterov=True)
    for m in means:
        a.grad = m
        opt.step()
    a0 = got[0, 0][0]
    for (i, k), (anchor, x, stats) in got.items():
        assert stats["applied"] == 2 and stats["complete"] == 2, (i, k, stats)
        assert torch.equal(anchor, a0), (i, k)
        assert torch.allclose(anchor, a.detach(), rtol=0, atol=1e-5), (i, k)
        assert torch.allclose(x, anchor, rtol=0, atol=1e-5), (i, k)
