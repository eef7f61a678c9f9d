#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fail on an import cycle between the .c files of one directory.

For each directory given (default: every directory under app/ and lib/
that holds .c files), build the graph X.c -> Y.c, "X.c calls a function
defined in Y.c", and list every cycle X.c -> Y.c -> ... -> X.c with one
function per edge as the witness. Exit 1 when there is a cycle, 0 with a
one-line summary when there is none, 2 when the build cannot tell.

The graph comes from the meson build's object files, not from parsing C:
`nm` gives each object's defined global functions and its undefined
references, and build/compile_commands.json maps each object back to its
.c file. Static functions cannot cross files, so globals suffice; a call
to a function defined in a header (static inline) or outside the
directory is no edge. A data reference is no edge either (the question is
who calls whom). A .c file missing from compile_commands.json (a BPF
program built by a custom target, a file of a disabled feature) is named
on stderr and left out.

  scripts/check-cycles.py                       every directory, build/
  scripts/check-cycles.py --build B app/isthmusd lib/island

The `cycles` test of the `unit` suite runs it after the build.
"""
import argparse
import json
import os
import subprocess
import sys

# nm's letters for a defined function: text, weak (functions in C), ifunc
FUNC_TYPES = set("TWi")
# stop listing after this many cycles (a tangle: the first ones say enough)
MAX_CYCLES = 200


def die(msg):
    print("check-cycles: " + msg, file=sys.stderr)
    sys.exit(2)


def default_dirs(source):
    dirs = []
    for top in ("app", "lib"):
        for root, subdirs, files in os.walk(os.path.join(source, top)):
            subdirs.sort()
            if any(f.endswith(".c") for f in files):
                dirs.append(os.path.relpath(root, source))
    return sorted(dirs)


def objects_by_source(build):
    """{absolute .c path: [absolute object paths]} from compile_commands.json
    (a file built into two targets has two objects)."""
    path = os.path.join(build, "compile_commands.json")
    try:
        with open(path) as f:
            entries = json.load(f)
    except OSError as e:
        die("%s: %s (configure the build first: meson setup %s)" % (path, e.strerror, build))
    except ValueError as e:
        die("%s: not JSON: %s" % (path, e))
    objs = {}
    for e in entries:
        d = e.get("directory", build)
        out = e.get("output")
        if out is None:
            die("%s: entry for %s has no \"output\" (meson writes one)" % (path, e.get("file")))
        src = os.path.realpath(os.path.join(d, e["file"]))
        objs.setdefault(src, []).append(os.path.realpath(os.path.join(d, out)))
    return objs


def symbols(nm, obj):
    """(defined global functions, undefined references) of one object."""
    try:
        res = subprocess.run([nm, "-g", "-P", obj], capture_output=True, text=True)
    except OSError as e:
        die("%s: %s" % (nm, e.strerror))
    if res.returncode != 0:
        die("%s %s: %s" % (nm, obj, res.stderr.strip()))
    defined, undefined = set(), set()
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] == "U":
            undefined.add(f[0])
        elif f[1] in FUNC_TYPES:
            defined.add(f[0])
    return defined, undefined


def graph(nm, source, build, directory, objs):
    """{file: {file: witness function}} for the .c files of one directory,
    and the files the build does not compile."""
    absdir = os.path.realpath(os.path.join(source, directory))
    files = sorted(f for f in os.listdir(absdir) if f.endswith(".c"))
    defs, refs, unbuilt = {}, {}, []
    for f in files:
        o = objs.get(os.path.join(absdir, f))
        if not o:
            unbuilt.append(os.path.join(directory, f))
            continue
        defs[f], refs[f] = set(), set()
        for obj in o:
            if not os.path.exists(obj):
                die("%s: no object %s (build first: ninja -C %s)" %
                    (os.path.join(directory, f), obj, build))
            d, u = symbols(nm, obj)
            defs[f] |= d
            refs[f] |= u
    owner = {}
    for f in sorted(defs):
        for s in defs[f]:
            owner.setdefault(s, f)
    edges = {f: {} for f in defs}
    for f in defs:
        for s in sorted(refs[f]):
            g = owner.get(s)
            if g is not None and g != f:
                edges[f].setdefault(g, s)
    return edges, unbuilt


def cycles(edges):
    """Every elementary cycle, each once, starting at its smallest file."""
    found = []
    nodes = sorted(edges)
    for start in nodes:
        # a DFS over files greater than start finds each cycle exactly once
        stack = [(start, iter(sorted(edges[start])))]
        path = [start]
        while stack and len(found) < MAX_CYCLES:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
            elif nxt == start:
                found.append(path + [start])
            elif nxt > start and nxt not in path:
                stack.append((nxt, iter(sorted(edges[nxt]))))
                path.append(nxt)
    return found


def show(edges, cyc):
    out = cyc[0]
    for a, b in zip(cyc, cyc[1:]):
        out += " -[%s]-> %s" % (edges[a][b], b)
    return out


def main():
    ap = argparse.ArgumentParser(
        description="Fail on a call cycle between the .c files of a directory "
        "(X.c -> Y.c when X.c calls a function defined in Y.c), read from the "
        "build's object files.",
        epilog="Exit status: 0 no cycle, 1 a cycle (each listed as "
        "X.c -[function]-> Y.c -[function]-> X.c), 2 the build cannot tell "
        "(no compile_commands.json, an object not built, nm failed).")
    ap.add_argument("dirs", nargs="*", metavar="DIR",
                    help="directories of .c files, relative to the source tree "
                    "(default: every directory under app/ and lib/ with .c files)")
    ap.add_argument("--build", default="build",
                    help="meson build directory holding compile_commands.json and "
                    "the objects (default: build, relative to the source tree)")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="source tree (default: this script's parent directory)")
    ap.add_argument("--nm", default=os.environ.get("NM", "nm"), help="nm program (default: $NM or nm)")
    args = ap.parse_args()

    source = os.path.realpath(args.source)
    build = os.path.realpath(os.path.join(source, args.build))
    dirs = args.dirs or default_dirs(source)
    for d in dirs:
        if not os.path.isdir(os.path.join(source, d)):
            die("%s: not a directory under %s" % (d, source))
    objs = objects_by_source(build)

    bad = 0
    nfiles = 0
    for d in dirs:
        edges, unbuilt = graph(args.nm, source, build, d, objs)
        nfiles += len(edges)
        for u in unbuilt:
            print("check-cycles: %s: not in compile_commands.json (not built, or built by a "
                  "custom target such as a BPF program), not checked" % u, file=sys.stderr)
        found = cycles(edges)
        for c in found:
            print("%s: cycle: %s" % (d, show(edges, c)))
        if len(found) == MAX_CYCLES:
            print("%s: more cycles not listed (first %d shown)" % (d, MAX_CYCLES))
        bad += len(found)
    if bad:
        print("check-cycles: %d cycle(s) in %d directories (%d files)" % (bad, len(dirs), nfiles))
        return 1
    print("check-cycles: no cycle in %d directories (%d files)" % (len(dirs), nfiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
