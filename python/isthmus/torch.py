# SPDX-License-Identifier: BSD-3-Clause
"""Decentralised training over isthmus rounds with PyTorch.

:class:`DiLoCo` is the DiLoCo outer optimizer (H local steps, the mean
pseudo-gradient, an outer Nesterov step with fp32 outer state; bf16 on the
wire; a communication thread; checkpoints; an island of K torch.distributed
ranks): doc/torch.md.

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
import warnings

import torch
import torch.distributed as dist

from . import Error, Timeout

__all__ = ["Averager", "DiLoCo", "flat_size"]


def flat_size(params):
    """Elements in a list of tensors, as the session's ``elems``."""
    return sum(p.numel() for p in params)


def _announced(s, read=False):
    """The rounds @s has announced and not yet returned, oldest first;
    @read: read the socket first (a ROUND still in it counts)."""
    if read and hasattr(s, "poll"):     # (stand-ins in tests have none)
        s.poll(timeout=0)
    while True:
        try:
            yield s.wait_round(timeout=0)
        except Timeout:
            return


def _island_of(session, group, who):
    """An island of K ranks: (K, this rank, first element, element count)
    of @session's range; the session must be host rank of K."""
    K = 1 if group is None else dist.get_world_size(group)
    rank = 0 if group is None else dist.get_rank(group)
    hosts, host = getattr(session, "hosts", 1), getattr(session, "host", 0)
    if (hosts, host) != (K, rank):
        raise ValueError("%s: the session is host %d of %d, the process group rank %d of %d: "
                         "open it with hosts=K, host=rank" % (who, host, hosts, rank, K))
    first, count = getattr(session, "elem_range", (0, session.elems))
    return K, rank, first, count


def _vote(group, K, values, op):
    """The ranks' agreement on small integers (the island's min/max)."""
    if K == 1:
        return list(values)
    t = torch.tensor(values, dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MIN if op == "min" else dist.ReduceOp.MAX,
                    group=group)
    return t.tolist()


class _IslandResult:
    """A round's result over the island's K ranges (K > 1): the chunk
    bitmaps of every chunk of the round, and whether every range was
    complete; ``ranges`` is this rank's own Result."""
    __slots__ = ("chunk_bitmaps", "complete", "ranges")

    def __init__(self, bitmaps, complete, own):
        self.chunk_bitmaps, self.complete, self.ranges = bitmaps, complete, own


class _Flight:
    __slots__ = ("round", "sent", "own", "anchor", "sent_at_index", "start_ns", "period_ns",
                 "moved")

    def __init__(self, r, sent, own, anchor, index, moved):
        self.round, self.sent, self.anchor, self.sent_at_index = r.round, sent, anchor, index
        self.own = own              # this rank's contribution (K = 1: sent)
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
                 summed; sum: the round's clique sum; result: its chunk
                 bitmaps); for checks and logs. With K ranks: the island's
                 whole contribution and sum on every rank, and a result
                 whose ``chunk_bitmaps`` cover every chunk of the round
    group        a torch.distributed process group: the island's K ranks
                 (data parallel inside the island), each with its own
                 session (hosts=K, host=rank). The island contributes the
                 ranks' mean (all-reduced), each rank sends its session's
                 elem_range of it, and the ranges of the result are
                 all-reduced, so that every rank applies the same target;
                 ranks that step identically stay identical. step(),
                 poll() and flush() are then collective calls. None: one
                 process is the island (K = 1)
    """

    def __init__(self, params, session, local_steps=1, mode="params",
                 blend=1.0, outer_lr=1.0, max_inflight=2, on_result=None, group=None):
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
        self.group = group
        self.K, self.rank, self.first, self.count = _island_of(session, group, "Averager")
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
        self.n_chunks = (self.n + ce - 1) // ce
        self.chunk_of = torch.arange(self.n) // ce
        self.inflight = []
        self._seen = {}                 # K ranks: round -> Round, the last few
        self._last_sent = -1            # K ranks: the last round sent to
        self._island_newest = -1        # K ranks: poll()'s vote of the newest
        self.since = 0                 # local steps since the last send
        self.sends = 0
        # what a training loop reports
        self.stats = dict(sent=0, applied=0, complete=0, partial=0,
                          skipped_no_round=0, skipped_full=0, staleness_sum=0.0,
                          behind_sum=0,
                          contributors_sum=0, comm_s=0.0, send_errors=0, lost=0)

    def _vote(self, values, op):
        return _vote(self.group, self.K, values, op)

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
    def _scan(self):
        """K ranks: take the announced rounds; the newest not yet sent to,
        or -1 (voted with poll()'s, one all-reduce a step)."""
        for r in _announced(self.s):
            self._seen[r.round] = r
        newest = max((x for x in self._seen if x > self._last_sent), default=-1)
        for old in [x for x in self._seen if x < newest - 8]:
            del self._seen[old]
        return newest

    def _newest_round(self, island_newest=-1):
        """The newest announced round not yet used, whose deadline is ahead
        (K ranks: @island_newest, the newest every rank has seen, if every
        rank has it with its deadline ahead)."""
        if self.K == 1:
            best = None
            for best in _announced(self.s):
                pass
        elif island_newest < 0:
            return None                 # the same on every rank: no vote
        else:
            best = self._seen.get(island_newest)
        ahead = best is not None and best.deadline_ns > time.time_ns()
        return best if self._vote([int(ahead)], "min")[0] else None

    def _result(self, f):
        """Round @f's clique sum in self.out; its Result (K ranks: the
        island's, every range all-reduced), or None if a rank could not
        take its range (its slot was reused)."""
        if self.K == 1:
            return self.s.result(f.round, self.out, timeout=0)
        self.out.zero_()
        res = None
        try:
            res = self.s.result(f.round, self.out[self.first:self.first + self.count], timeout=0)
        except Error as e:
            if e.errno != errno.ESTALE:
                raise
        # [ranks that took their range, ranks complete, every chunk's
        # bitmap]: each rank fills its chunk range, the others add 0
        meta = torch.zeros(2 + self.n_chunks, dtype=torch.int64)
        if res is not None:
            fc = self.s.chunk_range[0]
            meta[0], meta[1] = 1, int(res.complete)
            # uint64 bitmaps as int64 (two's complement survives the sum)
            meta[2 + fc:2 + fc + len(res.chunk_bitmaps)] = torch.tensor(
                [b - (1 << 64) if b >> 63 else b for b in res.chunk_bitmaps], dtype=torch.int64)
        dist.all_reduce(meta, group=self.group)
        if int(meta[0]) < self.K:
            return None
        dist.all_reduce(self.out, group=self.group)
        return _IslandResult([b & ((1 << 64) - 1) for b in meta[2:].tolist()],
                             int(meta[1]) == self.K, res)

    def _apply(self, f, res):
        if self.on_result is not None:
            self.on_result(f.round, f.sent, self.out, res)
        counts = torch.tensor([bin(b).count("1") for b in res.chunk_bitmaps],
                              dtype=torch.float32)
        per_elem = counts[self.chunk_of]
        # K = 1: self is always in (counts >= 1); K ranks: a range whose
        # send failed on its rank may have no contributor at all
        mean = self.out / per_elem.clamp(min=1)
        none = per_elem == 0            # (K ranks) no correction there
        if self.mode == "params":
            target = mean
            corr = target - f.own
        else:
            target = f.anchor + self.outer_lr * mean
            corr = target - (f.anchor + f.own)
            # where nobody was summed the anchor stays: that progress goes
            # out again with the next contribution
            self.anchor = torch.where(none, f.anchor, target)
        corr[none] = 0
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

    def poll(self, _newest=-1):
        """Apply every in-flight round that has ended, oldest first. A
        round whose slot a newer round took before it could be applied
        (the island was held up for several rounds) is counted as lost.
        K ranks: a collective call; the rounds that ended on every rank
        (and, from step(), the newest round every rank has seen, in
        self._island_newest)."""
        ended, lost = [], []
        for f in self.inflight:
            try:
                if not self.s.ready(f.round, timeout=0):
                    break
                lost.append(0)
            except Error as e:
                if e.errno != errno.ESTALE:
                    raise
                lost.append(-1)
            ended.append(1)
        pad = [0] * (len(self.inflight) - len(ended))
        v = self._vote(ended + pad + lost + pad + [_newest], "min")
        self._island_newest = v[-1]
        done, n = [], len(self.inflight)
        for i in range(n):
            if not v[i]:
                break
            f = self.inflight.pop(0)
            res = None if v[n + i] < 0 else self._result(f)
            if res is None:
                self.stats["lost"] += 1
            else:
                done.append(self._apply(f, res))
        return done

    def step(self):
        """Call after each optimiser step. Non-blocking: applies ended
        rounds, and every H steps sends to the newest announced round."""
        t0 = time.perf_counter()
        # K ranks: the rounds each rank has seen go into poll()'s vote
        self.poll(self._scan() if self.K > 1 else -1)
        self.since += 1
        if self.since >= self.H:
            if len(self.inflight) >= self.max_inflight:
                self.stats["skipped_full"] += 1
            else:
                r = self._newest_round(self._island_newest)
                if r is None:
                    self.stats["skipped_no_round"] += 1
                else:
                    self._send(r)
        self.stats["comm_s"] += time.perf_counter() - t0

    def _send(self, r):
        x = self._gather()
        if self.mode == "params":
            own, anchor = x, None
        else:
            own, anchor = x - self.anchor, self.anchor.clone()
        sent = own
        if self.K > 1:                  # the island's contribution: the mean
            sent = own.clone()
            dist.all_reduce(sent, group=self.group)
            sent.div_(self.K)
        if self.s.dtype == "bf16":
            # what the peers receive, and what the library sums for self
            sent = sent.to(torch.bfloat16).float()
            own = own.to(torch.bfloat16).float() if self.K > 1 else sent
        went = True
        try:
            self.s.send(r.round, sent[self.first:self.first + self.count])
        except Error:
            self.stats["send_errors"] += 1
            went = False
        # K ranks: a range that went makes the round the island's
        if not self._vote([int(went)], "max")[0]:
            return
        self.inflight.append(_Flight(r, sent, own, anchor, self.sends, self.moved.clone()))
        self._last_sent = r.round
        self.sends += 1
        self.since = 0
        self.stats["sent"] += 1

    def flush(self, timeout=5.0):
        """Wait for every in-flight round to end and apply it (at the end
        of training). K ranks: a collective call."""
        end = time.monotonic() + timeout
        while self.inflight:
            if self._vote([int(time.monotonic() >= end)], "max")[0]:
                break
            left = max(0.0, end - time.monotonic())
            try:
                self.s.ready(self.inflight[0].round, timeout=left if self.K == 1
                             else min(0.05, left))
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

    and the parameters become ``new anchor + ((params - old anchor) +
    g_own)``, g_own being what this island sent to that round (with the
    thread: ``params += -outer_lr * u + g_own``, at the next step()). With
    nothing in flight and no local step since the send, that is the new
    anchor exactly (synchronous DiLoCo); local steps taken
    while the round was in flight are kept on top of it (the overlapped,
    one-step-delayed form). The exchange is then:

    * **exact global sum**: every round one clique of all islands (a tree
      or all-to-all schedule): with fp32 sums every island applies the
      same sum up to its last fp32 bits (the edge takes the island's own
      values out with one more rounding), so the anchors and momenta
      agree to that (bf16 sums differ in their last bf16 bits: doc/torch.md);
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
    outer_lr      the outer learning rate; default (None): 0.7, the
                  paper's, with wait=True and no thread; 1.0 otherwise
    momentum      the outer momentum; default (None): 0.9, the paper's,
                  with wait=True and no thread; 0 otherwise: a mean
                  applied a round late (the overlapped forms: the thread,
                  or no wait) with Nesterov 0.9 oscillated and never
                  reached the target loss of doc/training.md's language
                  model, where outer_lr=1, momentum=0 (local SGD: anchor
                  += mean) did, in 64 s (H = 1; doc/torch.md, "Defaults")
    nesterov      Nesterov momentum (DiLoCo) or heavy ball
    max_inflight  without the thread: contributions sent and not yet
                  applied (1..3; 1 with wait=True is synchronous DiLoCo)
    wait          without the thread: a step that sends waits for the next
                  round if none is new, and returns once that round is
                  applied (the synchronous algorithm)
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
    on_result     on_result(round, sent, sum, result), as the Averager's:
                  sent is what this island put into the round (the wire
                  dtype; None for zeros; with K ranks, this rank's own
                  contribution before the ranks' mean), sum the round's
                  clique sum (fp32, self included; with K ranks, this
                  rank's range, zeros elsewhere), before it is divided
    block_elems   elements per block when reading and moving parameters
                  (bounds the temporaries and the pinned staging buffer)
    stage         force the staged (non-CPU) path for CPU tensors (tests)
    group         a torch.distributed process group: the island's K ranks,
                  each with its own session (hosts=K, host=rank); the ranks'
                  mean contribution is all-reduced, each rank sends its
                  session's elem_range, and the ranges of the result are
                  all-reduced so that every rank takes the same outer step.
                  step(), poll() and flush() are then collective calls.
                  None: one process is the island (K = 1)

    Call :meth:`step` after each optimiser step, :meth:`flush` at the end
    (or use it as a context manager), :meth:`state_dict` and
    :meth:`load_state_dict` with the model's checkpoint.
    """

    def __init__(self, params, session, local_steps=1, outer_lr=None, momentum=None,
                 nesterov=True, max_inflight=1, wait=False, thread=False,
                 every_round=True, on_result=None, block_elems=1 << 20, stage=False,
                 group=None):
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
        # the defaults by form: the paper's step when synchronous, plain
        # averaging when the mean is a round stale (doc/torch.md)
        sync = wait and not thread
        if outer_lr is None:
            outer_lr = 0.7 if sync else 1.0
        if momentum is None:
            momentum = 0.9 if sync else 0.0
        if local_steps < 1 or outer_lr <= 0 or not 0 <= momentum < 1:
            raise ValueError("need local_steps >= 1, outer_lr > 0, 0 <= momentum < 1")
        self._island(session, group, thread)
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
        self._seen = {}         # round -> Round, the last few announced
        self._spare = []        # contribution buffers to reuse (no allocator churn)
        self._last_sent = -1    # K = 1: the last round sent to
        self.since = 0
        self.sends = 0
        self.outer_steps = 0
        self.stats = dict(sent=0, applied=0, complete=0, partial=0, empty=0, zeros_sent=0,
                          listened=0,
                          skipped_no_round=0, skipped_full=0, skipped_late=0,
                          staleness_sum=0.0, behind_sum=0, contributors_sum=0.0,
                          round_ms_sum=0.0, rounds_timed=0, comm_s=0.0, send_errors=0, lost=0)
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

    def _island(self, session, group, thread):
        """The island's ranks: K = the group's size, this rank's range."""
        self.group = group
        self.K, self.rank, self.first, self.count = _island_of(session, group, "DiLoCo")
        if self.K > 1 and thread:
            raise ValueError("the communication thread with K > 1 ranks is not built: "
                             "use thread=False (collectives stay on the training thread)")

    def _vote(self, values, op):
        return _vote(self.group, self.K, values, op)

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
        t += [f.sent for f in self.flights] + self._spare
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
            f = _Out(self._buffer())
            self.flights.append(f)
        elif f.sent is None:
            f.sent = self._buffer()
        self._contribute(f.sent, f)

    def _buffer(self):
        return self._spare.pop() if self._spare else torch.empty(self.n, dtype=self.wire)

    def _drop(self, f):
        """@f is done: its buffer is kept for the next contribution."""
        self.flights.remove(f)
        if f.sent is not None and len(self._spare) < 2:
            self._spare.append(f.sent)

    def _send(self, r, f, data=None, late_check=True):
        """Send @f (None: zeros) to round @r; True if it went. @data: what
        goes on the wire when it is not f's buffer (an island's range)."""
        if late_check and r.deadline_ns <= time.time_ns():
            self.stats["skipped_late"] += 1
            return False
        if data is None:
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
        self._sent(r, f)
        return True

    def _sent(self, r, f):
        if f.sent is None:
            self.stats["zeros_sent"] += 1
        f.round, f.start_ns, f.period_ns = r.round, r.start_ns, max(r.period_ns, 1)
        f.index = self.sends
        self.sends += 1
        self.stats["sent"] += 1

    def _listen(self, r):
        """Take round @r's result whether or not this island sends to it
        (K = 1): its peers' progress moves every island's anchor alike."""
        self._seen[r.round] = r
        self._seen.pop(r.round - 8, None)
        f = _Out(None)
        f.round, f.start_ns, f.period_ns = r.round, r.start_ns, max(r.period_ns, 1)
        f.index = self.sends
        with self._lock:
            self.flights.append(f)
        self.stats["listened"] += 1
        return f

    def _track(self):
        """K = 1, without the thread: every announced round is taken."""
        for r in _announced(self.s, read=True):
            self._listen(r)

    def _send_step(self):
        """Without the thread, every H steps: the contribution to the newest
        round every rank of the island has seen, whose deadline is ahead.
        With K ranks the island sends the ranks' mean: each rank sums the
        ranks' contributions (all_reduce in self.out) and sends its range."""
        if sum(f.sent is not None for f in self.flights) >= self.max_inflight:
            self.stats["skipped_full"] += 1
            return
        if self.K == 1:
            self._track()
            newest = max((f.round for f in self.flights if f.sent is None and
                          f.round > self._last_sent), default=None)
        else:
            newest = self._newest_round()
        if newest is None and self.wait:
            # synchronous: the next round, rather than skipping this exchange
            try:
                r = self.s.wait_round(timeout=10.0)
                if self.K == 1:
                    self._listen(r)
                self._seen[r.round] = r
                newest = r.round
            except Timeout:
                pass
        R = self._vote([newest if newest is not None else -1], "min")[0]
        r = self._seen.get(R)
        ok = self._vote([int(r is not None and r.deadline_ns > time.time_ns())],
                        "min")[0]
        if not ok:
            self.stats["skipped_no_round" if R < 0 else "skipped_late"] += 1
            return
        if self.K == 1:
            f = next(f for f in self.flights if f.round == R)
            f.sent = self._buffer()
            self._contribute(f.sent, f)
            if self._send(r, f, late_check=False):
                self.since, self._last_sent = 0, R
            else:               # still taken, as a round of its peers
                self._spare.append(f.sent)
                f.sent = None
            return
        f = _Out(self._buffer())
        self._contribute(f.sent, f)
        self.out.copy_(f.sent)
        dist.all_reduce(self.out, group=self.group)
        data = self.out[self.first:self.first + self.count].div_(self.K)
        self.flights.append(f)
        went = self._send(r, f, data, late_check=False)
        # a range that went: the round holds (part of) the island's sum
        if self._vote([int(went)], "max")[0]:
            if not went:
                self._sent(r, f)
            self.since = 0
        else:
            self._drop(f)

    # -- results -----------------------------------------------------------
    def _divide(self, res):
        """out /= contributors, chunk by chunk; the mean count."""
        counts = [bin(b).count("1") for b in res.chunk_bitmaps]
        ce = self.s.chunk_elems
        mine = self.out[self.first:self.first + self.count]
        c = 0
        while c < len(counts):
            e = c
            while e + 1 < len(counts) and counts[e + 1] == counts[c]:
                e += 1
            if counts[c] > 1:
                mine[c * ce:min(self.count, (e + 1) * ce)].div_(counts[c])
            c = e + 1
        return sum(counts) / max(len(counts), 1)

    def _outer(self, f, res):
        """The outer step of round @f, its sum in self.out. Moves the anchor
        and the parameters (or, with the thread, the pending move)."""
        st = self.stats
        if not any(res.chunk_bitmaps):
            st["empty"] += 1            # a round nobody sent to (listened)
            return
        if self.on_result is not None:
            self.on_result(f.round, f.sent, self.out, res)
        st["applied"] += 1
        st["complete" if res.complete else "partial"] += 1
        st["staleness_sum"] += (time.time_ns() - f.start_ns) / f.period_ns
        # the round's own time, start to the library's end of it (every
        # chunk complete, or its deadline and grace): the transport's
        # figure, whatever this island's thread did meanwhile
        end = getattr(res, "end_ns", 0)       # scripted sessions have none
        if end > f.start_ns:
            st["round_ms_sum"] += (end - f.start_ns) / 1e6
            st["rounds_timed"] += 1
        st["behind_sum"] += self.sends - f.index - 1
        st["contributors_sum"] += self._divide(res)
        if self.K > 1:        # every rank's range of the mean, on every rank
            dist.all_reduce(self.out, group=self.group)
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

    def _take(self, f, lost):
        """Apply round @f (or, @lost, drop it: its slot was reused, and the
        progress it carried, still in the parameters, goes out with the
        next contribution)."""
        if not lost:
            mine = self.out[self.first:self.first + self.count]
            if self.K > 1:
                self.out.zero_()
            try:
                res = self.s.result(f.round, mine, timeout=0)
            except Error as e:
                if e.errno != errno.ESTALE:
                    raise
                if self.K > 1:      # after the ranks agreed it had ended
                    raise RuntimeError("round %d: its slot was reused on rank %d after the "
                                       "island agreed it had ended" % (f.round, self.rank))
                lost = True
        with self._lock:
            if lost:
                self.stats["lost"] += 1
            else:
                self._outer(f, res)
            self._drop(f)
            self._lock.notify_all()

    def poll(self, timeout=0.0):
        """Apply every sent round that has ended, oldest first (waiting at
        most @timeout for the oldest). With K ranks: a collective call, the
        rounds applied are those that ended on every rank."""
        if self._thread is not None and threading.current_thread() is not self._thread:
            return                      # the thread applies them
        # in round order: a queued contribution gets its round late
        sent = sorted((f for f in self.flights if f.round is not None and f.round >= 0),
                      key=lambda f: f.round)
        ended, lost = [], []
        for f in sent:
            try:
                if not self.s.ready(f.round, timeout=0 if ended else timeout):
                    break
                lost.append(0)
            except Error as e:
                if e.errno != errno.ESTALE:
                    raise
                lost.append(1)
            ended.append(1)
        pad = len(sent) - len(ended)
        v = self._vote(ended + [0] * pad + [-x for x in lost] + [0] * pad, "min")
        for i, f in enumerate(sent):
            if not v[i]:
                break
            self._take(f, v[len(sent) + i] < 0)

    def _newest_round(self):
        """Drain the announced rounds; the newest round number, or None.
        The Round of the last few are kept (self._seen)."""
        best = None
        for r in _announced(self.s, read=True):
            self._seen[r.round] = r
            best = r.round
        for old in [x for x in self._seen if best is not None and x < best - 8]:
            del self._seen[old]
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
            if self.K == 1:
                self._track()
            self.poll()
            if self.since >= self.H:
                self._send_step()
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
        checkpoint. True if none is left in flight. With the thread, the
        rounds it keeps joining with zeros are not waited for: peers'
        progress in later rounds still comes in until close(). With K
        ranks: a collective call."""
        end = time.monotonic() + timeout
        if self._thread is None:
            while self.flights:
                if self._vote([int(time.monotonic() >= end)], "max")[0]:
                    break
                self.poll(timeout=min(0.05, max(0.0, end - time.monotonic())))
            return not self.flights
        # the rounds the thread joins with zeros carry none of this island's
        # progress: waiting for them would never end
        def left():
            return any(f.sent is not None for f in self.flights)
        with self._lock:
            while left() and self._error is None and time.monotonic() < end:
                self._lock.wait(min(0.05, max(0.0, end - time.monotonic())))
            self._fold()
            done = not left()
        self._check()
        return done

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
                if not self._join(r):
                    self._listen(r)         # its result is taken all the same
        except BaseException as e:         # raised again in step()
            self._error = e
            with self._lock:
                self._lock.notify_all()

    def _join(self, r):
        """The thread's send to round @r: the queued contribution, or zeros."""
        if sum(f.round is not None for f in self.flights) >= 3:
            self.stats["skipped_full"] += 1
            return False
        with self._lock:
            f = next((f for f in self.flights if f.round is None), None)
            if f is None and not self.every_round:
                return False
            # its buffer is read by send() outside the lock: the training
            # thread only rewrites a contribution whose round is None
            if f is not None:
                f.round = -1
        if self._send(r, f):
            return True
        if f is not None:
            with self._lock:
                f.round = None
        return False

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
        """Resume from state_dict(): load the model's parameters first.
        The outer step stays the constructor's; a checkpoint taken with
        another (say the defaults before 2026-12-06: 0.7 and 0.9 for every
        form) is named in a warning."""
        a, m = state["anchor"], state["momentum"]
        if a.numel() != self.n or m.numel() != self.n:
            raise ValueError("the checkpoint's outer state has %d elements, the model %d"
                             % (a.numel(), self.n))
        saved = (state.get("outer_lr", self.lr), state.get("mu", self.mu),
                 state.get("nesterov", self.nesterov))
        if saved != (self.lr, self.mu, self.nesterov):
            warnings.warn("DiLoCo.load_state_dict: the checkpoint's outer step (outer_lr %g, "
                          "momentum %g, nesterov %s) is not this optimizer's (%g, %g, %s); "
                          "resuming with this optimizer's (pass outer_lr and momentum to "
                          "keep the checkpoint's)" % (saved + (self.lr, self.mu,
                                                               self.nesterov)),
                          stacklevel=2)
        with self._lock:
            self.anchor.copy_(a.reshape(-1))
            self.mom.copy_(m.reshape(-1))
            self.outer_steps = int(state["outer_steps"])
            self.since = int(state["since"])
            self.flights = []
            if self.pending is not None:
                self.pending.zero_()
