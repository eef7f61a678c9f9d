#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# System tests of scripts/train.sh.
#   train_test.sh SOURCE_ROOT BUILD_DIR
#       a short run of both (9 islands each) on this host, asserting that
#       every island of both runs learnt (test accuracy well above where it
#       started) and that every isthmus aggregate is the exact sum over its
#       bitmap of what the islands sent (train.py check)
#   train_test.sh SOURCE_ROOT BUILD_DIR readme-testbed
#       the `--testbed` command of README.md's training lines, as written
#       there, against real edges (isthmusd) and the emulated WAN: every
#       island of every run learnt (held-out loss well below its start),
#       and every isthmus aggregate is exact. Needs root (exit 77: skip).
#   train_test.sh SOURCE_ROOT BUILD_DIR island-ranks
#       a short isthmus run on the testbed with islands of 2 ranks (two
#       host namespaces behind every edge, a gloo group in each island):
#       every aggregate exact, every island learnt, the two ranks of every
#       island identical bit for bit at the end, every host exchanged
#       rounds, with auth on. Needs root (exit 77: skip).
set -euo pipefail
SRC=$1
BUILD=$2
MODE=${3:-loopback}
OUT=$(mktemp -d /tmp/isthmus-train-test.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

if [ "$MODE" = readme-testbed ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: --testbed needs root"; exit 77; }
	[ -d /usr/share/games/fortunes ] || { echo "SKIP: no fortunes (scripts/deps.sh)"; exit 77; }
	CMD=$(sed -n 's/^\(\.\/scripts\/train\.sh --testbed .*\)$/\1/p' "$SRC/README.md" | sed 's/ *#.*$//')
	[ "$(echo "$CMD" | wc -l)" = 1 ] && [ -n "$CMD" ] ||
		{ echo "FAIL: README.md has no single './scripts/train.sh --testbed ...' line"; exit 1; }
	echo "README: $CMD"
	# the README's command, run from the source root, into our directory
	(cd "$SRC" && eval "$CMD --build '$BUILD' --out '$OUT'") | tee "$OUT/train.out"
	RUNS=$(echo "$CMD" | sed -n 's/.*--runs \([^ ]*\).*/\1/p')
	n=$(grep -c '^CHECK .* wrong=0$' "$OUT/train.out" || true)
	want=$(echo "$RUNS" | tr ',' '\n' | grep -c '^isthmus' || true)
	[ "$want" -ge 1 ] && [ "$n" = "$want" ] ||
		{ echo "FAIL: $n of $want isthmus runs checked exact"; exit 1; }
	/usr/bin/python3 - "$OUT" "$RUNS" <<'PY'
import glob, json, os, sys
out, runs = sys.argv[1], sys.argv[2].split(",")
ok = True
for run in runs:
    files = sorted(glob.glob(os.path.join(out, run + "-*.jsonl")))
    if len(files) != 9:
        print("FAIL: %s: %d island logs" % (run, len(files))); ok = False; continue
    for f in files:
        ev = [json.loads(l) for l in open(f)]
        first, last = ev[0], ev[-1]
        # a byte model starts near ln 256 = 5.55 nats; one that learnt
        # nothing stays there
        if not last.get("summary") or last["final_loss"] > first["loss"] - 1.0:
            print("FAIL: %s did not learn: %.3f -> %s" % (f, first["loss"], last.get("final_loss")))
            ok = False
s = json.load(open(os.path.join(out, "summary.json")))
for run in runs:
    if run.startswith("isthmus") and s[run]["contributors"] <= 1.0:
        print("FAIL: %s: no peer's contribution arrived" % run); ok = False
    print("%s: final loss %.3f, %.2f steps/s" % (run, s[run]["final_loss"], s[run]["steps_per_s"]))
sys.exit(0 if ok else 1)
PY
	echo "PASS"
	exit 0
fi

if [ "$MODE" = island-ranks ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: --testbed needs root"; exit 77; }
	"$SRC/scripts/train.sh" --testbed --island-ranks 2 --runs isthmus --startup 20 \
		--build "$BUILD" --out "$OUT" --steps 100 --compute-ms 50 --eval-every 20 \
		--target 0.5 --record | tee "$OUT/train.out"
	grep -q '^CHECK run=isthmus islands=9 .* wrong=0$' "$OUT/train.out" ||
		{ echo "FAIL: aggregates not exact"; exit 1; }
	/usr/bin/python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
files = sorted(glob.glob(os.path.join(out, "isthmus-*.jsonl")))
ok = len(files) == 9 or print("FAIL: %d island logs" % len(files))
for f in files:
    ev = [json.loads(l) for l in open(f)]
    s = ev[-1]
    if not s.get("summary") or s["island_ranks"] != 2:
        print("FAIL: %s: no summary of an island of 2 ranks" % f); ok = False; continue
    if s["final_acc"] < ev[0]["acc"] + 0.15:
        print("FAIL: %s did not learn: %.3f -> %.3f" % (f, ev[0]["acc"], s["final_acc"])); ok = False
    # the ranks' parameters, max - min over the island's ranks
    if s["ranks_max_diff"] != 0.0:
        print("FAIL: %s: the ranks differ by %g" % (f, s["ranks_max_diff"])); ok = False
    # this rank (host 0) owns half the chunks and exchanged rounds, with
    # auth on (the testbed's default, with several hosts too)
    c = s["counters"]
    if c.get("auth") != 1:
        print("FAIL: %s: the session ran without auth" % f); ok = False
    if c.get("hosts") != 2 or not s["avg_applied"] or c.get("range_chunks", 0) * 2 > 30:
        print("FAIL: %s: hosts %s, range %s chunks, %s rounds applied"
              % (f, c.get("hosts"), c.get("range_chunks"), s["avg_applied"])); ok = False
t = json.load(open(os.path.join(out, "summary.json")))["isthmus"]
if t["contributors"] <= 1.0:
    print("FAIL: no peer's contribution arrived"); ok = False
print("isthmus, islands of 2 ranks: final accuracy %.3f (min %.3f), %d rounds applied"
      % (t["final_acc"], t["final_acc_min"], t["rounds_applied"]))
sys.exit(0 if ok else 1)
PY
	echo "PASS"
	exit 0
fi

"$SRC/scripts/train.sh" --build "$BUILD" --out "$OUT" --steps 80 --compute-ms 10 \
	--period-ms 300 --eval-every 20 --target 0.5 --record | tee "$OUT/train.out"
grep -q '^CHECK .* wrong=0$' "$OUT/train.out" || { echo "FAIL: aggregates not exact"; exit 1; }

/usr/bin/python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
s = json.load(open(os.path.join(out, "summary.json")))
ok = True
for mode in ("isthmus", "gloo"):
    files = sorted(glob.glob(os.path.join(out, mode + "-*.jsonl")))
    if len(files) != 9:
        print("FAIL: %s: %d island logs" % (mode, len(files))); ok = False; continue
    for f in files:
        ev = [json.loads(l) for l in open(f)]
        first, last = ev[0], ev[-1]
        assert last.get("summary"), f
        # chance is 0.1: a run that learnt nothing stays near it
        if last["final_acc"] < first["acc"] + 0.15:
            print("FAIL: %s did not learn: %.3f -> %.3f" % (f, first["acc"], last["final_acc"]))
            ok = False
    print("%s: final accuracy %.3f (min %.3f), %.1f steps/s" % (
        mode, s[mode]["final_acc"], s[mode]["final_acc_min"], s[mode]["steps_per_s"]))
if s["isthmus"]["rounds_applied"] == 0:
    print("FAIL: no isthmus round was applied"); ok = False
sys.exit(0 if ok else 1)
PY
echo "PASS"
