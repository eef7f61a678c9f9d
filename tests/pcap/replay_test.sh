#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# net_pcap replay regression (doc/isthmusd.md, "WAN repair"): the
# real isthmusd reads a captured WAN input (DATA of round 0 from islands B,
# C and D, with a gap loss, a tail loss, a duplicate and a reordering,
# written by replay_gen with lib/wire's encoder) through
# `--vdev net_pcap0,rx_pcap=...`, and the AGGs it writes to its access
# port's tx_pcap are compared field by field with sums computed by
# replay_check.py from the input capture.
#
# Timing: net_pcap reads an rx_pcap file as fast as it is polled, long
# before the edge's round 0 begins. The WAN rx_pcap is therefore a FIFO:
# replay_check.py writes its header (net_pcap opens the file at EAL init),
# waits on telemetry until the edge is in round 0 with it published, then
# writes the frames and closes the FIFO. No sleep synchronises anything.
#
#   replay_test.sh ISTHMUSD REPLAY_GEN
set -uo pipefail
ISTHMUSD=$(realpath "$1")
GEN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
PREFIX=isth-pcap-$$
tmp=$(mktemp -d /tmp/isth-pcap-XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		# an edge still opening the FIFO: a read-write open never
		# blocks and lets its open return; its reads then see EOF
		(exec 3<>"$tmp/in_wan.fifo") 2>/dev/null
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$tmp" "/var/run/dpdk/$PREFIX"
}
trap cleanup EXIT

T_NS=5000000000		# round 0 is long enough for a loaded host to feed it
"$GEN" "$tmp/in_wan.pcap" || exit 1
# an access capture with no frames: the island sends nothing here
head -c 24 "$tmp/in_wan.pcap" >"$tmp/in_access.pcap"
mkfifo "$tmp/in_wan.fifo"

cat >"$tmp/replay.sched" <<SCHED
isthmus-schedule 1
islands 4
island 0 A
island 1 B
island 2 C
island 3 D
round-ns $T_NS
epoch runtime
payload-bytes 2904
chunk-bytes 1432
memory-bytes 0
rounds 1
round 0 0xf
send 0 0 0 1000000
send 0 1 0 1000000
send 0 2 0 1000000
send 0 3 0 1000000
end
SCHED
cat >"$tmp/replay.conf" <<CONF
[isthmusd]
island = A
job = 7
schedule = $tmp/replay.sched
dtype = int32
mbufs = 4095
[access]
port = net_pcap1
ip = 10.10.0.1
island_ip = 10.10.0.2
island_mac = 02:00:00:00:00:02
[wan]
port = net_pcap0
ip = 10.0.0.1
gateway_mac = 02:00:00:00:ff:01
# one unicast copy per peer, as the capture is checked
replication = edge
[peer B]
ip = 10.0.0.2
[peer C]
ip = 10.0.0.3
[peer D]
ip = 10.0.0.4
[agg]
memory = 4Mi
[poll]
idle_polls = 64
[telemetry]
round_log = no
[auth]
mode = off
CONF

# round 0 begins 10 s after start-up (EAL set-up included: an edge that
# starts after the epoch joins at a later round, doc/isthmusd.md "Restart
# and rejoin", and 4 s were too few on a loaded host); --rounds 1 stops
# the edge when round 1 begins, flushing what is unfinished as partials
epoch=$(( ($(date +%s) + 10) * 1000000000 ))
"$ISTHMUSD" --no-huge -m 256 --no-pci -l 0,1 "--file-prefix=$PREFIX" --log-level=lib.*:error \
	--vdev "net_pcap0,rx_pcap=$tmp/in_wan.fifo,tx_pcap=$tmp/out_wan.pcap" \
	--vdev "net_pcap1,rx_pcap=$tmp/in_access.pcap,tx_pcap=$tmp/out_access.pcap" \
	-- --config "$tmp/replay.conf" --epoch "$epoch" --rounds 1 >"$tmp/edge.out" 2>&1 &
pid=$!
/usr/bin/python3 "$HERE/replay_check.py" feed "$tmp/in_wan.fifo" "$tmp/in_wan.pcap" \
	"/var/run/dpdk/$PREFIX/dpdk_telemetry.v2" 0 "$pid"
feed=$?
if [ "$feed" != 0 ]; then
	echo "FAIL: feeding the capture"
	tail -20 "$tmp/edge.out"
	exit 1
fi
wait "$pid"
rc=$?
pid=
if [ "$rc" != 0 ] || ! grep -q "^isthmusd counters:" "$tmp/edge.out"; then
	echo "FAIL: isthmusd exit $rc"
	tail -20 "$tmp/edge.out"
	exit 1
fi
if [ -e "/var/run/dpdk/$PREFIX" ]; then
	echo "FAIL: /var/run/dpdk/$PREFIX left behind"
	exit 1
fi
/usr/bin/python3 "$HERE/replay_check.py" check "$tmp/in_wan.pcap" "$tmp/out_access.pcap" \
	"$tmp/out_wan.pcap"
rc=$?
if [ "$rc" != 0 ]; then
	grep -E "drop|peer_|agg_|partial" "$tmp/edge.out" | grep -v " 0$" | head -40
	exit 1
fi
echo "ok: net_pcap replay"
