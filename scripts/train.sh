#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Train the digits MLP on 9 islands twice, decentralised over isthmus and
# synchronously with torch.distributed (gloo), and compare (doc/training.md).
#
#   scripts/train.sh [--build DIR] [--out DIR] [train.py options...]
#   scripts/train.sh --testbed [--schedule S] [--scale K] [--startup S] [--build DIR] [--out DIR] [...]
#
# Without --testbed, on this host: the isthmus run against loopback edges
# (python/isthmus/loopback.py: rounds of --period-ms, rotating triangles),
# the gloo run over 127.0.0.1 (--allreduce-pad-ms adds a modelled WAN
# all-reduce time per step).
# With --testbed (root): both runs over the emulated WAN of
# scripts/testbed.sh, one site namespace per island: the isthmus run with
# edges (`up --edges`, schedule S, default triangles, payload = the model),
# the gloo run with kernel TCP over isthmus-wan (data on eth0, rendezvous
# on the management bridge).
# --record keeps every exchange and then checks every aggregate against
# the exact sum over its bitmap (`train.py check`).
# Output: a table, OUT/accuracy.png, OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BUILD=build
OUT=
ARGS=()
RECORD=0
TESTBED=0
SCHED=triangles
SCALE=()
STARTUP=()
HIDDEN=128
TARGET=0.9
while [ $# -gt 0 ]; do
	case "$1" in
	--testbed) TESTBED=1; shift ;;
	--schedule) SCHED=$2; shift 2 ;;
	--scale) SCALE=(--scale "$2"); shift 2 ;;
	--startup) STARTUP=(--startup "$2"); shift 2 ;;
	--hidden) HIDDEN=$2; ARGS+=("$1" "$2"); shift 2 ;;
	--target) TARGET=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--record) RECORD=1; ARGS+=("$1"); shift ;;
	-h|--help) sed -n '3,22p' "$0"; exit 0 ;;
	*) ARGS+=("$1"); shift ;;
	esac
done
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY=${PYTHON:-/usr/bin/python3}
if [ ! -d "$BUILD/python/isthmus" ]; then
	echo "train.sh: no Python binding in $BUILD/python (meson setup $BUILD && ninja -C $BUILD)" >&2
	exit 1
fi
export PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/isthmus-train.XXXXXX)
mkdir -p "$OUT"
echo "train.sh: output in $OUT" >&2
if [ "$TESTBED" = 1 ]; then
	[ "$(id -u)" = 0 ] || { echo "train.sh: --testbed needs root (namespaces)" >&2; exit 1; }
	rm -f "$OUT"/*.jsonl "$OUT"/record-*.npz
	ELEMS=$("$PY" "$ROOT/examples/train.py" size --hidden "$HIDDEN")
	# the edges' payload is the accumulator's size: 4 bytes an element,
	# whatever the dtype on the wire (doc/island.md, bf16)
	"$ROOT/scripts/testbed.sh" up --edges --schedule "$SCHED" "${SCALE[@]}" "${STARTUP[@]}" \
		--payload-bytes $((ELEMS * 4)) -- \
		"$PY" "$ROOT/examples/train.py" net --mode isthmus --out "$OUT" "${ARGS[@]}"
	"$ROOT/scripts/testbed.sh" up "${SCALE[@]}" -- \
		"$PY" "$ROOT/examples/train.py" net --mode gloo --out "$OUT" "${ARGS[@]}"
	"$PY" "$ROOT/examples/train.py" report "$OUT" --target "$TARGET"
else
	"$PY" "$ROOT/examples/train.py" local --out "$OUT" --target "$TARGET" "${ARGS[@]}"
fi
if [ "$RECORD" = 1 ]; then
	# isthmusd returns bf16 sums for bf16 DATA by default ([agg] bf16_out);
	# the loopback edges return fp32 sums
	BF16=()
	if [ "$TESTBED" = 1 ] && ! printf '%s\n' "${ARGS[@]}" | grep -qx fp32; then
		BF16=(--bf16-sums)
	fi
	"$PY" "$ROOT/examples/train.py" check "$OUT" "${BF16[@]}"
fi
