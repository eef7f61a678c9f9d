#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The dissector on a real run: a testbed run with the defaults
# (scripts/testbed.sh run: nine islands, authentication on; three rounds)
# captured with dumpcap in island 0's namespace (its access link: DATA and
# NACK up, AGG, GONE and ROUND down) and in the WAN emulator's (every
# edge's WAN DATA and chunk NACKs), then decoded by tshark with
# scripts/isthmus.lua and the run's key file. Passes only if the run
# passed, both captures hold isthmus frames, and every one of them is
# version 2, has the verdict "ok" (no malformed frame) and every tag
# "verified".
#
#   capture_test.sh BUILD_DIR LUA_SCRIPT
#
# Skips (77) without root, network namespaces, tshark or dumpcap.
set -uo pipefail

BUILD=$1
LUA=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: needs root and network namespaces"
	exit 77
fi
for t in tshark dumpcap; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "SKIP: $t not installed"
		exit 77
	fi
done

work=$(mktemp -d /tmp/isth-wireshark-capture-XXXXXX)
tb=
pids=()
ok=0
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	[ -n "$tb" ] && kill "$tb" 2>/dev/null
	wait 2>/dev/null
	if [ "$ok" = 1 ]; then
		rm -rf "$work"
	else
		echo "kept: $work"
	fi
}
trap cleanup EXIT

BUILD=$BUILD "$ROOT/scripts/testbed.sh" run --rounds 3 --ready-timeout 240 \
	--keep "$work/run" >"$work/run.log" 2>&1 &
tb=$!

# The run registers its id with its work directory (the --keep one) in
# /run/isthmus-testbed, and the id names its namespaces (isth-RID-0:
# island 0, isth-RID-w: the WAN emulator); both exist well before the
# first round (the edges start seconds before the epoch).
has_ns() { ip netns list | awk '{print $1}' | grep -qx "$1"; }
rid=
while kill -0 "$tb" 2>/dev/null; do
	rid=$(grep -lx "work=$work/run" /run/isthmus-testbed/* 2>/dev/null | head -1)
	rid=${rid##*/}
	if [ -n "$rid" ] && has_ns "isth-$rid-0" && has_ns "isth-$rid-w"; then
		break
	fi
	rid=
	sleep 0.2
done
if [ -z "$rid" ]; then
	echo "FAIL: the run ended before its namespaces were seen"
	tail -20 "$work/run.log"
	exit 1
fi
for site in 0 w; do
	ip netns exec "isth-$rid-$site" dumpcap -q -i any -w "$work/$site.pcapng" \
		>"$work/dumpcap-$site.log" 2>&1 &
	pids+=($!)
done
# dumpcap says "Capturing on" once it captures
for site in 0 w; do
	while ! grep -q "Capturing on" "$work/dumpcap-$site.log" 2>/dev/null; do
		kill -0 "$tb" 2>/dev/null || break
		sleep 0.1
	done
done
wait "$tb"
rc=$?
tb=
for p in "${pids[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
pids=()
grep SUMMARY "$work/run.log"
if [ "$rc" -ne 0 ]; then
	echo "FAIL: the testbed run failed ($rc)"
	tail -20 "$work/run.log"
	exit 1
fi
# a capture that began after the run ended would read as "nothing
# captured": say which it was
for site in 0 w; do
	if ! grep -q "Capturing on" "$work/dumpcap-$site.log" 2>/dev/null; then
		echo "FAIL: dumpcap in site $site did not start capturing before the run ended"
		cat "$work/dumpcap-$site.log" 2>/dev/null
		exit 1
	fi
done

export HOME=$work/home WIRESHARK_CONFIG_DIR=$work/home/.config/wireshark
mkdir -p "$WIRESHARK_CONFIG_DIR"
bad=0
for site in 0 w; do
	# dumpcap was stopped mid-write: tshark may warn that the file was cut
	# short, which is no decoding error
	tshark -n -X lua_script:"$LUA" -o isthmus.islands:9 \
		-o isthmus.key_file:"$work/run/job.key" -r "$work/$site.pcapng" -Y isthmus \
		-T fields -E separator=/t -E occurrence=a -E aggregator=, \
		-e isthmus.version -e isthmus.type -e isthmus.verdict -e isthmus.tag.status \
		>"$work/$site.tsv" 2>"$work/$site.err"
	if grep -v -e '^Running as user "root"' -e 'cut short in the middle of a packet' \
		"$work/$site.err" | grep -q .; then
		echo "FAIL: tshark on $site.pcapng:"
		cat "$work/$site.err"
		bad=1
	fi
	python3 - "$site" "$work/$site.tsv" <<'PY' || bad=1
import collections, sys

site, path = sys.argv[1], sys.argv[2]
names = {"1": "DATA", "2": "AGG", "3": "NACK", "4": "GONE", "5": "ROUND"}
by_type, bad = collections.Counter(), []
for line in open(path):
    v, ty, verdict, tags = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
    by_type[names.get(ty, ty)] += 1
    if v != "2" or verdict != "ok" or not tags or \
            any(t != "verified" for t in tags.split(",")):
        bad.append(line.strip())
n = sum(by_type.values())
need = {"0": ("DATA", "AGG", "ROUND"), "w": ("DATA",)}[site]
missing = [t for t in need if by_type[t] == 0]
print(f"{'island 0' if site == '0' else 'WAN'}: {n} isthmus frames "
      f"({', '.join(f'{k} {c}' for k, c in sorted(by_type.items()))}), "
      f"{len(bad)} not version 2 with verdict ok and every tag verified")
for b in bad[:10]:
    print("  " + b)
if missing:
    print(f"FAIL: no {', '.join(missing)} captured")
sys.exit(1 if bad or missing or n == 0 else 0)
PY
done
[ "$bad" = 0 ] && ok=1
exit "$bad"
