#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The metrics endpoint's text (app/isthmusd/metrics.c), checked with an
independent parser: prometheus_client's OpenMetrics and text-format
parsers (Debian python3-prometheus-client), and `promtool check metrics`
where promtool is installed. A document with every family type, HELP text
and label values holding the characters each format escapes must parse
back to exactly what was rendered; OpenMetrics ends with "# EOF", the
text format does not. And the request parser's answers: 200 for GET
/metrics (OpenMetrics when Accept names it), 400/404/405/431 otherwise.

  metrics_test.py METRICS_RENDER
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from isthd_metrics import check, fails, om_parse, text_parse  # noqa: E402

RENDER = sys.argv[1]

# label values: quote, backslash, newline, braces and separators, UTF-8
VALUES = ['plain', 'a"b', 'back\\slash', 'new\nline', '}{=,"\\\n',
          'ünïcödé', '\\n literally']
HELP = 'frames with a \\ backslash,\na newline and a "quote"'


def render(fmt):
    return subprocess.run([RENDER, "doc", fmt] + VALUES, check=True,
                          capture_output=True).stdout.decode()


def families(fmt, text):
    fams = {}
    for f in (om_parse if fmt == "om" else text_parse)(text):
        fams[f.name] = f
    return fams


def check_doc(fmt):
    n_fails = len(fails)
    text = render(fmt)
    try:
        fams = families(fmt, text)
    except Exception as e:  # the parser's refusal is the failure
        check(False, "%s: the parser refused the document: %s" % (fmt, e))
        print(text)
        return
    if fmt == "om":
        check(text.endswith("\n# EOF\n"), "om: does not end with # EOF")
        check(fams["test_payload_bytes"].unit == "bytes", "om: no UNIT bytes")
        check(fams["test_lag_seconds"].unit == "seconds", "om: no UNIT seconds")
        check(fams["test_backend"].type == "unknown", "om: backend not unknown")
    else:
        check("# EOF" not in text, "text: has # EOF")
        # prometheus_client reads "untyped" as unknown
        check("# TYPE test_backend untyped\n" in text, "text: backend not untyped")
        check(fams["test_backend"].type == "unknown", "text: backend not unknown")
    # prometheus_client names a counter's family without _total in both
    frames = fams["test_frames"]
    check(frames.type == "counter", "%s: frames is %s" % (fmt, frames.type))
    check(frames.documentation == HELP,
          "%s: HELP came back as %r" % (fmt, frames.documentation))
    s = frames.samples[0]
    # OpenMetrics keeps integers exact; the text parser reads floats
    check(s.name == "test_frames_total" and
          s.value == (2**64 - 1 if fmt == "om" else float(2**64 - 1)),
          "%s: frames sample %r" % (fmt, s))
    lag = fams["test_lag_seconds"].samples[0].value
    check(abs(lag - 0.000123456) < 1e-12, "%s: lag %r" % (fmt, lag))
    # exact from ns: nothing lost to a double on the way out
    check(re.search(r"(?m)^test_epoch_seconds 1796525940\.123456789$", text),
          "%s: epoch not exact" % fmt)
    check(fams["test_epoch_seconds"].samples[0].value == 1796525940.123456789,
          "%s: epoch %r" % (fmt, fams["test_epoch_seconds"].samples[0].value))
    check(fams["test_round"].samples[0].value == -1, "%s: round not -1" % fmt)
    info = fams["test_build_info"].samples[0]
    check(info.labels == {"version": "0.1.0 (git 0123456789ab-dirty)"} and info.value == 1,
          "%s: build_info %r" % (fmt, info))
    drops = [x for x in fams["test_drops"].samples if x.name == "test_drops_total"]
    got = [(x.labels["reason"], x.labels["worker"], x.value) for x in drops]
    want = [(v, str(i), i + 1) for i, v in enumerate(VALUES)]
    check(got == want, "%s: label values came back as %r" % (fmt, got))
    if shutil.which("promtool") and fmt == "text":
        r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                           capture_output=True)
        check(r.returncode == 0, "promtool: %s" % r.stdout.decode() + r.stderr.decode())
    elif fmt == "text":
        print("skip: promtool not installed (Debian 'prometheus' ships it; "
              "its package starts a service, so the tests do not install it)")
    if len(fails) == n_fails:
        print("ok: %s document parsed back exactly (%d families)" % (fmt, len(fams)))


PROM_ACCEPT = (b"application/openmetrics-text;version=1.0.0,application/"
               b"openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
               b"q=0.5,*/*;q=0.1")
REQUESTS = [
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "200 text"),
    (b"GET /metrics HTTP/1.1\r\nAccept: " + PROM_ACCEPT + b"\r\n\r\n", "200 om"),
    (b"GET /metrics HTTP/1.0\naccept: application/openmetrics-text\n\n", "200 om"),
    (b"GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n", "200 text"),
    (b"GET /metrics?name=x HTTP/1.1\r\n\r\n", "200 text"),
    (b"GET / HTTP/1.1\r\n\r\n", "404 text"),
    (b"GET /metricsx HTTP/1.1\r\n\r\n", "404 text"),
    (b"GET /metrics/ HTTP/1.1\r\n\r\n", "404 text"),
    (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "405 text"),
    (b"HEAD /metrics HTTP/1.1\r\n\r\n", "405 text"),
    (b"garbage\r\n\r\n", "400 text"),
    (b"\x00\x01\x02\r\n\r\n", "400 text"),
    (b"GET /metrics HTTP/2.0\r\n\r\n", "400 text"),
    (b"GET /metrics\r\n\r\n", "400 text"),
    (b"GET  /metrics HTTP/1.1\r\n\r\n", "400 text"),
    (b"GET /metrics HTTP/1.1\r\nX: a\x00b\r\n\r\n", "400 text"),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\n", "0 text"),  # not complete yet
    (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20) + b"\r\n\r\n", "431 text"),
]


def check_requests():
    n_fails = len(fails)
    for req, want in REQUESTS:
        got = subprocess.run([RENDER, "request"], input=req, check=True,
                             capture_output=True).stdout.decode().strip()
        check(got == want, "request %r: %s, want %s" % (req[:60], got, want))
    if len(fails) == n_fails:
        print("ok: %d requests answered as expected" % len(REQUESTS))


check_doc("om")
check_doc("text")
check_requests()
sys.exit(1 if fails else 0)
