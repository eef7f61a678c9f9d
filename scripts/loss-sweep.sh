#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The testbed loss sweep of doc/notes/performance-log.md (section 9, "WAN repair
# under loss"): scripts/testbed.sh run with loss p on every WAN link, for each
# p and seed given, and Gilbert-Elliott bursty loss; one table row per run,
# from the run's SUMMARY and the edges' final counters (doc/isthmusd.md,
# "Counters and drops"), so that every partial result can be put down to
# a cause: never NACKed, a tail, a repair that came after NACKing stopped,
# DATA that itself came late (a starved sender or worker), the serving
# edge no longer holding the chunk, or its budget.
#
#   scripts/loss-sweep.sh [--losses "0 0.01 ..."] [--seeds "1 2"]
#       [--ge P/R/LB] [--rounds R] [--schedule NAME] [--out DIR]
#       [--headroom F] [-- extra testbed.sh run options]
#
# Needs what scripts/testbed.sh needs (root, a build). Runs one testbed at a
# time; each run's directory is kept under DIR (default: a new temporary
# directory) as DIR/<label>-s<seed>. Prints, per run:
#   label seed partial aggregates per10k round/T wrong nacks retries
#   unrepaired tail unasked repairs late_repairs late_data gone budget
#   attempts partial_timeout wan_loss_drops repairs_sent wan_prio
#   wan_prio_full headroom load by_hops
# Every run takes the testbed's and isthmusd's defaults (priority class,
# slack, NACK copies): nothing but --loss/--ge, the seed and the options
# after --. load is the 1-minute load average at the run's start and end
# (partial results depend on it: a starved host shows as late_data).
# (budget, attempts: chunks the serving edges refused over a peer's repair
# budget, and over [wan] repair_attempts repairs of one chunk to one peer;
# repairs_sent: the edges' repair frames, tail copies included; wan_prio:
# frames the WAN's links served in the priority class, per hop;
# wan_prio_full: frames the priority class's queue limit dropped;
# headroom: the share F of each WAN link the plan kept free, as the run's
# schedule states it (its "repair-headroom" note: the larger of --headroom F,
# passed to testbed.sh --repair-headroom, and the planner's F from the
# expected loss, which the testbed takes from --loss/--ge; 0 without a
# note); a baseline without headroom passes -- --expected-loss 0; round/T
# is against the T planned with that F, up to 1/(1-F) longer on
# capacity-bound rounds; by_hops: the run's partial
# results, chunk by chunk, by the hops of the route from the missing
# sender to the island in that round, HOPS:CHUNKS,... (the run's
# run.sched routes and island logs): loss p per hop is 1-(1-p)^h on a
# route of h hops each way)
# Exit status: 0 if every run ended with wrong=0, 1 otherwise.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOSSES="0 0.01 0.02 0.03 0.05 0.1"
SEEDS="1 2"
GE="0.00204/0.1/1"
ROUNDS=15
SCHED=triangles
OUT=
HEADROOM=
EXTRA=()
while [ $# -gt 0 ]; do
	case "$1" in
	--losses) LOSSES=$2; shift 2 ;;
	--seeds) SEEDS=$2; shift 2 ;;
	--ge) GE=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--schedule) SCHED=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--headroom) HEADROOM=$2; shift 2 ;;
	--) shift; EXTRA=("$@"); break ;;
	-h|--help) sed -n 3,41p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "loss-sweep.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
	esac
done
HR=()
[ -z "$HEADROOM" ] || HR=(--repair-headroom "$HEADROOM")
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/isth-sweep.XXXXXX)
mkdir -p "$OUT"

# Sum counter NAME over the edges' final counters in run directory $1.
ctr() {
	cat "$1"/edge*.log 2>/dev/null |
		awk -v n="$2" '$1 == n && $2 ~ /^[0-9]+$/ {s += $2} END {print s + 0}'
}
# Sum of the emulator's link counter columns named exactly $2 (its final
# counters, the last table in wan.log).
wan_col() {
	awk -v want="$2" '$1 == "link" {n = 0; s = 0; for (i = 1; i <= NF; i++) if ($i == want) col[++n] = i; next}
		$1 ~ /->/ {for (i = 1; i <= n; i++) s += $(col[i])}
		$1 == "site" {n = 0}
		END {print s + 0}' "$1/wan.log" 2>/dev/null || echo 0
}
# The share of each WAN link the run's plan kept free: the schedule's
# "# repair-headroom F: ..." note (lib/plan to_sched.c), 0 without one.
plan_headroom() {
	local f
	f=$(sed -n 's/^# repair-headroom \([0-9.eE+-]*\):.*/\1/p' "$1/run.sched" 2>/dev/null | head -1)
	echo "${f:-0}"
}

# Frames the emulator dropped for loss (random or Gilbert-Elliott).
wan_loss() {
	wan_col "$1" loss
}

# Missing chunks of the partial results in run directory $1 by the hops of
# the route (run.sched, "route CYCLE FROM TO HOPS") from the missing sender
# to the island: "HOPS:CHUNKS,..." ("-" for none; a pair with no route
# line: its direct link, 1 hop).
by_hops() {
	python3 - "$1" <<'PY' 2>/dev/null || echo "?"
import collections, glob, re, sys
d = sys.argv[1]
hops, ncyc = {}, 1
for line in open(d + "/run.sched"):
    f = line.split()
    if len(f) == 5 and f[0] == "route":
        hops[(int(f[1]), int(f[2]), int(f[3]))] = len(f[4].split(",")) - 1
        ncyc = max(ncyc, int(f[1]) + 1)
n = collections.Counter()
for fn in glob.glob(d + "/island*.log"):
    i = int(re.search(r"island(\d+)", fn).group(1))
    for line in open(fn):
        m = re.search(r"round (\d+) clique \S+ chunks \d+ complete \d+ partial \d+ missing (.*) verified", line)
        if not m:
            continue
        r = int(m.group(1))
        for part in m.group(2).split(";"):
            mm = re.search(r"island (\d+) chunks? ([\d,-]+)", part)
            if not mm:
                continue
            s = int(mm.group(1))
            k = sum(int(b) - int(a) + 1 for a, b in (x.split("-") if "-" in x else (x, x) for x in mm.group(2).split(",")))
            n[hops.get((r % ncyc, s, i), 1)] += k
print(",".join("%d:%d" % (h, n[h]) for h in sorted(n)) or "-")
PY
}

status=0
printf '%-8s %4s %7s %6s %7s %7s %5s %6s %7s %10s %5s %7s %7s %6s %9s %5s %6s %8s %7s %9s %8s %8s %9s %8s %9s %s\n' \
	label seed partial aggs per10k round/T wrong nacks retries unrepaired tail unasked \
	repairs late_r late_data gone budget attempts p_tmo wan_loss rep_sent wan_prio prio_full headroom load \
	by_hops
run() {
	local label=$1 seed=$2 dir load0
	shift 2
	load0=$(cut -d' ' -f1 /proc/loadavg)
	dir=$OUT/$label-s$seed
	rm -rf "$dir"
	"$ROOT/scripts/testbed.sh" run --schedule "$SCHED" --rounds "$ROUNDS" --seed "$seed" \
		--keep "$dir" "${HR[@]}" "$@" "${EXTRA[@]}" >"$OUT/$label-s$seed.out" 2>&1 || true
	local sum
	sum=$(grep '^SUMMARY' "$OUT/$label-s$seed.out" | tail -1) || true
	if [ -z "$sum" ]; then
		echo "$label seed $seed: no SUMMARY (see $OUT/$label-s$seed.out)" >&2
		status=1
		return
	fi
	local f
	declare -A v=()
	for f in $sum; do
		[[ "$f" == *=* ]] && v[${f%%=*}]=${f#*=}
	done
	[ "${v[wrong]}" = 0 ] || status=1
	printf '%-8s %4s %7s %6s %7.1f %7.2f %5s %6s %7s %10s %5s %7s %7s %6s %9s %5s %6s %8s %7s %9s %8s %8s %9s %8s %9s %s\n' \
		"$label" "$seed" "${v[partial]}" "${v[aggregates]}" \
		"$(awk -v p="${v[partial]}" -v a="${v[aggregates]}" 'BEGIN {print a ? 10000 * p / a : 0}')" \
		"$(awk -v m="${v[round_ms_mean]}" -v t="${v[round_ms_planned]}" 'BEGIN {print t ? m / t : 0}')" \
		"${v[wrong]}" "$(ctr "$dir" peer_nacks_sent)" "$(ctr "$dir" peer_nack_retries)" \
		"$(ctr "$dir" peer_chunks_unrepaired)" "$(ctr "$dir" peer_unrepaired_tail)" \
		"$(ctr "$dir" peer_unrepaired_unasked)" "$(ctr "$dir" peer_repairs_rx)" \
		"$(ctr "$dir" peer_repairs_late)" "$(ctr "$dir" peer_data_late)" \
		"$(ctr "$dir" drop_repair_gone)" "$(ctr "$dir" drop_repair_budget)" \
		"$(ctr "$dir" drop_repair_attempts)" \
		"$(ctr "$dir" partial_timeout)" "$(wan_loss "$dir")" "$(ctr "$dir" repairs_sent)" \
		"$(wan_col "$dir" priority)" "$(wan_col "$dir" prio_queue_full)" "$(plan_headroom "$dir")" \
		"$load0-$(cut -d' ' -f1 /proc/loadavg)" "$(by_hops "$dir")"
}
for p in $LOSSES; do
	for s in $SEEDS; do
		run "p$p" "$s" --loss "$p"
	done
done
if [ -n "$GE" ] && [ "$GE" != none ]; then
	for s in $SEEDS; do
		run "ge" "$s" --ge "$GE"
	done
fi
echo "runs in $OUT"
exit $status
