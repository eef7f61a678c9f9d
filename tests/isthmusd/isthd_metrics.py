# SPDX-License-Identifier: BSD-3-Clause
"""What the tests of isthmusd's metrics endpoint share: the independent
parsers (prometheus_client; the test skips without them), a scrape over a
socket the caller connects (the system test connects inside an edge's
namespace), the metric each /isthmus/stats name is exported as, the bad
clients, and the check of an edge's final counters against a scrape."""
import http.client
import re
import socket
import sys
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

# what Prometheus sends, shortened
OM_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
fails = []


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg, flush=True)
        fails.append(msg)
    return cond


def local(port):
    """A connect function for 127.0.0.1:port in this namespace."""
    return lambda timeout: socket.create_connection(("127.0.0.1", port), timeout=timeout)


def get(connect, accept=None, timeout=10):
    """GET /metrics: (status, Content-Type, body)."""
    c = http.client.HTTPConnection("127.0.0.1", timeout=timeout)
    c.sock = connect(timeout)
    c.request("GET", "/metrics", headers={"Accept": accept} if accept else {})
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    return r.status, r.getheader("Content-Type"), body


def samples(text, om):
    """{(sample name, frozenset(labels)): value}, parsed independently."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in (om_parse if om else text_parse)(text) for s in f.samples}


def metric_of(name):
    """The sample an /isthmus/stats (or final print) name is exported as."""
    if name.startswith("drop_"):
        return ("isthmus_edge_drops_total", frozenset({("reason", name[5:])}))
    m = re.match(r"mempool_(\w+)_in_use$", name)
    if m:
        return ("isthmus_edge_mempool_in_use", frozenset({("pool", m.group(1))}))
    return ("isthmus_edge_%s_total" % name, frozenset())


def between(a, tel, b):
    """Every counter of /isthmus/stats @tel lies between scrapes @a and @b
    (taken before and after it). Returns (counters, of them unmoved)."""
    n = eq = 0
    for name, v in tel.items():
        if name == "auth" or name.startswith("mempool_"):  # gauges: no order
            continue
        k = metric_of(name)
        if check(k in a and k in b, "%s (%s) not exported" % (name, k[0])):
            check(a[k] <= v <= b[k], "%s: scrape %d, telemetry %d, scrape %d" %
                  (name, a[k], v, b[k]))
            n += 1
            eq += a[k] == b[k]
    return n, eq


def first_line(connect, data):
    """@data on a fresh connection: the answer's status line, or 'closed'."""
    s = connect(10)
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


def bad_clients(connect):
    """Garbage, a 1 MiB header, a silent client: an error or a close each,
    and a scrape beside the silent one answers at once."""
    check(first_line(connect, b"garbage\r\n\r\n").startswith("HTTP/1.1 400"), "garbage: no 400")
    r = first_line(connect, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20) + b"\r\n\r\n")
    check(r.startswith("HTTP/1.1 431") or r == "closed", "1 MiB header: %r" % r)
    silent = connect(10)
    check(get(connect, timeout=1.5)[0] == 200, "no scrape beside a silent client")
    try:
        closed = silent.recv(1) == b""
    except (socket.timeout, ConnectionResetError):
        closed = False
    check(closed, "silent client not closed within 10 s")
    silent.close()


def final_counters(log, last):
    """The edge's final print (its log @log) against the last scrape: each
    name a metric, no counter below the scrape. Returns how many."""
    final = log[log.index("isthmusd counters:"):].split("\n")[1:]
    n = 0
    for line in final:
        m = re.match(r"^  (\w+) +(\d+)$", line)
        if not m:
            break
        k = metric_of(m.group(1))
        n += 1
        if check(k in last, "final print's %s is no metric" % m.group(1)) and \
                not m.group(1).startswith("mempool_"):
            check(last[k] <= int(m.group(2)), "%s: last scrape %d > final %s" %
                  (m.group(1), last[k], m.group(2)))
    check(n > 20, "final print: %d counters read" % n)
    return n


def until(what, cond, timeout, proc):
    """cond()'s first true value, polled until @timeout s; the test ends
    if @proc (isthmusd, or the testbed run) exits first."""
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        if proc.poll() is not None:
            sys.exit("FAIL: exit %s while waiting for %s" % (proc.returncode, what))
        time.sleep(0.05)
    sys.exit("FAIL: no %s within %d s" % (what, timeout))
