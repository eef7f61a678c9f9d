#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Format the C sources with the tree's .clang-format, or check that they are.
#
#   scripts/format.sh            rewrite every tracked .c/.h in place
#   scripts/format.sh --check    list files that differ and exit 1 (test.sh runs this)
#   scripts/format.sh FILE...    format only these files
#
# BPF programs (*.bpf.c) are formatted too; generated files are not tracked.
set -euo pipefail
cd "$(dirname "$0")/.."

CF=${CLANG_FORMAT:-clang-format}
command -v "$CF" >/dev/null || { echo "format.sh: $CF not found (apt-get install clang-format)" >&2; exit 2; }

check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi
if [ $# -gt 0 ]; then
	files=("$@")
else
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		mapfile -t files < <(git ls-files '*.c' '*.h')
	else
		mapfile -t files < <(find app lib tests python examples -name '*.[ch]' 2>/dev/null | sort)
	fi
fi
[ ${#files[@]} -gt 0 ] || exit 0

if [ $check = 0 ]; then
	"$CF" -i --style=file "${files[@]}"
	exit 0
fi
# one clang-format process for the whole tree (a process per file took
# minutes on a loaded 2-core machine); --dry-run -Werror names every line
# that would change, as "FILE:LINE:COL: error: code should be clang-formatted"
out=$("$CF" --style=file --dry-run -Werror "${files[@]}" 2>&1) && rc=0 || rc=$?
if [ $rc -ne 0 ]; then
	bad=$(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
	if [ -z "$bad" ]; then
		printf '%s\n' "$out" >&2
		echo "format.sh: $CF failed (exit $rc)" >&2
		exit 2
	fi
	while read -r f; do
		echo "format.sh: $f is not formatted (run scripts/format.sh $f)" >&2
	done <<<"$bad"
	echo "format.sh: $(printf '%s\n' "$bad" | wc -l) file(s) differ from .clang-format" >&2
	exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
