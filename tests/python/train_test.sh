#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# System test of scripts/train.sh: a short run of both (9 islands each),
# asserting that every island of both runs learnt (test accuracy well above
# where it started) and that every isthmus aggregate is the exact sum over
# its bitmap of what the islands sent (train.py check).
#   train_test.sh SOURCE_ROOT BUILD_DIR
set -euo pipefail
SRC=$1
BUILD=$2
OUT=$(mktemp -d /tmp/isthmus-train-test.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

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
