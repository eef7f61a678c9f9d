#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# System tests: the real testbed (scripts/testbed.sh) in namespaces, one
# case per invocation, asserting the SUMMARY line's figures.
#
#   testbed_test.sh BUILD_DIR CASE
#
# Expected figures are computed here from the case's parameters: n islands
# x r rounds x chunks per round results, where chunks = ceil(payload /
# (ESIZE x the elements per chunk)), computed below.
set -uo pipefail

BUILD=$1
CASE=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (network namespaces, veth)"
	exit 77
fi
if ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: ip netns unavailable"
	exit 77
fi

PAYLOAD=65536		# per island per round; chunks: CHUNKS below
keep=$(mktemp -d /tmp/isth-system-keep-XXXXXX)
restart=0
pause=0
detour=0
ROUNDS=3
# a loaded machine may take a minute or more to start nine edges
args=(--payload-bytes "$PAYLOAD" --rounds "$ROUNDS" --ready-timeout 240)
N=9
expect_complete=1
expect_partial=0
max_partial_pct=100
max_partial=-1		# >= 0: at most this many partial results
late_only=0		# 1: every partial result's missing chunks came late
want_loss=		# the expected loss the testbed must have planned for
RESTARTS=0
ESIZE=4			# bytes of an element in the payload (bf16: 2)
case "$CASE" in
triangles|pairs|regional|search)
	args+=(--schedule "$CASE") ;;
all-to-all)
	N=3
	args+=(--schedule all-to-all --islands 3) ;;
af_xdp)
	# edges on net_af_xdp with lib/xdp's steering program
	if [ ! -f "$BUILD/lib/xdp/isth_xdp.bpf.o" ]; then
		echo "SKIP: lib/xdp's BPF object was not built"
		exit 77
	fi
	N=3
	args+=(--schedule all-to-all --islands 3 --pmd af_xdp) ;;
loss)
	# 2 % loss on every WAN link, with the testbed's and isthmusd's
	# defaults only: edge-to-edge NACK repair, retried every round trip
	# until the last moment a repair is summed, a round slack of two
	# longest round trips, the last NACK attempts sent twice, the last two
	# chunks of each stream sent twice ([wan] tail_copies), repairs and
	# NACKs in the WAN's priority class (DSCP EF, 50 ms).
	# The target: 0 partial results. A partial whose cause is loss fails
	# the test; only one whose every missing chunk the run shows to have
	# come late is let through: the receiving edge saw that chunk's own
	# DATA arrive after NACKing for it had stopped (its repair trace,
	# ISTHD_REPAIR_TRACE, "data ... late": a stalled sender or worker on
	# a loaded host, not a loss; a lost chunk never arrives as DATA).
	# One such run was seen at load 14 (2026-12-02) (island 0's send 58 ms late
	# in round 2, 14 partial results).
	args+=(--schedule triangles --loss 0.02 --seed 3 --keep "$keep/run")
	# the testbed plans for the loss it emulates (doc/testbed.md)
	want_loss=0.02
	export ISTHD_REPAIR_TRACE=1
	expect_complete=0
	late_only=1 ;;
restart)
	# edge 4 stopped and started again RESTARTS times (first during round
	# 1, then each time once island 4 has played the round the edge
	# joined at): it joins at a round boundary, and island 4's first
	# round after each restart (the join round) must be complete; the
	# other islands' partials may name island 4 only. Island 4 plays
	# about two rounds per restart (the join round and the one it is
	# stopped in) and 5 after the last
	RESTARTS=20
	ROUNDS=$(( 2 * RESTARTS + 5 ))
	args=(--payload-bytes "$PAYLOAD" --rounds "$ROUNDS" --schedule triangles
	      --restart-edge "4:$RESTARTS" --keep "$keep" --ready-timeout 240)
	expect_complete=0
	restart=1 ;;
pause)
	# isthmus-wan stopped (SIGSTOP) for 2 s from round 3's start, then
	# continued: the rounds during the outage are partial and name who is
	# missing; the run recovers: every round that starts CATCHUP rounds
	# after the outage's end is complete. (The target is the first
	# round after it complete; the island CLI still catches up three
	# rounds late, doc/testbed.md.) 24 rounds (9 s): under load the pause
	# starts late and lasts longer than asked
	ROUNDS=24
	args=(--payload-bytes "$PAYLOAD" --rounds "$ROUNDS" --schedule triangles
	      --pause-wan 3:2 --keep "$keep" --ready-timeout 240)
	expect_complete=0
	pause=1 ;;
detour)
	# What is planned is what runs, with network replication: A-B is the
	# shortest path (10 ms) but a thin link (20 Gbit/s), the detour
	# A-C-B (12 ms) is 100 Gbit/s. The planner (--routing capacity, the
	# default) routes A's and B's streams to each other through C, and
	# isthmus-wan replicates each stream at C (one copy per link per
	# tree). Checked on isthmus-wan's counters below: nothing on A-B,
	# every DATA frame of A on A->C once, C->B carrying A's and C's.
	N=3
	printf 'site,region,city\nA,r1,A\nB,r2,B\nC,r3,C\n' >"$keep/sites.csv"
	printf 'a,b,one_way_ms,capacity_gbps\nA,B,10,20\nA,C,6,100\nC,B,6,100\n' >"$keep/links.csv"
	args+=(--sites "$keep/sites.csv" --links "$keep/links.csv" --schedule all-to-all
	       --replication network --keep "$keep/run")
	detour=1 ;;
detour-edge)
	# The same 3 sites with edge replication (the testbed's default): the
	# planner's route greedy finds the detour here too (it kept
	# the thin link before, T 291.5 ms, now 125.3 ms), and isthmus-wan
	# follows it: nothing on A-B, each of A's DATA frames twice on A->C
	# (one unicast copy for C, one for B), exact results.
	N=3
	printf 'site,region,city\nA,r1,A\nB,r2,B\nC,r3,C\n' >"$keep/sites.csv"
	printf 'a,b,one_way_ms,capacity_gbps\nA,B,10,20\nA,C,6,100\nC,B,6,100\n' >"$keep/links.csv"
	args+=(--sites "$keep/sites.csv" --links "$keep/links.csv" --schedule all-to-all
	       --replication edge --keep "$keep/run")
	detour=2 ;;
impaired)
	# loss, duplication, reordering and corruption on every WAN link:
	# never a wrong sum; what is lost is reported as missing
	args+=(--schedule triangles --loss 0.01 --dup 0.02 --reorder 0.05 --corrupt 0.01 --seed 7
	       --keep "$keep/run")
	# a frame survives if neither lost nor corrupted: 1 - 0.99 x 0.99
	want_loss=0.0199
	expect_complete=0 ;;
bf16)
	# a bf16 job end to end: the edges run [isthmusd] dtype = bf16, the
	# plan's payload is the bytes that cross (2 an element, so twice the
	# elements of an fp32 job), and every island checks its sums exactly
	# against its own bf16 reference (small integers, exact in bf16)
	ESIZE=2
	args+=(--schedule triangles --dtype bf16) ;;
silent)
	# island 4 sends in its first round only: its clique peers get
	# partials that name it, precisely
	args+=(--schedule triangles --silent-island 4)
	expect_complete=0
	expect_partial=1 ;;
*)
	echo "unknown case $CASE" >&2
	exit 2 ;;
esac

# To a file, not $(...): a stray child holding the pipe must not hang us.
log=$(mktemp /tmp/isth-system-XXXXXX.log)
trap 'rm -f "$log"; rm -rf "$keep"' EXIT
BUILD=$BUILD "$ROOT/scripts/testbed.sh" run "${args[@]}" >"$log" 2>&1 </dev/null
rc=$?
tail -25 "$log"
line=$(grep '^SUMMARY ' "$log" | tail -1)
if [ -z "$line" ]; then
	echo "FAIL: no SUMMARY line (testbed exit $rc)"
	exit 1
fi
get() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
fail=0
check() {
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1: got $2, want $3"
		fail=1
	fi
}
# authentication on (the testbed's default): the 16-byte tag taken from
# 1432, and room for the edges' WAN tag list of at most K = min(N - 1, 15)
# peers, 8 + 16 (K - 1) bytes more (doc/protocol.md, "Sizes"): 348 int32
# per chunk for 3 islands, 324 for 9
K=$(( N - 1 < 15 ? N - 1 : 15 ))
CE=$(( (1416 - 8 - 16 * (K - 1)) / 4 ))
CHUNKS=$(( (PAYLOAD / ESIZE + CE - 1) / CE ))
want_aggs=$(( N * ROUNDS * CHUNKS ))
if [ "$restart" = 1 ]; then
	# the other islands play the edges' extra rounds too (scripts/testbed.sh,
	# island_rounds): count what each island's summary says it played
	played=$(cat "$keep"/island*.log | sed -n 's/^ISLAND .* rounds=\([0-9]*\) .*/\1/p' |
		awk '{ s += $1 } END { print s + 0 }')
	want_aggs=$(( played * CHUNKS ))
fi
check islands "$(get islands)" "$N"
check rounds "$(get rounds)" "$ROUNDS"
check aggregates "$(get aggregates)" "$want_aggs"
check wrong "$(get wrong)" 0
check verified "$(get verified)" "$want_aggs"
check "testbed exit" "$rc" 0
if [ -n "$want_loss" ]; then
	planned=$(sed -n 's/^expected-loss //p' "$keep/run/run.sched")
	awk -v p="$planned" -v w="$want_loss" 'BEGIN { d = p - w; exit !(p != "" && d * d < 1e-18) }' ||
		{ echo "FAIL: planned for an expected loss of '$planned', want $want_loss"; fail=1; }
fi
if [ "$expect_complete" = 1 ]; then
	check partial "$(get partial)" 0
	check missing "$(get missing)" 0
fi
if [ $(( $(get partial) * 100 )) -gt $(( max_partial_pct * want_aggs )) ]; then
	echo "FAIL: partial=$(get partial) is more than $max_partial_pct % of $want_aggs"
	fail=1
fi
if [ "$max_partial" -ge 0 ] && [ "$(get partial)" -gt "$max_partial" ]; then
	echo "FAIL: partial=$(get partial), at most $max_partial allowed"
	fail=1
fi
if [ "$late_only" = 1 ]; then
	# Each island's partial results name, per round, the islands whose
	# chunks they lack ("missing island X chunks A-B,C"). Island I's
	# edge (I) traced every peer DATA that came after NACKing for it had
	# stopped: "data r R s X c C next N late". A named chunk without
	# such a line was lost and not repaired in time: a failure.
	unexcused=0
	for ((i = 0; i < N; i++)); do
		ilog=$keep/run/island$i.log elog=$keep/run/edge$i.log
		[ -f "$ilog" ] || continue
		while read -r r x c; do
			if ! grep -q "^rt [0-9.]* data r $r s $x c $c next [0-9]* late$" "$elog"; then
				echo "FAIL: island $i round $r: island $x chunk $c missing, and its DATA did not come late (a loss not repaired)"
				# the evidence: what edge I asked, edge X served
				grep -E "^rt [0-9.-]* (nack|copy|tail|data|repair|unrepaired) r $r s $x " "$elog" | head -12
				grep -E "^rt [0-9.-]* serve r $r to $i " "$keep/run/edge$x.log" | head -6
				unexcused=$((unexcused + 1))
			fi
		done < <(awk '/^round [0-9]+ .* missing island/ {
				r = $2
				sub(/.* missing /, "")
				sub(/ verified.*/, "")
				n = split($0, part, "; ")
				for (k = 1; k <= n; k++) {
					split(part[k], w, " ")
					m = split(w[4], rg, ",")
					for (j = 1; j <= m; j++) {
						if (split(rg[j], ab, "-") == 1) ab[2] = ab[1]
						for (c = ab[1]; c <= ab[2]; c++) print r, w[2], c
					}
				}
			}' "$ilog")
	done
	if [ "$unexcused" -gt 0 ]; then
		fail=1
	elif [ "$(get partial)" -gt 0 ]; then
		echo "partial=$(get partial): every missing chunk's DATA came after its cutoff (a stall, not a loss)"
	fi
fi
if [ "$expect_partial" = 1 ]; then
	# island 4's clique peers (two per triangle round) in rounds 1 and 2:
	# every chunk of theirs misses exactly island 4
	if [ "$(get partial)" -lt $(( 2 * (ROUNDS - 1) * CHUNKS )) ]; then
		echo "FAIL: partial=$(get partial), want >= $(( 2 * (ROUNDS - 1) * CHUNKS )) (two peers x $((ROUNDS - 1)) silent rounds x $CHUNKS chunks)"
		fail=1
	fi
	check "missing = partial (one contributor each)" "$(get missing)" "$(get partial)"
fi
if [ "$detour" = 2 ]; then
	lb() { awk -v l="$1" '$1 == l { print $3 }' "$keep/run/wan-links"; }
	ctr() { awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$keep/run/edge$1.log"; }
	lp() { awk -v l="$1" '$1 == l { print $2 }' "$keep/run/wan-links"; }
	cat "$keep/run/wan-links"
	check "bytes on A->B (planned detour, edge replication)" "$(lb 'A->B')" 0
	check "bytes on B->A (planned detour, edge replication)" "$(lb 'B->A')" 0
	# every frame A's edge sends leaves on A->C: its DATA twice (a copy
	# to C and one to B), plus repairs and NACKs
	for l in "A->C 0" "B->C 1"; do
		e=${l#* } link=${l% *}
		tx=$(ctr "$e" wan_tx)
		check "frames on $link = edge $e's wan_tx" "$(lp "$link")" "$tx"
		check "DATA frames on $link (wan_tx - repairs_sent - peer_nacks_sent)" \
			$(( tx - $(ctr "$e" repairs_sent) - $(ctr "$e" peer_nacks_sent) )) \
			$(( 2 * ROUNDS * CHUNKS ))
	done
	grep -q '^route 0 0 1 0,2,1$' "$keep/run/run.sched" ||
		{ echo "FAIL: the plan does not route A->B through C"; fail=1; }
	grep -q '^route 0 1 0 1,2,0$' "$keep/run/run.sched" ||
		{ echo "FAIL: the plan does not route B->A through C"; fail=1; }
fi
if [ "$detour" = 1 ]; then
	# A's DATA per round on the wire, computed here: 65536 B of int32 are
	# CHUNKS - 1 frames of CE elements (Ethernet 14, IPv4 20, UDP 8,
	# isthmus 40, the elements, a tag list of K: 1514 B) and one of the
	# rest
	list=$(( 8 + 16 * K ))
	per_round=$(( (CHUNKS - 1) * (82 + 4 * CE + list) +
		82 + 4 * (PAYLOAD / 4 - (CHUNKS - 1) * CE) + list ))
	lb() { awk -v l="$1" '$1 == l { print $3 }' "$keep/run/wan-links"; }
	cat "$keep/run/wan-links"
	check "bytes on A->B (planned detour)" "$(lb 'A->B')" 0
	check "bytes on B->A (planned detour)" "$(lb 'B->A')" 0
	# Every frame A sends crosses A->C and nothing else does (B's reach C
	# on B->C; C's leave on C->A and C->B): the link's count is A's edge's
	# wan_tx, exactly, and of those, what are not repairs (tail copies
	# included) or NACKs to peers are DATA, one copy of each of A's frames
	# (edge replication would put two on A->C: one for B, one for C).
	# The same for B on B->C. The repairs depend on timing (NACKs when a
	# tail is late, the tail copies), so they are read, not predicted.
	ctr() { awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$keep/run/edge$1.log"; }
	lp() { awk -v l="$1" '$1 == l { print $2 }' "$keep/run/wan-links"; }
	for l in "A->C 0" "B->C 1"; do
		e=${l#* } link=${l% *}
		tx=$(ctr "$e" wan_tx)
		check "frames on $link = edge $e's wan_tx" "$(lp "$link")" "$tx"
		check "DATA frames on $link (wan_tx - repairs_sent - peer_nacks_sent)" \
			$(( tx - $(ctr "$e" repairs_sent) - $(ctr "$e" peer_nacks_sent) )) \
			$(( ROUNDS * CHUNKS ))
	done
	# C->A and C->B: C's DATA, replicated at C, and the other end's,
	# forwarded: at least two streams' frames, at most what C and that
	# end sent in all
	for l in "C->A 1" "C->B 0"; do
		e=${l#* } link=${l% *}
		got=$(lp "$link")
		max=$(( $(ctr 2 wan_tx) + $(ctr "$e" wan_tx) ))
		if [ -z "$got" ] || [ "$got" -lt $(( 2 * ROUNDS * CHUNKS )) ] || [ "$got" -gt "$max" ]; then
			echo "FAIL: $link carried ${got:-no} frames, want $(( 2 * ROUNDS * CHUNKS )) to $max"
			fail=1
		fi
	done
	# bytes: A's DATA at least, on A->C (per_round above)
	[ "$(lb 'A->C')" -ge $(( ROUNDS * per_round )) ] ||
		{ echo "FAIL: A->C carried $(lb 'A->C') B, less than A's DATA ($(( ROUNDS * per_round )) B)"; fail=1; }
	grep -q '^route 0 0 1 0,2,1$' "$keep/run/run.sched" ||
		{ echo "FAIL: the plan does not route A->B through C"; fail=1; }
fi
if [ "$restart" = 1 ]; then
	# every restart: the edge joined at a round J (scripts/testbed.sh,
	# RUNDIR/restarts), and island 4's round J, its first
	# after the restart, is complete (island log: round R clique C chunks
	# N complete N partial P ...)
	n_ok=0
	for i in $(seq 1 "$RESTARTS"); do
		j=$(awk -v i="$i" '$1 == "restart" && $2 == i {print $6}' "$keep/restarts" 2>/dev/null)
		if [ -z "$j" ] || [ "$j" = - ]; then
			echo "FAIL: restart $i: the edge did not join (restarts: $(cat "$keep/restarts" 2>/dev/null | tr '\n' ';'))"
			fail=1
			continue
		fi
		# (not its round lines: it may be stopped again before the
		# boundary that logs round J, once island 4 has round J)
		if ! grep -q "isthmusd: joining at round $j " "$keep/edge4.restart$i.log" 2>/dev/null; then
			echo "FAIL: restart $i: the restarted edge's log does not say it joined at round $j"
			fail=1
		fi
		line=$(awk -v j="$j" '$1 == "round" && $2 == j' "$keep/island4.log")
		first=$(awk -v j="$j" '$1 == "round" && $2 >= j {print $2; exit}' "$keep/island4.log")
		if [ "$first" != "$j" ] || [ "$(echo "$line" | awk '{print $10}')" != 0 ]; then
			echo "FAIL: restart $i: joined at round $j; island 4's first round after it: ${first:--} (${line:-not played})"
			fail=1
		else
			echo "restart $i: edge 4 joined at round $j; island 4's round $j complete (first after the restart)"
			n_ok=$((n_ok + 1))
		fi
	done
	echo "restarts: $n_ok of $RESTARTS with the first round after it complete"
	if [ "$(grep '^round' "$keep/island4.log" | tail -2 | grep -c 'partial 0 ')" != 2 ]; then
		echo "FAIL: island 4's last rounds after the restart are not complete:"
		grep '^round' "$keep/island4.log" | tail -2
		fail=1
	fi
	# the only contributor any other island may miss is island 4, while
	# its edge is down (island log: round R clique C chunks N complete N
	# partial P missing M ...)
	bad=$(for k in $(seq 0 $((N - 1))); do
		[ "$k" = 4 ] && continue
		awk '$1 == "round" && $10 != 0' "$keep/island$k.log" |
			grep -v 'missing island 4 chunks [0-9-]* verified' || true
	done)
	if [ -n "$bad" ]; then
		echo "FAIL: partial results that do not name island 4 alone:"
		echo "$bad" | head -5
		fail=1
	fi
fi
if [ "$pause" = 1 ]; then
	if [ ! -f "$keep/pause" ]; then
		echo "FAIL: the WAN was not paused (no $keep/pause)"
		fail=1
	else
		# shellcheck disable=SC1091
		. <(tr ' ' '\n' <"$keep/pause")
		# rounds whose start is CATCHUP rounds after the outage's end
		CATCHUP=4
		first=$(( (cont_ns - epoch_ns + round_ns - 1) / round_ns + CATCHUP ))
		during=$(( (stop_ns - epoch_ns) / round_ns ))
		after=$(( (cont_ns - epoch_ns + round_ns - 1) / round_ns ))
		full=$(cat "$keep"/island*.log | awk -v a="$after" '$1 == "round" && $2 >= a && $10 != 0 {
			if ($2 > last) last = $2 } END { print (last ? last + 1 : a) }')
		echo "outage $(( (cont_ns - stop_ns) / 1000000 )) ms from round $during; first round after it: $after; every result complete from round $full (required from $first)"
		[ "$first" -lt "$ROUNDS" ] || { echo "FAIL: outage ran past the last round"; fail=1; }
		# island log lines: round R clique C chunks N complete N partial P missing M ...
		bad=$(cat "$keep"/island*.log | awk -v f="$first" '$1 == "round" && $2 >= f && $10 != 0')
		if [ -n "$bad" ]; then
			echo "FAIL: rounds after the outage are not complete:"
			echo "$bad" | head -5
			fail=1
		fi
		named=$(cat "$keep"/island*.log | awk -v d="$during" -v f="$first" \
			'$1 == "round" && $2 >= d && $2 < f && $10 > 0 && $12 != "-"' | wc -l)
		if [ "$named" -lt 1 ]; then
			echo "FAIL: no partial round during the outage names its missing contributors"
			fail=1
		fi
		if [ "$(get partial)" -lt 1 ]; then
			echo "FAIL: partial=0: the outage left no trace"
			fail=1
		fi
	fi
fi
[ "$fail" = 0 ] && echo "PASS: $CASE: $line"
exit $fail
