#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Self-test of scripts/check-cycles.py on fixture/: compiles the fixture's
.c files into a scratch build (objects and compile_commands.json, the way
meson lays them out), then asserts that the check fails on fixture/cyclic
naming both of its cycles, passes fixture/acyclic (whose only ways back are
a static function, a header's inline function, a variable and libc), and
says why it cannot tell when the build is missing.

  check_cycles_test.py SOURCE_ROOT      (meson passes it; CC may name the compiler)
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

root = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else
                        os.path.join(os.path.dirname(__file__), "..", ".."))
script = os.path.join(root, "scripts", "check-cycles.py")
fixture = os.path.join(root, "tests", "check_cycles", "fixture")
cc = shlex.split(os.environ.get("CC", "cc"))
failed = 0


def check(cond, what, out=""):
    global failed
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failed += 1
        print(out)


def run(build, *dirs):
    res = subprocess.run([sys.executable, script, "--source", fixture, "--build", build] + list(dirs),
                         capture_output=True, text=True)
    return res.returncode, res.stdout + res.stderr


with tempfile.TemporaryDirectory(prefix="isth-cycles-") as build:
    entries = []
    for d in ("cyclic", "acyclic"):
        for f in sorted(os.listdir(os.path.join(fixture, d))):
            if not f.endswith(".c"):
                continue
            src = os.path.join(fixture, d, f)
            obj = "%s_%s.o" % (d, f)
            subprocess.run(cc + ["-O2", "-c", src, "-o", os.path.join(build, obj)], check=True)
            entries.append({"directory": build, "file": src, "output": obj,
                            "command": " ".join(cc + ["-c", src])})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(entries, f)

    rc, out = run(build, "cyclic")
    check(rc == 1, "cyclic: exit 1", out)
    check("cyclic: cycle: a.c -[b_f]-> b.c -[a_f]-> a.c" in out, "cyclic: the 2-cycle, witnessed", out)
    check("cyclic: cycle: c.c -[d_f]-> d.c -[e_f]-> e.c -[c_f]-> c.c" in out,
          "cyclic: the 3-cycle, witnessed", out)
    check(out.count(": cycle: ") == 2, "cyclic: no other cycle", out)

    rc, out = run(build, "acyclic")
    check(rc == 0, "acyclic: exit 0", out)
    check(out.strip() == "check-cycles: no cycle in 1 directories (3 files)", "acyclic: one-line summary", out)

    rc, out = run(build, "acyclic", "cyclic")
    check(rc == 1 and out.count(": cycle: ") == 2, "both: fails on the cyclic one", out)

    os.unlink(os.path.join(build, "cyclic_b.c.o"))
    rc, out = run(build, "cyclic")
    check(rc == 2 and "no object" in out and "build first" in out, "missing object: exit 2, says so", out)

    rc, out = run(os.path.join(build, "nowhere"), "acyclic")
    check(rc == 2 and "compile_commands.json" in out, "no build: exit 2, says so", out)

res = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
check(res.returncode == 0 and "usage:" in res.stdout, "--help", res.stdout + res.stderr)

print("%d failed" % failed)
sys.exit(1 if failed else 0)
