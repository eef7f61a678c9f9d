#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hostile-traffic system tests (doc/security.md): a testbed run with
authentication on (scripts/testbed.sh run, three islands, all-to-all) and
an attacker sending isthmus-inject traffic at edge 0 the way a real one
reaches its ports, during a window of rounds in the middle of the run.

  access  the attacker is on island 0's access link (in island 0's
          namespace, frames leave on its eth0 towards the edge, source
          address forged to the island's own): spoofed island DATA,
          an access NACK storm, tiny DATA with fresh chunk ids, replays of
          the island's captured genuine packets (old rounds, and the round
          running), a flood; and spoofed AGGs to the island from the edge's
          address.
  wan     the attacker is on the WAN side of edge 0's link (in the
          emulator's namespace, frames leave on the link to edge 0's WAN
          port), forging the peer edges' addresses: spoofed peer DATA, a
          peer NACK storm naming the whole round, tiny DATA with fresh
          chunk ids, replays of a peer's captured genuine packets, a
          flood; with --pmd af_xdp (source pinning on) also frames from an
          address in no site table, which XDP drops.

Each attack is sent both as version 1 (no key) and as version 2 sealed with
a key of the attacker's own (job 1, random). Asserted, from the SUMMARY,
the island logs and edge 0's telemetry (/isthmus/stats, /isthmus/xdp) and
/proc: no wrong sum at any island, every result present, no partial in
the attacked rounds (the WAN is clean: any there would be the attack's;
partials elsewhere, from stalls of the shared host, are reported), every
attack counted under a named
reason (auth_tag, auth_replay/auth_stale, auth_format, ...; at least 90 %
of what was sent), amplification <= 1.5 for each NACK storm on its own
(every frame edge 0 sent while the storm was sent that such NACKs can
cause: AGG resends and GONE for the island's, DATA repairs for a peer's,
at a full frame each, over the storm's bytes; genuine repairs in that
interval are counted too) and over the whole
attack window (the same frames over every attack's bytes),
and, two rounds after the last attack, edge 0's mempools in use and RSS
back within the range the clean rounds before the attacks showed.

  member  a member holding island 1's key files (the run's per-site files,
          isthmus-keys split) on island 0's access link: the files cannot
          seal as island 0 or edge 0 (refused locally), and DATA claiming
          island 0 and AGGs claiming edge 0, sealed with island 1's own
          keys and other values, are refused by tag (auth_tag), 0 wrong.
  replay  a key holder on island 0's access link (the run's own key):
          one sealed DATA with a seq far ahead of island 0's stream and a
          chunk id past the round (refused as data_bad_chunk without
          moving the replay window: no partial result follows), and one
          with a seq far ahead of the edge's clock (auth_ahead).

  hostile_test.py BUILD_DIR CASE [--auth on|off] [--pmd af_packet|af_xdp]

--auth off runs the same attacks against a version 1 testbed: the test
must then fail (the attacks succeed); it is not a CI case.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TB = os.path.join(ROOT, "scripts", "testbed.sh")

ISLANDS = 3
PAYLOAD = 65536  # 16384 int32 per island and round
ELEMS = PAYLOAD // 4
A0 = 4  # first attacked round: 0-3 are clean (the baseline)
ROUNDS = 160  # 26 s at T = 161 ms: the attacks take 10-15 s on a loaded host

fails = []


def bad(msg):
    print("FAIL: " + msg, flush=True)
    fails.append(msg)


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


def now_ns():
    return time.time_ns()


class Run:
    """The testbed run in the background and what the attacks need of it."""

    def __init__(self, build, work, pmd, auth):
        self.build, self.work, self.pmd, self.auth = build, work, pmd, auth
        self.log = os.path.join(work, "run.log")
        env = dict(os.environ, BUILD=build)
        self.proc = subprocess.Popen(
            [TB, "run", "--islands", str(ISLANDS), "--schedule", "all-to-all",
             "--payload-bytes", str(PAYLOAD), "--rounds", str(ROUNDS),
             "--ready-timeout", "240", "--keep", os.path.join(work, "run"),
             "--pmd", pmd, "--auth", auth],
            stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.dir = os.path.join(work, "run")

    def wait_ready(self, timeout):
        end = time.time() + timeout
        while time.time() < end:
            text = open(self.log, errors="replace").read()
            if "all ready" in text:
                m = re.search(r"^testbed: run ([0-9a-f]{4}),", text, re.M)
                self.rid = m.group(1)
                conf = open(os.path.join(self.dir, "edge0.conf")).read()
                self.epoch = int(re.search(r"^epoch = (\d+)", conf, re.M).group(1))
                for l in open(os.path.join(self.dir, "run.sched")):
                    f = l.split()
                    if f and f[0] == "round-ns":
                        self.T = int(f[1])
                self.edge_pid = int(open(os.path.join(self.dir, "edge0.pid")).read())
                self.sock = "/var/run/dpdk/isth%se0/dpdk_telemetry.v2" % self.rid
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def ns(self, what):
        return "isth-%s-%s" % (self.rid, what)

    def round_start(self, r):
        return self.epoch + r * self.T

    def at(self, t_ns):
        """Wait for the clock to reach t_ns (the rounds are clock-driven:
        this is the condition, not a delay standing in for one)."""
        while now_ns() < t_ns:
            if self.proc.poll() is not None:
                return
            time.sleep(min(0.05, max(0.0, (t_ns - now_ns()) / 1e9)))

    def round_now(self):
        return (now_ns() - self.epoch) // self.T

    def mac(self, kind, k):
        return "02:%02x:%s:%s:00:%02x" % (kind, self.rid[:2], self.rid[2:], k)


class Tel:
    """DPDK telemetry client (as tests/isthmusd/isthd_tel.py)."""

    def __init__(self, path, deadline):
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                self.s.connect(path)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        json.loads(self.s.recv(16384))

    def ask(self, cmd):
        self.s.send(cmd.encode())
        return json.loads(self.s.recv(1 << 20)).get(cmd) or {}


def rss_kib(pid):
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
    return 0


def snapshot(run, tel):
    s = dict(tel.ask("/isthmus/stats"))
    for k, v in tel.ask("/isthmus/xdp").items():
        s["xdp_" + k] = v
    s["rss_kib"] = rss_kib(run.edge_pid)
    return s


def inject(run, ns, kind, args, log):
    """isthmus-inject in namespace ns; returns (sent, bytes)."""
    cmd = ["ip", "netns", "exec", ns,
           os.path.join(run.build, "app", "isthmus-inject", "isthmus-inject")] + args + kind
    p = subprocess.run(cmd, capture_output=True, text=True)
    log.write("$ %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    m = re.search(r"INJECT kind=\S+ sent=(\d+) bytes=(\d+) errors=(\d+)", p.stdout)
    if m is None:
        bad("isthmus-inject %s: no INJECT line (exit %d): %s" % (kind[0], p.returncode,
                                                                 p.stderr.strip()[-200:]))
        return 0, 0
    return int(m.group(1)), int(m.group(2))


def capture(ns, iface, bpf, count, path):
    """dumpcap in the background, classic pcap format, the interface left
    out of promiscuous mode (nothing of the run's setup changes); returns
    the process."""
    return subprocess.Popen(
        ["ip", "netns", "exec", ns, "dumpcap", "-q", "-p", "-P", "-i", iface, "-f", bpf,
         "-c", str(count), "-a", "duration:5", "-w", path],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def attacker_key(work):
    path = os.path.join(work, "attacker.key")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, ("job 1\nepoch 1 round 0 key %s\n" % os.urandom(32).hex()).encode())
    os.close(fd)
    return path


class Attack:
    """One attack: what was sent to whom, and which drop reasons of edge 0
    (or of island 0's log) must show it."""

    def __init__(self, name, reasons, target="edge"):
        self.name, self.reasons, self.target = name, reasons, target
        self.sent = self.bytes = 0
        self.out = None  # frames edge 0 sent while it ran (NACK storms)

    def add(self, sb):
        self.sent += sb[0]
        self.bytes += sb[1]


# Where an attack must be counted (auth on). Version 1 packets at a v2
# edge or island are refused before the tag (auth_format; 'version' if the
# parser sees them first); sealed with a foreign key, by the tag.
V1 = ["drop_version", "drop_auth_format"]
TAG = ["drop_auth_tag"]
REPLAY = ["drop_auth_replay", "drop_auth_stale", "drop_auth_epoch", "drop_round_late"]


def run_access(run, log, keyf, n_chunks, ce):
    ns = run.ns(0)
    edge, island = "10.10.0.1", "10.10.0.2"
    up = ["--key-file", keyf, "--dir", "up", "--owner", "0"]
    down = ["--key-file", keyf, "--dir", "down", "--owner", "0"]
    atk = []
    # the island's genuine packets of round 1, captured on its link
    old_pcap = os.path.join(run.work, "access-old.pcap")
    run.at(run.round_start(1))
    cap = capture(ns, "eth0", "udp and dst port 9471 and dst host %s" % edge, 40, old_pcap)
    cap.wait()
    run.at(run.round_start(A0))
    r = run.round_now()
    a = Attack("spoofed island DATA, v1", V1)
    b = Attack("spoofed island DATA, foreign key", TAG)
    for rr in (r, r + 1):
        base = ["--to", edge, "--from", island, "--job", "1", "--sender", "0", "--round",
                str(rr), "--chunk", "0", "--chunk-step", "1", "--count", str(n_chunks),
                "--value", "1000003"]
        a.add(inject(run, ns, ["data"], base + ["--elems", str(ce)], log))
        b.add(inject(run, ns, ["data"], base + ["--elems", str(ce)] + up, log))
    atk += [a, b]
    a = Attack("access NACK storm, v1", V1)
    b = Attack("access NACK storm, foreign key", TAG)
    base = ["--to", edge, "--from", island, "--job", "1", "--sender", "0", "--round",
            str(run.round_now()), "--range", "0-4294967295", "--count", "500", "--rate", "5000"]
    storm(run, a, lambda: inject(run, ns, ["nack"], base, log), ("resent", "gone"))
    storm(run, b, lambda: inject(run, ns, ["nack"], base + up, log), ("resent", "gone"))
    atk += [a, b]
    a = Attack("tiny DATA, fresh chunk ids, v1", V1)
    b = Attack("tiny DATA, fresh chunk ids, foreign key", TAG)
    base = ["--to", edge, "--from", island, "--job", "1", "--sender", "0", "--round",
            str(run.round_now()), "--chunk", "1000", "--count", "1000", "--rate", "10000"]
    a.add(inject(run, ns, ["tiny"], base, log))
    b.add(inject(run, ns, ["tiny"], base + up, log))
    atk += [a, b]
    # replays: round 1's packets, then the round running (captured and
    # resent at once)
    a = Attack("replay of the island's round-1 packets", REPLAY)
    a.add(inject(run, ns, ["replay", old_pcap], ["--to", edge, "--from", island], log))
    new_pcap = os.path.join(run.work, "access-new.pcap")
    run.at(run.round_start(run.round_now() + 1))
    cap = capture(ns, "eth0", "udp and dst port 9471 and dst host %s" % edge, 10, new_pcap)
    cap.wait()
    a.add(inject(run, ns, ["replay", new_pcap], ["--to", edge, "--from", island], log))
    atk.append(a)
    # AGGs to the island claiming its edge, for the next rounds
    a = Attack("spoofed AGG to the island, v1", ["version", "auth_format"], "island")
    b = Attack("spoofed AGG to the island, foreign key", ["auth_tag"], "island")
    r = run.round_now()
    for rr in (r + 1, r + 2):
        base = ["--to", island, "--from", edge, "--job", "1", "--sender", "0", "--round",
                str(rr), "--chunk", "0", "--chunk-step", "1", "--count", str(n_chunks),
                "--bitmap", "0x7", "--value", "5"]
        a.add(inject(run, ns, ["agg"], base + ["--elems", str(ce)], log))
        b.add(inject(run, ns, ["agg"], base + down, log))
    atk += [a, b]
    a = Attack("flood, foreign key", TAG)
    a.add(inject(run, ns, ["data"], ["--to", edge, "--from", island, "--job", "1", "--sender",
                                     "0", "--round", str(run.round_now()), "--elems", str(ce),
                                     "--count", "10000", "--rate", "10000"] + up, log))
    atk.append(a)
    return atk


def run_replay(run, log, keyf, n_chunks, ce):
    """A member holding the job's key (island 0 itself, or anyone with its
    key file) on island 0's access link: one sealed DATA whose seq is far
    ahead of island 0's stream (but within the edge's clock slack) for a
    chunk past the round, which once moved the replay window before the
    round checks refused it and silenced island 0 for the epoch; and one
    whose seq is 2^62, far ahead of every clock (auth_ahead)."""
    ns = run.ns(0)
    edge, island = "10.10.0.1", "10.10.0.2"
    up = ["--key-file", os.path.join(run.dir, "job.key"), "--dir", "up", "--owner", "0"]
    run.at(run.round_start(A0) + run.T // 4)
    # the next round: the edge admits the running round and the next, so
    # the packet still meets the chunk check (not round_late) if starting
    # isthmus-inject on a loaded host takes more than a round
    r = run.round_now() + 1
    a = Attack("one DATA: seq ahead, chunk past the round", ["drop_data_bad_chunk"])
    a.add(inject(run, ns, ["data"],
                 ["--to", edge, "--from", island, "--job", "1", "--sender", "0", "--round",
                  str(r), "--chunk", str(n_chunks), "--elems", str(ce), "--count", "1",
                  "--seq", str(now_ns() + 200000000), "--value", "7"] + up, log))
    b = Attack("one DATA: seq 2^62", ["drop_auth_ahead"])
    b.add(inject(run, ns, ["data"],
                 ["--to", edge, "--from", island, "--job", "1", "--sender", "0", "--round",
                  str(r), "--chunk", "0", "--elems", str(ce), "--count", "1",
                  "--seq", str(1 << 62), "--value", "7"] + up, log))
    # the rounds after it must complete: wait for two more to start
    run.at(run.round_start(r + 2))
    return [a, b]


def wan_route(run, wns, edge):
    """The attacker's route in the emulator namespace: out of its port to
    edge 0's link, to edge 0's WAN MAC."""
    te = "te%s0" % run.rid
    subprocess.run(["ip", "-n", wns, "route", "replace", edge + "/32", "dev", te], check=True)
    subprocess.run(["ip", "-n", wns, "neigh", "replace", edge, "lladdr", run.mac(3, 0),
                    "dev", te, "nud", "permanent"], check=True)


def run_wan(run, log, keyf, n_chunks, ce):
    wns = run.ns("w")
    # captures: peer 1's frames as they enter the emulator (what leaves
    # the emulator's af_packet ports bypasses the kernel's taps)
    te1 = "te%s1" % run.rid
    edge = "10.0.0.1"
    wan_route(run, wns, edge)
    # a WAN tag list for the job's other islands (the foreign key's pairs)
    wan1 = ["--key-file", keyf, "--dir", "wan", "--owner", "1", "--islands", str(ISLANDS)]
    wan2 = ["--key-file", keyf, "--dir", "wan", "--owner", "2", "--islands", str(ISLANDS)]
    atk = []
    old_pcap = os.path.join(run.work, "wan-old.pcap")
    run.at(run.round_start(1))
    cap = capture(wns, te1, "udp and dst port 9471 and src host 10.0.1.1 and dst host " + edge,
                  40, old_pcap)
    cap.wait()
    run.at(run.round_start(A0))
    r = run.round_now()
    a = Attack("spoofed peer DATA, v1", V1)
    b = Attack("spoofed peer DATA, foreign key", TAG)
    for rr in (r, r + 1):
        base = ["--to", edge, "--from", "10.0.1.1", "--job", "1", "--sender", "1", "--round",
                str(rr), "--chunk", "0", "--chunk-step", "1", "--count", str(n_chunks),
                "--value", "1000003"]
        a.add(inject(run, wns, ["data"], base + ["--elems", str(ce)], log))
        b.add(inject(run, wns, ["data"], base + ["--elems", str(ce)] + wan1, log))
    atk += [a, b]
    a = Attack("peer NACK storm, v1", V1)
    b = Attack("peer NACK storm, foreign key", TAG)
    base = ["--to", edge, "--from", "10.0.1.1", "--job", "1", "--sender", "1", "--bitmap",
            "0x1", "--flags", "chunks", "--round", str(run.round_now()), "--range",
            "0-4294967295", "--count", "500", "--rate", "5000"]
    storm(run, a, lambda: inject(run, wns, ["nack"], base, log), ("repairs_sent",))
    storm(run, b, lambda: inject(run, wns, ["nack"], base + wan1, log), ("repairs_sent",))
    atk += [a, b]
    a = Attack("tiny DATA, fresh chunk ids, v1", V1)
    b = Attack("tiny DATA, fresh chunk ids, foreign key", TAG)
    base = ["--to", edge, "--from", "10.0.2.1", "--job", "1", "--sender", "2", "--round",
            str(run.round_now()), "--chunk", "1000", "--count", "1000", "--rate", "10000"]
    a.add(inject(run, wns, ["tiny"], base, log))
    b.add(inject(run, wns, ["tiny"], base + wan2, log))
    atk += [a, b]
    a = Attack("replay of a peer's round-1 packets", REPLAY)
    a.add(inject(run, wns, ["replay", old_pcap], ["--to", edge, "--from", "10.0.1.1"], log))
    new_pcap = os.path.join(run.work, "wan-new.pcap")
    run.at(run.round_start(run.round_now() + 1))
    cap = capture(wns, te1, "udp and dst port 9471 and src host 10.0.1.1 and dst host " + edge,
                  10, new_pcap)
    cap.wait()
    a.add(inject(run, wns, ["replay", new_pcap], ["--to", edge, "--from", "10.0.1.1"], log))
    atk.append(a)
    a = Attack("flood, foreign key", TAG)
    a.add(inject(run, wns, ["data"], ["--to", edge, "--from", "10.0.1.1", "--job", "1",
                                      "--sender", "1", "--round", str(run.round_now()),
                                      "--elems", str(ce), "--count", "10000",
                                      "--rate", "10000"] + wan1, log))
    atk.append(a)
    if run.pmd == "af_xdp":
        a = Attack("DATA from an address in no site table", ["xdp_wan_spoofed"])
        a.add(inject(run, wns, ["data"], ["--to", edge, "--from", "10.0.9.9", "--job", "1",
                                          "--sender", "1", "--round", str(run.round_now()),
                                          "--count", "2000", "--rate", "10000"], log))
        atk.append(a)
    return atk


def refused_locally(run, ns, keyf, d, owner, log):
    """A member's site file cannot even seal as another site: lib/auth
    refuses the seal (EPERM) and isthmus-inject sends nothing. (wan: a tag
    list for every other island of the job, under the pair keys of
    @owner, which only edge @owner's file holds.)"""
    cmd = ["ip", "netns", "exec", ns,
           os.path.join(run.build, "app", "isthmus-inject", "isthmus-inject"), "data",
           "--to", "10.10.0.1", "--from", "10.10.0.2", "--job", "1", "--sender", str(owner),
           "--round", str(run.round_now()), "--count", "1", "--key-file", keyf, "--dir", d,
           "--owner", str(owner), "--islands", str(ISLANDS)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    log.write("$ %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    m = re.search(r"sent=(\d+)", p.stdout)
    ok = "seal: Operation not permitted" in p.stderr and (m is None or int(m.group(1)) == 0)
    print("  %s sealing %s as owner %d: %s" % (os.path.basename(keyf), d, owner,
                                             "refused" if ok else "NOT REFUSED"))
    if not ok:
        bad("%s sealed %s as owner %d: %s" % (keyf, d, owner, p.stderr.strip()[-200:]))


def run_member(run, log, keyf, n_chunks, ce):
    """A member holding island 1's key files (the testbed's per-site
    files, isthmus-keys split) on island 0's access link: its files cannot
    seal as island 0 or its edge at all, and what it seals with its own
    keys while claiming island 0 (DATA with other values, sent first, in
    two rounds; AGGs to island 0 claiming edge 0) is refused by tag. And
    the holder of edge 1's file (pairwise WAN keys from and to edge 1
    only): it cannot seal a WAN frame as edge 0 or edge 2 at all, and
    the tag list it seals with its own pair keys while claiming edge 2,
    from edge 2's address, on edge 0's WAN link, is refused by tag."""
    ns = run.ns(0)
    edge, island = "10.10.0.1", "10.10.0.2"
    isl1 = os.path.join(run.dir, "keys", "island-1.key")
    edge1 = os.path.join(run.dir, "keys", "edge-1.key")
    run.at(run.round_start(A0))
    for f, d in ((isl1, "up"), (isl1, "down"), (isl1, "wan"), (edge1, "up"), (edge1, "down"),
                 (edge1, "wan")):
        refused_locally(run, ns, f, d, 0, log)
    refused_locally(run, ns, edge1, "wan", 2, log)
    atk = []
    a = Attack("member: DATA as island 0 under island 1's UP key", TAG)
    r = run.round_now() + 1
    run.at(run.round_start(r))
    for rr in (r, r + 1):
        base = ["--to", edge, "--from", island, "--job", "1", "--sender", "0", "--round",
                str(rr), "--chunk", "0", "--chunk-step", "1", "--count", str(n_chunks),
                "--elems", str(ce), "--value", "1000003", "--key-file", isl1, "--dir", "up",
                "--owner", "1"]
        a.add(inject(run, ns, ["data"], base, log))
    atk.append(a)
    a = Attack("member: AGG as edge 0 under island 1's DOWN key", ["auth_tag"], "island")
    r = run.round_now()
    for rr in (r + 1, r + 2):
        base = ["--to", island, "--from", edge, "--job", "1", "--sender", "0", "--round",
                str(rr), "--chunk", "0", "--chunk-step", "1", "--count", str(n_chunks),
                "--bitmap", "0x7", "--value", "5", "--key-file", isl1, "--dir", "down",
                "--owner", "1"]
        a.add(inject(run, ns, ["agg"], base, log))
    atk.append(a)
    wns, wedge = run.ns("w"), "10.0.0.1"
    wan_route(run, wns, wedge)
    a = Attack("member: WAN DATA as edge 2 under edge 1's pair keys", TAG)
    r = run.round_now() + 1
    run.at(run.round_start(r))
    for rr in (r, r + 1):
        base = ["--to", wedge, "--from", "10.0.2.1", "--job", "1", "--sender", "2", "--round",
                str(rr), "--chunk", "0", "--chunk-step", "1", "--count", str(n_chunks),
                "--elems", str(ce), "--value", "1000003", "--key-file", edge1, "--dir", "wan",
                "--owner", "1", "--islands", str(ISLANDS)]
        a.add(inject(run, wns, ["data"], base, log))
    atk.append(a)
    return atk


OUT = ("resent", "gone", "repairs_sent")


def storm(run, attack, fn, out):
    """Run fn (a NACK storm) and count the frames edge 0 sent meanwhile
    under the counters @out that such NACKs can cause (island NACKs: AGG
    resends and GONE; peer NACKs: DATA repairs): telemetry before and
    after the injection, which returns once every NACK is on the wire.
    Genuine repairs in that interval count too: an upper bound."""
    before = run.tel.ask("/isthmus/stats")
    attack.add(fn())
    after = run.tel.ask("/isthmus/stats")
    attack.out = sum(after.get(k, 0) - before.get(k, 0) for k in out)


def island_drops(path):
    d = {}
    for l in open(path, errors="replace"):
        m = re.match(r"isthmus-island: (?:dropped|refused) (\d+) packets: (\S+)", l)
        if m:
            d[m.group(2)] = d.get(m.group(2), 0) + int(m.group(1))
    return d


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: hostile_test.py BUILD_DIR access|wan|member|replay [--auth on|off] "
                 "[--pmd P]")
    build, case = os.path.abspath(sys.argv[1]), sys.argv[2]
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    auth, pmd = opts.get("--auth", "on"), opts.get("--pmd", "af_packet")
    if case not in ("access", "wan", "member", "replay"):
        sys.exit("unknown case " + case)
    if os.geteuid() != 0:
        skip("needs root (network namespaces, veth, raw sockets)")
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        skip("ip netns unavailable")
    if shutil.which("dumpcap") is None:
        skip("dumpcap (wireshark-common) not installed: no captures to replay")
    if pmd == "af_xdp" and not os.path.exists(os.path.join(build, "lib/xdp/isth_xdp.bpf.o")):
        skip("lib/xdp's BPF object was not built")
    # chunks of a round as the island cuts them: 358 int32 at MTU 1500;
    # with auth the island and its edge leave room for the edge's WAN tag
    # list, of at most 2 peers with 3 islands: (1500 - 28 - 40 - 8 - 2 x 16)
    # / 4 = 348
    # (doc/protocol.md, "Sizes")
    ce = 348 if auth == "on" else 358
    n_chunks = (ELEMS + ce - 1) // ce

    work = tempfile.mkdtemp(prefix="isth-hostile-")
    os.chmod(work, 0o700)
    keyf = attacker_key(work)
    log = open(os.path.join(work, "attacks.log"), "w")
    run = Run(build, work, pmd, auth)
    try:
        if not run.wait_ready(300):
            print(open(run.log, errors="replace").read()[-3000:])
            bad("the testbed never got ready")
            return
        print("run %s: T %.1f ms, %d chunks per island and round; attacks from round %d"
              % (run.rid, run.T / 1e6, n_chunks, A0), flush=True)
        tel = Tel(run.sock, time.time() + 60)
        run.tel = tel
        # baseline: the middle of clean rounds 1..3 (before any attack)
        base = []
        for r in (1, 2, 3):
            run.at(run.round_start(r) + run.T // 2)
            base.append(snapshot(run, tel))
        atk = {"access": run_access, "wan": run_wan, "member": run_member,
               "replay": run_replay}[case](run, log, keyf, n_chunks, ce)
        a1 = run.round_now() + 1
        run.at(run.round_start(a1 + 2) + run.T // 2)
        if run.proc.poll() is not None or a1 + 4 > ROUNDS:
            bad("the attacks took until round %d of %d: no clean rounds left after them"
                % (a1, ROUNDS))
            return
        end = snapshot(run, tel)
        print("attacks in rounds %d..%d; end snapshot in round %d" % (A0, a1 - 1, a1 + 2),
              flush=True)
        rc = run.proc.wait(timeout=600)
        out = open(run.log, errors="replace").read()
        summary = [l for l in out.splitlines() if l.startswith("SUMMARY")]
        print(summary[-1] if summary else out[-2000:])
        if rc != 0:
            bad("testbed exit %d" % rc)
        if summary:
            f = dict(x.split("=", 1) for x in summary[-1].split()[1:])
            want = ISLANDS * ROUNDS * n_chunks
            for k, v in (("wrong", 0), ("aggregates", want), ("verified", want)):
                if int(f[k]) != v:
                    bad("SUMMARY %s=%s, want %d" % (k, f[k], v))
        # partials: the WAN is clean, so a partial in the attacked rounds
        # (A0 up to the end snapshot) would be the attack's. Outside them
        # (a stall of the shared host) they are reported, not the attack's.
        inside = outside = 0
        for k in range(ISLANDS):
            for l in open(os.path.join(run.dir, "island%d.log" % k), errors="replace"):
                m = re.match(r"round (\d+) .* partial (\d+) ", l)
                if m and int(m.group(2)):
                    if A0 <= int(m.group(1)) <= a1 + 2:
                        inside += int(m.group(2))
                    else:
                        outside += int(m.group(2))
        print("  partial results: %d in the attacked rounds %d..%d, %d outside them"
              % (inside, A0, a1 + 2, outside))
        if inside:
            bad("%d partial results in the attacked rounds" % inside)
        # every attack counted under its reasons: attacks sharing reasons
        # are judged together (a counter cannot tell them apart)
        idrops = island_drops(os.path.join(run.dir, "island0.log"))
        b0 = base[-1]
        groups = {}
        for a in atk:
            groups.setdefault((a.target, tuple(a.reasons)), []).append(a)
        for (target, reasons), group in groups.items():
            if target == "island":
                got = sum(idrops.get(k, 0) for k in reasons)
            else:
                got = sum(end.get(k, 0) - b0.get(k, 0) for k in reasons)
            sent = sum(a.sent for a in group)
            for a in group:
                print("  %-44s sent %6d (%8d B)" % (a.name, a.sent, a.bytes))
            print("    %s %s: %d counted for %d sent" % (target, "/".join(reasons), got, sent))
            if any(a.sent == 0 for a in group) or got < 0.9 * sent:
                bad("%s: %d sent, %d counted under %s"
                    % (", ".join(a.name for a in group), sent, got, "/".join(reasons)))
        # amplification: what edge 0 sent because of the attacks (every
        # resend, GONE and peer repair in the window, at a full frame each)
        # over what the attacks sent to it (payloads + 42 B of headers)
        for a in atk:
            if a.out is None:
                continue
            in_a = a.bytes + 42 * a.sent
            amp = a.out * 1514 / in_a if in_a else float("inf")
            print("  amplification of %-30s %d frames out (<= %d B) for %d B in: %.4f"
                  % (a.name + ":", a.out, a.out * 1514, in_a, amp))
            if amp > 1.5:
                bad("%s: amplification %.3f > 1.5" % (a.name, amp))
        out_frames = sum(end.get(k, 0) - b0.get(k, 0) for k in OUT)
        in_b = sum(a.bytes + 42 * a.sent for a in atk if a.target == "edge")
        amp = out_frames * 1514 / in_b if in_b else 0.0
        print("  amplification: %d frames out (<= %d B) for %d B in: %.4f"
              % (out_frames, out_frames * 1514, in_b, amp))
        # (the replay case sends two packets: any genuine repair of the
        # window would be a "ratio" of that; nothing there can amplify)
        if amp > 1.5 and case != "replay":
            bad("amplification %.3f > 1.5" % amp)
        # state back to what the clean rounds showed
        for k in sorted(b0):
            if not (k.startswith("mempool_") or k == "rss_kib"):
                continue
            lo, hi = min(s.get(k, 0) for s in base), max(s.get(k, 0) for s in base)
            # RSS: pages first touched by the attack traffic may stay (the
            # pools are preallocated, nothing is allocated per packet): 4 MiB
            slack = 4096 if k == "rss_kib" else max(hi - lo, 16)
            print("  %-28s clean %d..%d, after the attacks %d" % (k, lo, hi, end.get(k, 0)))
            if end.get(k, 0) > hi + slack:
                bad("%s %d after the attacks, clean rounds %d..%d" % (k, end.get(k, 0), lo, hi))
    finally:
        log.close()
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, 15)
            run.proc.wait()
        if fails:
            print("logs kept in " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
    if fails:
        sys.exit(1)
    print("PASS")
