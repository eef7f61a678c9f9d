#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# isthmusd's command line: --help, --check on the shipped config, and the
# documented exit codes and messages for bad input.
set -uo pipefail
ISTHMUSD=$(realpath "$1")	# meson passes it relative to the build dir
cd "$(dirname "$0")/../.."
EAL=(--no-huge -m 64 --no-pci --no-telemetry --log-level=lib.*:error "--file-prefix=isth-cli-$$")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/isth-cli-$$ /var/run/dpdk/isth-cli-run-$$' EXIT

expect() {	# name, want exit, want text, command...
	local name=$1 want=$2 text=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ] || ! grep -qF -- "$text" <<<"$out"; then
		echo "FAIL: $name: exit $rc (want $want), output:"
		echo "$out" | tail -5
		echo "  (wanted text: $text)"
		fail=1
	else
		echo "ok: $name"
	fi
}

expect help 0 "Exit codes: 0 clean stop" "$ISTHMUSD" --help
# the summary must report what the shipped files say (read here, not from isthmusd)
sched=conf/schedules/nine-city-triangles.sched
T_ms=$(awk '$1 == "round-ns" { printf "%.3f", $2 / 1e6 }' "$sched")
cycle=$(awk '$1 == "rounds" { print $2 }' "$sched")
expect check-shipped 0 "island NYC (0 of 9), job 1, schedule $sched: T $T_ms ms, $cycle rounds per cycle" \
	"$ISTHMUSD" "${EAL[@]}" -- --config conf/isthmusd/example.conf --check --epoch now+1
expect no-config 2 "--config FILE is required" "$ISTHMUSD" "${EAL[@]}" --
expect bad-epoch 2 "--epoch 'soon'" "$ISTHMUSD" "${EAL[@]}" -- --config conf/isthmusd/example.conf --epoch soon
sed 's/^memory = 64Mi/memory = lots/' conf/isthmusd/example.conf >"$tmp/bad.conf"
line=$(grep -n '^memory = lots' "$tmp/bad.conf" | cut -d: -f1)
expect bad-config 2 "$tmp/bad.conf:$line: [agg] memory: 'lots' is not a size" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/bad.conf" --check
grep -v '^\[peer HKG\]' conf/isthmusd/example.conf | sed '/^ip = 10.0.0.9$/d' >"$tmp/nohkg.conf"
expect missing-peer 2 "[peer HKG] missing: the schedule has that island" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/nohkg.conf" --check --epoch now+1
expect runtime-epoch 2 "leaves the epoch to run time" \
	"$ISTHMUSD" "${EAL[@]}" -- --config conf/isthmusd/example.conf --check
expect bad-schedule 2 "nope.sched" \
	"$ISTHMUSD" "${EAL[@]}" -- --config conf/isthmusd/example.conf --schedule nope.sched --check

# A running edge on net_null ports (a null RX port is a source of zero-filled
# 64-byte frames: refused as non-IPv4, counted): telemetry answers over
# DPDK's socket, and SIGINT stops it cleanly with exit 0 and final counters.
PREFIX=isth-cli-run-$$
sed -e 's/^port = 0 .*/port = net_null0/' -e 's/^port = 1$/port = net_null1/' \
    -e 's/^# idle_polls = 0 .*/idle_polls = 16/' conf/isthmusd/example.conf >"$tmp/null.conf"
"$ISTHMUSD" --no-huge -m 128 --no-pci "--file-prefix=$PREFIX" -l 0,1 \
	--log-level=lib.*:error --vdev net_null0 --vdev net_null1 -- \
	--config "$tmp/null.conf" --epoch now+1 >"$tmp/run.out" 2>&1 &
pid=$!
answers=$(PYTHONPATH=tests/isthmusd python3 - "/var/run/dpdk/$PREFIX/dpdk_telemetry.v2" <<'PY'
import sys, time
from isthd_tel import ask, connect
deadline = time.time() + 20
s = connect(sys.argv[1], deadline)
out = {}
for cmd in ("/isthmus/round", "/isthmus/stats", "/isthmus/backend", "/isthmus/pace", "/isthmus/resend"):
    # the socket opens at EAL init, the commands once set-up is done
    while True:
        out[cmd] = ask(s, cmd)
        if out[cmd] is not None:
            break
        if time.time() > deadline:
            sys.exit(cmd + ": no answer")
        time.sleep(0.1)
# wait (bounded) for the null source to show up in the drop counters
while out["/isthmus/stats"]["drop_ethertype"] == 0 and time.time() < deadline:
    out["/isthmus/stats"] = ask(s, "/isthmus/stats")
print(out["/isthmus/round"]["island"], out["/isthmus/round"]["job"],
      out["/isthmus/round"]["round_ns"], out["/isthmus/backend"]["name"],
      "ethertype_drops" if out["/isthmus/stats"]["drop_ethertype"] > 0 else "no_drops",
      "resend" if "next_seq" in out["/isthmus/resend"] else "no_resend",
      "pace" if "late_starts" in out["/isthmus/pace"] else "no_pace")
PY
)
kill -INT "$pid" 2>/dev/null
wait "$pid"
rc=$?
want="0 1 $(awk '$1 == "round-ns" { print $2 }' "$sched") sw ethertype_drops resend pace"
if [ "$answers" != "$want" ] || [ "$rc" != 0 ] || ! grep -q "^isthmusd counters:" "$tmp/run.out"; then
	echo "FAIL: running edge: telemetry '$answers' (want '$want'), exit $rc"
	tail -5 "$tmp/run.out"
	fail=1
else
	echo "ok: telemetry and clean SIGINT stop"
fi
rm -rf "/var/run/dpdk/$PREFIX"
exit $fail
