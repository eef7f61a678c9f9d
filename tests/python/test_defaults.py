# SPDX-License-Identifier: BSD-3-Clause
"""isthmus.Session's defaults and the errors that replace a bare timeout:
the edge and the choice of authentication are required, the default
bind port is the one isthmusd sends to, and a Timeout says what the
session received instead of a ROUND (fake_edge.py frames, sent from a
plain UDP socket)."""
import errno
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import isthmus
from fake_edge import CE, VERSION, FakeEdge, now_ns

SELF, N, JOB = 1, 4, 7
ELEMS = 2 * CE + 100
NCH = 3
PEERS = 1 << 0 | 1 << 2 | 1 << 3
# isthmusd's default [access] island_port (doc/operator.md)
ISLAND_PORT = 9471


@pytest.fixture
def edge():
    e = FakeEdge(SELF, job=JOB)
    yield e
    e.close()


def session(edge, **kw):
    s = isthmus.Session(job=JOB, island=SELF, n_islands=N, elems=ELEMS,
                        edge=("127.0.0.1", edge.port), bind=("127.0.0.1", 0),
                        probe=None, **kw)
    edge.island_port = s.local_port
    return s


def test_authentication_must_be_chosen():
    with pytest.raises(TypeError) as e:
        isthmus.Session(job=1, island=0, n_islands=2, elems=10, edge=("127.0.0.1", 9))
    assert "key_file=" in str(e.value) and "auth=False" in str(e.value)
    with pytest.raises(TypeError, match="auth=False"):
        isthmus.Session(job=1, island=0, n_islands=2, elems=10, edge=("127.0.0.1", 9),
                        auth=True)
    with pytest.raises(ValueError, match="one or the other"):
        isthmus.Session(job=1, island=0, n_islands=2, elems=10, edge=("127.0.0.1", 9),
                        key_file="/nonexistent", auth=False)


def test_edge_is_required():
    for kw in ({}, {"edge": None}):
        with pytest.raises(TypeError) as e:
            isthmus.Session(job=1, island=0, n_islands=2, elems=10, auth=False, **kw)
        assert "edge=(host, port)" in str(e.value) and str(ISLAND_PORT) in str(e.value)


def test_default_bind_is_the_island_port():
    """No bind=: every address on isthmusd's default island_port. As root
    in a network namespace of its own (unshare -n), so that the port is
    free and nothing else on this host is kept from it; otherwise here,
    where another process may hold the port: then the refusal names it
    and the way out."""
    assert isthmus.DEFAULT_PORT == ISLAND_PORT
    code = ("import warnings, isthmus\n"
            "warnings.simplefilter('ignore')\n"
            "s = isthmus.Session(job=1, island=0, n_islands=2, elems=10,\n"
            "                    edge=('127.0.0.1', 9), auth=False)\n"
            "print(s.local_port, s.counters()['auth'])\n")
    if os.geteuid() == 0 and shutil.which("unshare"):
        r = subprocess.run(["unshare", "-n", sys.executable, "-c", code], env=os.environ,
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            assert r.stdout.split() == [str(ISLAND_PORT), "0"], r.stdout
            return
        # unshare refused (a container without CAP_SYS_ADMIN): try here
        assert "unshare" in r.stderr, r.stdout + r.stderr
    try:
        s = isthmus.Session(job=1, island=0, n_islands=2, elems=10,
                            edge=("127.0.0.1", 9), auth=False)
    except isthmus.Error as e:
        assert e.errno == errno.EADDRINUSE, e
        assert "bind port %d" % ISLAND_PORT in str(e) and "bind=(ip, port)" in str(e)
        return
    with s:
        assert s.local_port == ISLAND_PORT


def expect_timeout(s, *want):
    with pytest.raises(isthmus.Timeout) as e:
        s.wait_round(timeout=0.3)
    msg = str(e.value)
    assert isinstance(e.value, TimeoutError) and "no ROUND within the timeout" in msg
    for w in want:
        assert w in msg, msg
    return msg


def test_timeout_says_nothing_arrived(edge):
    with session(edge, auth=False) as s:
        expect_timeout(s, "nothing received on 127.0.0.1:%d" % s.local_port,
                       "island_port (default %d)" % ISLAND_PORT)


def test_timeout_names_a_version_2_edge(edge):
    """An edge with [auth] speaks version 2; this session has no key."""
    with session(edge, auth=False) as s:
        edge.version = 2
        for r in range(3):
            edge.round(r, PEERS, NCH)
        edge.agg(0, 0, 1, np.zeros(CE, np.float32))
        expect_timeout(s, "received 3 ROUND and 1 AGG from 127.0.0.1:%d with wire "
                       "version 2, but this session has no key file (auth off" % edge.port)
        assert s.counters()["wire_drop_version"] == 4


def test_timeout_names_another_source_port(edge):
    """Frames of the right version and job from another port than the
    edge the session was given: e.g. isthmusd's udp_port, not its
    island-facing one."""
    other = FakeEdge(SELF, job=JOB)
    try:
        with session(edge, auth=False) as s:
            other.island_port = s.local_port
            for r in range(2):
                other.round(r, PEERS, NCH)
            expect_timeout(s, "received 2 ROUND from 127.0.0.1:%d with wire version %d, "
                           "not from the edge this session was given (127.0.0.1:%d)"
                           % (other.port, VERSION, edge.port))
            other.version = 2
            other.round(5, PEERS, NCH)
            # counts add up; the last one's version is named
            expect_timeout(s, "received 3 ROUND from 127.0.0.1:%d with wire version 2"
                           % other.port)
            assert s.counters()["drop_source"] == 3
    finally:
        other.close()


def test_timeout_names_another_job_and_island(edge):
    with session(edge, auth=False) as s:
        edge.job = JOB + 1
        edge.round(1, PEERS, NCH)
        edge.job, edge.island = JOB, SELF + 1
        edge.round(2, PEERS, NCH)
        edge.round(3, PEERS, NCH)
        expect_timeout(s, "received 1 ROUND of job %d, but this session's job is %d"
                       % (JOB + 1, JOB),
                       "received 2 ROUND for island %d, but this session is island %d"
                       % (SELF + 1, SELF))


def test_result_timeout_says_it_too(edge):
    with session(edge, auth=False) as s:
        edge.version = 2
        edge.round(4, PEERS, NCH)
        with pytest.raises(isthmus.Timeout) as e:
            s.result(4, np.zeros(ELEMS, np.float32), timeout=0.3)
        assert e.value.errno == errno.ENOENT
        assert "with wire version 2, but this session has no key file" in str(e.value)


def test_default_grace_is_one_period(edge):
    """An edge sends AGGs up to its [agg] round_slack past the ROUND's
    deadline: by default a round collects for one more period, so AGGs
    after the deadline are still summed (grace=0.0 would end it there)."""
    with session(edge, auth=False) as s:
        # a period of 1 s: the AGGs come after the deadline and well
        # within the grace even if this process is descheduled a while
        start = edge.round(6, 1 << 0, NCH, deadline_in=1.0)
        assert s.wait_round(timeout=2).round == 6
        own = np.arange(ELEMS, dtype=np.float32)
        s.send(6, own)
        edge.data(NCH)
        while now_ns() < start + 1_000_000_000:        # past the deadline
            s.poll(timeout=0.01)
        assert not s.ready(6)                           # still collecting
        peer = np.full(ELEMS, 0.5, np.float32)
        for c in range(NCH):
            edge.agg(6, c, 1 << 0, peer[c * CE:(c + 1) * CE])
        out = np.zeros(ELEMS, np.float32)
        res = s.result(6, out, timeout=2)
        assert res.complete and res.bitmap == 1 << 0 | 1 << SELF
        np.testing.assert_array_equal(out, own + peer)
