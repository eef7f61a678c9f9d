#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""net_pcap replay test, the checking half (tests/pcap/replay_test.sh).

  replay_check.py feed FIFO IN_WAN.pcap TELEMETRY_SOCKET ROUND PID
      Opens the FIFO isthmusd reads as its WAN rx_pcap, writes the pcap
      header (isthmusd opens the file at EAL init), waits until the edge is
      in ROUND with it published, then writes the captured frames and
      closes the FIFO (end of capture). Gives up, clearly, after 60 s or
      as soon as isthmusd (PID) has exited.
  replay_check.py check IN_WAN.pcap OUT_ACCESS.pcap OUT_WAN.pcap
      Decodes the input itself (not lib/wire) and compares every AGG the
      edge sent its island with the sums computed here: per chunk, the
      contributions of each sender counted once, bitmap = the senders
      heard, PARTIAL exactly when a clique member is missing; and checks
      that the lost chunk was NACKed to its sender's edge.
"""
import errno
import fcntl
import os
import struct
import sys
import time

ISLAND, CLIQUE, JOB = 0, 0xf, 7           # replay_test.sh's schedule and config
EDGE_ACCESS_IP, ISLAND_IP = "10.10.0.1", "10.10.0.2"
ISLAND_MAC = "02:00:00:00:00:02"
PEER_IP = {1: "10.0.0.2", 2: "10.0.0.3", 3: "10.0.0.4"}
PORT = 9471
DATA, AGG, NACK, ROUND = 1, 2, 3, 5
F_PARTIAL, F_CHUNKS = 1, 8
INT32 = 3


def records(path):
    """The frames of a classic pcap file (either byte order)."""
    with open(path, "rb") as f:
        b = f.read()
    if len(b) < 24:
        sys.exit("%s: %d bytes, no pcap header" % (path, len(b)))
    magic = struct.unpack("<I", b[:4])[0]
    if magic in (0xa1b2c3d4, 0xa1b23c4d):
        e = "<"
    elif magic in (0xd4c3b2a1, 0x4d3cb2a1):
        e = ">"
    else:
        sys.exit("%s: not a pcap file (magic %#x)" % (path, magic))
    if struct.unpack(e + "I", b[20:24])[0] != 1:
        sys.exit("%s: link type is not Ethernet" % path)
    off, out = 24, []
    while off + 16 <= len(b):
        incl = struct.unpack(e + "I", b[off + 8:off + 12])[0]
        out.append(b[off + 16:off + 16 + incl])
        off += 16 + incl
    if off != len(b):
        sys.exit("%s: truncated record at byte %d" % (path, off))
    return out


def ip(b):
    return ".".join(str(x) for x in b)


def decode(frame):
    """Ethernet (one optional VLAN tag), IPv4, UDP to PORT, isthmus header;
    None for anything else."""
    et, off = struct.unpack(">H", frame[12:14])[0], 14
    if et == 0x8100:
        et, off = struct.unpack(">H", frame[16:18])[0], 18
    if et != 0x0800:
        return None
    ihl = (frame[off] & 15) * 4
    src, dst = ip(frame[off + 12:off + 16]), ip(frame[off + 16:off + 20])
    if frame[off + 9] != 17:
        return None
    udp = off + ihl
    if struct.unpack(">H", frame[udp + 2:udp + 4])[0] != PORT:
        return None
    m = frame[udp + 8:]
    h = {
        "dst_mac": ":".join("%02x" % x for x in frame[0:6]),
        "src": src, "dst": dst,
        "magic": struct.unpack(">H", m[0:2])[0], "version": m[2], "type": m[3],
        "flags": struct.unpack(">H", m[4:6])[0], "dtype": m[6],
        "job": struct.unpack(">I", m[8:12])[0], "round": struct.unpack(">I", m[12:16])[0],
        "chunk": struct.unpack(">I", m[16:20])[0], "sender": m[20],
        "count": struct.unpack(">H", m[22:24])[0], "seq": struct.unpack(">Q", m[24:32])[0],
        "bitmap": struct.unpack(">Q", m[32:40])[0],
    }
    body = m[40:]  # header big-endian, elements little-endian (doc/protocol.md)
    if h["type"] in (DATA, AGG) and h["dtype"] == INT32:
        h["elems"] = list(struct.unpack("<%di" % h["count"], body[:4 * h["count"]]))
    if h["type"] == NACK:
        h["ranges"] = [struct.unpack(">QQ", body[16 * i:16 * i + 16]) for i in range(h["count"])]
    return h


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def feed(fifo, in_wan, sock, rnd, pid):
    sys.path.insert(0, sys.path[0] + "/../isthmusd")
    from isthd_tel import ask, connect
    with open(in_wan, "rb") as f:
        cap = f.read()
    deadline = time.time() + 60
    # a writer's non-blocking open fails (ENXIO) until isthmusd opens its
    # end at EAL init: wait for that, bounded, instead of blocking forever
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
            if time.time() > deadline or not alive(pid):
                sys.exit("isthmusd never opened " + fifo)
            time.sleep(0.05)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    with os.fdopen(fd, "wb", buffering=0) as out:
        out.write(cap[:24])
        s = connect(sock, deadline)
        while True:
            r = ask(s, "/isthmus/round")
            if r is not None and r["started"] and r["round"] >= rnd and r["published_through"] >= rnd:
                break
            if time.time() > deadline or not alive(pid):
                sys.exit("the edge never reached round %d: %s" % (rnd, r))
            time.sleep(0.05)
        if r["round"] != rnd:
            sys.exit("the edge is already in round %d (started too late for round %d)"
                     % (r["round"], rnd))
        out.write(cap[24:])
    print("fed %d bytes in round %d" % (len(cap) - 24, rnd))


def check(in_wan, out_access, out_wan):
    fail = []
    # expected: each (sender, chunk) once, whatever the capture repeats
    contrib = {}
    for fr in records(in_wan):
        h = decode(fr)
        if h and h["type"] == DATA:
            contrib.setdefault((h["round"], h["chunk"]), {}).setdefault(h["sender"], h)
    want = {}
    for (rnd, c), by in contrib.items():
        count = next(iter(by.values()))["count"]
        sums = [0] * count
        bitmap = 0
        for s, h in by.items():
            bitmap |= 1 << s
            sums = [(a + b) & 0xffffffff for a, b in zip(sums, h["elems"])]
        sums = [v - (1 << 32) if v >= 1 << 31 else v for v in sums]
        want[(rnd, c)] = (bitmap, bitmap != CLIQUE & ~(1 << ISLAND), sums)

    aggs, rounds = {}, []
    for fr in records(out_access):
        h = decode(fr)
        if h is None:
            continue
        if h["type"] == ROUND:
            rounds.append(h["round"])
        if h["type"] != AGG:
            continue
        k = (h["round"], h["chunk"])
        if k in aggs:
            fail.append("AGG round %d chunk %d sent twice" % k)
        aggs[k] = h
    if 0 not in rounds:
        fail.append("no ROUND message for round 0 (saw %s)" % rounds)
    if sorted(aggs) != sorted(want):
        fail.append("AGGs for %s, want %s" % (sorted(aggs), sorted(want)))
    for k in sorted(set(aggs) & set(want)):
        h, (bitmap, partial, sums) = aggs[k], want[k]
        exp = {"magic": 0x4953, "version": 1, "dtype": INT32, "job": JOB, "sender": ISLAND,
               "bitmap": bitmap, "partial": partial, "count": len(sums),
               "src": EDGE_ACCESS_IP, "dst": ISLAND_IP, "dst_mac": ISLAND_MAC}
        got = dict(h, partial=bool(h["flags"] & F_PARTIAL))
        for f, v in exp.items():
            if got[f] != v:
                fail.append("AGG round %d chunk %d: %s = %r, want %r" % (k + (f, got[f], v)))
        bad = [i for i, (a, b) in enumerate(zip(h.get("elems", []), sums)) if a != b]
        if bad:
            i = bad[0]
            fail.append("AGG round %d chunk %d: %d sums wrong, element %d = %d, want %d"
                        % (k + (len(bad), i, h["elems"][i], sums[i])))
        print("AGG round %d chunk %d: bitmap %#x%s, %d elements, seq %d"
              % (k + (h["bitmap"], " PARTIAL" if got["partial"] else "", h["count"], h["seq"])))
    seqs = sorted(h["seq"] for h in aggs.values())
    if seqs != list(range(len(seqs))):
        fail.append("AGG sequence numbers %s, want 0..%d once each" % (seqs, len(seqs) - 1))

    # every chunk missing from a clique member is NACKed to its edge
    nacked = {}
    for fr in records(out_wan):
        h = decode(fr)
        if h and h["type"] == NACK and h["flags"] & F_CHUNKS:
            for s, addr in PEER_IP.items():
                if h["bitmap"] == 1 << s and h["dst"] == addr:
                    for a, b in h["ranges"]:
                        nacked.setdefault((h["round"], s), set()).update(range(a, b + 1))
    for (rnd, c), (bitmap, partial, sums) in sorted(want.items()):
        for s in PEER_IP:
            if not bitmap >> s & 1 and c not in nacked.get((rnd, s), ()):
                fail.append("round %d chunk %d, missing from island %d, never NACKed to %s"
                            % (rnd, c, s, PEER_IP[s]))
    print("NACKed: %s" % {k: sorted(v) for k, v in nacked.items()})
    for f in fail:
        print("FAIL: " + f)
    return 1 if fail else 0


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "feed":
        feed(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:]))
    else:
        sys.exit(__doc__)
