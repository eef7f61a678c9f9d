# SPDX-License-Identifier: BSD-3-Clause
"""isthmus.torch.Averager in an island of K ranks (torch.distributed, gloo
on 127.0.0.1, a port per run): the island contributes the ranks' mean,
each rank sends its chunk range through its own session (hosts=K,
host=rank), and every rank applies the island's whole result. First with
the scripted range sessions of test_torch_island (a chunk that lost the
peer's contribution is a mean of one), then with real sessions against
loopback edges (LoopbackEdges(hosts=K)). The expected parameters are
computed here from what each rank added."""
import multiprocessing
import socket
import time
import traceback

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from test_torch_island import (CE, ELEMS, ISLANDS, K, N, RangeSession,  # noqa: E402
                               lost_chunk, peer, run_island_ranks)

ROUNDS = 3


def progress(rank, r):
    g = torch.Generator().manual_seed(30 + 10 * rank + r)
    return torch.randint(-8, 8, (N,), generator=g).float() / 8


def _free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def _spawn(target, n, *args):
    """Run @target(rank, port, queue, *args) in @n processes; their puts."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    ps = [ctx.Process(target=target, args=(k, port, q) + args) for k in range(n)]
    for p in ps:
        p.start()
    got = {}
    try:
        for _ in range(n):
            rank, err, *rest = q.get(timeout=120)
            assert err is None, "rank %d:\n%s" % (rank, err)
            got[rank] = rest
    finally:
        for p in ps:
            p.join(timeout=30)
    assert all(p.exitcode == 0 for p in ps)
    return got


def _range_worker(rank, port, queue):
    try:
        from isthmus.torch import Averager
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                                rank=rank, world_size=K)
        x = torch.arange(N, dtype=torch.float32) / 2
        s = RangeSession(K, rank)
        sums = {}
        avg = Averager([x], s, mode="params", max_inflight=1, group=dist.group.WORLD,
                       on_result=lambda r, sent, out, res: sums.update(
                           {r: (sent.tolist(), out.tolist(), list(res.chunk_bitmaps))}))
        for r in range(ROUNDS):
            x.add_(progress(rank, r))
            s.announce(r)
            avg.step()                  # applies round r - 1, sends to r
            assert avg.flush(timeout=5)
        queue.put((rank, None, x.tolist(), sums, avg.stats))
        dist.destroy_process_group()
    except BaseException:
        queue.put((rank, traceback.format_exc(), None, None, None))


def test_ranks_send_their_ranges_of_the_island_mean_and_land_on_one_average():
    got = _spawn(_range_worker, K)
    ranges = [RangeSession(K, k).elem_range for k in range(K)]
    x = [torch.arange(N, dtype=torch.float32) / 2 for _ in range(K)]
    for r in range(ROUNDS):
        for k in range(K):
            x[k] = x[k] + progress(k, r)
        island = sum(x) / K
        # what the edge sums: each rank's range of the island's mean, plus
        # the peer island's; chunk lost_chunk(r) has the island alone
        total = island + peer(r)
        count = torch.full((N,), 2.0)
        c = lost_chunk(r)
        if c is not None:
            total[c * CE:(c + 1) * CE] = island[c * CE:(c + 1) * CE]
            count[c * CE:(c + 1) * CE] = 1
        for k in range(K):
            sent, out, bitmaps = got[k][1][r]
            assert torch.equal(torch.tensor(sent), island), (r, k)
            # every rank sees the island's whole sum and every chunk's bitmap
            assert torch.equal(torch.tensor(out), total), (r, k)
            assert bitmaps == [1 if i == c else 3 for i in range(len(bitmaps))], (r, k)
        x = [total / count for _ in range(K)]
    for k in range(K):
        assert torch.allclose(torch.tensor(got[k][0]), x[k], rtol=0, atol=1e-6), k
        stats = got[k][2]
        assert stats["applied"] == ROUNDS and stats["partial"] == 1, stats
    assert ranges[0][1] + ranges[1][1] == N


# -- real sessions (hosts=K) against loopback edges ---------------------------

T = 0.6


def island_progress(i, k, r, same):
    """What rank k of island i adds before round r (@same: every rank of
    an island the same, as data-parallel ranks are)."""
    g = torch.Generator().manual_seed(100 * i + (0 if same else 10 * k) + r)
    return torch.randint(-8, 8, (ELEMS,), generator=g).float() / 8


def _island_worker(i, k, port, edge_port, ports, results, mode, dtype, same):
    try:
        import isthmus
        from isthmus.torch import Averager
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                                rank=k, world_size=K)
        s = isthmus.Session(job=1, island=i, n_islands=ISLANDS, elems=ELEMS,
                            edge=("127.0.0.1", edge_port), bind=("127.0.0.1", 0),
                            dtype=dtype, auth=False, grace=0.0, hosts=K, host=k)
        ports.put((i, k, s.local_port))
        x = torch.zeros(ELEMS)
        avg = Averager([x], s, mode=mode, max_inflight=1, group=dist.group.WORLD)
        for r in range(2):
            x.add_(island_progress(i, k, r, same))
            sent = avg.stats["sent"]
            end = time.monotonic() + 30
            while avg.stats["sent"] == sent:        # the same on every rank
                assert time.monotonic() < end, "no round to send to"
                s.poll(timeout=0.01)
                avg.step()
            assert avg.flush(timeout=10)
        results.put((i, k, None, x.tolist(), avg.stats))
        s.close()
        dist.destroy_process_group()
    except BaseException:
        results.put((i, k, traceback.format_exc(), None, None))


@pytest.mark.parametrize("mode,dtype,same", [("delta", "fp32", False), ("params", "bf16", True)])
def test_islands_of_two_ranks_over_loopback_edges(mode, dtype, same):
    """Two islands of two ranks (four processes, a gloo group per island),
    each rank a session of hosts=2 at the loopback edges: after every
    round each rank holds the mean over all four ranks' parameters; ranks
    that stepped alike (data parallel) are identical bit for bit."""
    from isthmus.loopback import LoopbackEdges
    edges = LoopbackEdges(ISLANDS, ELEMS, period=T, hosts=K)
    got = {ik: (torch.tensor(x), stats) for ik, (x, stats)
           in run_island_ranks(edges, _island_worker, (mode, dtype, same)).items()}
    assert edges.stats["wrong_host"] == 0
    x = torch.zeros(ELEMS)
    for r in range(2):
        x = sum(x + island_progress(i, k, r, same) for i in range(ISLANDS) for k in range(K)) \
            / (ISLANDS * K)
    # bf16 on the wire: each island's mean rounded once (8 bits)
    tol = 1e-5 if dtype == "fp32" else 2.0 ** -8 * 4
    for (i, k), (xi, stats) in got.items():
        assert stats["applied"] == 2 and stats["complete"] == 2, (i, k, stats)
        assert torch.allclose(xi, x, rtol=0, atol=tol), (i, k, float((xi - x).abs().max()))
        if same:
            assert torch.equal(xi, got[i, 0][0]), (i, k)
