#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Train the digits MLP on 9 islands twice, decentralised over isthmus and
# synchronously with torch.distributed (gloo), and compare (doc/training.md).
#
#   scripts/train.sh [--build DIR] [--out DIR] [train.py local options...]
#
# Runs on this host: the isthmus run against loopback edges
# (python/isthmus/loopback.py: rounds of --period-ms, rotating triangles),
# the gloo run over 127.0.0.1 (--allreduce-pad-ms adds a modelled WAN
# all-reduce time per step). --record keeps every exchange and then checks
# every aggregate against the exact sum over its bitmap (`train.py check`).
# Output: a table, OUT/accuracy.png, OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BUILD=build
OUT=
ARGS=()
RECORD=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--record) RECORD=1; ARGS+=("$1"); shift ;;
	-h|--help) sed -n '3,15p' "$0"; exit 0 ;;
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
"$PY" "$ROOT/examples/train.py" local --out "$OUT" "${ARGS[@]}"
if [ "$RECORD" = 1 ]; then
	"$PY" "$ROOT/examples/train.py" check "$OUT"
fi
