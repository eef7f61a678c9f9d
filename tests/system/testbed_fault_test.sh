#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# System tests of the testbed itself (scripts/testbed.sh), one case per
# invocation:
#   exec        `up -- CMD`: kernel TCP between two sites through isthmus-wan
#               (bytes intact, no faster than the link's scaled capacity
#               allows), ping RTT over the WAN at least the link's round
#               trip, the management bridge reachable, nothing left after
#   kill9       kill -9 of a running `testbed.sh run`: every process,
#               namespace, DPDK run directory and the registry entry of
#               that run are gone (children die with their parent, the
#               watchdog cleans)
#   concurrent  two runs at once on this host: both complete and exact
#
#   testbed_fault_test.sh BUILD_DIR CASE
set -uo pipefail

BUILD=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TB=$ROOT/scripts/testbed.sh
export BUILD

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (network namespaces, veth)"
	exit 77
fi
if ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: ip netns unavailable"
	exit 77
fi

tmp=$(mktemp -d /tmp/isth-tbtest-XXXXXX)
bgpid=
finish() {
	[ -z "$bgpid" ] || { kill -TERM "$bgpid" 2>/dev/null; wait "$bgpid" 2>/dev/null; }
	rm -rf "$tmp"
}
trap finish EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# until_true SECONDS CMD...: polls CMD (a condition, not a delay) until it
# holds; 1 if it never did within SECONDS.
until_true() {
	local end=$(( $(date +%s) + $1 ))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.1
	done
}
# nothing_left RID: no namespace, DPDK run directory or registry entry
nothing_left() {
	! ip netns list | grep -q "^isth-$1-" &&
	! ls -d /var/run/dpdk/isth"$1"* >/dev/null 2>&1 &&
	[ ! -e "/run/isthmus-testbed/$1" ]
}
report_left() {
	echo "left of run $1:"
	ip netns list | grep "^isth-$1-"
	ls -d /var/run/dpdk/isth"$1"* /run/isthmus-testbed/"$1" 2>/dev/null
}

case "$CASE" in
exec)
	BYTES=400000
	cat >"$tmp/job.sh" <<JOB
#!/usr/bin/env bash
# runs inside \`testbed.sh up\`: TB_* from the env file
set -u
echo "\$TB_RID" >"$tmp/rid"
x() { "$TB" exec "\$TB_ENV" "\$@"; }
x 1 python3 "$HERE/tcp_xfer.py" serve "\$TB_DATA_IP_1" 5001 "$tmp/ready" >"$tmp/serve.out" 2>&1 &
srv=\$!
n=0
until [ -e "$tmp/ready" ]; do
	kill -0 \$srv 2>/dev/null || { echo "server died"; cat "$tmp/serve.out"; exit 1; }
	[ \$n -lt 600 ] || { echo "server not listening in 60 s"; exit 1; }
	sleep 0.1; n=\$((n + 1))
done
x 0 python3 "$HERE/tcp_xfer.py" send "\$TB_DATA_IP_1" 5001 $BYTES >"$tmp/send.out" 2>&1 || exit 1
wait \$srv || exit 1
x CHI ping -q -c 5 -i 0.2 "\$TB_DATA_IP_0" >"$tmp/ping.out" 2>&1 || exit 1
x 0 ping -q -c 2 -i 0.2 "\$TB_MGMT_IP_1" >"$tmp/mgmt.out" 2>&1 || exit 1
x mgmt ip -o addr show dev mgmt >"$tmp/hub.out" 2>&1 || exit 1
JOB
	chmod +x "$tmp/job.sh"
	"$TB" up --islands 2 -- "$tmp/job.sh" >"$tmp/up.log" 2>&1 </dev/null
	rc=$?
	cat "$tmp/up.log" "$tmp"/*.out 2>/dev/null | tail -20
	[ "$rc" = 0 ] || bad "testbed up -- job: exit $rc"
	rid=$(cat "$tmp/rid" 2>/dev/null)
	sent=$(grep '^SENT' "$tmp/send.out" 2>/dev/null)
	recv=$(grep '^RECV' "$tmp/serve.out" 2>/dev/null)
	[ -n "$sent" ] && [ -n "$recv" ] || bad "no transfer"
	sha=$(echo "$sent" | sed -n 's/.*sha256=\([0-9a-f]*\).*/\1/p')
	[ "$recv" = "RECV bytes=$BYTES sha256=$sha" ] || bad "received '$recv', sent '$sent'"
	# NYC-CHI: 100 Gbit/s / 10000 = 10 Mbit/s, 7.950 ms one way
	# (conf/topologies/nine-city-links.csv). BYTES of payload are at
	# least BYTES * 8 / 10e6 s on the wire (headers only add to it).
	secs=$(echo "$sent" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p')
	python3 -c "import sys; sys.exit(0 if float('${secs:-0}') >= $BYTES * 8 / 10e6 else 1)" ||
		bad "transfer took ${secs}s, less than $BYTES B at 10 Mbit/s: not through the emulated link"
	rtt=$(sed -n 's|.*= \([0-9.]*\)/.*|\1|p' "$tmp/ping.out")
	python3 -c "import sys; sys.exit(0 if float('${rtt:-0}') >= 2 * 7.950 else 1)" ||
		bad "min RTT ${rtt} ms over the WAN, less than 2 x 7.950 ms"
	grep -q ' 0% packet loss' "$tmp/mgmt.out" || bad "management bridge: $(cat "$tmp/mgmt.out")"
	grep -q '172.30.0.254/24' "$tmp/hub.out" || bad "exec mgmt: $(cat "$tmp/hub.out")"
	if [ -n "$rid" ]; then
		until_true 20 nothing_left "$rid" || { report_left "$rid"; bad "run $rid left something after up"; }
	else
		bad "the job did not run"
	fi
	[ $fail = 0 ] && echo "PASS: exec: $sent; WAN min RTT $rtt ms" ;;
kill9)
	# --die-with-parent (PR_SET_PDEATHSIG) alone, no watchdog: a shell killed with -9 takes
	# its isthmus-island along (the island waits for a ROUND for 120 s).
	# The parent is killed only once the island has printed its start
	# line, which main() prints after the prctl: $! is known as soon as
	# bash has forked, and a kill between the fork and the prctl would
	# orphan a process that never asked to die with its parent (a race
	# this case lost on a loaded CI machine).
	# The island runs in a network namespace of its own (unshare and the
	# shell exec, keeping its pid), so that a second run of this test
	# beside it does not find its UDP port (9471) taken.
	bash -c 'unshare -n bash -c '\''ip link set lo up && exec "$0" "$@"'\'' "$1" \
		--job 1 --island 0 --islands 2 --edge 127.0.0.1:9 --auth off --timeout 120 --die-with-parent \
		>"$3" 2>&1 & echo $! >"$2"; wait' _ "$BUILD/app/isthmus-island/isthmus-island" \
		"$tmp/island.pid" "$tmp/island.out" &
	parent=$!
	until_true 30 test -s "$tmp/island.pid" || bad "island did not start"
	child=$(cat "$tmp/island.pid" 2>/dev/null)
	until_true 60 grep -qs '^isthmus-island: island 0 of 2' "$tmp/island.out" ||
		{ cat "$tmp/island.out"; bad "island printed no start line"; }
	if [ $fail = 0 ] && [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
		kill -KILL "$parent"
		wait "$parent" 2>/dev/null
		child_gone() { [ ! -e "/proc/$child" ] || grep -q '^State:.*Z' "/proc/$child/status" 2>/dev/null; }
		until_true 10 child_gone || { kill -KILL "$child"; bad "isthmus-island outlived its parent's kill -9"; }
	else
		[ $fail = 1 ] || bad "isthmus-island ended by itself"
		[ -z "$child" ] || kill -KILL "$child" 2>/dev/null
		kill -KILL "$parent" 2>/dev/null
		wait "$parent" 2>/dev/null
	fi
	setsid "$TB" run --islands 3 --schedule all-to-all --payload-bytes 65536 --ready-timeout 240 --rounds 200 \
		>"$tmp/run.log" 2>&1 </dev/null &
	bgpid=$!
	if ! until_true 300 grep -q 'all ready' "$tmp/run.log"; then
		cat "$tmp/run.log"
		bad "the run never got ready"
	else
		rid=$(sed -n 's/^testbed: run \([0-9a-f]\{4\}\),.*/\1/p' "$tmp/run.log" | head -1)
		pids=()
		for ns in $(ip netns list | awk '{print $1}' | grep "^isth-$rid-"); do
			pids+=($(ip netns pids "$ns"))
		done
		# islands, edges, the emulator: 3 + 3 + 1 at least
		[ ${#pids[@]} -ge 7 ] || bad "run $rid: ${#pids[@]} processes in its namespaces, want >= 7"
		kill -KILL "$bgpid"
		wait "$bgpid" 2>/dev/null
		bgpid=
		gone() { local p; for p in "${pids[@]}"; do [ ! -e "/proc/$p" ] || return 1; done; }
		until_true 30 gone || bad "processes of run $rid still alive: $(for p in "${pids[@]}"; do [ -e /proc/$p ] && tr '\0' ' ' </proc/$p/cmdline | cut -c1-60; done)"
		until_true 30 nothing_left "$rid" || { report_left "$rid"; bad "run $rid left something after kill -9"; }
		[ $fail = 0 ] && echo "PASS: kill9: run $rid, ${#pids[@]} processes, nothing left"
	fi ;;
concurrent)
	for i in 1 2; do
		"$TB" run --islands 3 --schedule all-to-all --payload-bytes 65536 --ready-timeout 240 --rounds 3 \
			>"$tmp/run$i.log" 2>&1 </dev/null &
		eval "p$i=\$!"
	done
	wait "$p1"; rc1=$?
	wait "$p2"; rc2=$?
	for i in 1 2; do
		line=$(grep '^SUMMARY' "$tmp/run$i.log")
		rc=$([ $i = 1 ] && echo $rc1 || echo $rc2)
		echo "run $i (exit $rc): $line"
		[ "$rc" = 0 ] || { tail -15 "$tmp/run$i.log"; bad "run $i exit $rc"; }
		# 3 islands x 3 rounds x ceil(16384 / 348) = 48 chunks
		# (authenticated: 348 int32 per chunk, the tag and room for a
		# WAN tag list of 2 peers)
		for kv in aggregates=432 verified=432 wrong=0 partial=0; do
			echo "$line" | grep -qw "$kv" || bad "run $i: want $kv"
		done
	done
	r1=$(sed -n 's/^testbed: run \([0-9a-f]\{4\}\),.*/\1/p' "$tmp/run1.log" | head -1)
	r2=$(sed -n 's/^testbed: run \([0-9a-f]\{4\}\),.*/\1/p' "$tmp/run2.log" | head -1)
	[ -n "$r1" ] && [ "$r1" != "$r2" ] || bad "run ids '$r1' '$r2'"
	[ $fail = 0 ] && echo "PASS: concurrent: runs $r1 and $r2" ;;
*)
	echo "unknown case $CASE" >&2
	exit 2 ;;
esac
exit $fail
