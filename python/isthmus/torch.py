# SPDX-License-Identifier: BSD-3-Clause
"""Decentralised training over isthmus rounds with PyTorch.

:class:`Averager` exchanges an island's parameters with its clique every
round the edge announces, and pulls the island toward the clique average
when the round's result is in, without ever waiting for it::

    avg = isthmus.torch.Averager(model.parameters(), session, local_steps=4)
    for x, y in data:
        loss_fn(model(x), y).backward(); opt.step(); opt.zero_grad()
        avg.step()            # never blocks on the network

Each exchange sends either the parameters (``mode="params"``) or, local-SGD
style, the pseudo-gradient ``params - anchor`` (``mode="delta"``: what the
island learnt since the last agreed point; small numbers, so bf16 on the
wire loses little). A round's result is the clique sum; each chunk is
divided by the number of contributors actually summed into it (its
bitmap, self included), so a partial result is an average over fewer
islands, never a wrong one, and is applied as it is. Results come back
while the island keeps training: the island applies the *correction*
``target - sent`` of that round (``target`` = the clique average, or
``anchor_at_send + outer_lr * mean_delta``), scaled by ``blend``, so the
local steps taken since the send are kept. With several rounds in flight,
the corrections applied since a round was sent are taken out of its own
correction: they moved the island from a point the round never saw, and
adding both would pull the island past the average (with blend 1 the
island lands on the round's target plus its local steps since the send). Staleness is the age of the
average when it reaches the model, in rounds: (time applied - the round's
start) / T; ``behind`` counts the rounds this island sent meanwhile.
"""
import errno
import time

import torch

from . import Error, Timeout

__all__ = ["Averager", "flat_size"]


def flat_size(params):
    """Elements in a list of tensors, as the session's ``elems``."""
    return sum(p.numel() for p in params)


class _Flight:
    __slots__ = ("round", "sent", "anchor", "sent_at_index", "start_ns", "period_ns", "moved")

    def __init__(self, r, sent, anchor, index, moved):
        self.round, self.sent, self.anchor, self.sent_at_index = r.round, sent, anchor, index
        self.start_ns, self.period_ns = r.start_ns, r.period_ns
        self.moved = moved          # Averager.moved when sent


class Averager:
    """Average an island's parameters with its clique over isthmus.

    params       the model's parameters (tensors; float32, CPU)
    session      an isthmus.Session with elems = flat_size(params) and
                 dtype fp32 or bf16
    local_steps  H: optimiser steps between two exchanges (at least)
    mode         "params" or "delta" (pseudo-gradients against the anchor)
    blend        share of the correction applied (1: replace by the average)
    outer_lr     delta mode: step along the mean pseudo-gradient
    max_inflight rounds sent and not yet applied (at most 3: the library
                 keeps 4 rounds and one is needed for the next ROUND)
    on_result    called as on_result(round, sent, sum, result) before a
                 round is applied (sent: what this island contributed, as
                 summed; sum: the round's clique sum); for checks and logs
    """

    def __init__(self, params, session, local_steps=1, mode="params",
                 blend=1.0, outer_lr=1.0, max_inflight=2, on_result=None):
        self.params = [p for p in params]
        self.s = session
        self.n = flat_size(self.params)
        if self.n != session.elems:
            raise ValueError("session has %d elements, the parameters %d"
                             % (session.elems, self.n))
        if session.dtype not in ("fp32", "bf16"):
            raise ValueError("parameters are averaged in fp32 or bf16, not %s" % session.dtype)
        if mode not in ("params", "delta"):
            raise ValueError("mode must be 'params' or 'delta'")
        if not 1 <= max_inflight <= 3:
            raise ValueError("max_inflight must be 1..3")
        self.H, self.mode, self.blend, self.outer_lr = local_steps, mode, blend, outer_lr
        self.max_inflight = max_inflight
        self.on_result = on_result
        self.flat = torch.empty(self.n, dtype=torch.float32)
        self.out = torch.empty(self.n, dtype=torch.float32)
        self.anchor = self._gather() if mode == "delta" else None
        # every correction applied so far, summed: a round's own correction
        # leaves out those applied after it was sent
        self.moved = torch.zeros(self.n, dtype=torch.float32)
        # per element: which chunk it belongs to, to divide by its count
        ce = session.chunk_elems
        self.chunk_of = torch.arange(self.n) // ce
        self.inflight = []
        self.since = 0                 # local steps since the last send
        self.sends = 0
        # what a training loop reports
        self.stats = dict(sent=0, applied=0, complete=0, partial=0,
                          skipped_no_round=0, skipped_full=0, staleness_sum=0.0,
                          behind_sum=0,
                          contributors_sum=0, comm_s=0.0, send_errors=0, lost=0)

    # -- flat views ---------------------------------------------------------
    def _gather(self):
        return torch.cat([p.detach().reshape(-1) for p in self.params]).float()

    def _add(self, delta):
        off = 0
        with torch.no_grad():
            for p in self.params:
                k = p.numel()
                p.add_(delta[off:off + k].view_as(p).to(p.dtype))
                off += k

    # -- rounds -------------------------------------------------------------
    def _newest_round(self):
        """The newest announced round not yet used, whose deadline is ahead."""
        best = None
        while True:
            try:
                r = self.s.wait_round(timeout=0)
            except Timeout:
                break
            best = r
        if best is not None and best.deadline_ns <= time.time_ns():
            return None
        return best

    def _apply(self, f):
        res = self.s.result(f.round, self.out, timeout=0)
        if self.on_result is not None:
            self.on_result(f.round, f.sent, self.out, res)
        counts = torch.tensor([bin(b).count("1") for b in res.chunk_bitmaps],
                              dtype=torch.float32)
        per_elem = counts[self.chunk_of]
        mean = self.out / per_elem          # self is always in: counts >= 1
        if self.mode == "params":
            target = mean
            corr = target - f.sent
        else:
            target = f.anchor + self.outer_lr * mean
            corr = target - (f.anchor + f.sent)
            self.anchor = target
        corr = self.blend * (corr - (self.moved - f.moved))
        self._add(corr)
        self.moved += corr
        st = self.stats
        st["applied"] += 1
        st["complete" if res.complete else "partial"] += 1
        st["staleness_sum"] += (time.time_ns() - f.start_ns) / max(f.period_ns, 1)
        st["behind_sum"] += self.sends - f.sent_at_index - 1
        st["contributors_sum"] += float(counts.mean())
        return res

    def poll(self):
        """Apply every in-flight round that has ended, oldest first. A
        round whose slot a newer round took before it could be applied
        (the island was held up for several rounds) is counted as lost."""
        done = []
        while self.inflight:
            f = self.inflight[0]
            try:
                if not self.s.ready(f.round, timeout=0):
                    break
                done.append(self._apply(f))
            except Error as e:
                if e.errno != errno.ESTALE:
                    raise
                self.stats["lost"] += 1
            self.inflight.pop(0)
        return done

    def step(self):
        """Call after each optimiser step. Non-blocking: applies ended
        rounds, and every H steps sends to the newest announced round."""
        t0 = time.perf_counter()
        self.poll()
        self.since += 1
        if self.since >= self.H:
            if len(self.inflight) >= self.max_inflight:
                self.stats["skipped_full"] += 1
            else:
                r = self._newest_round()
                if r is None:
                    self.stats["skipped_no_round"] += 1
                else:
                    self._send(r)
        self.stats["comm_s"] += time.perf_counter() - t0

    def _send(self, r):
        x = self._gather()
        if self.mode == "params":
            sent, anchor = x, None
        else:
            sent, anchor = x - self.anchor, self.anchor.clone()
        if self.s.dtype == "bf16":
            # what the peers receive, and what the library sums for self
            sent = sent.to(torch.bfloat16).float()
        try:
            self.s.send(r.round, sent)
        except Error:
            self.stats["send_errors"] += 1
            return
        self.inflight.append(_Flight(r, sent, anchor, self.sends, self.moved.clone()))
        self.sends += 1
        self.since = 0
        self.stats["sent"] += 1

    def flush(self, timeout=5.0):
        """Wait for every in-flight round to end and apply it (at the end
        of training)."""
        end = time.monotonic() + timeout
        while self.inflight and time.monotonic() < end:
            try:
                self.s.ready(self.inflight[0].round, timeout=max(0.0, end - time.monotonic()))
            except Error as e:
                if e.errno != errno.ESTALE:
                    raise               # a stale round: poll() counts it lost
            self.poll()
        return not self.inflight

    def staleness(self):
        """Mean age, in rounds (T), of a clique average when applied."""
        a = self.stats["applied"]
        return self.stats["staleness_sum"] / a if a else 0.0
