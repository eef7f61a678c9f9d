#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# An island of K hosts (doc/isthmusd.md, "An island of several hosts"): the
# real testbed (scripts/testbed.sh run --island-hosts K), three islands,
# every one K isthmus-island processes behind its edge, host k sending and
# checking chunk ids [floor(k*C/K), floor((k+1)*C/K)) of every round.
# Authentication on (the testbed's default): the hosts of an island share
# its key file, each with its own seqs and replay windows at its edge.
#
#   island_hosts_test.sh BUILD_DIR CASE
#
#   two    K = 2: every aggregate exact, none partial; during the run a
#          DATA for host 0's chunk sent from host 1's address, sealed with
#          the island's key and a seq above everything host 1 sent, is
#          refused and counted (drop_access_wrong_host, host 1's
#          wrong_host) without moving host 1's replay window (host 1's
#          DATA after it would be stale: aggregates partial); then host
#          1's own DATA, captured on its link and sent again from it, are
#          all refused as replays (auth_replay or auth_stale) while both
#          hosts' streams go on exact; and DATA for host 1's own chunk
#          from host 1, sealed with the island's key but with seqs of
#          host 0's lane (even), are refused as drop_auth_host_seq
#   three  K = 3: every aggregate exact, none partial
#   kill   K = 2, host 1 of island 1 killed (kill -9) at round 1: no sum
#          is ever wrong, and every partial names island 1 and chunks of
#          host 1's range only; from round 3 on (its DATA of round 2 may
#          have left before the kill) exactly that range
#
# Expected figures are computed here: C = ceil(payload / (4 * 348)) chunks
# (auth on, three islands: 1416 bytes of body at MTU 1500 less the 16-byte
# tag's room for a WAN tag list of two peers, 8 + 16 bytes: 348 int32 per
# chunk, doc/protocol.md "Sizes"), host k's range by the rule.
set -uo pipefail

BUILD=$1
CASE=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (network namespaces, veth, bridges)"
	exit 77
fi
if ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: ip netns unavailable"
	exit 77
fi

N=3
PAYLOAD=65536
CE=$(( (1416 - 8 - 16) / 4 ))
C=$(( (PAYLOAD / 4 + CE - 1) / CE ))
ROUNDS=4
KILL=
case "$CASE" in
two) K=2 ROUNDS=6 ;;
three) K=3 ;;
kill) K=2 ROUNDS=5 KILL=1:1:1 ;;
*) echo "unknown case $CASE" >&2; exit 2 ;;
esac
first() { echo $(( $1 * C / K )); }	# host $1's first chunk id
count() { echo $(( ($1 + 1) * C / K - $1 * C / K )); }

keep=$(mktemp -d /tmp/isth-system-keep-XXXXXX)
log=$keep/testbed.log
trap 'rm -rf "$keep"' EXIT
args=(--island-hosts "$K" --islands "$N" --schedule all-to-all --payload-bytes "$PAYLOAD"
      --rounds "$ROUNDS" --ready-timeout 240 --keep "$keep/run")
[ -z "$KILL" ] || args+=(--kill-island-host "$KILL")
BUILD=$BUILD "$ROOT/scripts/testbed.sh" run "${args[@]}" >"$log" 2>&1 </dev/null &
tb=$!

fail=0
check() {
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1: got $2, want $3"
		fail=1
	fi
}

injected=0 replayed=0 laned=0
if [ "$CASE" = two ]; then
	# Once the run is under way (its "all ready" line, the epoch passed),
	# host 1 of island 0 sends 5 DATA for chunk 0, host 0's, as island 0,
	# from its own address (a plain UDP socket in its namespace), for
	# the round after the running one: isthmusd admits island DATA of
	# the running round and the next (doc/isthmusd.md, "Admission"), so
	# only the host check can refuse them. Sealed with the island's key
	# (a host holds it), seqs from the clock now: above every seq host 1
	# sent, so that a window moved by them would refuse host 1's own.
	until rid=$(sed -n 's/^testbed: run \([0-9a-f]*\), .*all ready.*/\1/p' "$log") && [ -n "$rid" ]; do
		kill -0 "$tb" 2>/dev/null || break
		sleep 0.1
	done
	epoch=$(cat "$keep/run/epoch" 2>/dev/null)
	T=$(awk '$1 == "round-ns" {print $2}' "$keep/run/run.sched" 2>/dev/null)
	if [ -n "$rid" ] && [ -n "$epoch" ] && [ -n "$T" ]; then
		until [ "$(date +%s%N)" -ge $((epoch + T)) ]; do sleep 0.05; done
		r=$(( ($(date +%s%N) - epoch) / T + 1 ))
		out=$(ip netns exec "isth-$rid-0-1" "$BUILD/app/isthmus-inject/isthmus-inject" \
			--to 10.10.0.1:9471 --job 1 --sender 0 --round "$r" --chunk 0 \
			--elems "$CE" --value 1000 --count 5 --seq "$(($(date +%s%N) | 1))" --seq-step 2 \
			--key-file "$keep/run/keys/island-0.key" --dir up --owner 0 \
			--islands "$N" data 2>&1)
		echo "wrong-host DATA for round $r: $out"
		injected=$(echo "$out" | sed -n 's/^INJECT .* sent=\([0-9]*\) .*/\1/p')
		check "wrong-host DATA sent" "$injected" 5
		# host 1's own last chunk, from host 1, but seqs of host 0's lane
		# (even; a genuine host k of K uses only seqs = k mod K)
		out=$(ip netns exec "isth-$rid-0-1" "$BUILD/app/isthmus-inject/isthmus-inject" \
			--to 10.10.0.1:9471 --job 1 --sender 0 --round "$r" --chunk $((C - 1)) \
			--elems "$CE" --value 1000 --count 3 --seq "$(($(date +%s%N) & ~1))" --seq-step 2 \
			--key-file "$keep/run/keys/island-0.key" --dir up --owner 0 \
			--islands "$N" data 2>&1)
		echo "DATA in host 0's seq lane from host 1: $out"
		laned=$(echo "$out" | sed -n 's/^INJECT .* sent=\([0-9]*\) .*/\1/p')
		check "DATA in another host's lane sent" "$laned" 3
		# host 1's own DATA (UDP payload type byte 1) as it leaves, then
		# sent again from host 1 (its address: its window)
		cap=$keep/host1.pcap
		ip netns exec "isth-$rid-0-1" dumpcap -q -p -P -i eth0 \
			-f "udp and dst port 9471 and dst host 10.10.0.1 and udp[11] == 1" \
			-c 8 -a duration:20 -w "$cap" >/dev/null 2>&1
		out=$(ip netns exec "isth-$rid-0-1" "$BUILD/app/isthmus-inject/isthmus-inject" \
			--to 10.10.0.1:9471 replay "$cap" 2>&1)
		echo "host 1's DATA sent again: $out"
		replayed=$(echo "$out" | sed -n 's/^INJECT .* sent=\([0-9]*\) .*/\1/p')
		check "host 1's DATA sent again" "$replayed" 8
	else
		echo "FAIL: the run never got under way"
		fail=1
	fi
fi
wait "$tb"
rc=$?
tail -12 "$log"
line=$(grep '^SUMMARY ' "$log" | tail -1)
if [ -z "$line" ]; then
	echo "FAIL: no SUMMARY line (testbed exit $rc)"
	exit 1
fi
get() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
check "testbed exit" "$rc" 0
check wrong "$(get wrong)" 0
check islands "$(get islands)" "$N"

# Every host checked exactly its range, every round: aggregates = rounds x
# its chunk count, each verified (the island CLI checks each sum over its
# bitmap against the exact one).
for ((i = 0; i < N; i++)); do
	for ((h = 0; h < K; h++)); do
		[ "$KILL" = "$i:$h:1" ] && continue
		f=$keep/run/island$i.log
		[ "$h" = 0 ] || f=$keep/run/island$i.h$h.log
		s=$(grep '^ISLAND ' "$f" | tail -1)
		hv() { echo "$s" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
		check "island $i host $h aggregates" "$(hv aggregates)" $((ROUNDS * $(count "$h")))
		check "island $i host $h verified" "$(hv verified)" $((ROUNDS * $(count "$h")))
		# the range it got (round lines say "chunks N")
		check "island $i host $h chunks per round" \
			"$(awk '$1 == "round" { print $6; exit }' "$f")" "$(count "$h")"
	done
done

# an edge's final counters: "island host H: chunks A-B data_in ... wrong_host W ..."
hostctr() { sed -n "s/^island host $2: chunks [0-9-]* .* $3 \([0-9]*\).*/\1/p" "$keep/run/edge$1.log"; }
hostrange() { sed -n "s/^island host $2: chunks \([0-9]*-[0-9]*\) .*/\1/p" "$keep/run/edge$1.log"; }
for ((i = 0; i < N; i++)); do
	for ((h = 0; h < K; h++)); do
		check "edge $i: host $h's range" "$(hostrange "$i" "$h")" \
			"$(first "$h")-$(( $(first "$h") + $(count "$h") - 1 ))"
	done
done

if [ "$KILL" = "" ]; then
	check aggregates "$(get aggregates)" $((N * ROUNDS * C))
	check verified "$(get verified)" $((N * ROUNDS * C))
	check partial "$(get partial)" 0
	check missing "$(get missing)" 0
	# genuine hosts send only their own chunks: the injected DATA are the
	# only wrong-host drops, all at edge 0, all from host 1
	want1=0
	[ "$CASE" = two ] && want1=5
	for ((i = 0; i < N; i++)); do
		for ((h = 0; h < K; h++)); do
			w=0
			[ "$i:$h" = 0:1 ] && w=$want1
			check "edge $i: host $h's wrong_host" "$(hostctr "$i" "$h" wrong_host)" "$w"
		done
	done
	drops=$(awk '$1 == "drop_access_wrong_host" { print $2 }' "$keep/run/edge0.log")
	check "edge 0: drop_access_wrong_host" "${drops:-0}" "$want1"
	# every DATA sent again refused by host 1's replay window (counted
	# under its address: the host's replay counter), nobody else's; the
	# edges' WAN repairs and tail copies repeat their own seqs and are
	# refused as auth_replay by peers in any run, so the edge-wide
	# drop_auth_replay says nothing of the hosts' windows
	for ((i = 0; i < N; i++)); do
		for ((h = 0; h < K; h++)); do
			w=0
			[ "$i:$h" = 0:1 ] && w=$((replayed + laned))
			check "edge $i: host $h's replay" "$(hostctr "$i" "$h" replay)" "$w"
		done
	done
	drops=$(awk '$1 == "drop_auth_host_seq" { print $2 }' "$keep/run/edge0.log")
	check "edge 0: drop_auth_host_seq" "${drops:-0}" "$laned"
	if [ "$CASE" = two ] && [ "$fail" = 1 ]; then
		grep -E "drop_round_(late|early)" "$keep/run/edge0.log"
	fi
else
	# kill: host 1 of island 1 (range R1 = [first 1, first 1 + count 1)).
	# Every missing entry of every round line of every surviving host
	# names island 1 and chunks in R1; from round 3 on, the hosts 1 of
	# islands 0 and 2 miss exactly R1 of island 1 (union of the ranges
	# printed), and their hosts 0, and island 1's host 0, miss nothing.
	lo=$(first 1) hi=$(( $(first 1) + $(count 1) - 1 ))
	check "killed" "$(awk '{print $1, $2, $3, $4}' "$keep/run/killed")" "island 1 host 1"
	for f in "$keep"/run/island*.log; do
		# "missing island X chunk(s) A-B,C; island Y ..." -> "r X c" lines
		awk '/^round [0-9]+ / && / missing island/ {
			r = $2; s = $0
			sub(/.* missing /, "", s); sub(/ verified.*/, "", s)
			n = split(s, part, "; ")
			for (k = 1; k <= n; k++) {
				split(part[k], w, " ")
				m = split(w[4], rg, ",")
				for (j = 1; j <= m; j++) {
					if (split(rg[j], ab, "-") == 1) ab[2] = ab[1]
					for (c = ab[1]; c <= ab[2]; c++) print r, w[2], c
				}
			}
		}' "$f" >"$f.missing"
		bad=$(awk -v lo="$lo" -v hi="$hi" '$2 != 1 || $3 < lo || $3 > hi' "$f.missing" | head -3)
		[ -z "$bad" ] || { echo "FAIL: ${f##*/}: missing outside island 1's chunks $lo-$hi: $bad"; fail=1; }
	done
	for i in 0 2; do
		for ((r = 3; r < ROUNDS; r++)); do
			got=$(awk -v r="$r" '$1 == r { print $3 }' "$keep/run/island$i.h1.log.missing" | sort -n | uniq | paste -sd' ')
			check "island $i host 1 round $r: island 1 chunks missing" "$got" "$(seq -s' ' "$lo" "$hi")"
			got=$(awk -v r="$r" '$1 == r' "$keep/run/island$i.log.missing" | wc -l)
			check "island $i host 0 round $r: chunks missing" "$got" 0
		done
	done
	for ((r = 0; r < ROUNDS; r++)); do
		got=$(awk -v r="$r" '$1 == r' "$keep/run/island1.log.missing" | wc -l)
		check "island 1 host 0 round $r: chunks missing" "$got" 0
	done
	# the surviving hosts checked every chunk they got; partial results
	# at least those of rounds 3.. at the two peers' hosts 1
	if [ "$(get partial)" -lt $(( 2 * (ROUNDS - 3) * $(count 1) )) ]; then
		echo "FAIL: partial=$(get partial), want >= $(( 2 * (ROUNDS - 3) * $(count 1) ))"
		fail=1
	fi
	check "missing = partial (one contributor each)" "$(get missing)" "$(get partial)"
fi
if [ "$fail" = 0 ]; then
	echo "PASS: island hosts $CASE (K=$K, C=$C)"
	exit 0
fi
cp -r "$keep/run" "/tmp/isth-island-hosts-$CASE-failed" 2>/dev/null && echo "logs: /tmp/isth-island-hosts-$CASE-failed"
exit 1
