#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One island of system-island-defaults: an isthmus.Session given only
job, island, n_islands, elems, edge and key_file plays every round
before --until-round (the same for both islands, so that neither stops
while the other still counts on it; rounds announced while it was behind
are skipped), checking every result
exactly: fp32 sixteenths, whose sums over a few islands are exact in any
order, against the sum over the contributors the result's bitmap names.
Prints "PY island=K complete=C wrong=W rounds=R"; exit 0 if C >= 3 and
W == 0."""
import argparse
import sys
import time

import numpy as np

import isthmus


def val(k, r, n):
    i = np.arange(n, dtype=np.int64)
    return ((((k + 1) * 131 + r * 17 + i * 7) % 1024 - 512) / 16.0).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    for o in ("--job", "--island", "--islands", "--elems"):
        ap.add_argument(o, type=int, required=True)
    ap.add_argument("--edge", required=True, help="IP:PORT")
    ap.add_argument("--key-file", required=True)
    ap.add_argument("--until-round", type=int, required=True,
                    help="play the rounds before this one (the same for every island)")
    a = ap.parse_args()
    host, port = a.edge.rsplit(":", 1)
    n = {"complete": 0, "wrong": 0, "rounds": 0}
    out = np.empty(a.elems, np.float32)

    def collect(s, r):
        """Take round r's result and check it exactly."""
        res = s.result(r.round, out, timeout=30)
        ce = s.chunk_elems
        vals = [val(k, r.round, a.elems) for k in range(a.islands)]
        for c, bm in enumerate(res.chunk_bitmaps):
            sl = slice(c * ce, min((c + 1) * ce, a.elems))
            want = np.zeros(sl.stop - sl.start)
            for k in range(a.islands):
                if bm >> k & 1:
                    want += vals[k][sl]
            if not np.array_equal(out[sl], want.astype(np.float32)):
                n["wrong"] += 1
        # a complete round: every chunk has every island (checked here,
        # not only the library's own verdict)
        if res.complete and any(bm != (1 << a.islands) - 1 for bm in res.chunk_bitmaps):
            n["wrong"] += 1
        n["complete"] += res.complete
        print("round %d complete %d bitmap %#x missing %s" % (
            r.round, res.complete, res.bitmap, res.missing_str), flush=True)

    with isthmus.Session(job=a.job, island=a.island, n_islands=a.islands, elems=a.elems,
                         edge=(host, int(port)), key_file=a.key_file) as s:
        print("session: local port %d, auth %d" % (s.local_port, s.counters()["auth"]),
              flush=True)
        # as isthmus-island does: a round's DATA leaves when its ROUND
        # comes, while earlier rounds (whose deadlines may lie past the
        # next start) are still collecting
        flight = []
        while True:
            r = s.wait_round(timeout=30)
            if r.round >= a.until_round:
                break
            n["rounds"] += 1
            if time.time_ns() > r.deadline_ns:
                # announced while this process was behind: its DATA
                # would be too late for the edge; the next one is not
                print("round %d skipped: past its deadline" % r.round, flush=True)
                continue
            s.send(r.round, val(a.island, r.round, a.elems))
            flight.append(r)
            while flight and (len(flight) == isthmus.ROUNDS_KEPT - 1 or
                              s.ready(flight[0].round)):
                collect(s, flight.pop(0))
        for r in flight:
            collect(s, r)
        k = s.counters()
        print("counters: " + " ".join("%s=%d" % (n, v) for n, v in sorted(k.items())
                                      if v and ("drop" in n or n.startswith("auth_")
                                                or n in ("nacks_sent", "resent", "lost_seqs",
                                                         "probes_sent", "gone"))))
    complete, wrong, rounds = n["complete"], n["wrong"], n["rounds"]
    print("PY island=%d complete=%d wrong=%d rounds=%d" % (a.island, complete, wrong, rounds))
    return 0 if complete >= 3 and wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
