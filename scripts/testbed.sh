#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The whole of isthmus on one machine (doc/testbed.md): N islands in network
# namespaces, N edges (isthmusd on net_af_packet over veth), and the WAN
# emulator (isthmus-wan) joining the edges over the topology's links at
# scaled capacities, with the schedule isthmus-plan computes for those very
# capacities. Every aggregate each island receives is checked against the
# exact sum; the last line is the SUMMARY.
#
#   scripts/testbed.sh run [options]      (scripts/testbed.sh --help)
#
# Needs root (namespaces, veth). Everything it creates carries a name unique
# to the run and is removed on exit, failure or signal.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<'EOF'
usage: scripts/testbed.sh run [options]

Runs islands, edges and the WAN emulator for R rounds and prints, last,
  SUMMARY schedule=.. islands=.. rounds=.. aggregates=.. verified=.. wrong=..
          partial=.. missing=.. nacks=.. resent=.. round_ms_mean=.. round_ms_planned=..
Exit 0 only if wrong=0 and every island finished every round.

Topology and schedule:
  --sites F --links F     topology (default: conf/topologies/nine-city-*.csv)
  --islands N             use the first N sites (default: all; the links among
                          them must connect them)
  --schedule NAME|FILE    all-to-all, regional, pairs, triangles, search, best
                          (the planner's winner, default), or a schedule file
  --payload-bytes B       bytes each island sends per round, as really sent
                          (default 130K: 1.3 GB at full scale with --scale 10000)
  --memory-bytes M        aggregation memory per edge, as really used
                          (default 0: the planner aligns arrivals; the edge
                          still holds the few chunks in flight, see doc)
  --scale K               capacities divided by K, latencies real (default 10000:
                          100 Gbit/s links become 10 Mbit/s)
Run:
  --rounds R              rounds to play (default 5)
  --dtype int32|fp32      tensor type (default int32)
  --startup S             seconds from launch to the epoch (default 8)
Impairments on every WAN link (seeded, reproducible):
  --loss P --dup P --reorder P --corrupt P   probabilities in [0, 1]
  --seed S                (default 1)
Faults:
  --silent-island K       island K stops sending after its first round
  --restart-edge K        stop edge K during round 1 and start it again: it
                          rejoins at a round boundary; peers see partials
                          naming island K meanwhile
  --keep DIR              keep logs and configs in DIR (default: a temp dir,
                          removed unless the run fails)
  --pmd af_packet|af_xdp  edge PMD (default af_packet); af_xdp loads lib/xdp's
                          steering program on each edge port (doc/xdp.md)

Environment: BUILD (default build) is the meson build directory.
EOF
}

BUILD=${BUILD:-build}
SITES=$ROOT/conf/topologies/nine-city-sites.csv
LINKS=$ROOT/conf/topologies/nine-city-links.csv
ISLANDS=0
SCHED=best
PAYLOAD=130K
MEMORY=0
SCALE=10000
ROUNDS=5
DTYPE=int32
STARTUP=8
LOSS=0 DUP=0 REORDER=0 CORRUPT=0 SEED=1
SILENT=-1
RESTART=-1
KEEP=
PMD=af_packet

die() { echo "testbed: $*" >&2; exit 2; }

[ "${1:-}" = run ] || { [ "${1:-}" = --help ] || [ "${1:-}" = -h ] && { usage; exit 0; }; usage >&2; exit 2; }
shift
while [ $# -gt 0 ]; do
	case "$1" in
	--sites) SITES=$(realpath "$2"); shift 2 ;;
	--links) LINKS=$(realpath "$2"); shift 2 ;;
	--islands) ISLANDS=$2; shift 2 ;;
	--schedule) SCHED=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--payload-bytes) PAYLOAD=$2; shift 2 ;;
	--memory-bytes) MEMORY=$2; shift 2 ;;
	--scale) SCALE=$2; shift 2 ;;
	--loss) LOSS=$2; shift 2 ;;
	--dup) DUP=$2; shift 2 ;;
	--reorder) REORDER=$2; shift 2 ;;
	--corrupt) CORRUPT=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--dtype) DTYPE=$2; shift 2 ;;
	--startup) STARTUP=$2; shift 2 ;;
	--silent-island) SILENT=$2; shift 2 ;;
	--restart-edge) RESTART=$2; shift 2 ;;
	--keep) KEEP=$2; shift 2 ;;
	--pmd) PMD=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) die "unknown option '$1' (scripts/testbed.sh --help)" ;;
	esac
done

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces and veth)"
case "$DTYPE" in int32|fp32) ;; *) die "--dtype: int32 or fp32" ;; esac
case "$PMD" in af_packet|af_xdp) ;; *) die "--pmd: af_packet or af_xdp" ;; esac
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] || die "--rounds: a positive integer"
[[ "$SCALE" =~ ^[0-9]+$ ]] && [ "$SCALE" -ge 1 ] || die "--scale: a positive integer"

case "$BUILD" in /*) BDIR=$BUILD ;; *) BDIR=$ROOT/$BUILD ;; esac
PLAN=$BDIR/app/isthmus-plan/isthmus-plan
EDGE=$BDIR/app/isthmusd/isthmusd
WAN=$BDIR/app/isthmus-wan/isthmus-wan
ISLAND=$BDIR/app/isthmus-island/isthmus-island
XDP_OBJ=$BDIR/lib/xdp/isth_xdp.bpf.o
if [ "$PMD" = af_xdp ]; then
	[ -f "$XDP_OBJ" ] || die "$XDP_OBJ missing: lib/xdp was not built (clang, bpftool)"
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || die "cannot mount bpffs"
fi
for b in "$PLAN" "$EDGE" "$WAN" "$ISLAND"; do
	[ -x "$b" ] || die "$b missing: build first (meson setup $BUILD && ninja -C $BUILD)"
done

# Sizes as the planner and the config reader parse them.
size_bytes() {
	python3 - "$1" <<'PY'
import re, sys
m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|K|M|G|T)?", sys.argv[1])
if not m:
    sys.exit("bad size " + sys.argv[1])
mult = {None: 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
        "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[m.group(2)]
print(int(float(m.group(1)) * mult))
PY
}
PAYLOAD_B=$(size_bytes "$PAYLOAD") || die "--payload-bytes: bad size"
MEMORY_B=$(size_bytes "$MEMORY") || die "--memory-bytes: bad size"
CHUNK_ELEMS=358			# DATA elements per packet at MTU 1500
CHUNK_B=$((CHUNK_ELEMS * 4))
ELEMS=$(( (PAYLOAD_B + 3) / 4 ))

RID=$(printf '%04x' $(( ($$ + RANDOM) % 65536 )))
if [ -n "$KEEP" ]; then
	WORK=$(realpath -m "$KEEP"); mkdir -p "$WORK"
else
	WORK=$(mktemp -d "/tmp/isth-tb-$RID-XXXX")
fi
PIDS=()
NSS=()
LINKS_MADE=()
FAILED=1

cleanup() {
	set +e
	for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	# an edge started again by --restart-edge is not in PIDS
	pkill -KILL -f "file-prefix=isth${RID}" 2>/dev/null
	for l in "${LINKS_MADE[@]}"; do ip link del "$l" 2>/dev/null; done
	for n in "${NSS[@]}"; do ip netns del "$n" 2>/dev/null; done
	rm -rf /var/run/dpdk/isth$RID* 2>/dev/null
	if [ -z "$KEEP" ]; then
		if [ "$FAILED" = 0 ]; then
			rm -rf "$WORK"
		else
			echo "testbed: logs kept in $WORK" >&2
		fi
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- topology: the first N sites, capacities scaled -------------------------
python3 - "$SITES" "$LINKS" "$ISLANDS" "$SCALE" "$WORK" <<'PY' || die "bad topology"
import sys
sites_f, links_f, n, scale, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
# A DATA frame carries 1432 payload bytes in 1514 bytes on the wire
# (Ethernet 14, IPv4 20, UDP 8, isthmus 40): the planner, whose rates are
# payload rates, plans on that goodput; the emulator carries wire bytes.
goodput = 1432.0 / 1514.0
rows = [l for l in open(sites_f) if l.strip() and not l.startswith("#")]
hdr, sites = rows[0], rows[1:]
if n == 0:
    n = len(sites)
if n < 2 or n > len(sites):
    sys.exit("--islands: 2..%d" % len(sites))
keep = [s.split(",")[0].strip() for s in sites[:n]]
with open(work + "/sites.csv", "w") as f:
    f.write("# first %d sites of %s\n" % (n, sites_f))
    f.write(hdr)
    f.writelines(sites[:n])
lrows = [l for l in open(links_f) if l.strip() and not l.startswith("#")]
for name, factor in (("links.csv", 1.0), ("plan-links.csv", goodput)):
    with open(work + "/" + name, "w") as f:
        f.write("# %s: capacities divided by %g, times %.6f\n" % (links_f, scale, factor))
        f.write(lrows[0])
        for l in lrows[1:]:
            c = l.rstrip("\n").split(",")
            if c[0].strip() in keep and c[1].strip() in keep:
                c[3] = "%.9g" % (float(c[3]) / scale * factor)
                f.write(",".join(c[:4]) + "\n")
with open(work + "/names", "w") as f:
    f.write("\n".join(keep) + "\n")
# One-way shortest-path latency between the islands (Dijkstra, as the
# planner and the emulator route): the edges time their tail NACKs by it.
import heapq
adj = {k: [] for k in keep}
for l in lrows[1:]:
    c = l.rstrip("\n").split(",")
    a, b = c[0].strip(), c[1].strip()
    if a in adj and b in adj:
        adj[a].append((b, float(c[2])))
        adj[b].append((a, float(c[2])))
with open(work + "/latency", "w") as f:
    for src in keep:
        dist = {src: 0.0}
        q = [(0.0, src)]
        while q:
            d, u = heapq.heappop(q)
            if d > dist[u]:
                continue
            for v, w in adj[u]:
                if d + w < dist.get(v, 1e18):
                    dist[v] = d + w
                    heapq.heappush(q, (d + w, v))
        f.write(" ".join("%d" % round(dist.get(k, 0) * 1000) for k in keep) + "\n")
PY
mapfile -t NAMES <"$WORK/names"
mapfile -t LAT <"$WORK/latency"	# row k: one-way us from island k to each
N=${#NAMES[@]}
MAXLAT_US=$(tr ' ' '\n' <"$WORK/latency" | sort -n | tail -1)
ACCESS_GBPS=$(python3 -c "print(100 / $SCALE * 1432 / 1514)")

# --- the schedule, planned at the scaled capacities -------------------------
if [ -f "$SCHED" ]; then
	cp "$SCHED" "$WORK/run.sched"
	SCHED_NAME=$(basename "$SCHED")
else
	case "$SCHED" in
	best) PSCHED=all ;;
	all-to-all|regional|pairs|triangles|search) PSCHED=$SCHED ;;
	*) die "--schedule: a name (all-to-all, regional, pairs, triangles, search, best) or a file" ;;
	esac
	echo "testbed: planning $N islands at 1/$SCALE capacity, payload $PAYLOAD_B B, memory $MEMORY_B B" >&2
	# isthmusd replicates by unicast fan-out from the sender's edge.
	if ! "$PLAN" --sites "$WORK/sites.csv" --links "$WORK/plan-links.csv" \
		--payload-bytes "$PAYLOAD_B" --memory-bytes "$MEMORY_B" --replication edge \
		--access-gbps "$ACCESS_GBPS" --chunk-bytes "$CHUNK_B" \
		--schedule "$PSCHED" --search-seconds 3 --quiet \
		--out "$WORK/run.sched" >"$WORK/plan.txt" 2>"$WORK/plan.err"; then
		cat "$WORK/plan.txt" "$WORK/plan.err" >&2
		die "planner found no feasible schedule"
	fi
	SCHED_NAME=$(awk '/^\* [a-z]/ {print $2; exit}' "$WORK/plan.txt")
	[ -n "$SCHED_NAME" ] || SCHED_NAME=$PSCHED
	sed 's/^/  plan: /' "$WORK/plan.txt" | grep -v '^  plan: *$' >&2 || true
fi
T_NS=$(awk '$1 == "round-ns" {print $2}' "$WORK/run.sched")
[ -n "$T_NS" ] || die "schedule has no round-ns"
PLANNED_MS=$(python3 -c "print('%.1f' % ($T_NS / 1e6))")
SCHED_PAYLOAD=$(awk '$1 == "payload-bytes" {print $2}' "$WORK/run.sched")
ELEMS=$(( (SCHED_PAYLOAD + 3) / 4 ))

# An edge needs room for the chunks in flight even when the plan assumes
# aligned arrivals (M = 0): one round's chunks from every peer at most.
EDGE_MEM=$MEMORY_B
NCHUNKS=$(( (SCHED_PAYLOAD + CHUNK_B - 1) / CHUNK_B ))
FLOOR=$(( (NCHUNKS + 64) * 1472 * 2 ))
[ "$EDGE_MEM" -ge "$FLOOR" ] || EDGE_MEM=$FLOOR
# Unfinished chunks leave at the round's end + slack; the island waits for
# them for a grace period past its deadline. A tail lost near the round's
# end is repaired one round trip later: the slack covers the longest.
SLACK_MS=$(( 2 * MAXLAT_US / 1000 + 20 ))

# --- links and namespaces ---------------------------------------------------
mac() { printf '02:%02x:%s:%s:00:%02x' "$1" "${RID:0:2}" "${RID:2:2}" "$2"; }
sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
# Island k lives in namespace isth-RID-k, its edge in isth-RID-ek (a host of
# its own: the af_packet PMD's fanout groups are per namespace and would
# collide between processes), the WAN emulator in the root namespace.
#   island eth0 (ti) <-> ta [edge] tw <-> te (emulator port k)
for ((k = 0; k < N; k++)); do
	ns=isth-$RID-$k
	ens=isth-$RID-e$k
	ip netns add "$ns"; NSS+=("$ns")
	ip netns add "$ens"; NSS+=("$ens")
	ip link add "ta$RID$k" address "$(mac 1 $k)" type veth peer name "ti$RID$k" address "$(mac 2 $k)"
	ip link set "ti$RID$k" netns "$ns"
	ip link set "ta$RID$k" netns "$ens"
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "ti$RID$k" name eth0
	ip -n "$ns" addr add "10.10.$k.2/24" dev eth0
	ip -n "$ns" link set eth0 up
	# The island's kernel would leave UDP checksums to an offload that a
	# veth never performs; the edge verifies them, so compute them here.
	ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null 2>&1 || true
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
	ip -n "$ns" neigh replace "10.10.$k.1" lladdr "$(mac 1 $k)" dev eth0 nud permanent
	ip link add "tw$RID$k" address "$(mac 3 $k)" type veth peer name "te$RID$k" address "$(mac 4 $k)"
	LINKS_MADE+=("te$RID$k")
	ip link set "tw$RID$k" netns "$ens"
	ip netns exec "$ens" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
	ip -n "$ens" link set lo up
	ip -n "$ens" link set "ta$RID$k" up
	ip -n "$ens" link set "tw$RID$k" up
	sysctl -qw "net.ipv6.conf.te$RID$k.disable_ipv6=1" 2>/dev/null || true
	ip link set "te$RID$k" up
done

# --- WAN emulator -----------------------------------------------------------
{
	echo "# testbed $RID: site map (doc/wan.md)"
	for ((k = 0; k < N; k++)); do
		echo "${NAMES[$k]} port=net_af_packet$k mac=$(mac 3 $k) gw_mac=$(mac 4 $k) net=10.0.$k.0/24"
	done
} >"$WORK/wan.map"
WAN_ARGS=(--no-huge -m 512 "--file-prefix=isth${RID}w" -l 0 --no-pci --no-telemetry
	  --log-level=lib.*:error)
for ((k = 0; k < N; k++)); do
	WAN_ARGS+=("--vdev=net_af_packet$k,iface=te$RID$k")
done
# The links file is already scaled (the planner saw the same one).
WAN_ARGS+=(-- --sites "$WORK/sites.csv" --links "$WORK/links.csv" --site-map "$WORK/wan.map"
	   --scale 1 --seed "$SEED" --idle-us 200)
[ "$LOSS" = 0 ] || WAN_ARGS+=(--loss "$LOSS")
[ "$DUP" = 0 ] || WAN_ARGS+=(--dup "$DUP")
[ "$REORDER" = 0 ] || WAN_ARGS+=(--reorder "$REORDER")
[ "$CORRUPT" = 0 ] || WAN_ARGS+=(--corrupt "$CORRUPT")
"$WAN" "${WAN_ARGS[@]}" >"$WORK/wan.log" 2>&1 &
PIDS+=($!)

# --- edges ------------------------------------------------------------------
# Start edge $1 in its namespace, in the background; its pid goes to
# edge$1.pid. Edges run a few rounds more than the islands when one is
# restarted, so that its island can still play every round.
start_edge() {
	local k=$1 main=$(($1 % 2)) other
	local -a vdevs
	other=$((1 - main))
	if [ "$PMD" = af_xdp ]; then
		# lib/xdp's program steers isthmus traffic to the AF_XDP socket
		# and leaves the rest to the edge namespace's kernel
		vdevs=("--vdev=net_af_xdp0,iface=ta$RID$k,xdp_prog=$XDP_OBJ"
		       "--vdev=net_af_xdp1,iface=tw$RID$k,xdp_prog=$XDP_OBJ")
	else
		vdevs=("--vdev=net_af_packet0,iface=ta$RID$k" "--vdev=net_af_packet1,iface=tw$RID$k")
	fi
	ip netns exec "isth-$RID-e$k" \
	"$EDGE" --no-huge -m 256 "--file-prefix=isth${RID}e$k" -l "$main,$other" \
		--main-lcore "$main" --no-pci --log-level=lib.*:error \
		"${vdevs[@]}" \
		-- --config "$WORK/edge$k.conf" --rounds $((ROUNDS + 1 + EXTRA_ROUNDS)) 2>&1 &
	echo $! >"$WORK/edge$k.pid"
}
EXTRA_ROUNDS=0
[ "$RESTART" -ge 0 ] && EXTRA_ROUNDS=$(( 4 + 4000000000 / T_NS ))
EPOCH=$(( ( $(date +%s) + STARTUP ) * 1000000000 ))
for ((k = 0; k < N; k++)); do
	{
		echo "[isthmusd]"
		echo "island = ${NAMES[$k]}"
		echo "job = 1"
		echo "schedule = $WORK/run.sched"
		echo "epoch = $EPOCH"
		echo "dtype = $DTYPE"
		echo "[access]"
		echo "port = net_${PMD}0"
		[ "$PMD" = af_xdp ] && echo "xdp_iface = ta$RID$k"
		echo "ip = 10.10.$k.1"
		echo "island_ip = 10.10.$k.2"
		echo "island_mac = $(mac 2 $k)"
		echo "[wan]"
		echo "tail_wait = 20ms"
		echo "port = net_${PMD}1"
		[ "$PMD" = af_xdp ] && echo "xdp_iface = tw$RID$k"
		echo "ip = 10.0.$k.1"
		echo "gateway_mac = $(mac 4 $k)"
		read -r -a lat <<<"${LAT[$k]}"
		for ((j = 0; j < N; j++)); do
			[ "$j" = "$k" ] && continue
			echo "[peer ${NAMES[$j]}]"
			echo "ip = 10.0.$j.1"
			echo "latency = ${lat[$j]}us"
		done
		echo "[agg]"
		echo "memory = $EDGE_MEM"
		echo "round_slack = ${SLACK_MS}ms"
		echo "[pace]"
		echo "queue = 16384"
		echo "[poll]"
		echo "idle_polls = 16"
		echo "idle_sleep = 200us"
	} >"$WORK/edge$k.conf"
	start_edge "$k" >"$WORK/edge$k.log"
	PIDS+=($!)
done

# --restart-edge K: stop edge K during round 1 and start it again with the
# same command (same epoch and schedule): it must rejoin at a round
# boundary. Its island misses the rounds in between and catches up.
if [ "$RESTART" -ge 0 ]; then
	(
		T_MS=$(( T_NS / 1000000 ))
		until [ "$(date +%s%N)" -ge $(( EPOCH + 3 * T_NS / 2 )) ]; do sleep 0.01; done
		pid=$(cat "$WORK/edge$RESTART.pid")
		kill -INT "$pid" 2>/dev/null
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
		echo "testbed: edge $RESTART stopped during round 1; restarting" >&2
		start_edge "$RESTART" >"$WORK/edge$RESTART.restart.log"
		wait
	) &
	PIDS+=($!)
fi

# --- islands ----------------------------------------------------------------
IPIDS=()
GRACE=$(( SLACK_MS + 40 ))
for ((k = 0; k < N; k++)); do
	extra=()
	[ "$k" = "$SILENT" ] && extra=(--stop-after 1)
	ip netns exec "isth-$RID-$k" "$ISLAND" --job 1 --island "$k" --islands "$N" \
		--edge "10.10.$k.1:9471" --bind "10.10.$k.2:9471" --rounds "$ROUNDS" \
		--dtype "$DTYPE" --elems "$ELEMS" --timeout $((STARTUP + 30)) \
		--grace "$GRACE" "${extra[@]}" >"$WORK/island$k.log" 2>&1 &
	IPIDS+=($!)
	PIDS+=($!)
done

echo "testbed: $N islands, schedule $SCHED_NAME (T $PLANNED_MS ms planned at 1/$SCALE), $ROUNDS rounds, epoch in ${STARTUP}s; logs in $WORK" >&2
# Progress: island 0's per-round lines as they come.
# (tail --pid: it ends with this script, whatever happens)
( tail --pid=$$ -n +1 -f "$WORK/island0.log" 2>/dev/null | grep --line-buffered '^round' | sed -u 's/^/  island0: /' >&2 ) &
TAILPID=$!
PIDS+=($TAILPID)

ifail=0
for p in "${IPIDS[@]}"; do
	wait "$p" || ifail=$((ifail + 1))
done
# SIGPIPE: bash reports no "Terminated" for it
pkill -PIPE -P "$TAILPID" 2>/dev/null || true
kill -PIPE "$TAILPID" 2>/dev/null || true

# Stop edges and the WAN, collect their final counters.
for f in "$WORK"/edge*.pid; do kill -INT "$(cat "$f")" 2>/dev/null || true; done
for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
PIDS=()

python3 - "$WORK" "$N" "$ROUNDS" "$SCHED_NAME" "$PLANNED_MS" "$ifail" <<'PY'
import re, sys
work, n, rounds, name, planned, ifail = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
keys = ["aggregates", "verified", "wrong", "partial", "missing", "nacks", "resent"]
tot = dict.fromkeys(keys, 0)
means, finished = [], 0
for k in range(n):
    line = None
    for l in open("%s/island%d.log" % (work, k), errors="replace"):
        if l.startswith("ISLAND "):
            line = l
    if line is None:
        print("testbed: island %d printed no summary:" % k, file=sys.stderr)
        print("".join(open("%s/island%d.log" % (work, k)).readlines()[-5:]), file=sys.stderr)
        continue
    f = dict(x.split("=", 1) for x in line.split()[1:])
    for key in keys:
        tot[key] += int(f[key])
    if int(f["rounds"]) == rounds:
        finished += 1
    means.append(float(f["round_ms_mean"]))
mean = sum(means) / len(means) if means else 0.0
print("SUMMARY schedule=%s islands=%d rounds=%d aggregates=%d verified=%d wrong=%d partial=%d missing=%d nacks=%d resent=%d round_ms_mean=%.1f round_ms_planned=%s"
      % (name, n, rounds, tot["aggregates"], tot["verified"], tot["wrong"], tot["partial"],
         tot["missing"], tot["nacks"], tot["resent"], mean, planned))
open(work + "/summary", "w").write("%d %d\n" % (tot["wrong"], finished))
PY
read -r WRONG FINISHED <"$WORK/summary"
if [ "$WRONG" = 0 ] && [ "$FINISHED" = "$N" ]; then
	FAILED=0
	exit 0
fi
exit 1
