#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The systemd units of conf/systemd pass `systemd-analyze verify` with no
# complaint at all (it exits 0 on unknown keys and bad values, printing a
# warning: any output fails here). Their ExecStart names the installed
# binaries, absent before `meson install`: a copy naming the built ones is
# verified instead (everything else unchanged). Skipped (exit 77) where
# systemd-analyze is not installed.
#
#   units_test.sh BINDIR_IN_UNITS BUILT_BINARY... -- UNIT...
set -uo pipefail
bindir=$1
shift
bins=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do bins+=("$(realpath "$1")"); shift; done
shift
if ! command -v systemd-analyze >/dev/null; then
	echo "SKIP: systemd-analyze not installed (apt-get install systemd)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for unit in "$@"; do
	name=$(basename "$unit")
	grep -q "^ExecStart=$bindir/" "$unit" || { echo "FAIL: $name: ExecStart not under $bindir"; fail=1; }
	cp "$unit" "$tmp/$name"
	for b in "${bins[@]}"; do
		sed -i "s|^ExecStart=$bindir/$(basename "$b") |ExecStart=$b |" "$tmp/$name"
	done
	out=$(cd "$tmp" && systemd-analyze verify "./$name" 2>&1)
	rc=$?
	if [ $rc != 0 ] || [ -n "$out" ]; then
		echo "FAIL: $name: systemd-analyze verify: exit $rc: $out"
		fail=1
	else
		echo "ok: $name"
	fi
done
# the verifier itself catches what this test relies on it to catch
printf '[Service]\nType=notify\nExecStart=/bin/true\nWatchdogSecs=1\n' >"$tmp/bad@.service"
[ -n "$(cd "$tmp" && systemd-analyze verify ./bad@.service 2>&1)" ] ||
	{ echo "FAIL: systemd-analyze verify is silent on an unknown key"; fail=1; }
exit $fail
