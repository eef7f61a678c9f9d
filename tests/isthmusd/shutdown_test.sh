#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# isthmusd exits cleanly while its telemetry is being read: a client reads
# every /isthmus/... endpoint in a tight loop, before, during and after
# SIGINT, on an edge with net_null ports. The edge must exit 0 with its
# final counters (no SIGSEGV from a callback reaching torn-down state), and
# leave no /var/run/dpdk/<prefix> behind, neither here nor after --check.
# /isthmus/stats must carry the repair counters and the mempool gauges.
set -uo pipefail
ISTHMUSD=$(realpath "$1")	# meson passes it relative to the build dir
RUNS=${2:-5}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
prefixes=()
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
	for p in "${prefixes[@]}"; do rm -rf "/var/run/dpdk/$p"; done
}
trap cleanup EXIT
fail=0
# the shipped config with its key file here (mode 0600, as required)
printf 'job 1\nepoch 1 round 0 key %s\n' "$(printf '%064x' 42)" >"$tmp/job1.keys"
chmod 600 "$tmp/job1.keys"
sed "s|^key_file = .*|key_file = $tmp/job1.keys|" conf/isthmusd/example.conf >"$tmp/example.conf"

# --check: validates and exits 0, leaving no runtime directory
P=isth-shut-check-$$
prefixes+=("$P")
if ! "$ISTHMUSD" --no-huge -m 64 --no-pci --no-telemetry --log-level=lib.*:error \
	"--file-prefix=$P" -- --config "$tmp/example.conf" --check --epoch now+1 \
	>"$tmp/check.out" 2>&1; then
	echo "FAIL: --check: exit $?"; tail -3 "$tmp/check.out"; fail=1
elif [ -e "/var/run/dpdk/$P" ]; then
	echo "FAIL: --check left /var/run/dpdk/$P: $(ls "/var/run/dpdk/$P" | tr '\n' ' ')"; fail=1
else
	echo "ok: --check leaves no runtime directory"
fi

sed -e 's/^port = 0 .*/port = net_null0/' -e 's/^port = 1$/port = net_null1/' \
    -e 's/^# idle_polls = 0 .*/idle_polls = 16/' "$tmp/example.conf" >"$tmp/null.conf"
# -m 256: example.conf's schedule has 907,822 chunks a stream, so with
# auth on its 116 replay windows take 8 Mbit each (a window covers two
# rounds of a stream and its repairs: app/isthmusd/auth.c), 116 MB
for run in $(seq 1 "$RUNS"); do
	P=isth-shut-$$-$run
	prefixes+=("$P")
	"$ISTHMUSD" --no-huge -m 256 --no-pci "--file-prefix=$P" -l 0,1 \
		--log-level=lib.*:error --vdev net_null0 --vdev net_null1 -- \
		--config "$tmp/null.conf" --epoch now+1 >"$tmp/run.out" 2>&1 &
	pid=$!
	# The client signals the edge itself once every endpoint answered,
	# then keeps reading all of them until the socket goes away.
	res=$(PYTHONPATH=tests/isthmusd python3 - "/var/run/dpdk/$P/dpdk_telemetry.v2" "$pid" <<'PY'
import os, signal, sys, time
from isthd_tel import ask as ask_, connect
path, pid = sys.argv[1], int(sys.argv[2])
cmds = ["/isthmus/stats", "/isthmus/round", "/isthmus/backend", "/isthmus/pace",
        "/isthmus/resend", "/isthmus/xdp"]
deadline = time.time() + 30
s = connect(path, deadline)
def ask(c):
    return ask_(s, c)
stats = None
while stats is None:	# commands exist once set-up is done
    stats = ask("/isthmus/stats")
    if time.time() > deadline:
        sys.exit("no /isthmus/stats")
want = ["peer_nacks_sent", "peer_nacks_rx", "repairs_sent",
        "mempool_pkt_in_use", "mempool_hdr_in_use", "mempool_ctl_in_use"]
missing = [k for k in want if k not in stats]
os.kill(pid, signal.SIGINT)
reads = 0
try:
    while time.time() < deadline:
        for c in cmds:
            ask(c)
            reads += 1
except (OSError, ValueError):
    pass
print("missing:" + ",".join(missing) if missing else "keys_ok", "reads_after_sigint_%d" % (reads > 0))
PY
)
	wait "$pid"
	rc=$?
	pid=
	if [ "$rc" != 0 ] || ! grep -q "^isthmusd counters:" "$tmp/run.out" ||
	   [ "${res%% *}" != keys_ok ]; then
		echo "FAIL: run $run: exit $rc, client '$res'"
		tail -5 "$tmp/run.out"
		fail=1
		break
	fi
	if [ -e "/var/run/dpdk/$P" ]; then
		echo "FAIL: run $run: clean stop left /var/run/dpdk/$P"
		fail=1
		break
	fi
done
[ $fail = 0 ] && echo "ok: $RUNS stops under telemetry reads, exit 0, counters printed, no runtime directory left"
exit $fail
