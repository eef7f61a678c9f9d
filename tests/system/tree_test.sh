#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Tree rounds in the testbed (doc/isthmusd.md, "Tree rounds"): nine
# edges reduce every chunk up its tree and send the result down it, with
# the three trees of tests/system/tree-nine.sched.
#
#   clean  5 rounds: every aggregate the exact sum over all nine islands
#          (the islands verify each one), 0 partial; every edge handed its
#          island every chunk complete (tree_result) and refused nothing
#          by a tree reason
#   kill   edge 7 (SIN) and its island killed (-9) in the middle of round
#          1 (testbed.sh --kill-edge): wrong = 0, round 0 complete, and
#          from round 2 on every result of every other island names
#          exactly who is missing, computed here from the file's trees:
#          for chunk c of tree t = c mod 3, an island outside SIN's subtree
#          in t misses exactly that subtree; one inside it (its result
#          never comes down) gets its own subtree's sum and misses
#          everyone else
#
#   tree_test.sh BUILD_DIR CASE
set -uo pipefail

BUILD=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SCHED=$HERE/tree-nine.sched

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (network namespaces, veth)"
	exit 77
fi
if ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: ip netns unavailable"
	exit 77
fi

keep=$(mktemp -d /tmp/isth-tree-keep-XXXXXX)
log=$(mktemp /tmp/isth-tree-XXXXXX.log)
trap 'rm -f "$log"; rm -rf "$keep"' EXIT
args=(--schedule "$SCHED" --payload-bytes 65536 --ready-timeout 240 --keep "$keep/run")
case "$CASE" in
clean) ROUNDS=5 ;;
kill)
	ROUNDS=6
	args+=(--kill-edge 7) ;;
*)
	echo "unknown case $CASE" >&2
	exit 2 ;;
esac
BUILD=$BUILD "$ROOT/scripts/testbed.sh" run "${args[@]}" --rounds "$ROUNDS" >"$log" 2>&1 </dev/null
rc=$?
tail -12 "$log" | cut -c1-300
line=$(grep '^SUMMARY ' "$log" | tail -1)
if [ -z "$line" ]; then
	echo "FAIL: no SUMMARY line (testbed exit $rc)"
	exit 1
fi
python3 - "$CASE" "$SCHED" "$keep/run" "$ROUNDS" "$rc" "$line" <<'PY'
import re, sys

case, sched, run, rounds, rc, line = sys.argv[1:7]
rounds, rc = int(rounds), int(rc)
f = dict(x.split("=", 1) for x in line.split()[1:])
fails = []


def check(what, got, want):
    if got != want:
        fails.append("%s: got %s, want %s" % (what, got, want))


# the file's trees, computed independently of isthmusd: each island's
# subtree in each tree
n, trees, elems = 0, [], 0
for l in open(sched):
    w = l.split()
    if w[:1] == ["islands"]:
        n = int(w[1])
    if w[:1] == ["tree"]:
        trees.append([-1 if p == "-" else int(p) for p in w[3].split(",")])
    if w[:1] == ["payload-bytes"]:
        elems = int(w[1]) // 4
k = len(trees)


def subtree(par, i):
    return {j for j in range(n) if any(x == i for x in path(par, j))}


def path(par, j):
    while j >= 0:
        yield j
        j = par[j]


# the testbed's chunk (auth on: 324 int32 for nine islands, testbed.sh)
ce = (1416 - 8 - 16 * (min(n - 1, 15) - 1)) // 4
chunks = (elems + ce - 1) // ce
check("testbed exit", rc, 0)
check("wrong", f["wrong"], "0")
if case == "clean":
    want = n * rounds * chunks
    check("aggregates", f["aggregates"], str(want))
    check("verified", f["verified"], str(want))
    check("partial", f["partial"], "0")
    check("missing", f["missing"], "0")
    for e in range(n):
        ctr = {}
        for l in open("%s/edge%d.log" % (run, e), errors="replace"):
            w = l.split()
            if len(w) == 2 and w[1].isdigit():
                ctr[w[0]] = int(w[1])
        check("edge %d tree_result" % e, ctr.get("tree_result"), rounds * chunks)
        check("edge %d tree_data" % e, ctr.get("tree_data"), rounds * chunks)
        for name, v in ctr.items():
            if name.startswith("drop_tree_") and v:
                fails.append("edge %d: %s %d" % (e, name, v))
else:
    dead = 7
    check("aggregates (the others')", f["aggregates"], str((n - 1) * rounds * chunks))
    check("verified", f["verified"], f["aggregates"])
    # island i's log: "round R ... missing island X chunks A-B,C; island Y ..."
    for i in range(n):
        if i == dead:
            continue
        got = {}
        for l in open("%s/island%d.log" % (run, i), errors="replace"):
            m = re.match(r"round (\d+) clique \S+ chunks \d+ complete \d+ partial \d+ missing (.*) verified", l)
            if not m:
                continue
            r, miss = int(m.group(1)), set()
            if m.group(2) != "-":
                for part in m.group(2).split("; "):
                    w = part.split()
                    for rg in w[3].split(","):
                        a, _, b = rg.partition("-")
                        for c in range(int(a), int(b or a) + 1):
                            miss.add((int(w[1]), c))
            got[r] = miss
        check("island %d rounds logged" % i, sorted(got), list(range(rounds)))
        check("island %d round 0 missing" % i, sorted(got.get(0, ())), [])
        want = set()
        for c in range(chunks):
            par = trees[c % k]
            below = subtree(par, dead)
            gone = (set(range(n)) - subtree(par, i)) if i in below else below
            want |= {(x, c) for x in gone}
        for r in range(2, rounds):
            g = got.get(r, set())
            if g != want:
                fails.append("island %d round %d: missing %d (island, chunk) pairs, want %d; "
                             "extra %s, absent %s" % (i, r, len(g), len(want),
                                                      sorted(g - want)[:6], sorted(want - g)[:6]))
for x in fails:
    print("FAIL: " + x)
if not fails:
    print("PASS: %s: %s" % (case, line))
sys.exit(1 if fails else 0)
PY
