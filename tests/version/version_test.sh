#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Every binary answers --version with one line "NAME VERSION", the same
# VERSION for all of them and for isthmus.__version__, wherever --version
# stands on the command line and before anything else is read (isthmusd:
# before the EAL). VERSION is meson's project version, followed in a git
# checkout by the commit the build was made from: compared here with what
# git itself says of the source tree.
#
#   version_test.sh PROJECT_VERSION SOURCE_DIR PYTHON PYTHONPATH BINARY...
set -uo pipefail
want_ver=$1 src=$2 py=$3 pypath=$4
shift 4

fail=0
first=
rev=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null) || rev=
for bin in "$@"; do
	name=$(basename "$bin")
	for args in "--version" "--help --version" "--no-such-option --version"; do
		# shellcheck disable=SC2086
		out=$("$bin" $args 2>&1)
		rc=$?
		if [ "$rc" -ne 0 ]; then
			echo "FAIL: $name $args: exit $rc (want 0): $out"
			fail=1
			continue
		fi
		if [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
			echo "FAIL: $name $args: not one line: $out"
			fail=1
			continue
		fi
		ver=${out#"$name "}
		if [ "$ver" = "$out" ]; then
			echo "FAIL: $name $args: does not start with its name: $out"
			fail=1
			continue
		fi
		case "$ver" in
		"$want_ver" | "$want_ver (git "*")") ;;
		*)
			echo "FAIL: $name: '$ver' is not project version $want_ver [(git REV)]"
			fail=1 ;;
		esac
		if [ -n "$rev" ] && [[ "$ver" != "$want_ver (git $rev"* ]]; then
			echo "FAIL: $name: '$ver' does not name the source tree's commit $rev"
			fail=1
		fi
		[ -n "$first" ] || first=$ver
		if [ "$ver" != "$first" ]; then
			echo "FAIL: $name: '$ver', another binary said '$first'"
			fail=1
		fi
	done
	echo "ok: $name: $out"
done

if [ "$py" != none ]; then
	pyver=$(PYTHONPATH=$pypath "$py" -c 'import isthmus; print(isthmus.__version__)' 2>&1)
	if [ "$pyver" != "$first" ]; then
		echo "FAIL: isthmus.__version__ '$pyver', the binaries say '$first'"
		fail=1
	else
		echo "ok: isthmus.__version__ $pyver"
	fi
fi
if [ "$fail" -ne 0 ]; then
	exit 1
fi
echo "every binary and the Python package report $first"
