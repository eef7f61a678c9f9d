#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# isthmus-plan on input a new user might write: each bad topology
# file exits 2 with "file:line: reason"; a spreadsheet export (BOM, CRLF)
# plans; a size flag outside the one convention (lib/text) exits 2, like
# every bad option value (doc/planner.md "Accepted ranges").
set -u
plan="$1"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/isth-topo-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf 'site,region\nA,R\nB,R\n' >"$tmp/s.csv"

# expect_refused NAME LINKS-TEXT MESSAGE: exit 2 and exactly that message
expect_refused() {
	printf "$2" >"$tmp/$1.csv"
	"$plan" --sites "$tmp/s.csv" --links "$tmp/$1.csv" --payload-bytes 1M \
		>/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || fail "$1: exit $rc, want 2 ($(cat "$tmp/err"))"
	grep -qxF "isthmus-plan: $tmp/$1.csv:$3" "$tmp/err" || fail "$1: message: $(cat "$tmp/err")"
}

expect_refused comma 'a,b,one_way_ms,capacity_gbps\nA,B,33,669,100\n' \
	"2: 5 fields but the header has 4 (a decimal comma? write 33.669, not 33,669; quote text that holds commas)"
expect_refused huge-latency 'a,b,one_way_ms,capacity_gbps\nA,B,1e308,100\n' \
	"2: one_way_ms 1e308 out of range [0, 10000]"
expect_refused tiny-capacity 'a,b,one_way_ms,capacity_gbps\nA,B,1,1e-300\n' \
	"2: capacity_gbps 1e-300 out of range [0.001, 1e+06]"

# a directory instead of a file
"$plan" --sites "$tmp" --links "$tmp/s.csv" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "directory: exit $rc, want 2"
grep -qxF "isthmus-plan: $tmp: is a directory, not a file" "$tmp/err" || fail "directory: $(cat "$tmp/err")"

# BOM and CRLF, as a spreadsheet writes them: planned like the plain file
printf '\357\273\277site,region\r\nA,R\r\nB,R\r\n' >"$tmp/bom-s.csv"
printf '\357\273\277a,b,one_way_ms,capacity_gbps\r\nA,B,10,100\r\n' >"$tmp/bom-l.csv"
printf 'a,b,one_way_ms,capacity_gbps\nA,B,10,100\n' >"$tmp/l.csv"
"$plan" --sites "$tmp/bom-s.csv" --links "$tmp/bom-l.csv" --payload-bytes 1M --schedule pairs \
	--format csv --quiet >"$tmp/bom.out" 2>"$tmp/err" || fail "BOM file: $(cat "$tmp/err")"
"$plan" --sites "$tmp/s.csv" --links "$tmp/l.csv" --payload-bytes 1M --schedule pairs \
	--format csv --quiet >"$tmp/plain.out" 2>"$tmp/err" || fail "plain file: $(cat "$tmp/err")"
cmp -s "$tmp/bom.out" "$tmp/plain.out" || fail "BOM/CRLF file plans differently"
# sizes: 1e300T was read as infinity; 8g (lower case) and 1.5 bytes are not sizes
for bad in 1e300T 8g 1.5 -1M; do
	"$plan" --sites "$tmp/s.csv" --links "$tmp/l.csv" --payload-bytes "$bad" >/dev/null 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || fail "--payload-bytes $bad: exit $rc, want 2"
	grep -qF "isthmus-plan: --payload-bytes: bad size '$bad'" "$tmp/err" || fail "--payload-bytes $bad: $(cat "$tmp/err")"
done
echo "PASS"
