#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# XDP steering on a veth pair, end to end:
#
#   netns A (edge)                                netns B (peer)
#   xdp_rx: DPDK net_af_xdp on vA,      veth      xdp_inject: table of frames
#     xdp_prog=isth_xdp.bpf.o        vA <----> vB ping (ICMP)
#   kernel UDP socket on OTHER_PORT
#
# isthmus frames must reach the AF_XDP consumer, the others the kernel (the
# UDP socket receives its datagrams, ping and ARP are answered), and the
# program's counters, read by interface as isthmusd would, must equal the
# injector's table exactly. IPv6 is off and neighbours are static so that
# no frame the test did not send crosses the veth.
#
# usage: xdp_steer_test.sh XDP_RX XDP_INJECT BPF_OBJECT
set -euo pipefail

XDP_RX=$1
XDP_INJECT=$2
BPF_OBJ=$3
PINGS=3
NB_MBUFS=3072	# > 2048 (fill ring) + bursts; < 3540 (8 MiB memlock)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (netns, veth, XDP)"
command -v ip >/dev/null || skip "no iproute2"
command -v ping >/dev/null || skip "no ping"
[ -r "$BPF_OBJ" ] || fail "no BPF object $BPF_OBJ"

# Unique per run; interface names stay under IFNAMSIZ (15).
id=$$
NA=isth-xdp-a-$id
NB=isth-xdp-b-$id
VA=ixa$id
VB=ixb$id
IPA=10.201.0.1
IPB=10.201.0.2
work=$(mktemp -d /tmp/isth-xdp-test.XXXXXX)
rx_pid=

cleanup() {
	if [ -n "$rx_pid" ] && kill -0 "$rx_pid" 2>/dev/null; then
		kill "$rx_pid" 2>/dev/null || true
		wait "$rx_pid" 2>/dev/null || true
	fi
	ip netns del "$NA" 2>/dev/null || true
	ip netns del "$NB" 2>/dev/null || true
	rm -rf "$work" "/var/run/dpdk/isth-xdp-$id"
}
trap cleanup EXIT

ip netns add "$NA" 2>/dev/null || skip "cannot create a network namespace"
ip netns add "$NB"
ip link add "$VA" type veth peer name "$VB" 2>/dev/null ||
	skip "cannot create a veth pair"
ip link set "$VA" netns "$NA"
ip link set "$VB" netns "$NB"
for side in "$NA $VA $IPA" "$NB $VB $IPB"; do
	set -- $side
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$1" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	ip netns exec "$1" ip addr add "$3/24" dev "$2"
	ip netns exec "$1" ip link set "$2" up
done
MA=$(ip netns exec "$NA" cat "/sys/class/net/$VA/address")
MB=$(ip netns exec "$NB" cat "/sys/class/net/$VB/address")
ip netns exec "$NA" ip neigh replace "$IPB" lladdr "$MB" dev "$VA" nud permanent
ip netns exec "$NB" ip neigh replace "$IPA" lladdr "$MA" dev "$VB" nud permanent

# Expected totals, from the injector's table.
eval "$("$XDP_INJECT" --expect)"

# Run the consumer without CAP_IPC_LOCK when we can, so that the UMEM is
# charged to the 8 MiB memlock limit as it is for an unprivileged daemon:
# NB_MBUFS must fit (doc/xdp.md, "UMEM sizing").
nolock=()
if command -v capsh >/dev/null; then
	nolock=(capsh --drop=cap_ipc_lock -- -c 'exec "$0" "$@"')
fi
ip netns exec "$NA" "${nolock[@]}" "$XDP_RX" --no-huge -m 256 --no-pci --no-telemetry \
	--file-prefix="isth-xdp-$id" --log-level=pmd.net.af_xdp:info \
	--vdev "net_af_xdp0,iface=$VA,xdp_prog=$BPF_OBJ" -- \
	"$VA" "$ISTH_PORT" "$GROUP" "$OTHER_PORT" \
	"$work/ready" "$work/stop" "$EXP_STEERED" "$EXP_KERNEL_UDP" \
	"$NB_MBUFS" >"$work/rx.out" 2>"$work/rx.err" &
rx_pid=$!

# Wait for the port to be up and the program configured (or rx to die).
for _ in $(seq 100); do
	[ -e "$work/ready" ] && break
	kill -0 "$rx_pid" 2>/dev/null || break
	sleep 0.1
done
if [ ! -e "$work/ready" ]; then
	cat "$work/rx.err" >&2
	fail "xdp_rx did not start (net_af_xdp with xdp_prog=$BPF_OBJ)"
fi
ip netns exec "$NA" ip -d link show dev "$VA" | grep -q 'prog/xdp' ||
	fail "no XDP program attached to $VA"

ip netns exec "$NB" "$XDP_INJECT" "$VB" "$MA" "$IPB" "$IPA" ||
	fail "injector failed (ARP not answered?)"
ip netns exec "$NB" ping -q -c "$PINGS" -i 0.2 -W 2 "$IPA" >"$work/ping" ||
	{ cat "$work/ping"; fail "ping through the XDP interface failed"; }

touch "$work/stop"
wait "$rx_pid" || { cat "$work/rx.err" >&2; fail "xdp_rx failed"; }
rx_pid=
cat "$work/rx.out"
line=$(grep '^rx_isthmus=' "$work/rx.out") || fail "xdp_rx printed no counts"
eval "$line"

rc=0
check() {
	if [ "$2" -ne "$3" ]; then
		echo "FAIL: $1 = $2, expected $3"
		rc=1
	else
		echo "ok: $1 = $2"
	fi
}
check "isthmus frames received by DPDK" "$rx_isthmus" "$EXP_STEERED"
check "non-isthmus frames received by DPDK" "$rx_other" 0
check "datagrams on the kernel socket" "$kernel_udp" "$EXP_KERNEL_UDP"
check "counter steered" "$steered" "$EXP_STEERED"
check "counter passed (table + pings)" "$passed" $((EXP_PASSED + PINGS))
check "counter malformed" "$malformed" "$EXP_MALFORMED"
check "counter no_xsk" "$no_xsk" 0
check "PMD imissed" "$imissed" 0

# The PMD detaches its program when the port closes.
if ip netns exec "$NA" ip -d link show dev "$VA" | grep -q 'prog/xdp'; then
	echo "FAIL: XDP program still attached after xdp_rx exited"
	rc=1
fi
exit $rc
