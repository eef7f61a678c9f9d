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
trap 'rm -rf "$tmp"; rm -rf /var/run/dpdk/isth-cli-$$' EXIT

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
expect check-shipped 0 "island NYC (0 of 9), job 1, schedule conf/schedules/nine-city-triangles.sched: T 564.490 ms, 4 rounds per cycle" \
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
exit $fail
