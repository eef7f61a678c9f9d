#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The isthmus demo: install, build, plan the nine-city WAN, then run it.
#
#   ./scripts/demo.sh            full demo (a few minutes)
#   QUICK=1 ./scripts/demo.sh    shorter search
#
# Part 1 plans the nine-city WAN: out/demo/ gets the planner's table
# (table.txt), CSV (plan.csv), the winning schedule (nine-city.sched) and
# plots (plots/). Part 2 runs the whole system on this machine: nine
# islands, nine isthmusd edges and the WAN emulator (scripts/testbed.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh

BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" >/dev/null
fi
echo "demo: building ($BUILD)" >&2
ninja -C "$BUILD" >"$BUILD.ninja.log" 2>&1 || { tail -40 "$BUILD.ninja.log"; exit 1; }

OUT=out/demo
mkdir -p "$OUT/plots"
PLAN="$BUILD/app/isthmus-plan/isthmus-plan"
SITES=conf/topologies/nine-city-sites.csv
LINKS=conf/topologies/nine-city-links.csv
SEARCH=${QUICK:+2}
SEARCH=${SEARCH:-10}

cat <<'TXT'

== isthmus demo: planning the nine-city WAN ==

Nine compute islands (New York, Chicago, Los Angeles, London, Amsterdam,
Frankfurt, Tokyo, Singapore, Hong Kong; three regions) joined by 100 Gbit/s
links with real one-way latencies (conf/topologies/). Each round every island
multicasts its parameters to its clique and receives their in-line sum.
For each schedule and amount of aggregation memory at the edges the planner
finds the shortest feasible round time T (a GLPK linear program over send
offsets and rates), the mixing time A from survival curves, and ranks them
by T * (A + 1/2), the staleness a training job must tolerate.

TXT
set -x
"$PLAN" --sites "$SITES" --links "$LINKS" --payload-bytes 1.3G \
	--memory-bytes 0,32G --search-seconds "$SEARCH" \
	--out "$OUT/nine-city.sched" --plot "$OUT/plots" | tee "$OUT/table.txt"
"$PLAN" --sites "$SITES" --links "$LINKS" --payload-bytes 1.3G \
	--memory-bytes 0,1G,4G,16G,32G --schedule all-to-all,pairs,triangles \
	--format csv --quiet >"$OUT/plan.csv"
{ set +x; } 2>/dev/null

cat <<TXT

How to read this:
  - '*' marks the best schedule per memory size; 'binding' names the
    constraint that sets T (a link's capacity, the edge memory, access).
  - All-to-all needs every stream to arrive aligned at every edge: with no
    aggregation memory that is impossible, so it is infeasible at M=0.
  - Regional never mixes information across regions (A = inf).
  - The synchronous baseline shows what ring all-reduce over the same WAN
    costs per step and how idle it leaves the GPUs.

Files: $OUT/table.txt, $OUT/plan.csv (memory sweep), $OUT/nine-city.sched
(the schedule isthmusd loads; planned for the planner's default network
replication, which it records: an edge runs it with [wan] replication =
network, and one with edge replication refuses it), $OUT/plots/*.png.
TXT
ls "$OUT"/plots/*.png | sed "s/^/  plot: /"

cat <<'TXT'

== isthmus demo, part 2: the whole system on this machine ==

Now the real thing, scaled down: nine islands (network namespaces, each a
training job's stand-in playing isthmus-island), nine edge appliances
(isthmusd, DPDK on veth) and the WAN between them (isthmus-wan: real
one-way latencies, capacities divided by 10000, so 100 Gbit/s becomes
10 Mbit/s and 1.3 GB per round becomes 130 KB). The planner first plans
for exactly these capacities; then every island sends its tensor each
round, its edge multicasts it to the clique, the peers' edges sum it
in-line, and every island checks every aggregate against the exact sum.

Lines "island0: round ..." are island 0's view of each round: its clique,
chunks complete or partial, what is missing, and the round time.
TXT
set +e
ROUNDS_DEMO=${ROUNDS_DEMO:-6}
BUILD=$BUILD ./scripts/testbed.sh run --rounds "$ROUNDS_DEMO" 2>&1 | tee "$OUT/testbed.txt"
rc=${PIPESTATUS[0]}
set -e
summary=$(grep '^SUMMARY' "$OUT/testbed.txt" || true)
if [ -n "$summary" ]; then
	mean=$(echo "$summary" | sed -n 's/.*round_ms_mean=\([0-9.]*\).*/\1/p')
	planned=$(echo "$summary" | sed -n 's/.*round_ms_planned=\([0-9.]*\).*/\1/p')
	cat <<TXT

How to read the SUMMARY: aggregates = islands x rounds x chunks; verified =
those equal to the exact sum; wrong must be 0; partial/missing count
contributions that did not arrive in time (none without impairments).
Measured mean round time ${mean} ms against the planner's T ${planned} ms
(the round time counts from the round's start to the island's last
aggregate). Try impairments: scripts/testbed.sh run --loss 0.01 --corrupt 0.01
TXT
fi
exit "$rc"
