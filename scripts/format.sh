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
bad=0
for f in "${files[@]}"; do
	if ! "$CF" --style=file "$f" | cmp -s - "$f"; then
		echo "format.sh: $f is not formatted (run scripts/format.sh $f)" >&2
		bad=$((bad + 1))
	fi
done
if [ $bad -gt 0 ]; then
	echo "format.sh: $bad file(s) differ from .clang-format" >&2
	exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
