# SPDX-License-Identifier: BSD-3-Clause
"""isthmus.Session(key_file=...): authentication (wire v2) through the
binding. The edge here seals and verifies with Python's `cryptography`
(HKDF-SHA256 and AES-256-GCM with an empty plaintext = GMAC), written from
doc/protocol.md, "Authenticated format (v2)", not from lib/auth: the
round's exact sum also cross-checks the two implementations."""
import errno
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import isthmus
from fake_edge import AGG, DATA, FP32, HDR, MAGIC, ROUND, ROUND_BODY, now_ns

crypto = pytest.importorskip("cryptography")
from cryptography.hazmat.primitives import hashes                     # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM        # noqa: E402
from cryptography.hazmat.primitives.kdf.hkdf import HKDF              # noqa: E402

JOB, SELF, N = 7, 1, 4
# elements per chunk at MTU 1500 with auth: the tag, and room for the edge's
# WAN tag list of at most N - 1 = 3 peers (8 + 3 x 16 bytes, 40 more than one
# tag): (1500 - 28 - 40 - 16 - 40) / 4
CE = 344
ELEMS = 2 * CE + 100
NCH = 3
PEERS = 1 << 0 | 1 << 2 | 1 << 3
MASTER = bytes(range(32))
UP, DOWN = 1, 2


def key(direction, owner, epoch=1, master=MASTER):
    info = b"isthmus/v2 gmac" + struct.pack(">IBBB", JOB, epoch, direction, owner)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"isthmus/v2",
                info=info).derive(master)


def iv(msg):
    return msg[3:4] + msg[20:21] + msg[4:6] + msg[24:32]


def seal(msg, direction=DOWN, owner=SELF, epoch=1):
    m = bytearray(msg)
    m[2] = 2                    # version
    m[5] |= 0x10                # flags: AUTH (low byte, big-endian field)
    m[7] = 16                   # trailer_len
    m[21] = epoch
    tag = AESGCM(key(direction, owner, epoch)).encrypt(iv(m), b"", bytes(m))
    return bytes(m) + tag


def tag_ok(msg, direction, owner):
    body, tag = msg[:-16], msg[-16:]
    return AESGCM(key(direction, owner, msg[21])).encrypt(iv(body), b"", body) == tag


def val(k, r, n=ELEMS):
    i = np.arange(n, dtype=np.int64)
    return (((k + 1) * 131 + r * 17 + i * 7) % 1024 - 512) / 16.0


@pytest.fixture
def keyfile():
    fd, path = tempfile.mkstemp(prefix="isth_py_keys.")     # mode 0600
    os.write(fd, ("job %d\nepoch 1 round 0 key %s\n" % (JOB, MASTER.hex())).encode())
    os.close(fd)
    yield path
    os.unlink(path)


class Edge:
    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.island_port = None

    def send(self, buf):
        self.sock.sendto(buf, ("127.0.0.1", self.island_port))

    def hdr(self, type_, r, chunk=0, count=0, seq=0, bitmap=0, dtype=0, flags=0):
        return HDR.pack(MAGIC, 1, type_, flags, dtype, 0, JOB, r, chunk, SELF, 0,
                        count, seq, bitmap)

    def round_msg(self, r, seq):
        start = now_ns()
        body = ROUND_BODY.pack(start, start + 10**9, 10**9, PEERS | 1 << SELF, NCH, CE)
        return self.hdr(ROUND, r, seq=seq, bitmap=PEERS) + body

    def agg_msg(self, r, c, bitmap, values, seq):
        body = np.ascontiguousarray(values).astype("<f4").tobytes()
        return self.hdr(AGG, r, c, len(values), seq, bitmap, FP32, 1) + body

    def recv(self, timeout=2.0):
        self.sock.settimeout(timeout)
        return self.sock.recv(65536)


def session(edge, key_file):
    s = isthmus.Session(job=JOB, island=SELF, n_islands=N, elems=ELEMS,
                        edge=("127.0.0.1", edge.port), bind=("127.0.0.1", 0),
                        probe=None, key_file=key_file, grace=0.0)
    edge.island_port = s.local_port
    return s


def chunk(c):
    return slice(c * CE, min((c + 1) * CE, ELEMS))


def test_round_with_auth_is_exact_and_attacks_are_counted(keyfile):
    e = Edge()
    with session(e, keyfile) as s:
        assert (s.chunk_elems, s.n_chunks) == (CE, NCH)
        c = s.counters()
        assert c["auth"] == 1 and c["auth_epochs"] == 1
        e.send(seal(e.round_msg(3, 100)))
        r = s.wait_round(timeout=2)
        assert r.round == 3
        own = val(SELF, 3).astype(np.float32)
        s.send(3, own)
        for ch in range(NCH):                      # DATA: UP key of SELF
            m = e.recv()
            assert m[2] == 2 and m[3] == DATA and m[21] == 1
            assert tag_ok(m, UP, SELF) and not tag_ok(m, DOWN, SELF)
            assert len(m) == 40 + 4 * len(own[chunk(ch)]) + 16
        peers = sum(val(k, 3) for k in (0, 2, 3))
        # attacks first: a forged AGG (tag of island 2's key), a v1 AGG
        e.send(seal(e.agg_msg(3, 0, PEERS, peers[chunk(0)] + 1, 10), owner=2))
        e.send(e.agg_msg(3, 0, PEERS, peers[chunk(0)] + 1, 11))
        genuine = seal(e.agg_msg(3, 0, PEERS, peers[chunk(0)], 12))
        e.send(genuine)
        e.send(genuine)                            # replay
        for ch in (1, 2):
            e.send(seal(e.agg_msg(3, ch, PEERS, peers[chunk(ch)], 12 + ch)))
        out = np.full(ELEMS, np.nan, np.float32)
        res = s.result(3, out, timeout=2)
        assert res.complete and res.bitmap == PEERS | 1 << SELF
        want = (peers + val(SELF, 3)).astype(np.float32)
        np.testing.assert_array_equal(out, want)
        for _ in range(50):                       # the replay may trail
            c = s.counters()
            if c["auth_replay"] == 1:
                break
            s.poll(timeout=0.02)
        assert (c["auth_tag"], c["auth_format"], c["auth_replay"]) == (1, 1, 1)
        assert c["aggs_summed"] == NCH


def test_bad_key_file_and_reload(keyfile):
    e = Edge()
    os.chmod(keyfile, 0o644)
    with pytest.raises(isthmus.Error) as x:
        session(e, keyfile)
    assert x.value.errno == errno.EACCES and keyfile in str(x.value)
    os.chmod(keyfile, 0o600)
    with session(e, keyfile) as s:
        with open(keyfile, "a") as f:
            f.write("epoch 2 round 100 key %s\n" % bytes(range(1, 33)).hex())
        s.reload_keys(keyfile)
        c = s.counters()
        assert (c["key_reloads"], c["auth_epochs"]) == (1, 2)
        with pytest.raises(isthmus.Error) as x:
            s.reload_keys(keyfile + ".missing")
        assert x.value.errno == errno.ENOENT


def test_auth_false_warns_once_and_is_version_1():
    code = """
import warnings, isthmus
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    for _ in range(2):
        s = isthmus.Session(job=1, island=0, n_islands=2, elems=10,
                            edge=("127.0.0.1", 9), bind=("127.0.0.1", 0), auth=False)
        assert s.chunk_elems == 358 and s.counters()["auth"] == 0
        try:
            s.reload_keys("/nonexistent")
        except isthmus.Error as e:
            assert "auth off" in str(e), e
        s.close()
msgs = [str(x.message) for x in w]
assert len(msgs) == 1 and "authentication off" in msgs[0], msgs
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=os.environ, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_timeout_names_a_version_1_edge_and_a_wrong_key(keyfile):
    """A keyed session whose edge runs without [auth] (version 1), then
    one whose edge holds another key: the Timeout says which."""
    e = Edge()
    try:
        with session(e, keyfile) as s:
            e.send(e.round_msg(1, 0))
            e.send(e.round_msg(2, 1))
            with pytest.raises(isthmus.Timeout) as x:
                s.wait_round(timeout=0.3)
            assert ("received 2 ROUND from 127.0.0.1:%d with wire version 1, but this "
                    "session has a key file (auth on, version 2)" % e.port) in str(x.value)
            assert s.counters()["auth_format"] == 2
            # sealed as version 2 with the right key, tag then flipped:
            # what an edge with another key file sends
            for r, q in ((3, 2), (4, 3), (5, 4)):
                m = bytearray(seal(e.round_msg(r, q)))
                m[-1] ^= 1
                e.send(bytes(m))
            with pytest.raises(isthmus.Timeout) as x:
                s.wait_round(timeout=0.3)
            assert ("3 datagrams from the edge failed authentication (auth_tag 3"
                    in str(x.value)) and "job %d" % JOB in str(x.value), str(x.value)
    finally:
        e.sock.close()


def test_timeout_names_a_clock_behind_the_edge(keyfile):
    """ROUNDs sealed with the right key whose seqs (the edge's clock) are
    5 s ahead of this host's clock: refused as auth_ahead, and the Timeout
    says that this clock is behind, not that a key is wrong."""
    e = Edge()
    try:
        with session(e, keyfile) as s:
            ahead = time.time_ns() + 5 * 10**9
            for r in (1, 2):
                e.send(seal(e.round_msg(r, ahead + r)))
            with pytest.raises(isthmus.Timeout) as x:
                s.wait_round(timeout=0.3)
            assert s.counters()["auth_ahead"] == 2
            m = str(x.value)
            assert ("2 datagrams from the edge had seqs more than 1 s ahead of this "
                    "host's clock (auth_ahead)") in m, m
            assert "failed authentication" not in m, m
    finally:
        e.sock.close()
