#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Print the version every isthmus binary reports for --version:
#   VERSION (git REV[-dirty])   in a git checkout
#   VERSION                     elsewhere (a tarball)
# Called by meson's vcs_tag at every build (lib/version/meson.build).
#   scripts/version.sh VERSION SOURCE_DIR
ver=$1
src=$2
rev=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null) || rev=
if [ -z "$rev" ]; then
	echo "$ver"
	exit 0
fi
if ! git -C "$src" diff-index --quiet HEAD -- 2>/dev/null; then
	rev="$rev-dirty"
fi
echo "$ver (git $rev)"
