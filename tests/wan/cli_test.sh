#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# isthmus-wan command line: --help, file:line errors for bad maps and bad
# impairment specs, and a short run on net_ring ports that stops cleanly on
# SIGINT, prints its counters and serves /isthmus_wan/* over telemetry.
# Usage: cli_test.sh ISTHMUS_WAN SRCDIR
set -u
bin=$1
src=$2
tmp=$(mktemp -d /tmp/isth-wan-cli.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill -INT "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$tmp" "/var/run/dpdk/$prefix"	# EAL leaves its runtime dir
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
prefix=isth-wan-cli-$$
eal="--no-huge -m 256 --no-pci --file-prefix=$prefix --log-level=error"

"$bin" --help > "$tmp/help" 2>&1 || fail "--help exited non-zero"
for w in --site-map --groups --scale --seed --loss --ge --dup --reorder --corrupt \
	--jitter-ms --impair --queue-bytes --queue-ms --idle-us --schedule --epoch-ns --epoch-file \
	/isthmus_wan/links; do
	grep -q -- "$w" "$tmp/help" || fail "--help does not mention $w"
done

# the emulator needs the topology (lib/topo), not the planner's solver
if ldd "$bin" | grep -qi glpk || nm "$bin" | grep -q ' glp_'; then
	fail "isthmus-wan links GLPK"
fi

printf 'site,region\nA,r\nB,r\nC,r\n' > "$tmp/sites.csv"
printf 'a,b,one_way_ms,capacity_gbps\nA,B,1,1\nB,C,2,1\n' > "$tmp/links.csv"
cat > "$tmp/good.map" <<MAP
# two sites with ports, C is transit only
A port=net_ring0 mac=02:00:00:00:00:01 net=10.0.0.0/24
B port=net_ring1 mac=learn net=10.0.1.0/24
MAP
printf '239.1.1.1 A B\n' > "$tmp/good.groups"
printf 'A port=0 mac=02:00:00:00:00:01 net=10.0.0.0/24\nZ port=1 mac=02:00:00:00:00:02 net=10.0.1.0/24\n' \
	> "$tmp/bad.map"
printf '239.1.1.1 A B\n10.1.1.1 A\n' > "$tmp/bad.groups"

# expect_err WANT ARGS...: non-zero exit and WANT on stderr
expect_err() {
	want=$1
	shift
	if "$bin" $eal --vdev=net_ring0 --vdev=net_ring1 --no-telemetry -- "$@" \
		> "$tmp/out" 2> "$tmp/err"; then
		fail "accepted: $*"
	fi
	grep -qF -- "$want" "$tmp/err" || { cat "$tmp/err"; fail "no '$want' for: $*"; }
}
base="--sites $tmp/sites.csv --links $tmp/links.csv"
expect_err "bad.map:2: unknown site 'Z'" $base --site-map "$tmp/bad.map"
expect_err "bad.groups:2: group 10.1.1.1 is not a routable multicast" \
	$base --site-map "$tmp/good.map" --groups "$tmp/bad.groups"
expect_err "no link 'A->C'" $base --site-map "$tmp/good.map" --impair 'A->C:loss=0.1'
expect_err "--scale: bad value" $base --site-map "$tmp/good.map" --scale 0
expect_err "--queue-ms: bad value" $base --site-map "$tmp/good.map" --queue-ms 0
expect_err "required" --sites "$tmp/sites.csv"
expect_err "links.csv" --sites "$tmp/sites.csv" --links "$tmp/nonexistent-links.csv" \
	--site-map "$tmp/good.map"
printf 'A port=net_ring7 mac=02:00:00:00:00:01 net=10.0.0.0/24\nB port=1 mac=learn net=10.0.1.0/24\n' \
	> "$tmp/noport.map"
expect_err "noport.map:1: site 'A': no DPDK port 'net_ring7'" $base --site-map "$tmp/noport.map"

# planned routes: the schedule's epoch is needed, and a route must run over links
cat > "$tmp/route.sched" <<SCHED
isthmus-schedule 2
islands 3
island 0 A
island 1 B
island 2 C
round-ns 100000000
epoch runtime
payload-bytes 1000
chunk-bytes 0
memory-bytes 0
rounds 1
round 0 0x5 0x2
send 0 0 0 1000000
send 0 2 0 1000000
route 0 0 2 0,2
end
SCHED
expect_err "route.sched says 'epoch runtime': give the job's epoch with --epoch-ns or --epoch-file" \
	$base --site-map "$tmp/good.map" --schedule "$tmp/route.sched"
expect_err "schedule round 0 route A->C: no link A->C in the topology" \
	$base --site-map "$tmp/good.map" --schedule "$tmp/route.sched" --epoch-ns 1
expect_err "--epoch-ns and --epoch-file need --schedule" $base --site-map "$tmp/good.map" --epoch-ns 1
# routes of one sender that part and meet again (A->B over C, A->E over D
# and B): refused with a group table (network replication would send two
# copies into B), a warning without one
printf 'site,region\nA,r\nB,r\nC,r\nD,r\nE,r\n' > "$tmp/rj-sites.csv"
printf 'a,b,one_way_ms,capacity_gbps\nA,C,1,1\nA,D,1,1\nC,B,1,1\nD,B,1,1\nB,E,1,1\n' \
	> "$tmp/rj-links.csv"
cat > "$tmp/rejoin.sched" <<SCHED
isthmus-schedule 2
islands 5
island 0 A
island 1 B
island 2 C
island 3 D
island 4 E
round-ns 100000000
epoch runtime
payload-bytes 1000
chunk-bytes 0
memory-bytes 0
rounds 1
round 0 0x13 0x4 0x8
send 0 0 0 1000000
send 0 1 0 1000000
send 0 4 0 1000000
route 0 0 1 0,2,1
route 0 0 4 0,3,1,4
end
SCHED
rj="--sites $tmp/rj-sites.csv --links $tmp/rj-links.csv --site-map $tmp/good.map"
expect_err "schedule round 0: the planned paths of A's stream rejoin at B (entered from C and from D)" \
	$rj --groups "$tmp/good.groups" --schedule "$tmp/rejoin.sched" --epoch-ns 1
expect_err "--epoch-ns and --epoch-file need --schedule" $base --site-map "$tmp/good.map" \
	--epoch-file "$tmp/epoch"
# the epoch file: one positive integer (ns), refused with file:line
sed 's/^route 0 0 2 0,2$/route 0 0 2 0,1,2/' "$tmp/route.sched" > "$tmp/ok.sched"
printf '# epoch\n12x\n' > "$tmp/bad.epoch"
expect_err "bad.epoch:2: '12x' is no epoch" $base --site-map "$tmp/good.map" \
	--schedule "$tmp/ok.sched" --epoch-file "$tmp/bad.epoch"
printf '1\n2\n' > "$tmp/two.epoch"
expect_err "two.epoch:2: a second epoch" $base --site-map "$tmp/good.map" \
	--schedule "$tmp/ok.sched" --epoch-file "$tmp/two.epoch"
expect_err "--epoch-ns or --epoch-file, not both" $base --site-map "$tmp/good.map" \
	--schedule "$tmp/ok.sched" --epoch-file "$tmp/two.epoch" --epoch-ns 5

# the epoch chosen at run time: no file at start (shortest paths), then
# SIGHUP reads it; a bad file keeps the epoch and says why
# wait_for FILE PATTERN: until FILE has a line matching PATTERN (60 s at most: a loaded host)
wait_for() {
	i=0
	until grep -q -- "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 600 ] && { cat "$tmp/hup" "$tmp/hup.err"; fail "no '$2' in $1"; }
		kill -0 $pid 2>/dev/null || { cat "$tmp/hup.err"; fail "exited early"; }
		sleep 0.1
	done
}
# (--seed 010: numbers are decimal, a leading zero is not octal)
"$bin" $eal --vdev=net_ring0 --vdev=net_ring1 --no-telemetry -- $base --site-map "$tmp/good.map" \
	--schedule "$tmp/ok.sched" --epoch-file "$tmp/epoch" --seed 010 > "$tmp/hup" 2> "$tmp/hup.err" &
pid=$!
wait_for "$tmp/hup" running
grep -q "seed 10, " "$tmp/hup" || { cat "$tmp/hup"; fail "--seed 010 is not ten"; }
grep -q "isthmus-wan: epoch" "$tmp/hup" && fail "an epoch before the file existed"
echo 1764640000123456789 > "$tmp/epoch.tmp" && mv "$tmp/epoch.tmp" "$tmp/epoch"
kill -HUP $pid
wait_for "$tmp/hup" "^isthmus-wan: epoch 1764640000123456789$"
echo soon > "$tmp/epoch"
kill -HUP $pid
wait_for "$tmp/hup.err" "epoch:1: 'soon' is no epoch (CLOCK_REALTIME ns, a positive integer); epoch unchanged"
kill -INT $pid
wait $pid
rc=$?
pid=
[ $rc -eq 0 ] || { cat "$tmp/hup.err"; fail "exit status $rc after SIGHUPs and SIGINT"; }
[ "$(grep -c 'isthmus-wan: epoch' "$tmp/hup")" = 1 ] || { cat "$tmp/hup"; fail "a bad file changed the epoch"; }

# a real run, stopped by SIGINT
"$bin" $eal --vdev=net_ring0 --vdev=net_ring1 -- $base --site-map "$tmp/good.map" \
	--groups "$tmp/good.groups" --scale 1000 --loss 0.01 --print-routes \
	--queue-ms 400 --impair 'B->C:queue-bytes=9000' \
	> "$tmp/run" 2> "$tmp/run.err" &
pid=$!
i=0
while ! grep -q running "$tmp/run" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 100 ] && { cat "$tmp/run.err"; fail "did not start"; }
	kill -0 $pid 2>/dev/null || { cat "$tmp/run.err"; fail "exited early"; }
	sleep 0.1
done
grep -q "A -> B: A->B (1.000 ms)" "$tmp/run" || { cat "$tmp/run"; fail "routes not printed"; }
grep -q "239.1.1.1 from A: A->B" "$tmp/run" || { cat "$tmp/run"; fail "tree not printed"; }
# queues in time: 1 Gbit/s / 1000 = 1 Mbit/s for 400 ms is 50000 bytes;
# a limit set in bytes on one link stays
for q in "A->B 50000" "C->B 50000" "B->C 9000"; do
	grep -Eq "^  ${q% *} .* queue ${q#* } B$" "$tmp/run" || { cat "$tmp/run"; fail "queue of ${q% *} is not ${q#* } B"; }
done
sock=/var/run/dpdk/$prefix/dpdk_telemetry.v2
if [ -S "$sock" ]; then
	python3 - "$sock" > "$tmp/tel" <<'PY' || fail "telemetry query failed"
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
json.loads(s.recv(16384).decode())
for cmd in ("/isthmus_wan/links", "/isthmus_wan/ports", "/isthmus_wan/links,A->B"):
    s.send(cmd.encode())
    print(json.dumps(json.loads(s.recv(65536).decode())))
PY
	grep -q '"A/B": {"pkts": 0' "$tmp/tel" || { cat "$tmp/tel"; fail "no A/B link in telemetry"; }
	grep -q '"queue_full": 0' "$tmp/tel" || fail "no queue_full in telemetry"
	grep -q '"B": {"port": 1' "$tmp/tel" || { cat "$tmp/tel"; fail "no port B in telemetry"; }
	grep -q '"/isthmus_wan/links": {"pkts": 0' "$tmp/tel" || { cat "$tmp/tel"; fail "single link query"; }
else
	echo "note: no telemetry socket at $sock; telemetry not checked"
fi
kill -INT $pid
wait $pid
rc=$?
pid=
[ $rc -eq 0 ] || { cat "$tmp/run.err"; fail "exit status $rc after SIGINT"; }
grep -q "isthmus-wan: stopping" "$tmp/run" || fail "no clean stop"
grep -q "^A->B " "$tmp/run" || fail "no link counters at exit"
grep -q "queue_full" "$tmp/run" || fail "no drop reasons at exit"
echo "PASS"
