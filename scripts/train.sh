#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Train the digits MLP on 9 islands twice, decentralised over isthmus and
# synchronously with torch.distributed (gloo), and compare (doc/training.md).
#
#   scripts/train.sh [--build DIR] [--out DIR] [train.py options...]
#   scripts/train.sh --testbed [--schedule S] [--exact-schedule E] [--edge-dtype D] [--scale K] [--startup S] [--runs LIST]
#                    [--pairs P] [--queue-ms D] [--auth on|off] [--tb-arg A]
#                    [--island-ranks K] [--build DIR] [--out DIR] [train.py options...]
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
# --runs LIST (testbed): runs in this order, each of isthmus (schedule S),
# isthmus-triangles, gloo (gloo's defaults: ranks in the sites' order) and
# gloo-tuned (ranks in the order of the planner's shortest ring, TCP without
# slow start after idle); default isthmus,gloo. --pairs P repeats the list P
# times, interleaved, in OUT/rep1 ... OUT/repP. --isthmus-steps N: the
# isthmus runs' steps (default --steps), --ddp-steps N the ddp run's
# (lm: default --steps if given, else 60).
# --queue-ms, --auth and --tb-arg A are passed to scripts/testbed.sh for
# every run.
# --record keeps every exchange and then checks every aggregate against
# the exact sum over its bitmap (`train.py check`): the default for
# --model lm --testbed (--no-record: not kept, not checked).
# --island-ranks K (1..4, default 1; mlp, the isthmus runs): every island
# is K ranks, data parallel inside the island (a torch.distributed gloo
# group, each step's gradients all-reduced over the ranks; rank h takes
# every K-th sample of the island's shard and its share of --batch a step
# (batch / K, the first batch % K ranks one more; the gradients weighted
# by the shares), so the island's batch is that of K = 1). Each rank has its own
# session (hosts=K, host=h) and exchanges only its chunk range of the
# island's contribution; the ranges of every result are all-reduced, so
# the ranks stay identical (the report says so). --testbed: the isthmus
# runs' sites become K host namespaces behind each edge (`testbed.sh up
# --edges --island-hosts K`), the group on the island's bridge (eth0,
# rendezvous at host 0). Without --testbed: loopback edges of K hosts.
# --model lm: the byte-level transformer on Debian's fortunes instead
# (examples/lm.py), with the runs (--runs, default all five, in this order)
#   ddp             synchronous AdamW, the gradients all-reduced every step
#   diloco          H inner AdamW steps (--diloco-local-steps), an exact
#                   all-reduce of the pseudo-gradient, outer Nesterov step
#   diloco-overlap  the same, one-step-delayed (eager): the all-reduce
#                   runs behind the next H inner steps
#   isthmus-diloco  the DiLoCo outer step (isthmus.torch.DiLoCo, H =
#                   --local-steps) over isthmus: an exact global sum a
#                   round, carried as --exact-schedule says
#   isthmus-cliques the same over rotating cliques (--schedule, triangles)
# lm's defaults are the benchmark's (doc/training.md): 200 steps of 1 s
# (--steps, --compute-ms), H = 20 for diloco and diloco-overlap
# (--diloco-local-steps) and 1 for the isthmus runs (--local-steps), the
# outer step of examples/train.py (--outer-lr, --outer-momentum); with
# --testbed, ddp 60 steps (unless --steps), --startup 20, --record; so
#   scripts/train.sh --testbed --model lm --pairs 2
# is the benchmark, every run twice, interleaved.
# --exact-schedule tree|all-to-all (--model lm --testbed only, like
# --edge-dtype; refused otherwise): how isthmus-diloco's exact global sum
# crosses the WAN. tree (default): the planner's reduction trees through
# the edges (testbed.sh --schedule tree): each chunk is summed up a
# spanning tree and its sum sent down it, so every link carries a chunk
# once each way, where all-to-all with network replication still carries
# every island's contribution across the busiest links once per tree. At
# the lm's payload (bf16, scale 10000) the planner gives the tree T = 673
# ms, all-to-all 2127 ms, its ring all-reduce model 2049 ms; measured
# under load, a tree round took 1171 ms (836 ms once the testbed's access
# ring held a round) and an all-to-all one 2657 ms (doc/training.md).
# all-to-all: the earlier transport (network replication, M = 4 MiB).
# --edge-dtype bf16|any (lm, the isthmus runs, --dtype bf16): bf16
# (default): the edges admit bf16 DATA only and the planner plans the
# 2 bytes an element that cross the links (testbed.sh --dtype bf16),
# half the round of any: the edges admit every type and the plan counts
# 4 bytes an element (the figures before 2026-12-06 12:00 were planned so).
# The baselines' all-reduce is gloo (--comm gloo, the faster here at this
# payload, doc/training.md) or Open MPI's tuned ring through mpi4py
# (--comm mpi), ranks in the planner's shortest-ring order, TCP without
# slow start after idle.
# Output: a table, OUT/accuracy.png (mlp) or OUT/loss.png (lm), OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BUILD=build
OUT=
ARGS=()
RECORD=
TESTBED=0
SCHED=triangles
SCALE=()
STARTUP=()
HIDDEN=128
TARGET=
RUNS=
MODEL=mlp
SIZE=()
ISTEPS=()
DSTEPS=()
STEPS_SET=
PAIRS=0
EXACT=tree
EDGE_DT=bf16
TBARGS=()
IRANKS=1
LM_ONLY=()	# options given that only the lm's testbed runs read
while [ $# -gt 0 ]; do
	# this script's options that take a value (the others go to train.py,
	# which names its own)
	case "$1" in
	--schedule|--exact-schedule|--edge-dtype|--scale|--startup|--hidden|--model|--d-model|\
	--layers|--heads|--ctx|--target|--runs|--pairs|--steps|--isthmus-steps|--ddp-steps|\
	--queue-ms|--auth|--tb-arg|--build|--out|--island-ranks)
		[ $# -ge 2 ] || { echo "train.sh: $1 needs a value (--help)" >&2; exit 2; } ;;
	esac
	case "$1" in
	--testbed) TESTBED=1; shift ;;
	--schedule) SCHED=$2; shift 2 ;;
	--exact-schedule) EXACT=$2; LM_ONLY+=("$1"); shift 2 ;;
	--edge-dtype) EDGE_DT=$2; LM_ONLY+=("$1"); shift 2 ;;
	--scale) SCALE=(--scale "$2"); shift 2 ;;
	--startup) STARTUP=(--startup "$2"); shift 2 ;;
	--hidden) HIDDEN=$2; ARGS+=("$1" "$2"); shift 2 ;;
	--model) MODEL=$2; ARGS+=("$1" "$2"); shift 2 ;;
	--d-model|--layers|--heads|--ctx) SIZE+=("$1" "$2"); ARGS+=("$1" "$2"); shift 2 ;;
	--target) TARGET=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--pairs) PAIRS=$2; shift 2 ;;
	--steps) STEPS_SET=1; ARGS+=("$1" "$2"); shift 2 ;;
	--isthmus-steps) ISTEPS=(--steps "$2"); shift 2 ;;
	--ddp-steps) DSTEPS=(--steps "$2"); shift 2 ;;
	--queue-ms|--auth) TBARGS+=("$1" "$2"); shift 2 ;;
	--tb-arg) TBARGS+=("$2"); shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--record) RECORD=1; shift ;;
	--no-record) RECORD=0; shift ;;
	--island-ranks) IRANKS=$2; shift 2 ;;
	-h|--help) sed -n '3,/^set /{/^#/p}' "$0"; exit 0 ;;
	*) ARGS+=("$1"); shift ;;
	esac
done
case "$MODEL" in
mlp) : "${TARGET:=0.9}" "${RUNS:=isthmus,gloo}" ;;
# the target loss: what every run reaches within its steps at the
# benchmark's settings (doc/training.md)
lm) : "${TARGET:=3.0}" "${RUNS:=ddp,diloco,diloco-overlap,isthmus-diloco,isthmus-cliques}"
	# the benchmark's settings (doc/training.md): ddp's steps are 3-4 s
	# each, so 60 of them unless --steps says; nine torch workers take
	# more than the testbed's 8 s to start; every exchange recorded and
	# checked
	[ ${#DSTEPS[@]} -gt 0 ] || [ -n "$STEPS_SET" ] || DSTEPS=(--steps 60)
	[ ${#STARTUP[@]} -gt 0 ] || STARTUP=(--startup 20)
	[ -n "$RECORD" ] || [ "$TESTBED" = 0 ] || RECORD=1 ;;
*) echo "train.sh: --model mlp or lm, not '$MODEL'" >&2; exit 2 ;;
esac
: "${RECORD:=0}"
[ "$RECORD" = 0 ] || ARGS+=(--record)
case "$EXACT" in tree|all-to-all) ;;
*) echo "train.sh: --exact-schedule: tree or all-to-all, not '$EXACT'" >&2; exit 2 ;; esac
case "$EDGE_DT" in bf16|any) ;;
*) echo "train.sh: --edge-dtype: bf16 or any, not '$EDGE_DT'" >&2; exit 2 ;; esac
# refused rather than ignored where nothing reads them
for o in "${LM_ONLY[@]}"; do
	[ "$MODEL" = lm ] && [ "$TESTBED" = 1 ] ||
		{ echo "train.sh: $o: only for the lm's isthmus runs on the testbed (--model lm --testbed)" >&2; exit 2; }
done
case "$IRANKS" in [1-4]) ;; *) echo "train.sh: --island-ranks: 1 to 4, not '$IRANKS'" >&2; exit 2 ;; esac
[ "$IRANKS" = 1 ] || [ "$MODEL" = mlp ] ||
	{ echo "train.sh: --island-ranks: the mlp's isthmus runs only" >&2; exit 2; }
# islands of K ranks (the isthmus runs): K hosts behind each edge
IHOSTS=()
[ "$IRANKS" = 1 ] || IHOSTS=(--island-hosts "$IRANKS")
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
	ELEMS=$("$PY" "$ROOT/examples/train.py" size --model "$MODEL" --hidden "$HIDDEN" "${SIZE[@]}")
	K=${SCALE[1]:-10000}
	# gloo's ring follows the ranks: the tuned run puts them in the order
	# of the shortest ring circumference, as the planner prints it for
	# this payload at the testbed's scaled capacities
	awk -F, -v k="$K" 'BEGIN { OFS = "," } /^#/ || NF < 4 { print; next }
		$4 ~ /^[0-9.]+$/ { $4 = sprintf("%.9g", $4 / k * 1432 / 1514) } { print $1, $2, $3, $4 }' \
		"$ROOT/conf/topologies/nine-city-links.csv" >"$OUT/ring-links.csv"
	"$BUILD/app/isthmus-plan/isthmus-plan" --sites "$ROOT/conf/topologies/nine-city-sites.csv" \
		--links "$OUT/ring-links.csv" --payload-bytes $((ELEMS * 4)) \
		--access-gbps "$(awk -v k="$K" 'BEGIN { printf "%.9g", 100 / k * 1432 / 1514 }')" \
		--replication edge --routing shortest --schedule triangles --quiet \
		>"$OUT/ring-plan.txt" 2>&1 || { cat "$OUT/ring-plan.txt" >&2; exit 1; }
	RING=$(sed -n 's/.*ring all-reduce (host-based, [0-9]* dependent steps, ring \([A-Z ]*\)).*/\1/p' \
		"$OUT/ring-plan.txt")
	[ -n "$RING" ] || { echo "train.sh: no ring order in $OUT/ring-plan.txt" >&2; exit 1; }
	run_one() {	# run_one DIR RUN
		local dir=$1 run=$2
		# island numbers only: diloco-* would also match diloco-overlap-*
		rm -f "$dir/$run"-[0-9]*.jsonl
		# the edges' schedule and plan as train.py net copies them: a
		# run that fails before it does must not report (or check
		# against) an earlier run's in a reused --out
		rm -f "$dir/sched-$run.txt" "$dir/edges-$run.json"
		uptime >"$dir/load-$run.txt"
		case "$run" in
		isthmus|isthmus-triangles)
			local sched=$SCHED
			[ "$run" = isthmus ] || sched=triangles
			rm -f "$dir/record-$run"-[0-9]*.npz
			# the edges' payload is the accumulator's size: 4 bytes an
			# element, whatever the dtype on the wire (doc/island.md)
			# the edges admit DATA of the job's type only ([isthmusd]
			# dtype): fp32, or any for bf16 (an any edge reads this
			# 4-byte-per-element payload; dtype bf16 would read 2)
			local dt=any
			printf '%s\n' "${ARGS[@]}" | grep -qx fp32 && dt=fp32
			"$ROOT/scripts/testbed.sh" up --edges --schedule "$sched" --dtype "$dt" "${SCALE[@]}" \
				"${STARTUP[@]}" "${TBARGS[@]}" "${IHOSTS[@]}" --payload-bytes $((ELEMS * 4)) -- \
				"$PY" "$ROOT/examples/train.py" net --mode isthmus --label "$run" \
				--island-ranks "$IRANKS" --out "$dir" "${ARGS[@]}" "${ISTEPS[@]}" ;;
		gloo)
			"$ROOT/scripts/testbed.sh" up "${SCALE[@]}" "${TBARGS[@]}" -- \
				"$PY" "$ROOT/examples/train.py" net --mode gloo --out "$dir" "${ARGS[@]}" ;;
		gloo-tuned)
			"$ROOT/scripts/testbed.sh" up "${SCALE[@]}" "${TBARGS[@]}" -- \
				"$PY" "$ROOT/examples/train.py" net --mode gloo --label gloo-tuned \
				--rank-order "$RING" --tcp-sysctl net.ipv4.tcp_slow_start_after_idle=0 \
				--out "$dir" "${ARGS[@]}" ;;
		ddp|diloco|diloco-overlap)
			# tuned as gloo-tuned: ranks in the shortest ring's order,
			# no slow start after idle
			"$ROOT/scripts/testbed.sh" up "${SCALE[@]}" "${TBARGS[@]}" -- \
				"$PY" "$ROOT/examples/train.py" net --mode "$run" \
				--rank-order "$RING" --tcp-sysctl net.ipv4.tcp_slow_start_after_idle=0 \
				--out "$dir" "${ARGS[@]}" $([ "$run" = ddp ] && echo "${DSTEPS[@]}") ;;
		isthmus-diloco|isthmus-cliques)
			# isthmus-diloco: the exact transport (--exact-schedule);
			# all-to-all needs room for the clique's arrivals (the
			# planner refuses it at M = 0); a tree round sums in
			# accumulators of its own ([agg] memory unused)
			local sched=$EXACT repl=()
			[ "$EXACT" = tree ] || repl=(--replication network --memory-bytes 4M)
			[ "$run" = isthmus-diloco ] || { sched=$SCHED; repl=(); }
			rm -f "$dir/record-$run"-[0-9]*.bin
			# the edges and the plan take the wire's type (--edge-dtype)
			local dt=$EDGE_DT esize=2
			printf '%s\n' "${ARGS[@]}" | grep -qx fp32 && dt=fp32
			[ "$dt" = bf16 ] || esize=4
			"$ROOT/scripts/testbed.sh" up --edges --schedule "$sched" "${repl[@]}" --dtype "$dt" \
				"${SCALE[@]}" "${STARTUP[@]}" "${TBARGS[@]}" --payload-bytes $((ELEMS * esize)) -- \
				"$PY" "$ROOT/examples/train.py" net --mode "$run" --out "$dir" \
				"${ARGS[@]}" "${ISTEPS[@]}" ;;
		*) echo "train.sh: --runs: isthmus, isthmus-triangles, gloo or gloo-tuned (mlp); ddp, diloco," \
			"diloco-overlap, isthmus-diloco or isthmus-cliques (lm), not '$run'" >&2
			exit 2 ;;
		esac
		uptime >>"$dir/load-$run.txt"
	}
	echo "train.sh: gloo-tuned ranks in ring order $RING" >&2
	DIRS=()
	if [ "$PAIRS" -gt 0 ]; then
		for ((p = 1; p <= PAIRS; p++)); do DIRS+=("$OUT/rep$p"); done
	else
		DIRS=("$OUT")
	fi
	for dir in "${DIRS[@]}"; do
		mkdir -p "$dir"
		for run in ${RUNS//,/ }; do run_one "$dir" "$run"; done
		"$PY" "$ROOT/examples/train.py" report "$dir" --target "$TARGET"
	done
	if [ "$PAIRS" -gt 0 ]; then
		"$PY" "$ROOT/examples/train.py" table --target "$TARGET" "${DIRS[@]}" | tee "$OUT/table.md"
	fi
else
	"$PY" "$ROOT/examples/train.py" local --out "$OUT" --target "$TARGET" \
		--island-ranks "$IRANKS" "${ARGS[@]}"
fi
if [ "$RECORD" = 1 ]; then
	# isthmusd returns bf16 sums for bf16 DATA by default ([agg] bf16_out);
	# the loopback edges return fp32 sums
	BF16=()
	if [ "$TESTBED" = 1 ] && ! printf '%s\n' "${ARGS[@]}" | grep -qx fp32; then
		BF16=(--bf16-sums)
	fi
	for dir in "${DIRS[@]:-$OUT}"; do
		for run in ${RUNS//,/ }; do
			case "$run" in isthmus*) "$PY" "$ROOT/examples/train.py" check "$dir" --run "$run" \
				--model "$MODEL" "${SIZE[@]}" "${BF16[@]}" ;; esac
		done
	done
fi
