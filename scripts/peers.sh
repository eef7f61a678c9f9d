#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# isthmus against the all-reduce peers a user would otherwise pick, on the
# same emulated WAN (doc/peers.md): Open MPI MPI_Allreduce (default, ring in
# shortest-circumference order, recursive doubling) and Gloo all-reduce
# (torch.distributed), one rank per site namespace, kernel TCP through
# isthmus-wan at the topology's delays and scaled capacities; isthmus rounds
# (scripts/testbed.sh run) with the planner's best schedule, triangles and
# reduction trees (an exact global sum every round, as MPI's), same payload
# and scale. Runs interleaved (peers, isthmus, peers, ...) so
# that both see the same machine load. A benchmark, not a test.
#
#   scripts/peers.sh [--islands N] [--payload-bytes B] [--scale K] [--reps R]
#                    [--iters I] [--rounds R] [--only LIST] [--out DIR]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TB=$ROOT/scripts/testbed.sh
SITES=$ROOT/conf/topologies/nine-city-sites.csv
LINKS=$ROOT/conf/topologies/nine-city-links.csv
ISLANDS=9
PAYLOAD=130K
SCALE=10000
REPS=2
ITERS=10
ROUNDS=10
ONLY=mpi-default,mpi-ring,mpi-recdbl,gloo,gloo-ring,isthmus-best,isthmus-triangles,isthmus-tree
OUT=
TBARGS=()

usage() {
	sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'
	cat <<'USAGE'
Options:
  --islands N        first N sites of the nine-city model (default 9)
  --payload-bytes B  bytes per rank and exchange (default 130K)
  --scale K          capacities divided by K (default 10000)
  --reps R           interleaved repetitions of each system (default 2)
  --iters I          timed all-reduces per peer run (default 10, after 2 warm-up)
  --rounds R         isthmus rounds per run (default 10)
  --only LIST        comma-separated subset of mpi-default, mpi-ring,
                     mpi-recdbl, gloo, gloo-ring, isthmus-best, isthmus-triangles,
                     isthmus-tree (testbed.sh --schedule tree: reduction trees,
                     the same semantics as an all-reduce)
  --out DIR          keep every log and the table in DIR (default: a temp dir)
  --auth on|off, --queue-ms D, --tb-arg A
                     passed to every scripts/testbed.sh run and up
  --table            with --out DIR of an earlier run: only print its table
Prints the table (time per exchange, mean and min, and ratios) last.
USAGE
}
die() { echo "peers: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--islands) ISLANDS=$2; shift 2 ;;
	--payload-bytes) PAYLOAD=$2; shift 2 ;;
	--scale) SCALE=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--iters) ITERS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--auth|--queue-ms) TBARGS+=("$1" "$2"); shift 2 ;;
	--tb-arg) TBARGS+=("$2"); shift 2 ;;
	--table) TABLE_ONLY=1; shift ;;
	__peers) shift; MODE=peers; break ;;
	-h|--help) usage; exit 0 ;;
	*) die "unknown option '$1' (--help)" ;;
	esac
done

# --- inside `testbed.sh up`: the peers' runs of one repetition -------------
# (TB_* from the env file; $1 = output dir, $2 = repetition, $3 = list)
if [ "${MODE:-}" = peers ]; then
	OUT=$1 REP=$2 LIST=$3 BYTES=$4 ITERS=$5
	x() { "$TB" exec "$TB_ENV" "$@"; }
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	# Each namespace is a host to Open MPI: the rsh agent enters it, with
	# a UTS namespace of its own so that every "host" has its own name.
	cat >"$OUT/agent.sh" <<'AGENT'
#!/bin/sh
host=$1
shift
exec ip netns exec "$host" unshare --uts /bin/sh -c "hostname $host; $*"
AGENT
	chmod +x "$OUT/agent.sh"
	read -r -a NS <<<"$TB_NS"
	: >"$OUT/hosts.default"
	for ns in "${NS[@]}"; do echo "$ns slots=1" >>"$OUT/hosts.default"; done
	: >"$OUT/hosts.ring"
	for k in $(cat "$OUT/ring.order"); do echo "${NS[$k]} slots=1" >>"$OUT/hosts.ring"; done
	mpi() {	# mpi NAME HOSTFILE MCA...
		local name=$1 hosts=$2 rc=0
		shift 2
		echo "peers: rep $REP: $name" >&2
		x mgmt mpirun --hostfile "$hosts" -np "$TB_N" --map-by node --bind-to none \
			--mca plm_rsh_agent "$OUT/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
			--mca oob_tcp_if_include "$TB_MGMT_NET" \
			--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$TB_DATA_NET" \
			"$@" "$OUT/mpi_allreduce" "$BYTES" "$ITERS" \
			>"$OUT/$name.$REP.log" 2>&1 || rc=$?
		[ $rc = 0 ] || { tail -20 "$OUT/$name.$REP.log" >&2; echo "peers: $name failed ($rc)" >&2; }
	}
	for sys in ${LIST//,/ }; do
		case "$sys" in
		mpi-default) mpi mpi-default "$OUT/hosts.default" ;;
		mpi-ring) mpi mpi-ring "$OUT/hosts.ring" --mca mpi_yield_when_idle 1 \
			--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4 ;;
		mpi-recdbl) mpi mpi-recdbl "$OUT/hosts.default" --mca mpi_yield_when_idle 1 \
			--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 3 ;;
		gloo|gloo-ring)
			# Gloo's ring follows the ranks: gloo puts rank r on site r
			# (the sites file's order), gloo-ring on the r-th site of
			# the shortest ring, as Open MPI's ring
			echo "peers: rep $REP: $sys" >&2
			if [ "$sys" = gloo ]; then order=$(seq 0 $((TB_N - 1))); else order=$(cat "$OUT/ring.order"); fi
			read -r -a site <<<"$(echo $order)"
			ip=TB_MGMT_IP_${site[0]}
			pids=()
			for ((r = 0; r < TB_N; r++)); do
				x "${site[$r]}" env GLOO_SOCKET_IFNAME="$TB_DATA_IF" /usr/bin/python3 \
					"$ROOT/scripts/peers/gloo_allreduce.py" "$r" "$TB_N" \
					"${!ip}:29500" "$BYTES" "$ITERS" >"$OUT/$sys.$REP.r$r.log" 2>&1 &
				pids+=($!)
			done
			rc=0
			for p in "${pids[@]}"; do wait "$p" || rc=1; done
			cp "$OUT/$sys.$REP.r0.log" "$OUT/$sys.$REP.log"
			[ $rc = 0 ] || { tail -n 5 "$OUT"/$sys.$REP.r*.log >&2; echo "peers: $sys failed" >&2; } ;;
		esac
	done
	exit 0
fi

[ "$(id -u)" -eq 0 ] || die "needs root (scripts/testbed.sh)"
command -v mpicc >/dev/null || die "mpicc missing: apt-get install openmpi-bin libopenmpi-dev (scripts/deps.sh)"
if [ -n "$OUT" ]; then
	OUT=$(realpath -m "$OUT"); mkdir -p "$OUT"
else
	OUT=$(mktemp -d /tmp/isth-peers-XXXXXX)
fi
case ",$ONLY," in *,gloo*)
	if ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
		echo "peers: no torch for /usr/bin/python3 (python3-torch): gloo left out" >&2
		ONLY=$(echo ",$ONLY," | sed 's/,gloo,/,/; s/,gloo-ring,/,/; s/^,//; s/,$//')
	fi ;;
esac
BYTES=$(awk -v s="$PAYLOAD" 'BEGIN { m["K"]=1e3; m["M"]=1e6; u=substr(s, length(s));
	if (u in m) print int(substr(s, 1, length(s) - 1) * m[u]); else print int(s) }')
[ -n "${TABLE_ONLY:-}" ] && REPS=$(ls "$OUT" | sed -n 's/^[a-z-]*\.\([0-9]*\)\.log$/\1/p' | sort -n | tail -1)
[ -n "${TABLE_ONLY:-}" ] || {
mpicc -O2 -o "$OUT/mpi_allreduce" "$ROOT/scripts/peers/mpi_allreduce.c" -lm

# The ring Open MPI runs on: ranks in the order of the shortest ring
# circumference over one-way shortest-path latencies (exhaustive: N <= 10).
python3 - "$SITES" "$LINKS" "$ISLANDS" >"$OUT/ring.order" <<'PY'
import heapq, itertools, sys
sites_f, links_f, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [l for l in open(sites_f) if l.strip() and not l.startswith("#")][1:]
names = [r.split(",")[0].strip() for r in rows[:n]]
adj = {k: [] for k in names}
for l in [l for l in open(links_f) if l.strip() and not l.startswith("#")][1:]:
    c = l.split(",")
    if c[0].strip() in adj and c[1].strip() in adj:
        adj[c[0].strip()].append((c[1].strip(), float(c[2])))
        adj[c[1].strip()].append((c[0].strip(), float(c[2])))
def dij(s):
    d, q = {s: 0.0}, [(0.0, s)]
    while q:
        x, u = heapq.heappop(q)
        if x > d[u]:
            continue
        for v, w in adj[u]:
            if x + w < d.get(v, 1e18):
                d[v] = x + w
                heapq.heappush(q, (x + w, v))
    return d
D = [[dij(a)[b] for b in names] for a in names]
best = min((sum(D[q[i]][q[(i + 1) % n]] for i in range(n)), q)
           for q in ((0,) + p for p in itertools.permutations(range(1, n))))
print(" ".join(map(str, best[1])))
print("# circumference %.3f ms: %s" % (best[0], " ".join(names[k] for k in best[1])), file=sys.stderr)
PY

echo "peers: $ISLANDS sites, $BYTES B per exchange, scale 1/$SCALE, $REPS interleaved repetitions; logs in $OUT" >&2
PEERS=$(echo "$ONLY" | tr ',' '\n' | grep -E '^(mpi-|gloo)' | paste -sd, || true)
for ((rep = 1; rep <= REPS; rep++)); do
	if [ -n "$PEERS" ]; then
		"$TB" up --islands "$ISLANDS" --scale "$SCALE" "${TBARGS[@]}" -- \
			"$ROOT/scripts/peers.sh" __peers "$OUT" "$rep" "$PEERS" "$BYTES" "$ITERS" >"$OUT/up.$rep.log" 2>&1 ||
			{ tail -5 "$OUT/up.$rep.log" >&2; die "testbed up failed"; }
	fi
	for sched in best triangles tree; do
		case ",$ONLY," in *,isthmus-$sched,*) ;; *) continue ;; esac
		echo "peers: rep $rep: isthmus-$sched" >&2
		rm -rf "$OUT/isthmus-$sched.$rep"
		"$TB" run --islands "$ISLANDS" --scale "$SCALE" --payload-bytes "$PAYLOAD" \
			--schedule "$sched" --rounds "$ROUNDS" --keep "$OUT/isthmus-$sched.$rep" "${TBARGS[@]}" \
			>"$OUT/isthmus-$sched.$rep.log" 2>&1 ||
			echo "peers: isthmus-$sched run $rep failed (see $OUT/isthmus-$sched.$rep.log)" >&2
	done
done

}

python3 - "$OUT" "$ONLY" "$REPS" "$BYTES" "$SCALE" "$ISLANDS" <<'PY' | tee "$OUT/table.md"
import glob, os, re, statistics, sys
out, only, reps, nbytes, scale, n = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
rows, ring_model, planned = {}, None, {}
for sysname in only:
    times, wrong, note, part, aggs = [], 0, "", 0, 0
    for rep in range(1, reps + 1):
        if sysname.startswith("isthmus-"):
            d = "%s/%s.%d" % (out, sysname, rep)
            try:
                summary = [l for l in open(d + ".log", errors="replace") if l.startswith("SUMMARY")]
            except OSError:
                summary = []
            if not summary:
                continue    # the run failed before its rounds: no figures
            # time per exchange: a round's result at its last island (the
            # round is done for the job when every island has it)
            per = {}
            for f in glob.glob(d + "/island*.log"):
                for l in open(f):
                    m = re.match(r"round (\d+) .* ms ([0-9.]+)", l)
                    if m:
                        r = int(m.group(1))
                        per[r] = max(per.get(r, 0.0), float(m.group(2)))
            times += list(per.values())
            for l in open("%s/%s.%d.log" % (out, sysname, rep), errors="replace"):
                m = re.search(r"wrong=(\d+)", l)
                if l.startswith("SUMMARY") and m:
                    wrong += int(m.group(1))
                    part += int(re.search(r"partial=(\d+)", l).group(1))
                    aggs += int(re.search(r"aggregates=(\d+)", l).group(1))
                    planned[sysname] = float(re.search(r"round_ms_planned=([0-9.]+)", l).group(1))
                    note = re.search(r"schedule=(\S+)", l).group(1)
            try:
                for l in open(d + "/plan.txt"):
                    m = re.search(r"ring all-reduce \(host-based[^)]*\): ([0-9.]+) ms", l)
                    if m:
                        ring_model = float(m.group(1))
            except OSError:
                pass
        else:
            f = "%s/%s.%d.log" % (out, sysname, rep)
            if not os.path.exists(f):
                continue
            for l in open(f, errors="replace"):
                m = re.match(r"EXCHANGE \d+ ([0-9.]+)", l)
                if m:
                    times.append(float(m.group(1)))
                m = re.match(r"CHECK .* wrong=(\d+)", l)
                if m:
                    wrong += int(m.group(1))
    if times:
        rows[sysname] = (statistics.mean(times), min(times), len(times), wrong, note,
                         "%d of %d" % (part, aggs) if aggs else "-")
peers = {k: v for k, v in rows.items() if not k.startswith("isthmus-")}
best_peer = min(peers, key=lambda k: peers[k][0]) if peers else None
print("\n%s sites, %s B per rank and exchange, capacities / %s; time per exchange in ms\n" % (n, nbytes, scale))
print("| system | mean | min | exchanges | wrong | partial results | planned / modelled | best peer / this (mean) |")
print("|---|---|---|---|---|---|---|---|")
for k, (mean, mn, cnt, wrong, note, partial) in rows.items():
    model = ""
    if k.startswith("isthmus-") and k in planned:
        model = "T %.1f (%s)" % (planned[k], note)
    elif k in ("mpi-ring", "gloo-ring") and ring_model:
        model = "ring model %.1f" % ring_model
    ratio = "%.2fx" % (peers[best_peer][0] / mean) if best_peer else ""
    print("| %s | %.1f | %.1f | %d | %d | %s | %s | %s |" % (k, mean, mn, cnt, wrong, partial, model, ratio))
if best_peer:
    print("\nbest peer: %s (mean %.1f ms)" % (best_peer, peers[best_peer][0]))
if ring_model:
    print("planner's ring all-reduce model (host-based): %.1f ms" % ring_model)
PY
