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
#   loss   6 rounds, 2 % random loss on every WAN link, a lost PARTIAL
#          repaired per hop (NACK, resend): the edges resent PARTIALs
#          (the loss is applied), and under 5 % of the aggregates are
#          partial (without the repair 18 %, with it 1.0 % over 20
#          rounds, load 7-9 on 2 cores); wrong = 0, every aggregate
#          the exact sum over its bitmap, and every partial explained:
#          for each chunk, an island's result is either the one sum that
#          came down its tree (every island that has it names the same
#          islands missing, itself aside) or its own subtree's sum
#          (the fallback: nothing outside its subtree in it)
#
#   hostile  12 rounds, auth on; from round 3, frames forged on the WAN side
#          of edge 7's link (the emulator's namespace, as hostile_test.py
#          does) with isthmus-inject: PARTIALs of tree 0 sealed with the
#          job's real keys from CHI, not a child of SIN's edge
#          (tree_not_child), a result claiming HKG as SIN's parent
#          (tree_not_parent), TYO's stream (a real child) replayed with
#          an old seq of an old round (auth_stale) and forged with a foreign key
#          (auth_tag): each counted by edge 7 under its reason, none
#          summed (wrong = 0, 0 partial)
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
# The hostile case's attacks on edge 7 (SIN), once the run is ready; each
# kind COUNT times, into the round running then (its chunks of tree 0).
COUNT=17
attack() {
	local rid epoch T r now edge=10.0.7.1 wns te inj foreign
	until grep -q "all ready" "$log"; do
		kill -0 "$tbpid" 2>/dev/null || return
		sleep 0.1
	done
	rid=$(sed -n 's/^testbed: run \([0-9a-f]*\),.*/\1/p' "$log" | tail -1)
	epoch=$(sed -n 's/^epoch = //p' "$keep/run/edge7.conf")
	T=$(awk '$1 == "round-ns" {print $2}' "$keep/run/run.sched")
	until [ "$(date +%s%N)" -ge $((epoch + 3 * T)) ]; do
		kill -0 "$tbpid" 2>/dev/null || return
		sleep 0.05
	done
	wns=isth-$rid-w te=te${rid}7
	ip -n "$wns" route replace "$edge/32" dev "$te"
	ip -n "$wns" neigh replace "$edge" lladdr "02:03:${rid:0:2}:${rid:2:2}:00:07" dev "$te" nud permanent
	foreign=$keep/foreign.key
	( umask 077; printf 'job 1\nepoch 1 round 0 key %s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$foreign" )
	now=$(date +%s%N)
	r=$(( (now - epoch) / T ))
	# SENDER FROM KEY SEQ [more...]: COUNT PARTIALs of tree 0's chunks, of
	# round R (default the running one)
	inj() {
		ip netns exec "$wns" "$BUILD/app/isthmus-inject/isthmus-inject" --to "$edge" \
			--from "10.0.$1.1" --job 1 --sender "$1" --round "${R:-$r}" --chunk 0 --chunk-step 3 \
			--count "$COUNT" --elems 324 --value 1000003 --key-file "$3" --dir wan \
			--owner "$1" --islands 9 --seq "$4" "${@:5}" partial >>"$keep/inject.log" 2>&1
	}
	inj 1 10.0.1.1 "$keep/run/job.key" "$now" --bitmap 0x2		# CHI: not a child
	inj 8 10.0.8.1 "$keep/run/job.key" "$now" --bitmap 0x1ff --flags down	# HKG: not the parent
	# TYO's stream replayed: an old seq of a round TYO's edge has already
	# sent (two back: its PARTIALs have all arrived). Not the running
	# round: an old seq on a round newer than any accepted is a sender
	# restarted after a clock step (doc/protocol.md, "Replay window"), a
	# new incarnation that only a key holder can start, and whether TYO's
	# own PARTIALs of the running round arrived first is a race.
	R=$((r - 2)) inj 6 10.0.6.1 "$keep/run/job.key" 1 --bitmap 0x40
	inj 6 10.0.6.1 "$foreign" "$now" --bitmap 0x40		# TYO forged
	echo "attacks on edge 7 in round $r:" && cat "$keep/inject.log"
}
log=$(mktemp /tmp/isth-tree-XXXXXX.log)
ok=0
# the run's logs stay for a failure (named at the end)
trap 'rm -f "$log"; [ "$ok" = 0 ] && [ -d "$keep/run" ] && echo "logs kept in $keep" || rm -rf "$keep"' EXIT
args=(--schedule "$SCHED" --payload-bytes 65536 --ready-timeout 240 --keep "$keep/run")
case "$CASE" in
clean) ROUNDS=5 ;;
loss)
	ROUNDS=6
	args+=(--loss 0.02 --seed 3) ;;
kill)
	ROUNDS=6
	args+=(--kill-edge 7) ;;
hostile) ROUNDS=12 ;;
*)
	echo "unknown case $CASE" >&2
	exit 2 ;;
esac
BUILD=$BUILD "$ROOT/scripts/testbed.sh" run "${args[@]}" --rounds "$ROUNDS" >"$log" 2>&1 </dev/null &
tbpid=$!
[ "$CASE" != hostile ] || attack
wait "$tbpid"
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
elif case == "loss":
    want = n * rounds * chunks
    check("aggregates", f["aggregates"], str(want))
    check("verified", f["verified"], str(want))
    # per (round, chunk): each island's result as the set of islands in it
    # (its own included: the island adds its own), from its missing list
    got = {}
    cut_lines = partials = 0
    for i in range(n):
        for l in open("%s/island%d.log" % (run, i), errors="replace"):
            m = re.match(r"round (\d+) clique \S+ chunks \d+ complete \d+ partial (\d+) "
                         r"missing (.*) verified \d+ nacks", l)
            if not m:
                continue
            r, text = int(m.group(1)), m.group(3)
            if text.endswith("..."):
                cut_lines += 1
                continue
            partials += int(m.group(2))
            res = {c: set(range(n)) for c in range(chunks)}
            for part in ([] if text == "-" else text.split("; ")):
                w = part.split()
                for t in w[3].split(","):
                    a, _, b = t.partition("-")
                    for c in range(int(a), int(b or a) + 1):
                        res[c].discard(int(w[1]))
            for c in range(chunks):
                got.setdefault((r, c), {})[i] = res[c]
    # the loss is applied and repaired: PARTIALs resent for NACKs
    resent = 0
    for e in range(n):
        for l in open("%s/edge%d.log" % (run, e), errors="replace"):
            w = l.split()
            if len(w) == 2 and w[0] == "tree_resent" and w[1].isdigit():
                resent += int(w[1])
    if resent == 0:
        fails.append("no PARTIAL resent (is the loss applied? the repair on?)")
    # unrepaired, 18 % of the aggregates were partial
    if int(f["partial"]) * 20 > int(f["aggregates"]):
        fails.append("partial %s of %s aggregates: 5 %% or more (is the repair on?)"
                     % (f["partial"], f["aggregates"]))
    unexplained = 0
    for (r, c), by in got.items():
        par = trees[c % k]
        # the islands whose result holds someone outside their subtree:
        # the root's sum came down to them; all must name the same
        down = {i: s for i, s in by.items() if not s <= subtree(par, i)}
        for i in down:
            for j in down:
                if down[i] - {i, j} != down[j] - {i, j}:
                    unexplained += 1
                    if unexplained <= 5:
                        fails.append("round %d chunk %d: island %d has %s, island %d %s"
                                     % (r, c, i, sorted(down[i]), j, sorted(down[j])))
    check("round lines cut short (unchecked)", cut_lines, 0)
    check("results not explained", unexplained, 0)
elif case == "hostile":
    want = n * rounds * chunks
    check("aggregates", f["aggregates"], str(want))
    check("verified", f["verified"], str(want))
    check("partial", f["partial"], "0")
    ctr = {}
    for l in open("%s/edge7.log" % run, errors="replace"):
        w = l.split()
        if len(w) == 2 and w[1].isdigit():
            ctr[w[0]] = int(w[1])
    sent = sum(int(m) for m in re.findall(r"INJECT kind=partial sent=(\d+)",
                                          open(run + "/../inject.log").read()))
    check("PARTIALs injected", sent, 4 * 17)
    for name in ("drop_tree_not_child", "drop_tree_not_parent", "drop_auth_tag"):
        check("edge 7 " + name, ctr.get(name, 0), 17)
    check("edge 7 drop_auth_stale + drop_auth_replay",
          ctr.get("drop_auth_stale", 0) + ctr.get("drop_auth_replay", 0), 17)
else:
    dead = 7
    check("aggregates (the others')", f["aggregates"], str((n - 1) * rounds * chunks))
    check("verified", f["verified"], f["aggregates"])
    # island i's log: "round R ... partial P missing island X chunks A-B,C;
    # island Y ..." (isthmus-island cuts a long list with "..."): every
    # island named must miss exactly the chunks expected (the cut one: a
    # prefix of them), in island order, and P the chunks missing anyone
    for i in range(n):
        if i == dead:
            continue
        want = {}
        for c in range(chunks):
            par = trees[c % k]
            below = subtree(par, dead)
            gone = (set(range(n)) - subtree(par, i)) if i in below else below
            for x in gone:
                want.setdefault(x, set()).add(c)
        want_partial = sum(1 for c in range(chunks)
                           if any(c in v for v in want.values()))
        seen = set()
        for l in open("%s/island%d.log" % (run, i), errors="replace"):
            m = re.match(r"round (\d+) clique \S+ chunks \d+ complete \d+ partial (\d+) "
                         r"missing (.*) verified \d+ nacks", l)
            if not m:
                continue
            r, partial, text = int(m.group(1)), int(m.group(2)), m.group(3)
            seen.add(r)
            if r == 0:
                check("island %d round 0 partial" % i, partial, 0)
            if r < 2:
                continue
            check("island %d round %d partial" % (i, r), partial, want_partial)
            cut = text.endswith("...")
            segs = text.split("; ")
            named = []
            for j, part in enumerate(segs):
                w = part.split()
                if len(w) < 4:
                    break  # cut inside "island X chunks"
                x, last = int(w[1]), cut and j == len(segs) - 1
                toks = w[3].split(",")[:-1] if last else w[3].split(",")
                got = set()
                for t in toks:
                    a, _, b = t.partition("-")
                    got |= set(range(int(a), int(b or a) + 1))
                named.append(x)
                exp = want.get(x, set())
                if last:
                    exp = {c for c in exp if got and c <= max(got)}
                if got != exp:
                    fails.append("island %d round %d: island %d missing chunks %s, want %s"
                                 % (i, r, x, sorted(got)[:8], sorted(exp)[:8]))
            order = sorted(want)
            if named != order[:len(named)] or (not cut and named != order):
                fails.append("island %d round %d: names islands %s missing, want %s"
                             % (i, r, named, order))
        check("island %d rounds logged" % i, sorted(seen), list(range(rounds)))
for x in fails:
    print("FAIL: " + x)
if not fails:
    print("PASS: %s: %s" % (case, line))
sys.exit(1 if fails else 0)
PY
rc=$?
[ "$rc" = 0 ] && ok=1
exit "$rc"
