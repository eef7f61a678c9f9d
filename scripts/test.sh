#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Install dependencies, build, and run every test suite: unit (Criterion),
# integration, system (network namespaces; needs root) and fuzz-corpus
# replay. Prints a summary per suite and, last, "N passed, N failed".
#
#   ./scripts/test.sh                 everything
#   ./scripts/test.sh --suite unit    one suite (repeatable)
#   BUILD=build-asan SANITIZE=address,undefined ./scripts/test.sh
#
# In CI (CI=true) warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh

BUILD=${BUILD:-build}
opts=(-Dtests=true)
if [ "${CI:-}" = true ]; then
	opts+=(--werror)
fi
if [ -n "${SANITIZE:-}" ]; then
	opts+=("-Db_sanitize=${SANITIZE}" -Db_lundef=false)
fi

if [ -f "$BUILD/build.ninja" ]; then
	meson setup --reconfigure "$BUILD" "${opts[@]}" >"$BUILD.setup.log" 2>&1 ||
		{ cat "$BUILD.setup.log"; exit 1; }
else
	meson setup "$BUILD" "${opts[@]}" >"$BUILD.setup.log" 2>&1 ||
		{ cat "$BUILD.setup.log"; exit 1; }
fi
echo "test.sh: building in $BUILD" >&2
ninja -C "$BUILD" >"$BUILD.ninja.log" 2>&1 || { tail -60 "$BUILD.ninja.log"; exit 1; }

# Old Criterion reports must not be mistaken for this run's.
find "$BUILD" -name '*.criterion.json' -delete

rc=0
# The machine may be shared and slow: timeouts are generous, never tight.
meson test -C "$BUILD" --no-rebuild --print-errorlogs --timeout-multiplier 4 "$@" || rc=$?
python3 scripts/test-summary.py "$BUILD" || rc=1
exit $rc
