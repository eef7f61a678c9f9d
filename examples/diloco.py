# SPDX-License-Identifier: BSD-3-Clause
"""The baselines of examples/train.py --model lm, as their users run them:
synchronous data parallel (`ddp`), DiLoCo (`diloco`: H local AdamW steps,
an exact all-reduce of the pseudo-gradient, an outer Nesterov step) and its
overlapped one-step-delayed "eager" form (`diloco-overlap`), each over a
host all-reduce: torch.distributed's gloo or Open MPI through mpi4py.

DiLoCo (arXiv 2311.08455), per island i, outer step t:
    g_i = anchor - x_i                  (the pseudo-gradient of H inner steps)
    g   = (1/N) sum_i g_i               (exact all-reduce)
    m   = mu * m + g;  anchor -= lr * (g + mu * m)     (Nesterov, fp32 state)
    x_i = anchor
Eager one-step-delayed (arXiv 2502.12996): the all-reduce of step t runs
behind the next H inner steps; step t applies, in place of the global mean
it does not have yet, its own fresh g_i / N plus the others' share of the
previous step's mean, (g_bar(t-1) - g_i(t-1) / N). Each island's anchor
then differs from the others' by its own recent progress / N.
"""
import queue
import threading
import time

import torch


class GlooComm:
    """Sum all-reduce with torch.distributed (gloo)."""

    name = "gloo"

    def __init__(self, master, rank, world, ifname=None):
        import datetime
        import os
        import torch.distributed as dist
        if ifname:
            os.environ["GLOO_SOCKET_IFNAME"] = ifname
        dist.init_process_group("gloo", init_method="tcp://" + master, rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=300))
        self.dist, self.rank, self.world = dist, rank, world

    def allreduce(self, t):
        self.dist.all_reduce(t)

    def barrier(self):
        self.dist.barrier()

    def close(self):
        self.dist.destroy_process_group()


class MpiComm:
    """Sum all-reduce with Open MPI (mpi4py, MPI_Allreduce in place): the
    collective algorithm is Open MPI's, as the MCA parameters of mpirun
    choose it (train.py net: the tuned ring in shortest-ring order)."""

    name = "mpi"

    def __init__(self):
        from mpi4py import MPI
        self.MPI, self.c = MPI, MPI.COMM_WORLD
        self.rank, self.world = self.c.Get_rank(), self.c.Get_size()

    def allreduce(self, t):
        self.c.Allreduce(self.MPI.IN_PLACE, t.numpy(), op=self.MPI.SUM)

    def barrier(self):
        self.c.Barrier()

    def close(self):
        pass


class Background:
    """One all-reduce at a time on a thread of its own, so that it runs
    behind the next inner steps (the blocking calls of gloo and mpi4py
    release the GIL, and so do torch's kernels). Only this thread calls the
    communicator while one is in flight."""

    def __init__(self, comm):
        self.comm, self.q, self.done = comm, queue.Queue(), queue.Queue()
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()
        self.busy = False

    def _run(self):
        while True:
            t = self.q.get()
            if t is None:
                return
            try:
                self.comm.allreduce(t)
                self.done.put(None)
            except Exception as e:          # handed to wait()
                self.done.put(e)

    def start(self, t):
        assert not self.busy
        self.busy = True
        self.q.put(t)

    def wait(self):
        """Blocks until the all-reduce in flight is done (the time it
        takes here is the time not hidden behind compute)."""
        if not self.busy:
            return
        e = self.done.get()
        self.busy = False
        if e is not None:
            raise e

    def close(self):
        self.wait()
        self.q.put(None)
        self.th.join()


def flat(params):
    return torch.cat([p.detach().reshape(-1) for p in params]).float()


def assign(params, x):
    off = 0
    with torch.no_grad():
        for p in params:
            p.copy_(x[off:off + p.numel()].view_as(p))
            off += p.numel()


class Baseline:
    """The communication of one baseline island: `after_backward()` (ddp:
    the gradient all-reduce) and `after_step()` (the DiLoCo family: every
    H inner steps an outer step). `comm_s` is the time spent blocked."""

    def __init__(self, mode, params, comm, H=1, outer_lr=0.7, momentum=0.9):
        self.mode, self.params, self.comm, self.n = mode, list(params), comm, comm.world
        self.H, self.lr, self.mu = H, outer_lr, momentum
        self.steps = self.outer = 0
        self.comm_s = 0.0
        self.bytes_sent = 0                 # payload per island handed to all-reduce
        self.anchor = flat(self.params)
        self.mom = torch.zeros_like(self.anchor)
        self.grad = torch.zeros_like(self.anchor)
        self.bg = Background(comm) if mode == "diloco-overlap" else None
        self.prev_local = self.prev_mean = None
        self.buf = None

    def after_backward(self):
        if self.mode != "ddp":
            return
        t0 = time.perf_counter()
        off = 0
        for p in self.params:
            self.grad[off:off + p.numel()] = p.grad.reshape(-1)
            off += p.numel()
        self.comm.allreduce(self.grad)
        self.bytes_sent += 4 * self.grad.numel()
        self.grad /= self.n
        off = 0
        for p in self.params:
            p.grad.copy_(self.grad[off:off + p.numel()].view_as(p))
            off += p.numel()
        self.comm_s += time.perf_counter() - t0

    def _outer_step(self, g):
        self.mom.mul_(self.mu).add_(g)
        self.anchor.sub_(self.lr * (g + self.mu * self.mom))
        assign(self.params, self.anchor)
        self.outer += 1

    def after_step(self):
        self.steps += 1
        if self.mode == "ddp" or self.steps % self.H:
            return
        t0 = time.perf_counter()
        g = self.anchor - flat(self.params)
        if self.mode == "diloco":
            self.comm.allreduce(g)
            self.bytes_sent += 4 * g.numel()
            self._outer_step(g / self.n)
        else:
            self.bg.wait()                  # the previous step's mean
            if self.buf is None:
                use = g                     # first step: nothing from the others yet
            else:
                mean = self.buf / self.n
                use = g / self.n + (mean - self.prev_local / self.n)
            self.prev_local = g.clone()
            self.buf = g.clone()
            self.bg.start(self.buf)
            self.bytes_sent += 4 * g.numel()
            self._outer_step(use)
        self.comm_s += time.perf_counter() - t0

    def close(self):
        t0 = time.perf_counter()
        if self.bg is not None:
            self.bg.close()
        self.comm_s += time.perf_counter() - t0

    def staleness(self):
        """Outer steps between a mean's making and its use: 1 when
        overlapped, 0 otherwise (ddp, diloco)."""
        return 1.0 if self.bg is not None and self.outer > 1 else 0.0
