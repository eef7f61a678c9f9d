#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The metrics endpoint of a running edge (isthmusd on net_null ports,
whose RX never runs dry, two workers, with the shipped example.conf and [metrics]
listen = 127.0.0.1:0: the kernel picks a free port, the start line names
it, so two runs side by side never collide).

Checked, with prometheus_client's parsers (independent of isthmusd):
- GET /metrics with an OpenMetrics Accept: 200, OpenMetrics content type,
  ends "# EOF", parses; without: the text format, parses; both carry
  isthmus_build_info{version} = `isthmusd --version`'s, every edge
  counter, drops by reason, per-worker figures, round gauges, mempools;
- the counters agree with the telemetry socket's /isthmus/stats read
  between two scrapes (scrape 1 <= telemetry <= scrape 2, exact where the
  counter did not move), and /isthmus/round carries the same version;
- 404, 405, garbage (400), a 1 MiB header (431 or a close), a client
  that sends nothing, and more silent clients than the endpoint serves at
  once: each gets an error or a close, and a scrape beside them still
  answers (no fixed sleeps: every wait is on a condition, with a bound);
- a second edge configured on the same port exits 3 naming it;
- after SIGINT, with scrapes going on across it: exit 0; every counter of the final print is a metric, no
  lower than the last scrape; the port is closed.

  metrics_edge_test.py ISTHMUSD SOURCE_ROOT
"""
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = sys.argv[2]
sys.path.insert(0, os.path.join(ROOT, "tests", "isthmusd"))
from isthd_metrics import (OM_ACCEPT, bad_clients, between, check, fails,  # noqa: E402
                           final_counters, first_line, get, local, samples, until)
from isthd_tel import ask, connect  # noqa: E402

ISTHMUSD = os.path.realpath(sys.argv[1])


def check_scrapes(conn, version, sock):
    st, ct, om_text = get(conn, OM_ACCEPT)
    check(st == 200, "om scrape: status %d" % st)
    check(ct == "application/openmetrics-text; version=1.0.0; charset=utf-8",
          "om scrape: Content-Type %s" % ct)
    check(om_text.endswith("# EOF\n"), "om scrape: no # EOF at the end")
    a = samples(om_text, True)
    tel = ask(sock, "/isthmus/stats")
    rnd = ask(sock, "/isthmus/round")
    st, ct, text = get(conn)
    check(st == 200 and ct == "text/plain; version=0.0.4; charset=utf-8",
          "text scrape: %d %s" % (st, ct))
    check("# EOF" not in text, "text scrape: has # EOF")
    b = samples(text, False)
    info = ("isthmus_build_info", frozenset({("version", version), ("island", "NYC")}))
    check(a.get(info) == 1 and b.get(info) == 1,
          "isthmus_build_info{version=%r,island=NYC} missing" % version)
    check(rnd.get("version") == version,
          "/isthmus/round version %r, want %r" % (rnd.get("version"), version))
    n, eq = between(a, tel, b)
    check(a[("isthmus_edge_access_rx_total", frozenset())] > 0, "access_rx is 0")
    # every pool of the in-use gauges has its size, no smaller
    pools = [dict(k[1])["pool"] for k in a if k[0] == "isthmus_edge_mempool_in_use"]
    check(sorted(pools) == ["ctl", "hdr", "pkt"], "mempool_in_use pools %r" % pools)
    for p in pools:
        size = a.get(("isthmus_edge_mempool_size", frozenset({("pool", p)})))
        use = a[("isthmus_edge_mempool_in_use", frozenset({("pool", p)}))]
        check(size is not None and size >= use and size > 0,
              "pool %s: size %r, in use %r" % (p, size, use))
    # two workers: every per-worker family has both
    check(a.get(("isthmus_edge_workers", frozenset())) == 2, "isthmus_edge_workers not 2")
    per = {}
    for name, labels in a:
        w = dict(labels).get("worker")
        if w is not None:
            per.setdefault(name, set()).add(w)
    check(len(per) > 20 and all(v == {"0", "1"} for v in per.values()),
          "per-worker families: %r" % {k: v for k, v in per.items() if v != {"0", "1"}})
    for fam in ["isthmus_edge_round", "isthmus_edge_round_length_seconds",
                "isthmus_edge_aggregates_partial_total", "isthmus_edge_pace_rounds_total",
                "isthmus_edge_pace_round_start_lag_seconds"]:
        check((fam, frozenset()) in a, "%s missing" % fam)
    print("ok: both formats parse; %d counters between two scrapes (%d equal, %d moving)"
          % (n, eq, n - eq), flush=True)


def check_bad_clients(conn, proc):
    check(first_line(conn, b"GET /other HTTP/1.1\r\n\r\n").startswith("HTTP/1.1 404"),
          "no 404")
    check(first_line(conn, b"POST /metrics HTTP/1.1\r\n\r\n").startswith("HTTP/1.1 405"),
          "no 405")
    bad_clients(conn)  # garbage, 1 MiB header, one silent client
    # more silent clients than slots: a scrape waits at most one timeout
    many = [conn(10) for _ in range(12)]
    t0 = time.time()
    st, _, _ = get(conn, timeout=10)
    took = time.time() - t0
    check(st == 200 and took < 6, "scrape behind 12 silent clients: %d after %.1f s" % (st, took))
    for s in many:
        s.close()
    check(proc.poll() is None, "isthmusd died with the bad clients")
    print("ok: 404, 405, 400, 1 MiB header, silent clients; a scrape behind 12 "
          "silent ones took %.2f s" % took, flush=True)


def main():
    tmp = tempfile.mkdtemp()
    prefix = "isth-metrics-%d" % os.getpid()
    proc = None
    try:
        keys = os.path.join(tmp, "job1.keys")
        with open(keys, "w") as f:
            f.write("job 1\nepoch 1 round 0 key %064x\n" % 42)
        os.chmod(keys, 0o600)
        conf = open(os.path.join(ROOT, "conf", "isthmusd", "example.conf")).read()
        conf = re.sub(r"(?m)^key_file = .*$", "key_file = " + keys, conf)
        conf = re.sub(r"(?m)^port = 0 .*$", "port = net_null0", conf)
        conf = re.sub(r"(?m)^port = 1$", "port = net_null1", conf)
        conf = re.sub(r"(?m)^# idle_polls = 0 .*$", "idle_polls = 16", conf)
        conf = re.sub(r"(?m)^schedule = conf/", "schedule = " + ROOT + "/conf/", conf)
        conf = re.sub(r"(?m)^# listen = .*$", "listen = 127.0.0.1:0", conf)
        check("listen = 127.0.0.1:0" in conf, "example.conf has no '# listen = ' line")
        cpath = os.path.join(tmp, "edge.conf")
        open(cpath, "w").write(conf)
        version = subprocess.run([ISTHMUSD, "--version"], capture_output=True,
                                 check=True).stdout.decode().strip().split(" ", 1)[1]
        log = os.path.join(tmp, "edge.log")
        proc = subprocess.Popen(
            [ISTHMUSD, "--no-huge", "-m", "256", "--no-pci", "--file-prefix=" + prefix,
             "--lcores=0@0,(1-2)@(0-1)", "--log-level=lib.*:error", "--vdev", "net_null0",
             "--vdev", "net_null1", "--", "--config", cpath, "--epoch", "now+1"],
            stdout=open(log, "w"), stderr=subprocess.STDOUT)

        def port_line():
            m = re.search(r"^isthmusd: metrics on http://127\.0\.0\.1:(\d+)/metrics$",
                          open(log).read(), re.M)
            return int(m.group(1)) if m else None
        port = until("metrics line", port_line, 120, proc)
        sock = connect("/var/run/dpdk/%s/dpdk_telemetry.v2" % prefix, time.time() + 60)
        until("/isthmus/stats", lambda: ask(sock, "/isthmus/stats"), 60, proc)
        conn = local(port)
        check_scrapes(conn, version, sock)
        check_bad_clients(conn, proc)
        # a second edge asking for the same port: exit 3, naming it
        busy = os.path.join(tmp, "busy.conf")
        open(busy, "w").write(conf.replace("listen = 127.0.0.1:0",
                                           "listen = 127.0.0.1:%d" % port))
        r = subprocess.run(
            [ISTHMUSD, "--no-huge", "-m", "256", "--no-pci", "--file-prefix=" + prefix + "b",
             "-l", "0,1", "--log-level=lib.*:error", "--vdev", "net_null0",
             "--vdev", "net_null1", "--", "--config", busy, "--epoch", "now+1"],
            capture_output=True, timeout=120)
        want = "isthmusd: [metrics] listen 127.0.0.1:%d: Address already in use" % port
        check(r.returncode == 3 and want in r.stderr.decode(),
              "port taken: exit %d, %r" % (r.returncode, r.stderr.decode()[-300:]))
        check(not os.path.exists("/var/run/dpdk/" + prefix + "b"), "runtime directory left")
        print("ok: a second edge on the same port exits 3: %s" % want, flush=True)
        last = samples(get(conn)[2], False)
        sock.close()
        # scrapes in a loop across SIGINT until the port closes: the
        # endpoint's thread must stop cleanly under them (exit 0)
        during = {"ok": 0, "after": 0}
        sent = threading.Event()

        def hammer():
            while True:
                try:
                    get(conn, timeout=5)
                except (OSError, http.client.HTTPException):
                    return
                during["after" if sent.is_set() else "ok"] += 1
        th = threading.Thread(target=hammer)
        th.start()
        while during["ok"] < 3 and th.is_alive():
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        sent.set()
        rc = proc.wait(timeout=120)
        th.join(timeout=30)
        check(not th.is_alive(), "scrapes still answered after exit")
        out = open(log).read()
        check(rc == 0, "exit %d" % rc)
        n = final_counters(out, last)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            check(False, "port %d still open after exit" % port)
        except OSError:
            pass
        check(not os.path.exists("/var/run/dpdk/" + prefix), "runtime directory left")
        print("ok: clean exit under scrapes (%d after SIGINT); the final print's %d counters "
              "are metrics, none below the last scrape" % (during["after"], n), flush=True)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)
        shutil.rmtree("/var/run/dpdk/" + prefix + "b", ignore_errors=True)
    return 1 if fails else 0


sys.exit(main())
