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
import threading
import time

import torch

from . import Error, Timeout

__all__ = ["Averager", "DiLoCo", "flat_size"]


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


# -- DiLoCo ------------------------------------------------------------------

class _Out:
    """One contribution: the pseudo-gradient this island (this rank) put
    into a round, kept until the round is applied. ``sent`` is None for a
    round the island joined with zeros (no progress since the last send);
    ``round`` is None while it waits for the communication thread."""
    __slots__ = ("round", "sent", "start_ns", "period_ns", "index")

    def __init__(self, sent):
        self.round, self.sent, self.start_ns, self.period_ns, self.index = None, sent, 0, 1, 0


class DiLoCo:
    """The DiLoCo outer optimizer, its pseudo-gradient exchanged over isthmus.

    Every ``local_steps`` (H) calls of :meth:`step` the island computes its
    pseudo-gradient ``g = anchor - params`` (the progress since the last
    agreed point; the anchor is fp32 on the host) and puts it into an
    isthmus round. When the round's result is in, the mean pseudo-gradient
    ``m`` (the clique sum divided, chunk by chunk, by the contributors
    actually summed: a partial round is a mean over fewer islands) takes
    one outer step, Nesterov momentum as ``torch.optim.SGD(nesterov=True)``
    computes it::

        buf = momentum * buf + m          (buf: fp32, starts at 0)
        u   = m + momentum * buf          (nesterov; else u = buf)
        anchor -= outer_lr * u

    and the parameters move by the anchor's step plus this island's own
    contribution to that round: ``params += -outer_lr * u + g_own``. With
    nothing in flight and no local step since the send, that puts the
    parameters on the new anchor (synchronous DiLoCo); local steps taken
    while the round was in flight are kept on top of it (the overlapped,
    one-step-delayed form). The exchange is then:

    * **exact global sum**: an all-to-all schedule, every island applies
      the same sum, so every island's anchor and momentum are identical,
      bit for bit;
    * **rotating cliques**: each island applies its clique's mean, with the
      staleness of the rounds in flight (``max_inflight``).

    Contributions are measured against the anchor minus every contribution
    still in flight, so rounds in flight never count progress twice, the
    bf16 rounding of what was sent stays in the parameters and goes into
    the next contribution (error feedback), and the progress of a round
    that is lost (its slot reused) is sent again in the next one.

    params        the model's parameters: contiguous tensors on any device,
                  any floating dtype (the outer state is fp32 on the host;
                  non-CPU tensors are staged through pinned host blocks)
    session       an isthmus.Session, dtype "bf16" (the wire: 2 bytes per
                  element) or "fp32"; elems = flat_size(params)
    local_steps   H, steps between two contributions
    outer_lr      the outer learning rate (DiLoCo: 0.7)
    momentum      the outer momentum (DiLoCo: 0.9); 0 for plain averaging
                  (outer_lr=1, momentum=0 is local SGD: anchor += mean)
    nesterov      Nesterov momentum (DiLoCo) or heavy ball
    max_inflight  without the thread: contributions sent and not yet
                  applied (1..3; 1 with wait=True is synchronous DiLoCo)
    wait          without the thread: step() blocks after each send until
                  the round is applied (the exact synchronous algorithm)
    thread        a communication thread that joins every round the edge
                  announces (see every_round) and takes every result the
                  moment its round ends, so that steps longer than the
                  library's four round slots (4 T) lose nothing; the outer
                  step is then taken by the thread and the parameters are
                  moved in the next step()
    every_round   with the thread: join rounds with nothing queued with a
                  zero contribution (default True), so islands whose steps
                  fall on different rounds still meet; a round whose sum is
                  all zero (nobody progressed) takes no outer step
    on_result     on_result(round, sum, result), with the round's clique
                  sum (fp32, self included) before it is divided; checks
    block_elems   elements per block when reading and moving parameters
                  (bounds the temporaries and the pinned staging buffer)
    stage         force the staged (non-CPU) path for CPU tensors (tests)

    Call :meth:`step` after each optimiser step, :meth:`flush` at the end
    (or use it as a context manager), :meth:`state_dict` and
    :meth:`load_state_dict` with the model's checkpoint.
    """

    def __init__(self, params, session, local_steps=1, outer_lr=0.7, momentum=0.9,
                 nesterov=True, max_inflight=1, wait=False, thread=False,
                 every_round=True, on_result=None, block_elems=1 << 20, stage=False):
        self.params = [p for p in params]
        self.s = session
        self.n = flat_size(self.params)
        for p in self.params:
            if not p.is_floating_point() or not p.is_contiguous():
                raise ValueError("parameters must be contiguous floating-point tensors")
        if self.n != session.elems:
            raise ValueError("session has %d elements, the parameters %d"
                             % (session.elems, self.n))
        if session.dtype not in ("fp32", "bf16"):
            raise ValueError("pseudo-gradients go on the wire in bf16 or fp32, not %s"
                             % session.dtype)
        if not 1 <= max_inflight <= 3:
            raise ValueError("max_inflight must be 1..3")
        if local_steps < 1 or outer_lr <= 0 or not 0 <= momentum < 1:
            raise ValueError("need local_steps >= 1, outer_lr > 0, 0 <= momentum < 1")
        self.H, self.lr, self.mu, self.nesterov = local_steps, outer_lr, momentum, nesterov
        self.max_inflight, self.wait, self.every_round = max_inflight, wait, every_round
        self.on_result = on_result
        self.wire = torch.bfloat16 if session.dtype == "bf16" else torch.float32
        self.B = block_elems
        self._stage_all = stage
        self._stage = None                   # pinned host block, made on first use
        # (param, offset in it, offset in the flat vector, length), at most B long
        self.pieces = []
        off = 0
        for p in self.params:
            k = p.numel()
            for a in range(0, k, self.B):
                b = min(k, a + self.B)
                self.pieces.append((p, a, off + a, b - a))
            off += k
        # the outer state, fp32 on the host
        self.anchor = torch.empty(self.n, dtype=torch.float32)
        for p, a, fo, k in self.pieces:
            self.anchor[fo:fo + k].copy_(self._read(p, a, k))
        self.mom = torch.zeros(self.n, dtype=torch.float32)
        self.out = torch.empty(self.n, dtype=torch.float32)   # a round's sum
        self.flights = []       # _Out: queued (round None) or sent, oldest first
        self.since = 0
        self.sends = 0
        self.outer_steps = 0
        self.stats = dict(sent=0, applied=0, complete=0, partial=0, empty=0, zeros_sent=0,
                          skipped_no_round=0, skipped_full=0, skipped_late=0,
                          staleness_sum=0.0, behind_sum=0, contributors_sum=0.0,
                          comm_s=0.0, send_errors=0, lost=0)
        # with the thread: the parameters' move, waiting for step()
        self.pending = None
        self._lock = threading.Condition()
        self._thread = None
        self._stop = threading.Event()
        self._error = None
        if thread:
            self.pending = torch.zeros(self.n, dtype=torch.float32)
            self._thread = threading.Thread(target=self._run, name="isthmus-diloco",
                                            daemon=True)
            self._thread.start()

    # -- host blocks of the parameters -------------------------------------
    def _staged(self, p):
        return self._stage_all or p.device.type != "cpu"

    def _stage_buf(self):
        if self._stage is None:
            try:
                self._stage = torch.empty(self.B, dtype=torch.float32, pin_memory=True)
            except RuntimeError:        # no CUDA here: pinning needs a driver
                self._stage = torch.empty(self.B, dtype=torch.float32)
        return self._stage

    def _read(self, p, a, k):
        """Elements a..a+k of p as fp32 on the host (a view if it is one)."""
        v = p.detach().view(-1)[a:a + k]
        if not self._staged(p):
            return v if v.dtype == torch.float32 else v.float()
        st = self._stage_buf()[:k]
        st.copy_(v)                     # device to pinned host, waits
        return st

    def _move(self, p, a, k, d):
        """p[a:a+k] += d (fp32 host block)."""
        v = p.detach().view(-1)[a:a + k]
        if self._staged(p):
            st = self._stage_buf()[:k]
            st.copy_(d)                 # pinned host block, then to the device
            v.add_(st.to(p.device).to(p.dtype))
        else:
            v.add_(d if v.dtype == torch.float32 else d.to(v.dtype))

    def _write(self, p, a, k, t):
        """p[a:a+k] = t (fp32 host block)."""
        v = p.detach().view(-1)[a:a + k]
        if self._staged(p):
            st = self._stage_buf()[:k]
            st.copy_(t)
            v.copy_(st.to(p.device))
        else:
            v.copy_(t)

    def host_bytes(self):
        """Host memory this object holds for the model (bytes): the anchor,
        the momentum, the result buffer, the thread's pending move, the
        contributions in flight and the staging block."""
        t = [self.anchor, self.mom, self.out, self.pending, self._stage]
        t += [f.sent for f in self.flights]
        return sum(x.numel() * x.element_size() for x in t if x is not None)

    # -- contributions -----------------------------------------------------
    def _contribute(self, buf, skip):
        """buf = anchor - params - (every contribution in flight but @skip),
        in the wire dtype."""
        inflight = [f.sent for f in self.flights if f is not skip and f.sent is not None]
        for p, a, fo, k in self.pieces:
            g = self.anchor[fo:fo + k] - self._read(p, a, k)
            for s in inflight:
                g -= s[fo:fo + k]
            buf[fo:fo + k].copy_(g)

    def _queue(self):
        """With the thread: (re)compute the queued contribution. One at
        most waits for a round: a second one replaces it, measured against
        the same point, so it carries both."""
        f = next((f for f in self.flights if f.round is None), None)
        if f is None:
            f = _Out(torch.empty(self.n, dtype=self.wire))
            self.flights.append(f)
        elif f.sent is None:
            f.sent = torch.empty(self.n, dtype=self.wire)
        self._contribute(f.sent, f)

    def _send(self, r, f):
        """Send @f (None: zeros) to round @r; True if it went."""
        if r.deadline_ns <= time.time_ns():
            self.stats["skipped_late"] += 1
            return False
        data = self.out.zero_() if f is None or f.sent is None else f.sent
        try:
            self.s.send(r.round, data)
        except Error:
            self.stats["send_errors"] += 1
            return False
        if f is None:
            f = _Out(None)
            with self._lock:
                self.flights.append(f)
        if f.sent is None:
            self.stats["zeros_sent"] += 1
        f.round, f.start_ns, f.period_ns = r.round, r.start_ns, max(r.period_ns, 1)
        f.index = self.sends
        self.sends += 1
        self.stats["sent"] += 1
        return True

    # -- results -----------------------------------------------------------
    def _divide(self, res):
        """out /= contributors, chunk by chunk; the mean count."""
        counts = [bin(b).count("1") for b in res.chunk_bitmaps]
        ce = self.s.chunk_elems
        c = 0
        while c < len(counts):
            e = c
            while e + 1 < len(counts) and counts[e + 1] == counts[c]:
                e += 1
            if counts[c] > 1:
                self.out[c * ce:min(self.n, (e + 1) * ce)].div_(counts[c])
            c = e + 1
        return sum(counts) / max(len(counts), 1)

    def _outer(self, f, res):
        """The outer step of round @f, its sum in self.out. Moves the anchor
        and the parameters (or, with the thread, the pending move)."""
        if self.on_result is not None:
            self.on_result(f.round, self.out, res)
        st = self.stats
        st["applied"] += 1
        st["complete" if res.complete else "partial"] += 1
        st["staleness_sum"] += (time.time_ns() - f.start_ns) / f.period_ns
        st["behind_sum"] += self.sends - f.index - 1
        st["contributors_sum"] += self._divide(res)
        m = self.out
        if bool(m.any()):
            self.mom.mul_(self.mu).add_(m)
            if self.nesterov:
                m.add_(self.mom, alpha=self.mu)
            else:
                m.copy_(self.mom)
            m.mul_(-self.lr)                 # u: the anchor's step
            self.outer_steps += 1
        else:
            st["empty"] += 1                 # nobody progressed: no step
            if f.sent is None:
                return
        for p, a, fo, k in self.pieces:
            anchor, u = self.anchor[fo:fo + k], m[fo:fo + k]
            if self.pending is not None:
                anchor += u
                self.pending[fo:fo + k] += u if f.sent is None else u + f.sent[fo:fo + k]
                continue
            # params = new anchor + what the round did not carry, computed
            # so that it is the anchor exactly when the round carried all
            # the progress: (x - a) + (a - x) is 0 in floating point
            rest = self._read(p, a, k) - anchor
            if f.sent is not None:
                rest += f.sent[fo:fo + k]
            anchor += u
            self._write(p, a, k, rest.add_(anchor))

    def _take(self, f, timeout):
        """Apply round @f if it has ended; False if it has not."""
        try:
            if not self.s.ready(f.round, timeout=timeout):
                return False
            res = self.s.result(f.round, self.out, timeout=0)
            with self._lock:
                self._outer(f, res)
                self.flights.remove(f)
                self._lock.notify_all()
        except Error as e:
            if e.errno != errno.ESTALE:
                raise
            # its slot was reused: the progress it carried is still in the
            # parameters and goes out with the next contribution
            with self._lock:
                self.stats["lost"] += 1
                self.flights.remove(f)
                self._lock.notify_all()
        return True

    def poll(self, timeout=0.0):
        """Apply every sent round that has ended, oldest first."""
        for f in [f for f in self.flights if f.round is not None]:
            if not self._take(f, timeout):
                break

    def _newest_round(self):
        best = None
        while True:
            try:
                best = self.s.wait_round(timeout=0)
            except Timeout:
                return best

    # -- the training loop's calls -----------------------------------------
    def step(self):
        """Call after each optimiser step. Without the thread: applies the
        rounds that ended, and every H steps sends a contribution to the
        newest announced round (never blocks unless wait=True). With the
        thread: moves the parameters by the outer steps the thread took,
        and every H steps queues a contribution for the next round."""
        t0 = time.perf_counter()
        self.since += 1
        if self._thread is not None:
            self._check()
            with self._lock:
                self._fold()
                if self.since >= self.H:
                    self._queue()
                    self.since = 0
        else:
            self.poll()
            if self.since >= self.H:
                if len(self.flights) >= self.max_inflight:
                    self.stats["skipped_full"] += 1
                else:
                    r = self._newest_round()
                    if r is None:
                        self.stats["skipped_no_round"] += 1
                    else:
                        f = _Out(torch.empty(self.n, dtype=self.wire))
                        self._contribute(f.sent, f)
                        self.flights.append(f)
                        if self._send(r, f):
                            self.since = 0
                        else:
                            self.flights.remove(f)
                if self.wait:
                    self.flush()
        self.stats["comm_s"] += time.perf_counter() - t0

    def _fold(self):
        """Move the parameters by the thread's pending move (lock held)."""
        for p, a, fo, k in self.pieces:
            self._move(p, a, k, self.pending[fo:fo + k])
        self.pending.zero_()

    def flush(self, timeout=5.0):
        """Wait until every contribution is sent and applied (the queued
        one included) and move the parameters: the end of training, or a
        checkpoint. True if nothing is left in flight."""
        end = time.monotonic() + timeout
        if self._thread is None:
            while self.flights and time.monotonic() < end:
                self.poll(timeout=min(0.05, max(0.0, end - time.monotonic())))
            return not self.flights
        with self._lock:
            while self.flights and self._error is None and time.monotonic() < end:
                self._lock.wait(min(0.05, max(0.0, end - time.monotonic())))
            self._fold()
        self._check()
        return not self.flights

    def staleness(self):
        """Mean age, in rounds (T), of a round's mean when applied."""
        a = self.stats["applied"]
        return self.stats["staleness_sum"] / a if a else 0.0

    # -- the communication thread ------------------------------------------
    def _run(self):
        try:
            while not self._stop.is_set():
                self.poll()
                try:
                    r = self.s.wait_round(timeout=0.005)
                except Timeout:
                    continue
                self.poll()
                if sum(f.round is not None for f in self.flights) >= 3:
                    self.stats["skipped_full"] += 1
                    continue
                with self._lock:
                    f = next((f for f in self.flights if f.round is None), None)
                if f is None and not self.every_round:
                    continue
                # the queued buffer is read by send() outside the lock: the
                # training thread only rewrites a contribution with round None
                with self._lock:
                    if f is not None:
                        f.round = -1        # taken: no longer rewritten
                if not self._send(r, f) and f is not None:
                    with self._lock:
                        f.round = None
        except BaseException as e:         # raised again in step()
            self._error = e
            with self._lock:
                self._lock.notify_all()

    def _check(self):
        if self._error is not None:
            raise RuntimeError("isthmus.torch.DiLoCo: the communication thread failed: %r"
                               % (self._error,)) from self._error

    def close(self):
        """Stop the communication thread (the session stays open: it is the
        caller's) and move the parameters by what it applied."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            with self._lock:
                self._fold()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.flush()
        self.close()
        return False

    # -- checkpoints -------------------------------------------------------
    def state_dict(self):
        """The outer state, for a checkpoint taken with the model's: the
        anchor and momentum (fp32, CPU), the outer steps and the local
        steps since the last contribution. Call it from the training
        thread, after flush() for a checkpoint with nothing in flight:
        contributions in flight are not saved (after a restart their
        progress, still in the parameters, is sent again)."""
        if self._thread is not None:
            with self._lock:
                self._fold()
                return self._state()
        return self._state()

    def _state(self):
        return {"anchor": self.anchor.clone(), "momentum": self.mom.clone(),
                "outer_steps": self.outer_steps, "since": self.since,
                "outer_lr": self.lr, "mu": self.mu, "nesterov": self.nesterov}

    def load_state_dict(self, state):
        """Resume from state_dict(): load the model's parameters first."""
        a, m = state["anchor"], state["momentum"]
        if a.numel() != self.n or m.numel() != self.n:
            raise ValueError("the checkpoint's outer state has %d elements, the model %d"
                             % (a.numel(), self.n))
        with self._lock:
            self.anchor.copy_(a.reshape(-1))
            self.mom.copy_(m.reshape(-1))
            self.outer_steps = int(state["outer_steps"])
            self.since = int(state["since"])
            self.flights = []
            if self.pending is not None:
                self.pending.zero_()
