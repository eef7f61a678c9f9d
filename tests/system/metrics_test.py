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
sys.path.insert(0, os.path.join(ROOT, "tests", "isthmusd"))
from isthd_metrics import (OM_ACCEPT, bad_clients, between, check, fails,  # noqa: E402
                           final_counters, get, metric_of, samples, until)
from isthd_tel import ask, connect  # noqa: E402

BUILD = os.path.realpath(sys.argv[1])
ROUNDS = 300  # about 32 s at T = 108 ms: room for the scrapes on a loaded host


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
    def open(cls, name, port):
        cls.home = os.open("/proc/self/ns/net", os.O_RDONLY)
        cls.target = os.open("/var/run/netns/" + name, os.O_RDONLY)
        cls.port = port

    @classmethod
    def connect(cls, timeout):
        cls.setns(cls.target)
        try:
            return socket.create_connection(("127.0.0.1", cls.port), timeout=timeout)
        finally:
            cls.setns(cls.home)


def scrape(accept=None, timeout=10):
    st, _, body = get(Netns.connect, accept, timeout)
    check(st == 200, "scrape: status %d" % st)
    return samples(body, accept is not None)


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
        Netns.open("isth-%s-e0" % rid, port)
        sock = connect("/var/run/dpdk/isth%se0/dpdk_telemetry.v2" % rid, time.time() + 30)
        peer = ("isthmus_edge_peer_data_total", frozenset())
        until("peer DATA", lambda: scrape().get(peer, 0) > 0, 120, proc)
        a = scrape(OM_ACCEPT)
        tel = ask(sock, "/isthmus/stats")
        b = scrape()
        n, eq = between(a, tel, b)
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
        bad_clients(Netns.connect)
        last = scrape()
        sock.close()
        rc = proc.wait(timeout=600)
        out = open(log, errors="replace").read()
        summ = [l for l in out.splitlines() if l.startswith("SUMMARY")]
        check(rc == 0 and summ and " wrong=0 " in summ[-1],
              "run: exit %d, %s" % (rc, summ[-1] if summ else "no SUMMARY"))
        edge = open(os.path.join(run, "edge0.log"), errors="replace").read()
        m_n = final_counters(edge, last)
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
