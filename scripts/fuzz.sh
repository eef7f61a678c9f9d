#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Time-boxed libFuzzer session over every wire-parser harness.
#
#   ./scripts/fuzz.sh [SECONDS]     SECONDS per harness, default 60
#
# Builds the harnesses with clang (-fsanitize=fuzzer,address,undefined) in
# a separate build directory ($BUILD, default build-fuzz), then runs each
# over the generated seeds and the committed corpus tests/fuzz/corpus/<h>/.
# New coverage goes to a scratch directory ($BUILD/fuzz-scratch/<h>), never
# into the tree. A crash or an invariant violation is saved into
# tests/fuzz/corpus/<h>/ (so the fuzz-replay-<h> test keeps replaying it)
# and makes the script exit 1. Prints one summary line per harness.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
case $secs in
'' | *[!0-9]* | 0)
	echo "usage: $0 [SECONDS]   (a positive number of seconds per harness)" >&2
	exit 2
	;;
esac

./scripts/deps.sh

BUILD=${BUILD:-build-fuzz}
harnesses=(frame msg)

if [ -f "$BUILD/build.ninja" ]; then
	meson setup --reconfigure "$BUILD" -Dfuzz=true >"$BUILD.setup.log" 2>&1 ||
		{ cat "$BUILD.setup.log"; exit 1; }
else
	CC=clang meson setup "$BUILD" -Dfuzz=true >"$BUILD.setup.log" 2>&1 ||
		{ cat "$BUILD.setup.log"; exit 1; }
fi
# A build dir configured earlier with another compiler cannot build these.
if ! grep -A2 '^rule c_COMPILER$' "$BUILD/build.ninja" | grep -q 'command = .*clang'; then
	echo "fuzz.sh: $BUILD is not configured with clang; remove it and rerun" >&2
	exit 1
fi
targets=(tests/fuzz/seeds.stamp)
for h in "${harnesses[@]}"; do
	targets+=("tests/fuzz/fuzz_$h")
done
echo "fuzz.sh: building ${targets[*]} in $BUILD" >&2
ninja -C "$BUILD" "${targets[@]}" >"$BUILD.ninja.log" 2>&1 ||
	{ tail -60 "$BUILD.ninja.log"; exit 1; }

rc=0
summary=()
for h in "${harnesses[@]}"; do
	scratch=$BUILD/fuzz-scratch/$h
	art=$BUILD/fuzz-artifacts/$h
	corpus=tests/fuzz/corpus/$h
	log=$BUILD/fuzz-$h.log
	mkdir -p "$scratch" "$art" "$corpus"
	rm -f "$art"/*
	echo "fuzz.sh: fuzzing $h for ${secs}s (log: $log)" >&2
	frc=0
	"$BUILD/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
		"$scratch" "$BUILD/tests/fuzz/seeds/$h" "$corpus" \
		>"$log" 2>&1 || frc=$?
	# A run that dies while loading the corpus prints no coverage lines.
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
	found=$(find "$scratch" -type f | wc -l)
	crashers=()
	for f in "$art"/*; do
		[ -f "$f" ] || continue
		cp "$f" "$corpus/"
		crashers+=("$corpus/$(basename "$f")")
	done
	if [ "$frc" -ne 0 ] || [ ${#crashers[@]} -ne 0 ]; then
		rc=1
		grep -m1 -E 'ERROR: |runtime error|invariant violated|deadly signal' "$log" >&2 || true
		for c in "${crashers[@]}"; do
			echo "fuzz.sh: $h: crasher saved as $c" >&2
			echo "fuzz.sh: reproduce: $BUILD/tests/fuzz/fuzz_$h $c" >&2
		done
		summary+=("$h: FAILED (exit $frc) after ${runs:-?} runs, ${#crashers[@]} crasher(s) saved in $corpus")
	else
		summary+=("$h: ok, ${runs:-?} runs (${rate:-?}/s), cov ${cov:-?}, features ${ft:-?}, scratch corpus $found inputs")
	fi
done

echo "fuzz.sh: summary (${secs}s per harness)"
for s in "${summary[@]}"; do
	echo "  $s"
done
exit $rc
