#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One command for every performance figure (doc/performance.md): builds a
# release build directory, runs every benchmark under tests/bench (and,
# without --quick, the testbed), prints one table of the headline ratios
# and writes every figure, the raw outputs, the git commit, the date and
# the machine (nproc, CPU model, load average) to a JSON file, so two runs
# can be compared with --compare. Nothing here asserts a timing.
#
#   scripts/bench.sh [--quick] [--out FILE.json] [--compare OLD.json]
#
# The parsing, the table and the comparison are scripts/bench-report.py
# (unit-tested on recorded outputs by tests/bench/report_test.py).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<'EOF'
usage: scripts/bench.sh [--quick] [--out FILE.json] [--compare OLD.json]
                        [--build DIR] [--testbed-rounds N] [--no-testbed]
                        [--huge]

  --quick             small iteration counts (24 s on this loaded
                      2-core VM; plan only to 16 islands); never runs the
                      testbed. A full run takes much longer: plan_bench at
                      64 islands did not finish in 9 minutes on a loaded VM
  --out FILE.json     where the JSON goes (default DIR/bench-<UTC time>.json);
                      it holds every figure and the raw text of every
                      benchmark, which is also kept (with stderr and build
                      logs) in DIR/bench-<UTC time>.raw/
  --compare OLD.json  also print new/old for every figure of an earlier run
  --build DIR         release build directory (default build-release; made
                      with -Dbuildtype=release -Dtests=true if missing)
  --testbed-rounds N  rounds of scripts/testbed.sh run (default 3)
  --no-testbed        skip the testbed (it needs root and network namespaces)
  --huge              bench_isthmusd on 2 MiB hugepages, as an edge runs (it
                      needs 1 GiB of them: as root, echo 600 >
                      /proc/sys/vm/nr_hugepages; mount -t hugetlbfs nodev
                      /dev/hugepages); without it, 4 KiB pages, whose TLB
                      misses cost the data path more than the read-fwd floor
                      (doc/notes/performance-log.md section 6, "Sixth pass")
Exit status: 0 when every benchmark ran and parsed, 1 otherwise (the table
and the JSON are still written, failed benchmarks listed as skipped).
EOF
}

die() {
	echo "bench.sh: $*" >&2
	exit 2
}

QUICK=0
OUT=
COMPARE=
BUILD=build-release
ROUNDS=3
TESTBED=1
HUGE=0
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--huge) HUGE=1 ;;
	--out) [ $# -ge 2 ] || die "--out needs a file"; OUT=$2; shift ;;
	--compare) [ $# -ge 2 ] || die "--compare needs a file"; COMPARE=$2; shift ;;
	--build) [ $# -ge 2 ] || die "--build needs a directory"; BUILD=$2; shift ;;
	--testbed-rounds)
		[ $# -ge 2 ] || die "--testbed-rounds needs a number"
		[[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--testbed-rounds: '$2' is not a positive integer"
		ROUNDS=$2; shift ;;
	--no-testbed) TESTBED=0 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
[ -z "$COMPARE" ] || [ -r "$COMPARE" ] || die "--compare: cannot read '$COMPARE'"
command -v python3 >/dev/null || die "python3 is needed (scripts/bench-report.py)"

cd "$ROOT"
case "$BUILD" in /*) BDIR=$BUILD ;; *) BDIR=$ROOT/$BUILD ;; esac
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
[ -n "$OUT" ] || OUT=$BDIR/bench-$STAMP.json
RAW=$BDIR/bench-$STAMP.raw
mkdir -p "$(dirname "$OUT")"

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# --- build -----------------------------------------------------------------
if [ ! -f "$BDIR/build.ninja" ]; then
	echo "bench.sh: meson setup $BUILD (release)" >&2
	meson setup "$BDIR" -Dbuildtype=release -Dtests=true >"$BDIR.setup.log" 2>&1 ||
		{ tail -30 "$BDIR.setup.log"; die "meson setup failed ($BDIR.setup.log)"; }
fi
mkdir -p "$RAW"
btype=$(meson introspect --buildoptions "$BDIR" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"))')
[ "$btype" = release ] || die "$BUILD is a '$btype' build, not release: use --build with another directory"

BENCHES=(agg mcast resend backend isthmusd plan auth island)
declare -A BIN=(
	[agg]=tests/bench/bench_agg [mcast]=tests/bench/bench_mcast
	[resend]=tests/bench/bench_resend [backend]=tests/bench/bench_backend
	[isthmusd]=tests/bench/bench_isthmusd [plan]=tests/bench/plan_bench
	[auth]=tests/bench/bench_auth [island]=tests/bench/bench_island
)
# small iteration counts under --quick (plan: 9 and 16 islands only; 64 takes
# far longer than the rest together); mcast and resend take seconds as they are
declare -A QARGS=([agg]=--quick [isthmusd]=--quick [auth]=--quick [backend]=8 [plan]=--quick
	[island]=--quick)

DO_TESTBED=0
SKIPS=()
if [ "$QUICK" = 1 ]; then
	SKIPS+=(--skip "testbed=--quick")
elif [ "$TESTBED" = 0 ]; then
	SKIPS+=(--skip "testbed=--no-testbed")
elif [ "$(id -u)" -ne 0 ]; then
	SKIPS+=(--skip "testbed=not root (it needs network namespaces and veth)")
elif ! ip netns list >/dev/null 2>&1; then
	SKIPS+=(--skip "testbed=network namespaces unavailable ('ip netns list' failed)")
else
	DO_TESTBED=1
fi

targets=()
for b in "${BENCHES[@]}"; do targets+=("${BIN[$b]}"); done
echo "bench.sh: building benchmarks in $BUILD" >&2
if [ "$DO_TESTBED" = 1 ]; then
	# the testbed runs every program: build everything
	ninja -C "$BDIR" >"$RAW/ninja.log" 2>&1 ||
		{ tail -40 "$RAW/ninja.log"; die "build failed ($RAW/ninja.log)"; }
else
	ninja -C "$BDIR" "${targets[@]}" >"$RAW/ninja.log" 2>&1 ||
		{ tail -40 "$RAW/ninja.log"; die "build failed ($RAW/ninja.log)"; }
fi

# --- run -------------------------------------------------------------------
rc=0
ran=()
for b in "${BENCHES[@]}"; do
	args=()
	[ "$QUICK" = 0 ] || [ -z "${QARGS[$b]:-}" ] || args=("${QARGS[$b]}")
	[ "$HUGE" = 0 ] || [ "$b" != isthmusd ] || args+=(--huge)
	echo "bench.sh: $b: ${BIN[$b]} ${args[*]}" >&2
	t0=$(date +%s)
	if "$BDIR/${BIN[$b]}" "${args[@]}" >"$RAW/$b.txt" 2>"$RAW/$b.err"; then
		ran+=("$b")
		echo "bench.sh: $b: $(($(date +%s) - t0)) s" >&2
	else
		st=$?
		echo "bench.sh: $b failed (exit $st), see $RAW/$b.err" >&2
		SKIPS+=(--skip "$b=failed (exit $st), output in $RAW/$b.err")
		rc=1
	fi
done
if [ "$DO_TESTBED" = 1 ]; then
	echo "bench.sh: testbed: scripts/testbed.sh run --rounds $ROUNDS" >&2
	if BUILD=$BDIR "$ROOT/scripts/testbed.sh" run --rounds "$ROUNDS" \
		>"$RAW/testbed.txt" 2>"$RAW/testbed.err"; then
		ran+=(testbed)
	else
		st=$?
		# a failed run still has a SUMMARY with its figures, if it got that far
		if grep -q '^SUMMARY ' "$RAW/testbed.txt"; then
			ran+=(testbed)
		else
			SKIPS+=(--skip "testbed=failed (exit $st), output in $RAW/testbed.err")
		fi
		echo "bench.sh: testbed exited $st, see $RAW/testbed.err" >&2
		rc=1
	fi
fi

# --- report ----------------------------------------------------------------
commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
quick=()
[ "$QUICK" = 0 ] || quick=(--quick)
bench_list=$(IFS=,; echo "${ran[*]:-}")
[ -n "$bench_list" ] || die "no benchmark ran (see $RAW)"
python3 "$ROOT/scripts/bench-report.py" report --dir "$RAW" --out "$OUT" \
	--benches "$bench_list" "${SKIPS[@]}" "${quick[@]}" \
	--meta "commit=$commit" --meta "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	--meta "build=$BUILD ($btype)" \
	--meta "machine.nproc=$(nproc)" --meta "machine.model=$model" \
	--meta "machine.loadavg=$LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end" ||
	rc=1
echo "bench.sh: JSON in $OUT, raw outputs in $RAW/" >&2
if [ -n "$COMPARE" ]; then
	echo
	python3 "$ROOT/scripts/bench-report.py" compare "$OUT" "$COMPARE" || rc=1
fi
exit $rc
