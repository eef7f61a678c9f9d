#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Summarise a `meson test` run: per suite, counting each Criterion test case
(from its <name>.criterion.json report) and each other test executable once.
The last line is "N passed, N failed[, N skipped]"."""
import glob
import json
import os
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build"
log = os.path.join(build, "meson-logs", "testlog.json")
if not os.path.exists(log):
    print("no test log at %s" % log)
    print("0 passed, 1 failed")
    sys.exit(1)

reports = {}
for path in glob.glob(os.path.join(build, "**", "*.criterion.json"), recursive=True):
    reports[os.path.basename(path)[: -len(".criterion.json")]] = path

# meson 1.0's testlog.json carries no suite: take it from introspection.
suite_of = {}
intro = os.path.join(build, "meson-info", "intro-tests.json")
if os.path.exists(intro):
    for t in json.load(open(intro)):
        names = [x.split(":")[-1] for x in t.get("suite", [])]
        names = [x for x in names if x != "isthmus"] or ["other"]
        suite_of[t["name"]] = names[0]

suites = {}
skips = []
failures = []
for line in open(log):
    line = line.strip()
    if not line:
        continue
    t = json.loads(line)
    name = t["name"]
    # "project:suite / name" when a run spans suites, plain "name" otherwise
    if " / " in name:
        prefix, name = name.split(" / ", 1)
        suite = prefix.split(":")[-1]
    else:
        suite = suite_of.get(name, "other")
    s = suites.setdefault(suite, [0, 0, 0])
    result = t["result"]
    rep = reports.get(name)
    if rep and result in ("OK", "FAIL"):
        try:
            j = json.load(open(rep))
        except ValueError:
            j = None
        if j is not None:
            s[0] += j["passed"]
            s[1] += j["failed"] + j["errored"]
            s[2] += j["skipped"]
            for ts in j["test_suites"]:
                for c in ts["tests"]:
                    label = "%s: %s::%s" % (name, ts["name"], c["name"])
                    if c["status"] == "SKIPPED":
                        why = "; ".join(c.get("messages", [])) or "skipped"
                        skips.append("%s (%s)" % (label, why))
                    elif c["status"] not in ("PASSED",):
                        failures.append(label)
            # A binary that failed without failing a case (crash in a
            # fixture, bad exit) is still a failure.
            if result == "FAIL" and j["failed"] + j["errored"] == 0:
                s[1] += 1
                failures.append(name + " (exit status)")
            continue
    if result == "OK":
        s[0] += 1
    elif result == "SKIP":
        s[2] += 1
        why = "skipped"
        for l in (t.get("stdout") or "").splitlines():
            if l.startswith("SKIP:"):
                why = l[5:].strip()
        skips.append("%s (%s)" % (name, why))
    else:
        s[1] += 1
        failures.append("%s (%s)" % (name, result))

print()
print("%-12s %8s %8s %8s" % ("suite", "passed", "failed", "skipped"))
for k in sorted(suites):
    p, f, sk = suites[k]
    print("%-12s %8d %8d %8d" % (k, p, f, sk))
for x in skips:
    print("skipped: " + x)
for x in failures:
    print("FAILED: " + x)
P = sum(v[0] for v in suites.values())
F = sum(v[1] for v in suites.values())
S = sum(v[2] for v in suites.values())
line = "%d passed, %d failed" % (P, F)
if S:
    line += ", %d skipped" % S
print(line)
sys.exit(1 if F or not P else 0)
