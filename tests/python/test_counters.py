# SPDX-License-Identifier: BSD-3-Clause
"""Session.counters() against the library's counter lists (isth_island.h):
tests/island/island_stat_names.c prints, expanded from the C lists, the
keys Python must see. A counter added to a list without reaching Python,
or a key Python invents, fails here."""
import os
import subprocess

import isthmus
from fake_edge import FakeEdge

SELF = 1


def c_keys():
    out = subprocess.run([os.environ["ISLAND_STAT_NAMES"]], check=True,
                         capture_output=True, text=True).stdout
    return [l.split("\t")[0] for l in out.splitlines() if l]


def test_counters_keys_are_the_c_lists():
    want = c_keys()
    assert len(want) == len(set(want)), "a name twice in the C lists"
    e = FakeEdge(SELF)
    try:
        with isthmus.Session(job=7, island=SELF, n_islands=4, elems=100,
                             edge=("127.0.0.1", e.port),
                             bind=("127.0.0.1", 0), dtype="fp32", auth=False,
                             grace=0.0) as s:
            got = s.counters()
    finally:
        e.close()
    assert sorted(got) == sorted(want), (
        "only in C: %s; only in Python: %s"
        % (sorted(set(want) - set(got)), sorted(set(got) - set(want))))
    assert all(isinstance(v, int) for v in got.values())
    assert got["n_sockets"] == 1 and got["agg_streams"] == 1


def test_doc_names_every_counter():
    """doc/island.md, "Counters", names each counter and state field."""
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "doc", "island.md")
    with open(doc) as f:
        text = f.read()
    sec = text[text.index("## Counters"):]
    sec = sec[:sec.index("\n## ", 1)]
    out = subprocess.run([os.environ["ISLAND_STAT_NAMES"]], check=True,
                         capture_output=True, text=True).stdout
    listed = [l.split("\t")[0] for l in out.splitlines() if "\t" in l]
    missing = [n for n in listed if "`%s`" % n not in sec]
    assert not missing, "doc/island.md, Counters, lacks %s" % missing
