#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# isthmus-plan end to end: exit codes, CSV columns, errors, --out.
set -u
plan="$1"
src="$2"
topo="--sites $src/conf/topologies/nine-city-sites.csv --links $src/conf/topologies/nine-city-links.csv"
tmp=$(mktemp -d)
busy=""
trap 'rm -rf "$tmp"; [ -z "$busy" ] || kill "$busy" 2>/dev/null' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$plan" --help | grep -q "Exit status" || fail "--help"
"$plan" --bogus >/dev/null 2>&1; [ $? -eq 1 ] || fail "usage exit code"

# shellcheck disable=SC2086
"$plan" $topo --payload-bytes 1.3G --memory-bytes 0,32G --schedule all-to-all,regional,triangles \
	--format csv --out "$tmp/s.sched" --quiet >"$tmp/out.csv" || fail "csv run"
head -1 "$tmp/out.csv" | grep -q '^schedule,memory_bytes,feasible,round_ms,A_flood,A_avg,objective_ms,' \
	|| fail "csv header"
grep -q '^all-to-all,0,0,,,,,"memory: ' "$tmp/out.csv" || fail "infeasible row"
grep -q '^regional,0,1,[0-9.]*,inf,inf,inf,' "$tmp/out.csv" || fail "regional row"
grep -q '^triangles,0,1,564\.' "$tmp/out.csv" || fail "triangles T at 1.3G"
head -1 "$tmp/s.sched" | grep -qx 'isthmus-schedule 2' || fail "schedule magic (version 2: peaks)"
# one peak-bytes line per edge; the 32G winner (triangles) staggers, so some edge holds > 0
[ "$(grep -c '^peak-bytes [0-8] [0-9]*$' "$tmp/s.sched")" -eq 9 ] || fail "peak-bytes lines"
awk '$1 == "peak-bytes" && $3 > 1e6 {ok = 1} END {exit !ok}' "$tmp/s.sched" || fail "peak-bytes values"
tail -1 "$tmp/s.sched" | grep -qx 'end' || fail "schedule end"

# tiny payloads neither fail (was: Input/output error) nor hang (was: 50-200 B)
for P in 10 100; do
	# shellcheck disable=SC2086
	"$plan" $topo --payload-bytes $P --memory-bytes 0,32G --schedule all-to-all,pairs,triangles \
		--quiet --out "$tmp/tiny.sched" >/dev/null 2>"$tmp/err" || fail "payload $P: $(cat "$tmp/err")"
	[ -s "$tmp/tiny.sched" ] || fail "payload $P: no schedule written"
done

# the cutting-plane cap: a named warning per round, exit 5, nothing written
# shellcheck disable=SC2086
"$plan" $topo --payload-bytes 1.3G --schedule triangles --max-lps 1 --quiet \
	--out "$tmp/cap.sched" >/dev/null 2>"$tmp/err"
[ $? -eq 5 ] || fail "cap exit code"
for r in 0 1 2 3; do
	grep -q "^isthmus-plan: warning: triangles M=0 round $r: cutting-plane cap of 1 LPs hit" "$tmp/err" \
		|| fail "cap warning round $r: $(cat "$tmp/err")"
done
[ ! -e "$tmp/cap.sched" ] || fail "schedule written despite the cap"

# search: one seed, one result, byte for byte (the temperature follows the
# iterations, not the clock); the second run competes with a busy loop
for k in 1 2; do
	if [ $k -eq 2 ]; then (while :; do :; done) & busy=$!; fi
	# shellcheck disable=SC2086
	"$plan" $topo --payload-bytes 1.3G --schedule search --search-iters 1500 --seed 42 \
		--quiet --out "$tmp/search$k.sched" >"$tmp/search$k.txt" 2>"$tmp/err" \
		|| fail "search run $k: $(cat "$tmp/err")"
done
kill "$busy"
busy=""
cmp -s "$tmp/search1.sched" "$tmp/search2.sched" || fail "search with one seed differs"
cmp -s "$tmp/search1.txt" "$tmp/search2.txt" || fail "search table with one seed differs"

printf 'site,region\nA,R\nB,R\n' >"$tmp/s.csv"
printf 'a,b,one_way_ms,capacity_gbps\nA,B,1,0\n' >"$tmp/l.csv"
"$plan" --sites "$tmp/s.csv" --links "$tmp/l.csv" 2>"$tmp/err" >/dev/null
[ $? -eq 2 ] || fail "topology exit code"
grep -qx "isthmus-plan: $tmp/l.csv:2: non-positive capacity_gbps 0" "$tmp/err" || fail "topology message: $(cat "$tmp/err")"
echo "PASS"
