# SPDX-License-Identifier: BSD-3-Clause
"""--record for --model lm: every contribution an island sends and every
round sum it applies, streamed to OUT/record-<label>-<island>.bin (the
model is 235k elements: kept in memory, 300 rounds of nine islands would
be gigabytes), and `train.py check` over those files.

The file starts with a record of kind 0 whose n is the session's chunk
size in elements (the bitmaps' unit; it depends on the MTU and the wire
version). A record: int64 kind (1 sent, 2 sum), int64 round, int64 n (elements, 0
for an all-zero vector, which is not stored), int64 dtype (1 bf16, 4
fp32), int64 n_chunks, then n_chunks uint64 chunk bitmaps (sums), then
the vector. Contributions are bf16 on the wire (stored as sent); sums are
stored as bf16 when they are bf16 numbers (isthmusd's bf16_out), else fp32.
"""
import glob
import os
import struct

import numpy as np
import torch

HDR = struct.Struct("<qqqqq")
CHUNK, SENT, SUM = 0, 1, 2


class Recorder:
    """Stands between the DiLoCo optimizer and its session: records what
    send() sends; `on_result` records each sum applied. Everything else is
    the session's."""

    def __init__(self, session, path):
        self._s = session
        self._f = open(path, "wb")
        self._f.write(HDR.pack(CHUNK, 0, session.chunk_elems, 0, 0))

    def __getattr__(self, name):
        return getattr(self._s, name)

    def _write(self, kind, rnd, t, bitmaps=()):
        if t.dtype == torch.float32 and torch.equal(t.to(torch.bfloat16).float(), t):
            t = t.to(torch.bfloat16)
        zero = not bool(t.any())
        dt = 1 if t.dtype == torch.bfloat16 else 4
        self._f.write(HDR.pack(kind, rnd, 0 if zero else t.numel(), dt, len(bitmaps)))
        if bitmaps:
            self._f.write(np.array(bitmaps, np.uint64).tobytes())
        if not zero:
            self._f.write(t.contiguous().view(torch.int16 if dt == 1 else torch.int32)
                          .numpy().tobytes())

    def send(self, rnd, data):
        self._s.send(rnd, data)             # raises: nothing went, nothing recorded
        self._write(SENT, rnd, data.detach().cpu())

    def on_result(self, rnd, sent, total, res):
        # isthmus.torch's signature (round, sent, sum, result); what was
        # sent is already recorded by send()
        self._write(SUM, rnd, total.detach().cpu().clone(), list(res.chunk_bitmaps))

    def close(self):
        self._f.close()


def read(path, n):
    """The mmap, {round: sent offset}, [(round, bitmaps, sum offset)] and
    the chunk size."""
    mm = np.memmap(path, np.uint8, "r") if os.path.getsize(path) else np.zeros(0, np.uint8)
    sent, sums, off, ce = {}, [], 0, None
    while off + HDR.size <= len(mm):
        kind, rnd, k, dt, nc = HDR.unpack(mm[off:off + HDR.size].tobytes())
        off += HDR.size
        if kind == CHUNK:
            ce = k
            continue
        bm = np.frombuffer(mm[off:off + 8 * nc].tobytes(), np.uint64).tolist()
        off += 8 * nc
        vec = (off, k, dt)
        off += k * (2 if dt == 1 else 4)
        if kind == SENT:
            sent[rnd] = vec
        else:
            sums.append((rnd, bm, vec))
    return mm, sent, sums, ce


def vector(mm, vec, n):
    off, k, dt = vec
    if k == 0:
        return np.zeros(n, np.float64)
    if dt == 1:
        w = np.frombuffer(mm[off:off + 2 * k].tobytes(), np.uint16).astype(np.uint32) << 16
        return w.view(np.float32).astype(np.float64)
    return np.frombuffer(mm[off:off + 4 * k].tobytes(), np.float32).astype(np.float64)


def tree_height(path):
    """The height (links from the root to the deepest leaf) of the highest
    tree of a schedule file's `tree <r> <t> <p0>,<p1>,...` lines
    (doc/schedule-file.md; '-' the root), 0 without trees or file."""
    h = 0
    if not path or not os.path.exists(path):
        return 0
    for line in open(path):
        f = line.split()
        if len(f) != 4 or f[0] != "tree":
            continue
        par = [-1 if p == "-" else int(p) for p in f[3].split(",")]
        for i in range(len(par)):
            d, j = 0, i
            while par[j] >= 0 and d <= len(par):
                j, d = par[j], d + 1
            if d > len(par):
                raise ValueError("%s: tree %s %s is not a tree (a cycle)" % (path, f[1], f[2]))
            h = max(h, d)
    return h


def sum_bound(parts, members, k, bf16_sums, tree_h=0):
    """How far island @k's applied sum of a chunk may be from the exact sum
    of @parts (the contributions of @members, island k's among them when it
    sent), elementwise. fp32: (m - 1) * 2^-24 * sum |x| (doc/island.md).
    --bf16-sums: the edge rounded each AGG to bf16 once (8 significant
    bits, to nearest: 2^-8 relative), a value no larger than the peers'
    sum |x_peer|. Tree rounds (@tree_h > 0, the schedule's highest tree):
    each edge with children rounds the sum it sends on (up, or at the root
    down), a value no larger than sum |x| over its subtree, at most tree_h
    of them on one island's path to the root, and the island's edge rounds
    once more when it takes the island's own out of the result; in fp32
    that is tree_h + 1 more roundings in the binary32 sum, in bf16 tree_h
    + 1 roundings of at most sum |x| over every member."""
    m = len(parts)
    mag = np.sum(np.abs(parts), axis=0)
    steps = max(m - 1, 0) + (tree_h + 1 if tree_h else 0)
    bound = steps * 2.0 ** -24 * mag
    if bf16_sums:
        if tree_h:
            bound = bound + (tree_h + 1) * 2.0 ** -8 * mag
        else:
            peers = [p for j, p in zip(members, parts) if j != k]
            if peers:
                bound = bound + 2.0 ** -8 * np.sum(np.abs(peers), axis=0)
    return bound


def check_lm(out, run, n, bf16_sums, tree_h=0):
    """Every applied sum against the exact sum, over its chunk bitmaps, of
    what those islands sent for that round (the bound of sum_bound)."""
    recs = {}
    for f in glob.glob(os.path.join(out, "record-%s-*.bin" % run)):
        k = os.path.basename(f)[len("record-%s-" % run):-4]
        if k.isdigit():
            recs[int(k)] = read(f, n)
    if not recs:
        return None
    chunks = wrong = rounds = unchecked = 0
    for k, (mm, _, sums, chunk_elems) in sorted(recs.items()):
        for rnd, bitmaps, vec in sums:
            rounds += 1
            got = vector(mm, vec, n)
            cache = {}
            for c, bm in enumerate(bitmaps):
                members = [j for j in range(64) if bm >> j & 1]
                if any(rnd not in recs.get(j, (None, {}))[1] for j in members):
                    # a member's send that was not recorded (its process
                    # had not opened the record yet): not checkable
                    continue
                sl = slice(c * chunk_elems, min(n, (c + 1) * chunk_elems))
                parts = []
                for j in members:
                    if j not in cache:
                        cache[j] = vector(recs[j][0], recs[j][1][rnd], n)
                    parts.append(cache[j][sl])
                exact = np.sum(parts, axis=0)
                bound = sum_bound(parts, members, k, bf16_sums, tree_h)
                chunks += 1
                if np.any(np.abs(got[sl] - exact) > bound + 1e-30):
                    wrong += 1
    return len(recs), rounds, chunks, wrong, unchecked
