#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A real scrape of a running testbed edge (scripts/testbed.sh run, three
islands, all-to-all, --metrics-port 0: each edge serves /metrics on a
free port of its own namespace's loopback, named in its log).

While the run goes, connecting inside edge 0's namespace (setns): wait for the
first peer DATA (a scrape's isthmus_edge_peer_data_total > 0, bounded),
then scrape (OpenMetrics), read /isthmus/stats on the telemetry socket,
scrape again (text format): both parse with prometheus_client's parsers,
and every counter of /isthmus/stats lies between the two scrapes (equal
where it did not move); DATA in, DATA out, AGGs out and per-worker
peer DATA are > 0, isthmus_build_info carries `isthmusd --version`'s
version. Then garbage, a 1 MiB header and a client that sends nothing
get an error or a close while a scrape beside them answers. The run must
still pass (SUMMARY wrong=0, exit 0), and edge 0's final counters
(printed at its exit) are each a metric and no lower than the last scrape.

  metrics_test.py BUILD_DIR
"""
import ctypes
import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

try:
    from prometheus_client.openmetrics.parser import \
        text_string_to_metric_families as om_parse
    from prometheus_client.parser import \
        text_string_to_metric_families as text_parse
except ImportError:
    print("SKIP: prometheus_client missing (scripts/deps.sh installs "
          "python3-prometheus-client)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TB = os.path.join(ROOT, "scripts", "testbed.sh")
sys.path.insert(0, os.path.join(ROOT, "tests", "isthmusd"))
from isthd_tel import ask, connect  # noqa: E402

BUILD = os.path.realpath(sys.argv[1])
ROUNDS = 150  # about 16 s at T = 108 ms: room for the scrapes on a loaded host
OM_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
fails = []


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg, flush=True)
        fails.append(msg)
    return cond


class Netns:
    """Sockets connected from inside edge 0's namespace, the process staying
    in its own (the testbed kills whatever is in its namespaces at the end
    of the run): setns there for the connect only, then back."""
    libc = ctypes.CDLL(None, use_errno=True)
    home = target = None

    @classmethod
    def setns(cls, fd):
        if cls.libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            sys.exit("FAIL: setns: %s" % os.strerror(ctypes.get_errno()))

    @classmethod
    def open(cls, name):
        cls.home = os.open("/proc/self/ns/net", os.O_RDONLY)
        cls.target = os.open("/var/run/netns/" + name, os.O_RDONLY)

    @classmethod
    def connect(cls, port, timeout):
        cls.setns(cls.target)
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=timeout)
        finally:
            cls.setns(cls.home)


def scrape(port, accept=None, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.sock = Netns.connect(port, timeout)
    c.request("GET", "/metrics", headers={"Accept": accept} if accept else {})
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    check(r.status == 200, "scrape: status %d" % r.status)
    fams = (om_parse if accept else text_parse)(body)
    return {(s.name, frozenset(s.labels.items())): s.value for f in fams for s in f.samples}


def metric_of(name):
    if name.startswith("drop_"):
        return ("isthmus_edge_drops_total", frozenset({("reason", name[5:])}))
    m = re.match(r"mempool_(\w+)_in_use$", name)
    if m:
        return ("isthmus_edge_mempool_in_use", frozenset({("pool", m.group(1))}))
    return ("isthmus_edge_%s_total" % name, frozenset())


def until(what, cond, timeout, proc):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        if proc.poll() is not None:
            sys.exit("FAIL: the run ended (exit %s) waiting for %s" % (proc.returncode, what))
        time.sleep(0.1)
    sys.exit("FAIL: no %s within %d s" % (what, timeout))


def bad_clients(port):
    def first_line(data):
        s = Netns.connect(port, 10)
        buf = b""
        try:
            s.sendall(data)
            while b"\r\n" not in buf:
                b = s.recv(4096)
                if not b:
                    break
                buf += b
        except (ConnectionResetError, BrokenPipeError):
            pass
        s.close()
        return buf.split(b"\r\n")[0].decode() if buf else "closed"
    check(first_line(b"garbage\r\n\r\n").startswith("HTTP/1.1 400"), "garbage: no 400")
    r = first_line(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20) + b"\r\n\r\n")
    check(r.startswith("HTTP/1.1 431") or r == "closed", "1 MiB header: %r" % r)
    silent = Netns.connect(port, 10)
    scrape(port, timeout=1.5)  # beside it, at once
    check(silent.recv(1) == b"", "silent client not closed")
    silent.close()


def main():
    work = tempfile.mkdtemp()
    run = os.path.join(work, "run")
    log = os.path.join(work, "run.log")
    version = subprocess.run([os.path.join(BUILD, "app", "isthmusd", "isthmusd"), "--version"],
                             capture_output=True, check=True).stdout.decode().split(" ", 1)[1]
    version = version.strip()
    proc = subprocess.Popen(
        [TB, "run", "--islands", "3", "--schedule", "all-to-all", "--payload-bytes", "65536",
         "--rounds", str(ROUNDS), "--ready-timeout", "240", "--keep", run,
         "--metrics-port", "0"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env=dict(os.environ, BUILD=BUILD), start_new_session=True)
    ok = False
    try:
        text = until("all ready", lambda: (lambda t: t if "all ready" in t else None)(
            open(log, errors="replace").read()), 300, proc)
        rid = re.search(r"^testbed: run ([0-9a-f]{4}),", text, re.M).group(1)
        port = int(re.search(r"isthmusd: metrics on http://127\.0\.0\.1:(\d+)/metrics",
                             open(os.path.join(run, "edge0.log")).read()).group(1))
        island = re.search(r"^island = (\S+)", open(os.path.join(run, "edge0.conf")).read(),
                           re.M).group(1)
        Netns.open("isth-%s-e0" % rid)
        sock = connect("/var/run/dpdk/isth%se0/dpdk_telemetry.v2" % rid, time.time() + 30)
        peer = ("isthmus_edge_peer_data_total", frozenset())
        until("peer DATA", lambda: scrape(port).get(peer, 0) > 0, 120, proc)
        a = scrape(port, OM_ACCEPT)
        tel = ask(sock, "/isthmus/stats")
        b = scrape(port)
        n = eq = 0
        for name, v in tel.items():
            if name == "auth" or name.startswith("mempool_"):
                continue
            k = metric_of(name)
            if check(k in a and k in b, "%s not exported" % name):
                check(a[k] <= v <= b[k], "%s: %d, telemetry %d, %d" % (name, a[k], v, b[k]))
                n += 1
                eq += a[k] == b[k]
        for name in ["data_in", "data_out", "peer_data", "peer_data_bytes", "agg_out",
                     "access_rx", "wan_rx"]:
            check(b[metric_of(name)] > 0, "%s is 0" % name)
        check(b.get(("isthmus_edge_worker_peer_data_total", frozenset({("worker", "0")})), 0)
              > 0, "worker 0's peer_data is 0")
        check(b.get(("isthmus_build_info", frozenset({("version", version),
                                                      ("island", island)}))) == 1,
              "isthmus_build_info{version=%r} missing" % version)
        check(b[("isthmus_edge_round", frozenset())] >= 0, "round not started")
        print("ok: scraped during the run: %d counters between two scrapes around "
              "/isthmus/stats (%d equal); DATA in %d, peer DATA %d, AGGs %d" %
              (n, eq, b[metric_of("data_in")], b[metric_of("peer_data")],
               b[metric_of("agg_out")]), flush=True)
        bad_clients(port)
        last = scrape(port)
        sock.close()
        rc = proc.wait(timeout=600)
        out = open(log, errors="replace").read()
        summ = [l for l in out.splitlines() if l.startswith("SUMMARY")]
        check(rc == 0 and summ and " wrong=0 " in summ[-1],
              "run: exit %d, %s" % (rc, summ[-1] if summ else "no SUMMARY"))
        edge = open(os.path.join(run, "edge0.log"), errors="replace").read()
        final = edge[edge.index("isthmusd counters:"):].split("\n")[1:]
        m_n = 0
        for line in final:
            m = re.match(r"^  (\w+) +(\d+)$", line)
            if not m:
                break
            k = metric_of(m.group(1))
            m_n += 1
            if check(k in last, "final %s is no metric" % m.group(1)) and \
                    not m.group(1).startswith("mempool_"):
                check(last[k] <= int(m.group(2)), "%s: last scrape %d > final %s" %
                      (m.group(1), last[k], m.group(2)))
        print("ok: the run passed (%s); edge 0's %d final counters are metrics, none "
              "below the last scrape" % (summ[-1] if summ else "", m_n), flush=True)
        ok = not fails
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            proc.wait()
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("logs kept in " + work)
    return 0 if ok else 1


sys.exit(main())
