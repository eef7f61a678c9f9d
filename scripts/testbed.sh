#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The whole of isthmus on one machine (doc/testbed.md): N islands in network
# namespaces, N edges (isthmusd on net_af_packet over veth), and the WAN
# emulator (isthmus-wan, in a namespace of its own) joining the edges over
# the topology's links at scaled capacities, with the schedule isthmus-plan
# computes for those very capacities. Every aggregate each island receives
# is checked against the exact sum; the last line is the SUMMARY.
#
#   scripts/testbed.sh run [options]          a complete isthmus job, checked
#   scripts/testbed.sh up [options] [-- CMD]  sites on the emulated WAN for
#                                             your own commands (doc/testbed.md)
#   scripts/testbed.sh exec ENV SITE CMD...   run CMD in a site's namespace
#   scripts/testbed.sh down ENV               stop what `up` started
#   scripts/testbed.sh clean [RID...]         remove what crashed runs left
#
# Needs root (namespaces, veth). Everything a run creates carries a run id
# (RID) in its name and is removed on exit, failure or signal; a kill -9 of
# this script is answered by its children (PR_SET_PDEATHSIG, which the
# exported ISTH_TESTBED asks them for) and by a watchdog that runs
# `clean RID` once the script is gone.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF=$ROOT/scripts/$(basename "$0")
# Runs register here (owner pid and start time, run directory), so that
# `clean` tells a crashed run from a live one.
REG=/run/isthmus-testbed

usage() {
	cat <<'USAGE'
usage: scripts/testbed.sh run [options]
       scripts/testbed.sh up [options] [--edges] [--env FILE] [-- CMD [ARG...]]
       scripts/testbed.sh exec ENV SITE CMD [ARG...]
       scripts/testbed.sh down ENV
       scripts/testbed.sh clean [--unregistered] [RID...]

run: islands, edges and the WAN emulator for R rounds; prints, last,
  SUMMARY schedule=.. islands=.. rounds=.. aggregates=.. verified=.. wrong=..
          partial=.. missing=.. nacks=.. resent=.. round_ms_mean=.. round_ms_planned=.. lost=..
Exit 0 only if wrong=0 and every island finished every round.

up: one namespace per site whose eth0 goes through isthmus-wan (kernel TCP
and UDP over the emulated WAN, 10.0.K.2), a management bridge (mgmt0,
172.30.0.K+1, out of band, no emulation), and an env file (names and
addresses, doc/testbed.md). With CMD: runs CMD (env file's variables in its
environment) and tears everything down when it exits, with its status.
Without: stays up until `down ENV` (or SIGINT/SIGTERM). With --edges the
sites are islands behind edges (isthmusd, schedule as for run) instead:
run your own islands there.

exec: SITE is an index (0..N-1), a site name, 'wan' or 'mgmt'; SITE/H is
host H of that island (up --edges --island-hosts K).
clean: without RID, every registered run whose script is gone; RID: that
run whatever its state; --unregistered: also isth-* namespaces, DPDK run
directories and veths of runs that never registered (older scripts).

Topology and schedule:
  --sites F --links F     topology (default: conf/topologies/nine-city-*.csv)
  --islands N             use the first N sites (default: all; the links among
                          them must connect them)
  --schedule NAME|FILE    all-to-all, regional, pairs, triangles, search, tree,
                          best (the planner's winner, default), or a schedule
                          file; tree: every round reduced up spanning trees of
                          the edges and sent down them (doc/isthmusd.md, "Tree
                          rounds")
                          (one that records another replication or element
                          type than --replication and --dtype is refused)
  --payload-bytes B       bytes each island sends per round, as really sent
                          (default 130K: 1.3 GB at full scale with --scale 10000)
  --memory-bytes M        aggregation memory per edge, as really used
                          (default 0: the planner aligns arrivals; the edge
                          still holds the few chunks in flight, see doc)
  --scale K               capacities divided by K, latencies real (default 10000:
                          100 Gbit/s links become 10 Mbit/s)
  --routing capacity|shortest
                          the planner's routes (default capacity: a stream may
                          leave the shortest path for a less loaded one);
                          isthmus-wan routes every round by the schedule's
                          route lines, so what is planned is what runs
  --expected-loss P       the WAN loss the planner plans for (isthmus-plan
                          --expected-loss: it keeps 3P/(1+2P) of every WAN
                          link free for repairs, doc/planner.md). Default: the
                          loss the testbed emulates, so that a declared loss
                          gets a plan for it: --loss p (and --corrupt c,
                          refused frames being lost ones: 1-(1-p)(1-c)), or
                          --ge's stationary rate (P*LB + R*LG)/(P+R) instead
                          of --loss, as isthmus-wan applies it; 0.01 when
                          nothing is emulated; at most 0.5. Given: it wins.
                          Not with a schedule file
  --repair-headroom F     the planner plans every WAN link at (1-F) of its
                          scaled capacity (isthmus-plan --repair-headroom),
                          leaving F free for repairs; isthmus-wan keeps the
                          full capacity (default 0; the larger of F and the
                          expected loss's wins; not with a schedule file)
  --replication edge|network
                          edge (default): each edge sends one unicast copy of
                          its island's DATA per peer, needing nothing of the
                          WAN; network (the paper's): one copy to the round's
                          WAN multicast group, replicated by isthmus-wan at
                          the branch points of the planned tree (group table
                          generated from the schedule; doc/testbed.md). With
                          a schedule file: its own 'replication' line
  --queue-ms D            WAN link queues: D ms at the link's capacity (default
                          run: 1000; up: isthmus-wan's, 100)
  --prio-queue-ms D       a priority class on every WAN link for frames marked
                          DSCP EF (the edges' repairs and NACKs), served before
                          the rest from a queue of D ms at the link's capacity
                          (default 50; 0: none, repairs queue behind DATA;
                          doc/testbed.md)
Run:
  --rounds R              rounds to play (default 5; up --edges: unlimited)
  --dtype int32|fp32|bf16 tensor type (default int32); bf16: DATA and sums
                          in bfloat16, planned at 2 bytes an element (the
                          bytes that cross the links); up: also any (the
                          edges check no type, planned at 4 bytes an element)
  --startup S             first try: epoch S seconds after the edges start
                          (default 8). The epoch holds only if every edge and
                          island is ready T + 0.5 s before it; else all are
                          restarted with 1.25 times the time they took
  --ready-timeout S       give up (exit 2, naming who was not ready) after S
                          seconds of tries (default 120)
Impairments on every WAN link (seeded, reproducible):
  --loss P --dup P --reorder P --corrupt P   probabilities in [0, 1]
  --ge P/R/LB[/LG]        Gilbert-Elliott bursty loss (isthmus-wan --ge): e.g.
                          0.00204/0.1/1 is a 2 % average in bursts of 10 packets
  --seed S                (default 1)
  --slack-rtts K          edges sum repairs until the round's end + K longest
                          round trips + 20 ms ([agg] round_slack; islands wait
                          that + 40 ms), at most T - 40 ms but at least one
                          round trip: more room for NACK retries under loss
                          (default 2; doc/testbed.md)
  --last-nack-copies C    the edges' [wan] last_nack_copies: each of the last
                          three NACK attempts before the cutoff leaves C times
                          (default: isthmusd's, 2)
  --nack-echoes E         the edges' [wan] nack_echoes: each of those NACKs
                          leaves with E echoes right behind it, served only if
                          the NACK was lost (default: isthmusd's, 3; 0: none)
Faults:
  --silent-island K       island K stops sending after its first round
  --restart-edge K[:N]    stop edge K during round 1 and start it again: it
                          rejoins at a round boundary; peers see partials
                          naming island K meanwhile. N times (default 1):
                          each next stop once island K has played the round
                          the edge joined at; joins in RUNDIR/restarts
  --kill-edge K           kill -9 edge K and its island in the middle of round
                          1 (the site is gone, not restarted); the others'
                          results name who is missing (with tree rounds: K's
                          subtree). The run then needs the other N - 1 islands
                          to finish
  --pause-wan R[:S]       stop isthmus-wan (SIGSTOP) at the start of round R
                          for S seconds (default 2), then SIGCONT: a WAN
                          outage; times in RUNDIR/pause
  --keep DIR              keep logs and configs in DIR (default: a temp dir,
                          removed unless the run fails)
  --pmd af_packet|af_xdp  edge PMD (default af_packet); af_xdp loads lib/xdp's
                          steering program on each edge port (doc/xdp.md)
  --workers N             worker lcores per edge (default 1; isthmusd -l with
                          N + 1 lcores over the two CPUs: worker k sums the
                          chunks with chunk % N == k and sends the island's
                          DATA of each round to its share of the round's
                          peers, doc/isthmusd.md); with af_packet both ports get
                          qpairs=N (a TX queue per worker)
  --island-sockets S      sockets each island receives on (default 1): the
                          edges' [access] island_sockets = S and the islands'
                          --sockets S --rx-threads on (AGG stream k to port
                          9471 + k % S, read by that socket's thread)
  --island-hosts K        run, up --edges: every island is K hosts (1..16,
                          default 1), K namespaces behind its edge on a
                          bridge (isth-RID-k is host 0, isth-RID-k-H host H,
                          10.10.k.(2+H)); up: the env file names them
                          (TB_HOST_NS_k_H, TB_HOST_IP_k_H) and `exec ENV k/H`
                          runs in host H of site k; run: host H runs
                          isthmus-island --hosts K --host H for
                          its chunk range; the edge's [access] island_hosts
                          names them; with --auth on (the default) every
                          host reads island-k.key (the island's key, its
                          hosts share it). Host H's log: island<k>.h<H>.log
                          (host 0: island<k>.log)
  --kill-island-host K:H[:R]
                          kill -9 host H of island K at the start of round R
                          (default 1): its peers' aggregates of its chunk
                          range go partial, naming island K; the run does
                          not wait for it (RUNDIR/killed says when)
  --metrics-port P        every edge serves its metrics ([metrics] listen) on
                          127.0.0.1:P in its own namespace (isth-RID-eK), so
                          runs side by side never collide; 0: a free port,
                          named in the edge's log ("metrics on http://...");
                          scrape with ip netns exec isth-RID-eK curl ...
  --auth on|off           authenticated wire format (default on): per-run key
                          files (isthmus-keys: a job file, random 256-bit
                          master, and per site island-<k>.key, edge-<k>.key,
                          mode 0600) in the run directory, each process given
                          only its own site's; off:
                          version 1, edges and islands say so loudly
up:
  --edges                 islands behind edges instead of sites on the WAN
  --env FILE              where to write the env file (default RUNDIR/env)

Environment: BUILD (default build) is the meson build directory.
USAGE
}

die() { echo "testbed: $*" >&2; exit 2; }

# The share of frames the emulated WAN loses on a link, as isthmus-wan
# applies the options: --ge replaces --loss (isthmus-wan's per-frame order:
# the Gilbert-Elliott state steps, good->bad with P and bad->good with R,
# then the frame is lost with LB in bad or LG in good, so the chain is in
# bad P/(P+R) of the time; with P = R = 0 it stays good), and a corrupted
# frame is refused by its receiver: lost too. 0.01 (a realistic WAN) when
# nothing is emulated; at most 0.5 (isthmus-plan's bound).
emulated_loss() {
	awk -v loss="$LOSS" -v ge="$GE" -v cor="$CORRUPT" 'BEGIN {
		p = loss
		if (ge != "") {
			n = split(ge, g, "/")
			lg = n >= 4 ? g[4] : 0
			p = g[1] + g[2] > 0 ? (g[1] * g[3] + g[2] * lg) / (g[1] + g[2]) : lg
		}
		p = 1 - (1 - p) * (1 - cor)
		if (p == 0)
			p = 0.01
		if (p > 0.5)
			p = 0.5
		printf "%.6g\n", p
	}'
}

# Start time of process $1 (field 22 of /proc/PID/stat), empty if gone:
# with the pid it names a process unambiguously.
proc_start() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) }
	# shellcheck disable=SC2086
	set -- $s
	echo "${20}"
}

reg_get() { sed -n "s/^$2=//p" "$REG/$1" 2>/dev/null; }

run_alive() {
	local pid start
	pid=$(reg_get "$1" pid)
	start=$(reg_get "$1" start)
	[ -n "$pid" ] && [ -n "$start" ] && [ "$(proc_start "$pid")" = "$start" ]
}

# Remove everything of run $1: its processes (every process in its
# namespaces), namespaces (and with them its veths), DPDK run directories,
# shared memory, and its run directory unless kept.
clean_run() {
	local rid=$1 ns p work keep n=0
	local -a nss pids=()
	mapfile -t nss < <(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^isth-$rid-" || true)
	for ns in "${nss[@]}"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			pids+=("$p")
			kill -KILL "$p" 2>/dev/null || true
		done
	done
	for p in "${pids[@]}"; do
		while [ -e "/proc/$p" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
	done
	for ns in "${nss[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	# veths of older runs lived in the root namespace
	for p in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
		   grep -E "^t[aiwe]$rid[0-9]+$|^t[jk]$rid[0-9]+x[0-9]+$" || true); do
		ip link del "$p" 2>/dev/null || true
	done
	rm -rf /var/run/dpdk/isth"$rid"* 2>/dev/null || true
	rm -f /dev/shm/*isth"$rid"* 2>/dev/null || true
	if [ -f "$REG/$rid" ]; then
		work=$(reg_get "$rid" work)
		keep=$(reg_get "$rid" keep)
		[ "$keep" = 1 ] || [ -z "$work" ] || rm -rf "$work"
		rm -f "$REG/$rid"
	fi
}

cmd_clean() {
	local unreg=0 rid f n=0
	local -a rids=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--unregistered) unreg=1 ;;
		-*) die "clean: unknown option '$1'" ;;
		*) [[ "$1" =~ ^[0-9a-f]{4}$ ]] || die "clean: '$1' is not a run id (4 hex digits)"
		   rids+=("$1") ;;
		esac
		shift
	done
	[ "$(id -u)" -eq 0 ] || die "needs root"
	if [ ${#rids[@]} -eq 0 ]; then
		for f in "$REG"/*; do
			[ -f "$f" ] || continue
			rid=$(basename "$f")
			run_alive "$rid" || rids+=("$rid")
		done
		if [ "$unreg" = 1 ]; then
			for rid in $( { ip netns list 2>/dev/null | awk '{print $1}';
					ls /var/run/dpdk 2>/dev/null; } |
				      sed -nE 's/^isth-?([0-9a-f]{4})([-a-z].*|[0-9]*)$/\1/p' | sort -u); do
				[ -f "$REG/$rid" ] || rids+=("$rid")
			done
		fi
	fi
	for rid in "${rids[@]}"; do
		clean_run "$rid"
		echo "testbed: cleaned run $rid" >&2
		n=$((n + 1))
	done
	[ $n -gt 0 ] || echo "testbed: nothing to clean" >&2
}

# The watchdog: `__watch RID PID START` waits for the script (pid and start
# time) to be gone, then cleans its run. Detached (setsid) and outside
# every namespace of the run, so that nothing of the run takes it along.
cmd_watch() {
	local rid=$1 pid=$2 start=$3
	while [ "$(proc_start "$pid")" = "$start" ]; do sleep 0.2; done
	[ -f "$REG/$rid" ] && clean_run "$rid"
	exit 0
}

# Env file of a running `up`: its variables in this shell.
load_env() {
	[ -f "$1" ] || die "no env file '$1'"
	set -a
	# shellcheck disable=SC1090
	. "$1"
	set +a
}

cmd_exec() {
	[ $# -ge 3 ] || die "usage: testbed.sh exec ENV SITE CMD [ARG...]"
	local env=$1 site=$2 ns= k
	shift 2
	load_env "$env"
	case "$site" in
	wan) ns=$TB_WAN_NS ;;
	mgmt) ns=$TB_MGMT_NS ;;
	*)
		for ((k = 0; k < TB_N; k++)); do
			v=TB_SITE_$k
			if [ "$site" = "$k" ] || [ "$site" = "${!v}" ]; then
				v=TB_NS_$k
				ns=${!v}
			fi
		done ;;
	esac
	if [[ "$site" =~ ^(.+)/([0-9]+)$ ]]; then
		# host H of an island of several hosts (up --island-hosts)
		for ((k = 0; k < TB_N; k++)); do
			v=TB_SITE_$k
			[ "${BASH_REMATCH[1]}" = "$k" ] || [ "${BASH_REMATCH[1]}" = "${!v}" ] || continue
			v=TB_HOST_NS_${k}_${BASH_REMATCH[2]}
			ns=${!v:-}
		done
	fi
	[ -n "$ns" ] || die "exec: no site '$site' in $env (0..$((TB_N - 1)), a name of: $TB_SITES, wan, mgmt; SITE/H: host H of ${TB_ISLAND_HOSTS:-1})"
	exec ip netns exec "$ns" "$@"
}

cmd_down() {
	[ $# -eq 1 ] || die "usage: testbed.sh down ENV"
	local n=0
	load_env "$1"
	if [ "$(proc_start "$TB_PID")" != "$TB_PID_START" ]; then
		echo "testbed: run $TB_RID is not up (already down)" >&2
		exit 0
	fi
	kill -TERM "$TB_PID"
	while [ "$(proc_start "$TB_PID")" = "$TB_PID_START" ]; do
		[ $n -lt 600 ] || die "run $TB_RID (pid $TB_PID) did not stop in 30 s"
		sleep 0.05
		n=$((n + 1))
	done
}

CMD=${1:-}
case "$CMD" in
run|up) shift ;;
exec) shift; cmd_exec "$@" ;;
down) shift; cmd_down "$@"; exit 0 ;;
clean) shift; cmd_clean "$@"; exit 0 ;;
__watch) shift; cmd_watch "$@" ;;
-h|--help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

BUILD=${BUILD:-build}
SITES=$ROOT/conf/topologies/nine-city-sites.csv
LINKS=$ROOT/conf/topologies/nine-city-links.csv
ISLANDS=0
SCHED=best
PAYLOAD=130K
MEMORY=0
SCALE=10000
ROUTING=capacity
HEADROOM=0
EXP_LOSS=
REPL=
QUEUE_MS=
PRIO_QUEUE_MS=50
SLACK_RTTS=2
NACK_COPIES=
NACK_ECHOES=
ROUNDS=
DTYPE=int32
STARTUP=8
READY_TIMEOUT=120
LOSS=0 DUP=0 REORDER=0 CORRUPT=0 SEED=1 GE=
SILENT=-1
RESTART=-1
KILL=-1
RESTARTS=1
PAUSE=
KEEP=
PMD=af_packet
AUTH=on
WORKERS=1
ISOCKS=1
IHOSTS=1
KILL_HOST=
METRICS_PORT=
EDGES=0
ENVF=
USERCMD=()

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
	--routing) ROUTING=$2; shift 2 ;;
	--repair-headroom) HEADROOM=$2; shift 2 ;;
	--expected-loss) EXP_LOSS=$2; shift 2 ;;
	--replication) REPL=$2; shift 2 ;;
	--queue-ms) QUEUE_MS=$2; shift 2 ;;
	--prio-queue-ms) PRIO_QUEUE_MS=$2; shift 2 ;;
	--loss) LOSS=$2; shift 2 ;;
	--dup) DUP=$2; shift 2 ;;
	--reorder) REORDER=$2; shift 2 ;;
	--corrupt) CORRUPT=$2; shift 2 ;;
	--ge) GE=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--slack-rtts) SLACK_RTTS=$2; shift 2 ;;
	--last-nack-copies) NACK_COPIES=$2; shift 2 ;;
	--nack-echoes) NACK_ECHOES=$2; shift 2 ;;
	--dtype) DTYPE=$2; shift 2 ;;
	--startup) STARTUP=$2; STARTUP_SET=1; shift 2 ;;
	--ready-timeout) READY_TIMEOUT=$2; shift 2 ;;
	--silent-island) SILENT=$2; shift 2 ;;
	--kill-edge) KILL=$2; shift 2 ;;
	--restart-edge)
		[[ "$2" =~ ^([0-9]+)(:([0-9]+))?$ ]] || die "--restart-edge: K or K:N (island, restarts)"
		RESTART=${BASH_REMATCH[1]}
		RESTARTS=${BASH_REMATCH[3]:-1}
		[ "$RESTARTS" -ge 1 ] || die "--restart-edge K:N: N >= 1"
		shift 2 ;;
	--pause-wan) PAUSE=$2; shift 2 ;;
	--keep) KEEP=$2; shift 2 ;;
	--pmd) PMD=$2; shift 2 ;;
	--auth) AUTH=$2; shift 2 ;;
	--workers) WORKERS=$2; shift 2 ;;
	--island-sockets) ISOCKS=$2; shift 2 ;;
	--island-hosts) IHOSTS=$2; shift 2 ;;
	--kill-island-host) KILL_HOST=$2; shift 2 ;;
	--metrics-port) METRICS_PORT=$2; shift 2 ;;
	--edges) [ "$CMD" = up ] || die "--edges: only with up"; EDGES=1; shift ;;
	--env) [ "$CMD" = up ] || die "--env: only with up"; ENVF=$(realpath -m "$2"); shift 2 ;;
	--) [ "$CMD" = up ] || die "'--': only with up"; shift; USERCMD=("$@"); break ;;
	-h|--help) usage; exit 0 ;;
	*) die "unknown option '$1' (scripts/testbed.sh --help)" ;;
	esac
done

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces and veth)"
case "$DTYPE" in int32|fp32|bf16) ;; any) [ "$CMD" = up ] || die "--dtype any: only with up" ;;
*) die "--dtype: int32, fp32 or bf16 (up: or any, the edges admitting every type)" ;; esac
# Bytes of an element as planned and carried: the schedule's payload is
# what crosses the links, 2 bytes a bf16 element (isthmusd does the same
# with [isthmusd] dtype = bf16; 'any' plans at 4, doc/isthmusd.md)
ESIZE=4
[ "$DTYPE" = bf16 ] && ESIZE=2
case "$PMD" in af_packet|af_xdp) ;; *) die "--pmd: af_packet or af_xdp" ;; esac
case "$AUTH" in on|off) ;; *) die "--auth: on or off" ;; esac
[[ "$WORKERS" =~ ^[0-9]+$ ]] && [ "$WORKERS" -ge 1 ] && [ "$WORKERS" -le 16 ] ||
	die "--workers: 1 to 16"
[[ "$ISOCKS" =~ ^[0-9]+$ ]] && [ "$ISOCKS" -ge 1 ] && [ "$ISOCKS" -le 16 ] ||
	die "--island-sockets: 1 to 16"
[[ "$IHOSTS" =~ ^[0-9]+$ ]] && [ "$IHOSTS" -ge 1 ] && [ "$IHOSTS" -le 16 ] ||
	die "--island-hosts: 1 to 16"
if [ "$IHOSTS" -gt 1 ]; then
	[ "$CMD" = run ] || [ "$EDGES" = 1 ] || die "--island-hosts: only with run or up --edges"
fi
KILL_K=-1 KILL_H=-1 KILL_R=1
if [ -n "$KILL_HOST" ]; then
	[ "$CMD" = run ] || die "--kill-island-host: only with run"
	[[ "$KILL_HOST" =~ ^([0-9]+):([0-9]+)(:([0-9]+))?$ ]] ||
		die "--kill-island-host: K:H or K:H:R (island, host, round)"
	KILL_K=${BASH_REMATCH[1]} KILL_H=${BASH_REMATCH[2]} KILL_R=${BASH_REMATCH[4]:-1}
	[ "$KILL_H" -lt "$IHOSTS" ] || die "--kill-island-host: host $KILL_H is not below --island-hosts $IHOSTS"
fi
[ -z "$METRICS_PORT" ] || { [[ "$METRICS_PORT" =~ ^[0-9]+$ ]] && [ "$METRICS_PORT" -le 65535 ]; } ||
	die "--metrics-port: 0 to 65535"
case "$ROUTING" in capacity|shortest) ;; *) die "--routing: capacity or shortest" ;; esac
# The default: a schedule file's own 'replication' line, else edge, as
# isthmusd's [wan] replication (doc/planner.md, "Replication")
if [ -z "$REPL" ] && [ -f "$SCHED" ]; then
	REPL=$(awk '$1 == "replication" && NF == 2 { print $2; exit } $1 == "rounds" { exit }' "$SCHED")
fi
REPL=${REPL:-edge}
case "$REPL" in edge|network) ;; *) die "--replication: edge or network" ;; esac
if [ "$CMD" = run ]; then
	ROUNDS=${ROUNDS:-5}
	EDGES=1
	# isthmusd's streams are planned and paced, but a round's DATA to a
	# peer leaves in bursts of tens of KB that converge on shared links:
	# 100 ms (125 KB at 10 Mbit/s) measured tail drops on 4 links of 18.
	# About the old 1 MiB at the default scale; TCP peers (up) get the
	# emulator's 100 ms.
	QUEUE_MS=${QUEUE_MS:-1000}
fi
[ -z "$ROUNDS" ] || { [[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ]; } || die "--rounds: a positive integer"
[[ "$SCALE" =~ ^[0-9]+$ ]] && [ "$SCALE" -ge 1 ] || die "--scale: a positive integer"
[[ "$STARTUP" =~ ^[0-9]+$ ]] && [ "$STARTUP" -ge 1 ] || die "--startup: a positive integer (seconds)"
[[ "$SLACK_RTTS" =~ ^[1-9]$ ]] || die "--slack-rtts: 1 to 9 (longest round trips)"
[ -z "$EXP_LOSS" ] || { [[ "$EXP_LOSS" =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] &&
	awk -v p="$EXP_LOSS" 'BEGIN { exit !(p <= 0.5) }'; } ||
	die "--expected-loss: a fraction of the frames lost, 0 to 0.5 (0.01 is 1 %), not '$EXP_LOSS'"
[ -z "$NACK_COPIES" ] || [[ "$NACK_COPIES" =~ ^[1-4]$ ]] ||
	die "--last-nack-copies: 1 to 4 (copies of each of the last NACK attempts)"
[ -z "$NACK_ECHOES" ] || [[ "$NACK_ECHOES" =~ ^[0-8]$ ]] ||
	die "--nack-echoes: 0 to 8 (echoes of each of the last NACK attempts and their copies)"
[[ "$READY_TIMEOUT" =~ ^[0-9]+$ ]] && [ "$READY_TIMEOUT" -ge 1 ] || die "--ready-timeout: a positive integer (seconds)"
[ -z "$QUEUE_MS" ] || [[ "$QUEUE_MS" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--queue-ms: a number of milliseconds"
[[ "$PRIO_QUEUE_MS" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--prio-queue-ms: a number of milliseconds (0: no priority class)"
[ "$KILL" = -1 ] || [[ "$KILL" =~ ^[0-9]+$ ]] || die "--kill-edge: an island number"
if [ "$CMD" = up ] && { [ "$SILENT" -ge 0 ] || [ "$RESTART" -ge 0 ] || [ "$KILL" -ge 0 ] || [ -n "$PAUSE" ]; }; then
	die "--silent-island, --restart-edge, --kill-edge, --pause-wan: only with run"
fi
PAUSE_ROUND=-1 PAUSE_S=2
if [ -n "$PAUSE" ]; then
	[[ "$PAUSE" =~ ^([0-9]+)(:([0-9]+(\.[0-9]+)?))?$ ]] || die "--pause-wan: R or R:S (round, seconds)"
	PAUSE_ROUND=${BASH_REMATCH[1]}
	PAUSE_S=${BASH_REMATCH[3]:-2}
fi

case "$BUILD" in /*) BDIR=$BUILD ;; *) BDIR=$ROOT/$BUILD ;; esac
PLAN=$BDIR/app/isthmus-plan/isthmus-plan
EDGE=$BDIR/app/isthmusd/isthmusd
WAN=$BDIR/app/isthmus-wan/isthmus-wan
ISLAND=$BDIR/app/isthmus-island/isthmus-island
KEYS=$BDIR/app/isthmus-keys/isthmus-keys
XDP_OBJ=$BDIR/lib/xdp/isth_xdp.bpf.o
if [ "$PMD" = af_xdp ]; then
	[ -f "$XDP_OBJ" ] || die "$XDP_OBJ missing: lib/xdp was not built (clang, bpftool)"
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || die "cannot mount bpffs"
fi
for b in "$PLAN" "$EDGE" "$WAN" "$ISLAND" "$KEYS"; do
	[ -x "$b" ] || die "$b missing: build first (meson setup $BUILD && ninja -C $BUILD)"
done

# Sizes as the planner and the config reader parse them.
# (awk, not python: a python start costs seconds on a loaded machine)
size_bytes() {
	[[ "$1" =~ ^([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|K|M|G|T)?$ ]] || return 1
	awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" 'BEGIN {
		m["K"] = 1e3; m["M"] = 1e6; m["G"] = 1e9; m["T"] = 1e12
		m["Ki"] = 2^10; m["Mi"] = 2^20; m["Gi"] = 2^30; m["Ti"] = 2^40
		printf "%d\n", n * (u == "" ? 1 : m[u]) }'
}
PAYLOAD_B=$(size_bytes "$PAYLOAD") || die "--payload-bytes: bad size"
MEMORY_B=$(size_bytes "$MEMORY") || die "--memory-bytes: bad size"
# DATA elements per packet at MTU 1500: 358; authenticated (version 2),
# room for the WAN tag list of k = min(n - 1, 15) peers (8 + 16k bytes)
# leaves 356 - 4k (doc/protocol.md, "Sizes"). n is known once the
# topology is read (below): chunk_elems N.
chunk_elems() {
	local k=$(($1 - 1))
	[ "$AUTH" = off ] && { echo 358; return; }
	[ $k -gt 15 ] && k=15
	[ $k -lt 1 ] && k=1
	echo $((356 - 4 * k))
}
ELEMS=$(( (PAYLOAD_B + ESIZE - 1) / ESIZE ))

# --- the run: id, registration, watchdog ----------------------------------
# The id is taken by creating the registry entry (noclobber): two runs
# started at once cannot share one.
mkdir -p "$REG"
for try in $(seq 1 64); do
	RID=$(printf '%04x' $(( (RANDOM * 32768 + RANDOM + $$) % 65536 )))
	if ! ip netns list 2>/dev/null | grep -q "^isth-$RID-" &&
	   ( set -C; : >"$REG/$RID" ) 2>/dev/null; then
		break
	fi
	RID=
done
[ -n "$RID" ] || die "no free run id in $REG"
export ISTH_TESTBED=$RID
if [ -n "$KEEP" ]; then
	WORK=$(realpath -m "$KEEP"); mkdir -p "$WORK"
else
	WORK=$(mktemp -d "/tmp/isth-tb-$RID-XXXX")
fi
MYSTART=$(proc_start $$)
printf 'pid=%s\nstart=%s\nwork=%s\nkeep=%s\n' $$ "$MYSTART" "$WORK" "$([ -n "$KEEP" ] && echo 1 || echo 0)" >"$REG/$RID"
setsid "$SELF" __watch "$RID" $$ "$MYSTART" </dev/null >/dev/null 2>&1 &
PIDS=()
NSS=()
FAILED=1

cleanup() {
	set +e
	for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do
		n=0
		while kill -0 "$p" 2>/dev/null && [ $n -lt 20 ]; do sleep 0.05; n=$((n + 1)); done
		kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null
	done
	# what is left in the run's namespaces (an edge started again by
	# --restart-edge), the namespaces with their veths, DPDK run files
	if [ -z "$KEEP" ] && [ "$FAILED" != 0 ]; then
		# kept for the post-mortem: tell clean_run not to remove it
		sed -i 's/^keep=0$/keep=1/' "$REG/$RID"
		echo "testbed: logs kept in $WORK" >&2
	fi
	clean_run "$RID"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- authentication: the run's key files (doc/security.md) --------------------
# One job (1), one epoch (1) from round 0: isthmus-keys writes the job file
# (a master key from getrandom, mode 0600) and, once the number of sites
# is known below, one file per site (isthmus-keys split, each 0600 and
# renamed into place whole). Edge k reads only keys/edge-k.key ([auth]
# key_file) and island k only keys/island-k.key (--key-file), so no
# process of the run holds a key that seals as another site's; the job
# file stays in the run directory for tools (TB_KEY_FILE).
KEYF=$WORK/job.key
KEYD=$WORK/keys
if [ "$AUTH" = on ] && [ "$EDGES" = 1 ]; then
	"$KEYS" generate --job 1 --epoch 1 --out "$KEYF" >/dev/null || die "cannot write the key file $KEYF"
	[ "$(stat -c %a "$KEYF")" = 600 ] || die "key file $KEYF: mode $(stat -c %a "$KEYF"), want 600"
fi

# --- topology: the first N sites, capacities scaled -------------------------
TB_AUTH=$AUTH TB_ESIZE=$ESIZE python3 - "$SITES" "$LINKS" "$ISLANDS" "$SCALE" "$WORK" <<'PY' || die "bad topology"
import os, sys
sites_f, links_f, n, scale, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rows = [l for l in open(sites_f) if l.strip() and not l.startswith("#")]
hdr, sites = rows[0], rows[1:]
if n == 0:
    n = len(sites)
if n < 2 or n > len(sites):
    sys.exit("--islands: 2..%d" % len(sites))
# A DATA frame carries 1432 payload bytes (with auth, less the tag list
# room: chunk_elems() above, the same rule) in 1514 bytes on the wire
# (Ethernet 14, IPv4 20, UDP 8, isthmus 40): the planner, whose rates are
# payload rates, plans on that goodput; the emulator carries wire bytes.
# A bf16 frame carries as many elements at 2 bytes: half the payload in
# a frame shorter by as much.
elems = 358 if os.environ["TB_AUTH"] == "off" else 356 - 4 * max(1, min(n - 1, 15))
esize = int(os.environ["TB_ESIZE"])
goodput = elems * esize / (1514.0 - elems * (4 - esize))
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
CHUNK_ELEMS=$(chunk_elems "$N")
CHUNK_B=$((CHUNK_ELEMS * ESIZE))
if [ "$AUTH" = on ] && [ "$EDGES" = 1 ]; then
	"$KEYS" split --job-file "$KEYF" --n-islands "$N" --out "$KEYD" >/dev/null ||
		die "cannot write the site key files into $KEYD"
fi
MAXLAT_US=$(tr ' ' '\n' <"$WORK/latency" | sort -n | tail -1)
ACCESS_GBPS=$(awk -v k="$SCALE" -v c="$CHUNK_B" -v e="$CHUNK_ELEMS" \
	'BEGIN { printf "%.9g\n", 100 / k * c / (1514 - 4 * e + c) }')

if [ "$EDGES" = 1 ]; then
# --- the schedule, planned at the scaled capacities -------------------------
if [ -f "$SCHED" ]; then
	[ "$HEADROOM" = 0 ] || die "--repair-headroom: only when the testbed plans (not with a schedule file)"
	[ -z "$EXP_LOSS" ] || die "--expected-loss: only when the testbed plans (not with a schedule file)"
	cp "$SCHED" "$WORK/run.sched"
	SCHED_NAME=$(basename "$SCHED")
	# the edges refuse a file planned for another replication or element
	# type (doc/schedule-file.md, version 3); say so before starting them
	awk -v repl="$REPL" -v dt="$DTYPE" -v f="$SCHED" '
		$1 == "replication" && NF == 2 && $2 != repl {
			printf "%s:%d: planned for replication %s; the testbed runs --replication %s\n", f, NR, $2, repl
			bad = 1; exit }
		$1 == "dtype" && NF == 2 && dt != "any" && $2 != dt {
			printf "%s:%d: planned for dtype %s; the testbed runs --dtype %s\n", f, NR, $2, dt
			bad = 1; exit }
		$1 == "rounds" { exit }
		END { exit bad }' "$SCHED" >"$WORK/sched.check" || die "$(cat "$WORK/sched.check")"
else
	case "$SCHED" in
	best) PSCHED=all ;;
	all-to-all|regional|pairs|triangles|search|tree) PSCHED=$SCHED ;;
	*) die "--schedule: a name (all-to-all, regional, pairs, triangles, search, tree, best) or a file" ;;
	esac
	# the loss the WAN is declared to have: what the testbed emulates,
	# unless given (doc/planner.md, "Headroom from the expected loss")
	[ -n "$EXP_LOSS" ] || EXP_LOSS=$(emulated_loss)
	echo "testbed: planning $N islands at 1/$SCALE capacity, payload $PAYLOAD_B B, memory $MEMORY_B B, expected loss $EXP_LOSS" >&2
	# planned as it runs: the edges' replication and element type (the
	# file records both; the edges refuse a file that disagrees with their
	# config), and the routes that isthmus-wan follows (its route lines)
	PLAN_DTYPE=()
	[ "$DTYPE" = any ] || PLAN_DTYPE=(--dtype "$DTYPE")
	if ! "$PLAN" --sites "$WORK/sites.csv" --links "$WORK/plan-links.csv" \
		--payload-bytes "$PAYLOAD_B" --memory-bytes "$MEMORY_B" --replication "$REPL" \
		"${PLAN_DTYPE[@]}" \
		--routing "$ROUTING" --repair-headroom "$HEADROOM" --expected-loss "$EXP_LOSS" \
		--access-gbps "$ACCESS_GBPS" --chunk-bytes "$CHUNK_B" \
		--schedule "$PSCHED" --search-seconds 3 --quiet \
		--out "$WORK/run.sched" >"$WORK/plan.txt" 2>"$WORK/plan.err"; then
		cat "$WORK/plan.txt" "$WORK/plan.err" >&2
		die "planner found no feasible schedule"
	fi
	SCHED_NAME=$(awk '/^\* [a-z]/ {print $2; exit}' "$WORK/plan.txt")
	[ -n "$SCHED_NAME" ] || SCHED_NAME=$PSCHED
	[ "$PSCHED" != tree ] || grep -q '^tree ' "$WORK/run.sched" ||
		die "--schedule tree: the planner wrote no tree line"
	sed 's/^/  plan: /' "$WORK/plan.txt" | grep -v '^  plan: *$' >&2 || true
fi
T_NS=$(awk '$1 == "round-ns" {print $2}' "$WORK/run.sched")
[ -n "$T_NS" ] || die "schedule has no round-ns"
PLANNED_MS=$(awk -v t="$T_NS" 'BEGIN { printf "%.1f\n", t / 1e6 }')
SCHED_PAYLOAD=$(awk '$1 == "payload-bytes" {print $2}' "$WORK/run.sched")
# The edges time their tail NACKs by the one-way latency to each peer: a
# planned detour is longer than the shortest path, so take the longest
# planned path of the pair over the cycle where the file routes it.
python3 - "$WORK/run.sched" "$WORK/links.csv" "$WORK/names" "$WORK/latency" <<'PY' || die "bad routes in the schedule"
import sys
sched, links, names, latf = sys.argv[1:5]
names = [l.strip() for l in open(names) if l.strip()]
lat = [[int(x) for x in l.split()] for l in open(latf)]
one = {}
for l in open(links):
    c = l.split(",")
    if l.startswith("#") or len(c) < 4 or c[0] == "a":
        continue
    one[(c[0].strip(), c[1].strip())] = one[(c[1].strip(), c[0].strip())] = float(c[2])
isl = {}
for l in open(sched):
    f = l.split()
    if len(f) == 3 and f[0] == "island":
        isl[int(f[1])] = f[2]
    if len(f) == 5 and f[0] == "route":
        hops = [isl[int(h)] for h in f[4].split(",")]
        us = round(sum(one[(a, b)] for a, b in zip(hops, hops[1:])) * 1000)
        j, i = names.index(hops[0]), names.index(hops[-1])
        lat[j][i] = max(lat[j][i], us)
open(latf, "w").write("".join(" ".join(str(x) for x in r) + "\n" for r in lat))
PY
mapfile -t LAT <"$WORK/latency"
ELEMS=$(( (SCHED_PAYLOAD + ESIZE - 1) / ESIZE ))

# An edge needs room for the chunks in flight even when the plan assumes
# aligned arrivals (M = 0): one round's chunks from every peer at most.
EDGE_MEM=$MEMORY_B
NCHUNKS=$(( (SCHED_PAYLOAD + CHUNK_B - 1) / CHUNK_B ))
FLOOR=$(( (NCHUNKS + 64) * 1472 * 2 ))
[ "$IHOSTS" -le "$NCHUNKS" ] || die "--island-hosts $IHOSTS: more hosts than the round's $NCHUNKS chunks"
[ "$EDGE_MEM" -ge "$FLOOR" ] || EDGE_MEM=$FLOOR
# Unfinished chunks leave at the round's end + slack; the island waits for
# them for a grace period past its deadline. A tail lost near the round's
# end is repaired one round trip later: the slack covers the longest.
SLACK_MS=$(( SLACK_RTTS * 2 * MAXLAT_US / 1000 + 20 ))
# ... but the islands wait for a round's last aggregates until its
# deadline + slack + 40 ms, and keep two rounds in flight (isthmus-island
# --overlap): a wait longer than T holds round r + 2's DATA until round
# r has ended, so that on a short round (system-pause's 333 ms against a
# slack of 480) every partial round made the next ones late, islands
# skipped rounds and an outage was never caught up. At most T - 40 ms
# then, and never less than one round trip (the slack before repair was
# on by default).
SLACK_CAP=$(( T_NS / 1000000 - 40 ))
SLACK_MIN=$(( 2 * MAXLAT_US / 1000 + 20 ))
[ "$SLACK_MS" -le "$SLACK_CAP" ] || SLACK_MS=$SLACK_CAP
[ "$SLACK_MS" -ge "$SLACK_MIN" ] || SLACK_MS=$SLACK_MIN

fi
# --- links and namespaces ---------------------------------------------------
mac() { printf '02:%02x:%s:%s:00:%02x' "$1" "${RID:0:2}" "${RID:2:2}" "$2"; }
newns() {
	ip netns add "$1"
	NSS+=("$1")
	ip -n "$1" link set lo up
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
	ip netns exec "$1" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
}
# veth A (MAC ma) in namespace na, named nameA there, to B likewise
veth() {
	local a=$1 ma=$2 na=$3 an=$4 b=$5 mb=$6 nb=$7 bn=$8
	ip link add "$a" address "$ma" type veth peer name "$b" address "$mb"
	ip link set "$a" netns "$na"
	ip link set "$b" netns "$nb"
	[ "$an" = "$a" ] || ip -n "$na" link set "$a" name "$an"
	[ "$bn" = "$b" ] || ip -n "$nb" link set "$b" name "$bn"
	ip -n "$na" link set "$an" up
	ip -n "$nb" link set "$bn" up
}
# The kernel leaves TCP/UDP checksums (and TSO segmentation) to an offload
# that a veth never performs: an edge, or isthmus-wan reading through
# af_packet, would see partial checksums (doc/wan.md). Compute them here.
no_offload() { ip netns exec "$1" ethtool -K "$2" tx off tso off gso off >/dev/null 2>&1 || true; }

# --island-hosts K: island k's hosts on a bridge (br0 in isth-RID-bk) with
# the edge's access link: host H in isth-RID-k (H = 0) or isth-RID-k-H,
# eth0 10.10.k.(2+H), MAC mac 2 k (H = 0) or mac 16+H k
island_host_ns() { if [ "$2" = 0 ]; then echo "isth-$RID-$1"; else echo "isth-$RID-$1-$2"; fi; }
island_host_mac() { if [ "$2" = 0 ]; then mac 2 "$1"; else mac $((16 + $2)) "$1"; fi; }
island_hosts_wire() {
	local k=$1 h hns bns=isth-$RID-b$k
	newns "$bns"
	ip -n "$bns" link add br0 type bridge
	ip -n "$bns" link set br0 up
	veth "ti$RID$k" "$(mac 8 $k)" "$bns" up0 "ta$RID$k" "$(mac 1 $k)" "isth-$RID-e$k" "ta$RID$k"
	ip -n "$bns" link set up0 master br0
	for ((h = 0; h < IHOSTS; h++)); do
		hns=$(island_host_ns "$k" "$h")
		[ "$h" = 0 ] || newns "$hns"
		veth "tj$RID${k}x$h" "$(island_host_mac "$k" "$h")" "$hns" eth0 \
			"tk$RID${k}x$h" "$(mac $((32 + h)) $k)" "$bns" "tk$RID${k}x$h"
		ip -n "$bns" link set "tk$RID${k}x$h" master br0
		ip -n "$hns" addr add "10.10.$k.$((2 + h))/24" dev eth0
		no_offload "$hns" eth0
		ip -n "$hns" neigh replace "10.10.$k.1" lladdr "$(mac 1 $k)" dev eth0 nud permanent
	done
}

# Every namespace of the run is isth-RID-*:
#   isth-RID-w    isthmus-wan, one port (te) per site
#   isth-RID-k    site k: an island (run, up --edges) or a host on the WAN (up)
#   isth-RID-ek   edge k (isthmusd): a host of its own, as the af_packet
#                 PMD's fanout groups are per namespace and would collide
#   isth-RID-m    up: the management bridge (mgmt0 of every site)
# Addresses are fixed inside these namespaces: runs do not see each other's.
WNS=isth-$RID-w
MNS=isth-$RID-m
newns "$WNS"
for ((k = 0; k < N; k++)); do
	ns=isth-$RID-$k
	newns "$ns"
	if [ "$EDGES" = 1 ]; then
		# island eth0 (10.10.k.2) <-> ta [edge k] tw (10.0.k.1) <-> te [wan]
		ens=isth-$RID-e$k
		newns "$ens"
		if [ "$IHOSTS" -gt 1 ]; then
			island_hosts_wire "$k"
		else
			veth "ti$RID$k" "$(mac 2 $k)" "$ns" eth0 "ta$RID$k" "$(mac 1 $k)" "$ens" "ta$RID$k"
			ip -n "$ns" addr add "10.10.$k.2/24" dev eth0
			no_offload "$ns" eth0
			ip -n "$ns" neigh replace "10.10.$k.1" lladdr "$(mac 1 $k)" dev eth0 nud permanent
		fi
		veth "tw$RID$k" "$(mac 3 $k)" "$ens" "tw$RID$k" "te$RID$k" "$(mac 4 $k)" "$WNS" "te$RID$k"
	else
		# site eth0 (10.0.k.2) <-> te [wan], which answers for 10.0.k.1
		veth "ts$RID$k" "$(mac 5 $k)" "$ns" eth0 "te$RID$k" "$(mac 4 $k)" "$WNS" "te$RID$k"
		ip -n "$ns" addr add "10.0.$k.2/24" dev eth0
		no_offload "$ns" eth0
		ip -n "$ns" neigh replace "10.0.$k.1" lladdr "$(mac 4 $k)" dev eth0 nud permanent
		ip -n "$ns" route add 10.0.0.0/16 via "10.0.$k.1" dev eth0
	fi
done
if [ "$CMD" = up ]; then
	# out of band: a bridge, no emulation (rendezvous, Open MPI's oob)
	newns "$MNS"
	ip -n "$MNS" link add mgmt type bridge
	ip -n "$MNS" addr add 172.30.0.254/24 dev mgmt
	ip -n "$MNS" link set mgmt up
	for ((k = 0; k < N; k++)); do
		veth "tm$RID$k" "$(mac 6 $k)" "isth-$RID-$k" mgmt0 "tb$RID$k" "$(mac 7 $k)" "$MNS" "tb$RID$k"
		ip -n "$MNS" link set "tb$RID$k" master mgmt
		ip -n "isth-$RID-$k" addr add "172.30.0.$((k + 1))/24" dev mgmt0
	done
fi

# --- readiness ----------------------------------------------------------------
# wait_line PID FILE REGEX DEADLINE_NS: 0 once FILE has a line matching
# REGEX, 1 at the deadline, 3 if PID ended first.
wait_line() {
	while :; do
		grep -qE "$3" "$2" 2>/dev/null && return 0
		kill -0 "$1" 2>/dev/null || { grep -qE "$3" "$2" 2>/dev/null && return 0; return 3; }
		[ "$(date +%s%N)" -lt "$4" ] || return 1
		sleep 0.05
	done
}
died() {
	echo "testbed: $1 exited before it was ready; its log ($2):" >&2
	tail -5 "$2" >&2
	exit 2
}

# --- WAN emulator -----------------------------------------------------------
{
	echo "# testbed $RID: site map (doc/wan.md)"
	for ((k = 0; k < N; k++)); do
		if [ "$EDGES" = 1 ]; then
			echo "${NAMES[$k]} port=net_af_packet$k mac=$(mac 3 $k) gw_mac=$(mac 4 $k) net=10.0.$k.0/24"
		else
			echo "${NAMES[$k]} port=net_af_packet$k mac=$(mac 5 $k) gw_mac=$(mac 4 $k) gw=10.0.$k.1 net=10.0.$k.0/24"
		fi
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
[ -z "$QUEUE_MS" ] || WAN_ARGS+=(--queue-ms "$QUEUE_MS")
# the edges mark repairs and NACKs EF ([wan] repair_dscp): they overtake
# the DATA queued at a bottleneck (doc/wan.md, "Priority class")
WAN_ARGS+=(--prio-queue-ms "$PRIO_QUEUE_MS")
[ "$LOSS" = 0 ] || WAN_ARGS+=(--loss "$LOSS")
[ "$DUP" = 0 ] || WAN_ARGS+=(--dup "$DUP")
[ "$REORDER" = 0 ] || WAN_ARGS+=(--reorder "$REORDER")
[ "$CORRUPT" = 0 ] || WAN_ARGS+=(--corrupt "$CORRUPT")
[ -z "$GE" ] || WAN_ARGS+=(--ge "$GE")
if [ "$EDGES" = 1 ]; then
	# the planned routes, from the epoch on (sent once chosen, below)
	WAN_ARGS+=(--schedule "$WORK/run.sched" --epoch-file "$WORK/epoch")
	if [ "$REPL" = network ]; then
		# isthmusd's groups (doc/isthmusd.md): 239.192.0.0 + cycle round
		# * 64 + the clique's lowest island, members the clique's sites
		awk '$1 == "island" { name[$2] = $3 }
		     $1 == "round" {
			for (k = 3; k <= NF; k++) {
				# the clique bitmap, 0x hex (no strtonum in mawk)
				h = tolower(substr($k, 3)); c = 0
				for (i = 1; i <= length(h); i++)
					c = c * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
				low = -1; m = ""
				for (i = 0; i < 64 && c > 0; i++) {
					if (c % 2) { if (low < 0) low = i; m = m " " name[i]; n++ }
					c = int(c / 2)
				}
				if (split(m, x, " ") < 2) continue
				g = $2 * 64 + low
				printf "239.192.%d.%d%s\n", int(g / 256), g % 256, m
			}
		     }' "$WORK/run.sched" >"$WORK/wan.groups"
		WAN_ARGS+=(--groups "$WORK/wan.groups")
	fi
fi
ip netns exec "$WNS" "$WAN" "${WAN_ARGS[@]}" >"$WORK/wan.log" 2>&1 &
WANPID=$!
PIDS+=($WANPID)
T_START=$(date +%s)
rc=0
wait_line $WANPID "$WORK/wan.log" 'isthmus-wan: .*running' $(( ( T_START + READY_TIMEOUT ) * 1000000000 )) || rc=$?
[ $rc = 3 ] && died isthmus-wan "$WORK/wan.log"
[ $rc = 0 ] || die "isthmus-wan not ready within ${READY_TIMEOUT}s (logs in $WORK)"

# --- edges ------------------------------------------------------------------
# Start edge $1 in its namespace, in the background; its pid goes to
# edge$1.pid. Edges run a few rounds more than the islands when one is
# restarted, so that its island can still play every round.
start_edge() {
	local k=$1 main=$(($1 % 2)) other i lc
	local -a vdevs rounds=() lcores
	other=$((1 - main))
	lcores=(-l "$main,$other" --main-lcore "$main")
	if [ "$WORKERS" -gt 1 ]; then
		# lcore 0 (the controller) on the edge's CPU, the workers
		# alternating over both (two CPUs here)
		lc="0@$main"
		for ((i = 1; i <= WORKERS; i++)); do lc+=",$i@$(((main + i) % 2))"; done
		lcores=("--lcores=$lc" --main-lcore 0)
	fi
	if [ "$PMD" = af_xdp ]; then
		# lib/xdp's program steers isthmus traffic to the AF_XDP socket
		# and leaves the rest to the edge namespace's kernel
		vdevs=("--vdev=net_af_xdp0,iface=ta$RID$k,xdp_prog=$XDP_OBJ"
		       "--vdev=net_af_xdp1,iface=tw$RID$k,xdp_prog=$XDP_OBJ")
	else
		# several workers: both ports with a socket pair per worker
		# (qpairs), so that worker k sends its AGG stream to the island
		# and the island's DATA to its peers on TX queue k itself; the
		# kernel spreads received flows over the RX sockets by hash,
		# and worker 0 polls every one (doc/isthmusd.md, "Workers")
		# The access port's ring holds 4096 frames, not the PMD's 512:
		# an island sends its whole contribution in one burst (727
		# frames for the lm's 0.9 MB), and what the edge has not polled
		# when the ring fills is dropped by the kernel, unrepaired (an
		# island's DATA is not NACKed). 8 MiB of kernel ring per queue
		# and direction (the PMD sizes its TX ring alike).
		local qp=""
		[ "$WORKERS" -le 1 ] || qp=",qpairs=$WORKERS"
		vdevs=("--vdev=net_af_packet0,iface=ta$RID$k$qp,framecnt=4096"
		       "--vdev=net_af_packet1,iface=tw$RID$k$qp")
	fi
	[ -z "$ROUNDS" ] || rounds=(--rounds $((ROUNDS + 1 + EXTRA_ROUNDS)))
	ip netns exec "isth-$RID-e$k" \
	"$EDGE" --no-huge -m 256 "--file-prefix=isth${RID}e$k" "${lcores[@]}" \
		--no-pci --log-level=lib.*:error \
		"${vdevs[@]}" \
		-- --config "$WORK/edge$k.conf" "${rounds[@]}" 2>&1 &
	echo $! >"$WORK/edge$k.pid"
}
write_edge_conf() {
	local k=$1 j
	local -a lat
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
		# source pinning: isthmus frames from anyone but the island
		# (access) or a peer edge (wan) are dropped in XDP (doc/xdp.md)
		[ "$PMD" = af_xdp ] && echo "xdp_pin_sources = on"
		echo "ip = 10.10.$k.1"
		if [ "$IHOSTS" -gt 1 ]; then
			hl=
			for ((h = 0; h < IHOSTS; h++)); do hl+=" 10.10.$k.$((2 + h))/$(island_host_mac "$k" "$h")"; done
			echo "island_hosts =$hl"
		else
			echo "island_ip = 10.10.$k.2"
			echo "island_mac = $(mac 2 $k)"
		fi
		[ "$ISOCKS" -gt 1 ] && echo "island_sockets = $ISOCKS"
		echo "[wan]"
		echo "tail_wait = 20ms"
		[ -n "$NACK_COPIES" ] && echo "last_nack_copies = $NACK_COPIES"
		[ -n "$NACK_ECHOES" ] && echo "nack_echoes = $NACK_ECHOES"
		echo "port = net_${PMD}1"
		[ "$PMD" = af_xdp ] && echo "xdp_iface = tw$RID$k"
		[ "$PMD" = af_xdp ] && echo "xdp_pin_sources = on"
		echo "ip = 10.0.$k.1"
		echo "gateway_mac = $(mac 4 $k)"
		echo "replication = $REPL"
		read -r -a lat <<<"${LAT[$k]}"
		for ((j = 0; j < N; j++)); do
			[ "$j" = "$k" ] && continue
			echo "[peer ${NAMES[$j]}]"
			echo "ip = 10.0.$j.1"
			echo "latency = ${lat[$j]}us"
		done
		echo "[agg]"
		# at least the plan's peak for this edge (schedule version 2)
		peak=$(awk -v k="$k" '$1 == "peak-bytes" && $2 == k {print $3}' "$WORK/run.sched")
		echo "memory = $(( ${peak:-0} > EDGE_MEM ? ${peak:-0} : EDGE_MEM ))"
		echo "round_slack = ${SLACK_MS}ms"
		echo "[pace]"
		echo "queue = 16384"
		echo "[poll]"
		echo "idle_polls = 16"
		echo "idle_sleep = 200us"
		if [ -n "$METRICS_PORT" ]; then
			# the edge's own namespace: its loopback, no other run's
			echo "[metrics]"
			echo "listen = 127.0.0.1:$METRICS_PORT"
		fi
		echo "[auth]"
		if [ "$AUTH" = on ]; then
			echo "mode = on"
			echo "key_file = $KEYD/edge-$k.key"
		else
			echo "mode = off"
		fi
	} >"$WORK/edge$k.conf"
}
# Rounds island k plays. With --restart-edge K, island K takes no ROUND
# while its edge is down and so plays its last rounds later (by number)
# than the others: they play the edges' extra rounds too, so that island
# K's rounds after the rejoin have peers that still send.
island_rounds() {
	if [ "$RESTART" -ge 0 ] && [ "$1" != "$RESTART" ]; then
		echo $((ROUNDS + EXTRA_ROUNDS))
	else
		echo "$ROUNDS"
	fi
}
# Host $2 (default 0) of island $1's log: island<k>.log, island<k>.h<H>.log.
island_log() { if [ "${2:-0}" = 0 ]; then echo "$WORK/island$1.log"; else echo "$WORK/island$1.h$2.log"; fi; }
start_island() {
	local k=$1 h
	local -a extra=() hx=()
	[ "$k" = "$SILENT" ] && extra=(--stop-after 1)
	if [ "$AUTH" = on ]; then extra+=(--key-file "$KEYD/island-$k.key"); else extra+=(--auth off); fi
	[ "$ISOCKS" -gt 1 ] && extra+=(--sockets "$ISOCKS" --rx-threads on)
	# --island-hosts K: host h sends and gets its chunk range; host 0's
	# pid in IPIDS, the others' in HPIDS (their logs in HLOGS)
	for ((h = 0; h < IHOSTS; h++)); do
		[ "$IHOSTS" = 1 ] || hx=(--hosts "$IHOSTS" --host "$h")
		ip netns exec "$(island_host_ns "$k" "$h")" "$ISLAND" --job 1 --island "$k" --islands "$N" \
			--edge "10.10.$k.1:9471" --bind "10.10.$k.$((2 + h)):9471" --rounds "$(island_rounds "$k")" \
			--dtype "$DTYPE" --elems "$ELEMS" --timeout $((margin + 30)) \
			--grace "$GRACE" "${extra[@]}" "${hx[@]}" >"$(island_log "$k" "$h")" 2>&1 &
		echo $! >"$WORK/island$k.h$h.pid"
		if [ "$h" = 0 ]; then
			IPIDS[$k]=$!
		else
			HPIDS+=($!)
			HLOGS+=("$(island_log "$k" "$h")")
		fi
	done
}
stop_pids() {
	local p
	for p in "$@"; do kill -INT "$p" 2>/dev/null || true; done
	for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

EXTRA_ROUNDS=0
EPIDS=()
IPIDS=()
HPIDS=()
HLOGS=()
GRACE=
if [ "$EDGES" = 1 ]; then
	# island K misses the rounds its edge is down (about 4 s a restart
	# on an idle machine; 6 s allowed) and the one it was stopped in
	[ "$RESTART" -ge 0 ] && EXTRA_ROUNDS=$(( 4 + RESTARTS * (2 + 6000000000 / T_NS) ))
	GRACE=$(( SLACK_MS + 40 ))
	# Readiness: isthmusd takes the epoch when it starts, so the epoch is
	# chosen when the edges start and holds only if every edge (its
	# ports started: its "epoch ... (in S s)" line) and every island
	# (socket bound: its first line) is ready one round plus 0.5 s before
	# it. Otherwise all are stopped and started again with twice the
	# margin, until --ready-timeout.
	GUARD_NS=$(( T_NS + 500000000 ))
	T_END=$(( (T_START + READY_TIMEOUT) * 1000000000 ))
	# Not more: isthmusd edges left idle for ~30 s before the epoch were
	# measured to lose a peer's whole round (system-silent, doc/testbed.md)
	margin=$STARTUP
	while :; do
		t_try=$(date +%s%N)
		EPOCH=$(( ( t_try / 1000000000 + margin ) * 1000000000 ))
		# isthmus-wan takes the epoch (SIGHUP, --epoch-file) before any
		# edge can send: it routes round r by the plan from then on
		echo "$EPOCH" >"$WORK/epoch.tmp" && mv "$WORK/epoch.tmp" "$WORK/epoch"
		kill -HUP "$WANPID"
		rc=0
		wait_line $WANPID "$WORK/wan.log" "^isthmus-wan: epoch $EPOCH\$" "$T_END" || rc=$?
		[ $rc = 0 ] || die "isthmus-wan did not take the epoch (logs in $WORK)"
		for ((k = 0; k < N; k++)); do
			write_edge_conf "$k"
			start_edge "$k" >"$WORK/edge$k.log"
			EPIDS[$k]=$!
		done
		HPIDS=() HLOGS=()
		[ "$CMD" = run ] && for ((k = 0; k < N; k++)); do start_island "$k"; done
		# Wait for all of them (up to the timeout, even past the epoch:
		# how long they took sizes the next try), then judge.
		late=() notready=()
		for ((k = 0; k < N + ${#IPIDS[@]} + ${#HPIDS[@]}; k++)); do
			if [ $k -lt $N ]; then
				who="edge $k" pid=${EPIDS[$k]} log=$WORK/edge$k.log
				re='isthmusd: island .* epoch [0-9]+ \(in'
			elif [ $k -lt $((N + ${#IPIDS[@]})) ]; then
				who="island $((k - N))" pid=${IPIDS[$((k - N))]} log=$WORK/island$((k - N)).log
				re='^isthmus-island: island '
			else
				# --island-hosts: hosts 1.. of every island
				log=${HLOGS[$((k - N - ${#IPIDS[@]}))]}
				who="island host ${log##*/island}" pid=${HPIDS[$((k - N - ${#IPIDS[@]}))]}
				re='^isthmus-island: island '
			fi
			rc=0
			wait_line "$pid" "$log" "$re" $((EPOCH - GUARD_NS)) || rc=$?
			[ $rc = 3 ] && died "$who" "$log"
			[ $rc = 0 ] && continue
			late+=("$who")
			rc=0
			wait_line "$pid" "$log" "$re" "$T_END" || rc=$?
			[ $rc = 3 ] && died "$who" "$log"
			[ $rc = 0 ] || notready+=("$who")
		done
		[ ${#late[@]} -eq 0 ] && break
		t_ready=$(date +%s%N)
		stop_pids "${EPIDS[@]}" "${IPIDS[@]}" "${HPIDS[@]}"
		if [ ${#notready[@]} -gt 0 ]; then
			die "not ready within --ready-timeout ${READY_TIMEOUT}s: ${notready[*]} (logs in $WORK)"
		fi
		# the next epoch: 1.25 times what this try took, plus the guard
		margin=$(( (t_ready - t_try) * 5 / 4 / 1000000000 + GUARD_NS / 1000000000 + 2 ))
		[ $(( $(date +%s) + margin )) -le $((T_END / 1000000000)) ] ||
			die "not ready in time: ${late[*]} took $(( (t_ready - t_try) / 1000000 )) ms; the next try would pass --ready-timeout ${READY_TIMEOUT}s (logs in $WORK)"
		echo "testbed: ${late[*]} ready only $(( (t_ready - t_try) / 1000000 )) ms after start, too close to the epoch; again with ${margin}s" >&2
	done
	PIDS+=("${EPIDS[@]}" "${IPIDS[@]}" "${HPIDS[@]}")
fi

# --- up: the env file, then the user's command or a wait --------------------
if [ "$CMD" = up ]; then
	ENVF=${ENVF:-$WORK/env}
	{
		echo "# scripts/testbed.sh up, run $RID (doc/testbed.md): sourceable"
		echo "TB_RID=$RID"
		echo "TB_PID=$$"
		echo "TB_PID_START=$MYSTART"
		echo "TB_WORK=$WORK"
		echo "TB_N=$N"
		echo "TB_EDGES=$EDGES"
		echo "TB_WAN_NS=$WNS"
		echo "TB_MGMT_NS=$MNS"
		echo "TB_MGMT_IF=mgmt0"
		echo "TB_MGMT_NET=172.30.0.0/24"
		echo "TB_MGMT_HUB_IP=172.30.0.254"
		echo "TB_SITES=\"${NAMES[*]}\""
		nss= dips= mips=
		for ((k = 0; k < N; k++)); do
			if [ "$EDGES" = 1 ]; then dip=10.10.$k.2; else dip=10.0.$k.2; fi
			nss+="isth-$RID-$k " dips+="$dip " mips+="172.30.0.$((k + 1)) "
			echo "TB_SITE_$k=${NAMES[$k]}"
			echo "TB_NS_$k=isth-$RID-$k"
			echo "TB_DATA_IP_$k=$dip"
			echo "TB_MGMT_IP_$k=172.30.0.$((k + 1))"
			if [ "$EDGES" = 1 ]; then
				echo "TB_EDGE_NS_$k=isth-$RID-e$k"
				echo "TB_EDGE_IP_$k=10.10.$k.1"
			fi
			for ((h = 0; h < IHOSTS && IHOSTS > 1; h++)); do
				echo "TB_HOST_NS_${k}_$h=$(island_host_ns "$k" "$h")"
				echo "TB_HOST_IP_${k}_$h=10.10.$k.$((2 + h))"
			done
		done
		# --island-hosts K: the hosts share a bridge behind the edge
		# (eth0, 10.10.k.0/24), their intra-island traffic's network
		echo "TB_ISLAND_HOSTS=$IHOSTS"
		echo "TB_HOST_IF=eth0"
		echo "TB_NS=\"${nss% }\""
		echo "TB_DATA_IPS=\"${dips% }\""
		echo "TB_MGMT_IPS=\"${mips% }\""
		echo "TB_DATA_IF=eth0"
		if [ "$EDGES" = 1 ]; then
			echo "TB_DATA_NET=10.10.0.0/16"
			echo "TB_JOB=1"
			echo "TB_EDGE_PORT=9471"
			echo "TB_SCHED=$WORK/run.sched"
			echo "TB_SCHED_NAME=$SCHED_NAME"
			echo "TB_ROUND_NS=$T_NS"
			echo "TB_EPOCH_NS=$EPOCH"
			echo "TB_ELEMS=$ELEMS"
			echo "TB_GRACE_MS=$GRACE"
			echo "TB_AUTH=$AUTH"
			if [ "$AUTH" = on ]; then echo "TB_KEY_FILE=$KEYF"; echo "TB_KEY_DIR=$KEYD"; fi
		else
			echo "TB_DATA_NET=10.0.0.0/16"
		fi
	} >"$ENVF.tmp"
	mv "$ENVF.tmp" "$ENVF"
	FAILED=0
	if [ ${#USERCMD[@]} -gt 0 ]; then
		echo "testbed: up, run $RID, $N sites; env $ENVF; running ${USERCMD[*]}" >&2
		rc=0
		( load_env "$ENVF"; export TB_ENV=$ENVF; exec "${USERCMD[@]}" ) || rc=$?
		[ $rc = 0 ] || FAILED=1
		exit $rc
	fi
	echo "testbed: up, run $RID, $N sites; env $ENVF; stop with: $SELF down $ENVF" >&2
	echo "UP $ENVF"
	trap 'exit 0' INT TERM
	# Until `down` (SIGTERM); the emulator ending early is a failure.
	rc=0
	wait "$WANPID" || rc=$?
	FAILED=1
	die "isthmus-wan ended (status $rc) while up; its log: $WORK/wan.log"
fi

# --- run: faults, progress, the islands' summaries --------------------------
# --restart-edge K[:N]: stop edge K during round 1 and start it again with
# the same command (same epoch and schedule): it joins at a round boundary
# (its "joining at round J" line). Its island misses the rounds in between
# and catches up. Each next stop waits until island K has logged round J
# (a condition, not a delay). RUNDIR/restarts: "restart I stop_ns S
# join J" per restart, for the tests.
if [ "$RESTART" -ge 0 ]; then
	(
		until [ "$(date +%s%N)" -ge $(( EPOCH + 3 * T_NS / 2 )) ]; do
			[ -e "/proc/$$" ] || exit 0
			sleep 0.01
		done
		for i in $(seq 1 "$RESTARTS"); do
			pid=$(cat "$WORK/edge$RESTART.pid")
			t0=$(date +%s%N)
			kill -INT "$pid" 2>/dev/null
			while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
			[ -e "/proc/$$" ] || exit 0
			echo "testbed: edge $RESTART stopped (restart $i of $RESTARTS); restarting" >&2
			log=$WORK/edge$RESTART.restart$i.log
			start_edge "$RESTART" >"$log"
			until j=$(sed -n 's/^.*isthmusd: joining at round \([0-9]*\).*/\1/p' "$log") && [ -n "$j" ]; do
				[ -e "/proc/$$" ] || exit 0
				kill -0 "$(cat "$WORK/edge$RESTART.pid")" 2>/dev/null || { echo "restart $i stop_ns $t0 join -" >>"$WORK/restarts"; exit 0; }
				sleep 0.05
			done
			echo "restart $i stop_ns $t0 join $j" >>"$WORK/restarts"
			[ "$i" -lt "$RESTARTS" ] || break
			# island K's log: round R clique ... (its result is in)
			until awk -v j="$j" '$1 == "round" && $2 >= j {f = 1} END {exit !f}' \
				"$WORK/island$RESTART.log" 2>/dev/null; do
				[ -e "/proc/$$" ] || exit 0
				sleep 0.05
			done
		done
		wait
	) &
	PIDS+=($!)
fi

# --kill-edge K: edge K and its island killed (-9) in the middle of round 1,
# for good; RUNDIR/killed: "kill_ns S" (the tests count from it).
if [ "$KILL" -ge 0 ]; then
	(
		until [ "$(date +%s%N)" -ge $(( EPOCH + 3 * T_NS / 2 )) ]; do
			[ -e "/proc/$$" ] || exit 0
			sleep 0.01
		done
		kill -KILL "$(cat "$WORK/edge$KILL.pid")" "${IPIDS[$KILL]}" 2>/dev/null
		echo "kill_ns $(date +%s%N)" >"$WORK/killed"
		echo "testbed: edge $KILL and island $KILL killed (-9)" >&2
	) &
	PIDS+=($!)
fi

# --pause-wan R:S: the WAN stops for S s from round R's start (SIGSTOP:
# frames wait in the af_packet rings or are dropped there), then goes on.
if [ "$PAUSE_ROUND" -ge 0 ]; then
	(
		at=$(( EPOCH + PAUSE_ROUND * T_NS ))
		until [ "$(date +%s%N)" -ge "$at" ]; do
			[ -e "/proc/$$" ] || exit 0
			sleep 0.01
		done
		kill -STOP "$WANPID"
		t0=$(date +%s%N)
		sleep "$PAUSE_S"	# the outage's length, not a synchronisation
		kill -CONT "$WANPID"
		t1=$(date +%s%N)
		echo "epoch_ns=$EPOCH round_ns=$T_NS stop_ns=$t0 cont_ns=$t1" >"$WORK/pause"
		echo "testbed: isthmus-wan stopped for $(( (t1 - t0) / 1000000 )) ms from round $PAUSE_ROUND" >&2
	) &
	PIDS+=($!)
fi

# --kill-island-host K:H:R: kill -9 host H of island K at round R's start
# (its peers then see partials of its chunk range); RUNDIR/killed says
# when, for the tests.
if [ "$KILL_K" -ge 0 ]; then
	(
		at=$(( EPOCH + KILL_R * T_NS ))
		until [ "$(date +%s%N)" -ge "$at" ]; do
			[ -e "/proc/$$" ] || exit 0
			sleep 0.01
		done
		kill -KILL "$(cat "$WORK/island$KILL_K.h$KILL_H.pid")"
		t0=$(date +%s%N)
		echo "island $KILL_K host $KILL_H round $KILL_R epoch_ns $EPOCH round_ns $T_NS kill_ns $t0" >"$WORK/killed"
		echo "testbed: killed host $KILL_H of island $KILL_K (kill -9) at round $KILL_R" >&2
	) &
	PIDS+=($!)
fi

echo "testbed: run $RID, $N islands, schedule $SCHED_NAME (T $PLANNED_MS ms planned at 1/$SCALE), $ROUNDS rounds, all ready, epoch in $(( (EPOCH - $(date +%s%N)) / 1000000 )) ms; logs in $WORK" >&2
# Progress: island 0's per-round lines as they come.
# (tail --pid: it ends with this script, whatever happens)
( tail --pid=$$ -n +1 -f "$WORK/island0.log" 2>/dev/null | grep --line-buffered '^round' | sed -u 's/^/  island0: /' >&2 ) &
TAILPID=$!
PIDS+=($TAILPID)

ifail=0
for p in "${IPIDS[@]}" "${HPIDS[@]}"; do
	wait "$p" || ifail=$((ifail + 1))
done
# SIGPIPE: bash reports no "Terminated" for it
pkill -PIPE -P "$TAILPID" 2>/dev/null || true
kill -PIPE "$TAILPID" 2>/dev/null || true

# The kernel's counters of every veth on the WAN side (the emulator's te
# ports, the edges' tw ports): drops there (a starved softirq backlog, a
# full socket) are invisible to isthmus-wan and the edges, and would have
# told the unexplained run of doc/testbed.md ("Network replication on nine
# cities") apart. Read before anything stops.
if [ "$EDGES" = 1 ]; then
	{
		echo "# ip -s link at the end of the run: isthmus-wan's namespace, then each edge's"
		ip -n "$WNS" -s link show 2>&1
		for ((k = 0; k < N; k++)); do ip -n "isth-$RID-e$k" -s link show "tw$RID$k" 2>&1; done
	} >"$WORK/veth-stats" || true
fi

# Stop edges and the WAN, collect their final counters.
for f in "$WORK"/edge*.pid; do kill -INT "$(cat "$f")" 2>/dev/null || true; done
for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
PIDS=()

python3 - "$WORK" "$N" "$ROUNDS" "$SCHED_NAME" "$PLANNED_MS" "$ifail" \
	"$(for ((k = 0; k < N; k++)); do island_rounds "$k"; done | paste -sd,)" \
	"$IHOSTS" "$KILL_K" "$KILL_H" <<'PY'
import re, sys
work, n, rounds, name, planned, ifail = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
want = [int(x) for x in sys.argv[7].split(",")]
# --island-hosts: every host's log (island<k>.log, island<k>.h<H>.log);
# an island finished when every host did, but the one killed on purpose
hosts, killed = int(sys.argv[8]), (int(sys.argv[9]), int(sys.argv[10]))
keys = ["aggregates", "verified", "wrong", "partial", "missing", "nacks", "resent", "lost"]
tot = dict.fromkeys(keys, 0)
means, finished = [], 0
for k in range(n):
    done = 0
    for h in range(hosts):
        log = "%s/island%d.log" % (work, k) if h == 0 else "%s/island%d.h%d.log" % (work, k, h)
        who = "island %d" % k if hosts == 1 else "island %d host %d" % (k, h)
        if (k, h) == killed:
            done += 1
            continue
        line = None
        for l in open(log, errors="replace"):
            if l.startswith("ISLAND "):
                line = l
        if line is None:
            print("testbed: %s printed no summary:" % who, file=sys.stderr)
            print("".join(open(log).readlines()[-5:]), file=sys.stderr)
            continue
        f = dict(x.split("=", 1) for x in line.split()[1:])
        for key in keys:
            tot[key] += int(f[key])
        if int(f["rounds"]) == want[k]:
            done += 1
        means.append(float(f["round_ms_mean"]))
    if done == hosts:
        finished += 1
mean = sum(means) / len(means) if means else 0.0
# isthmus-wan's counters at exit less those printed when it took this
# run's epoch (earlier tries' islands may have sent): bytes per directed
# link (doc/testbed.md, "Routes and replication"), in RUNDIR/wan-links,
# and their sum per round played
blocks, cur = [], None
for l in open(work + "/wan.log", errors="replace"):
    if l.startswith("isthmus-wan: stopping") or l.startswith("isthmus-wan: counters before"):
        cur = {}
        blocks.append(cur)
    elif cur is not None and l.startswith("site "):
        cur = None
    elif cur is not None and "->" in l.split(" ", 1)[0]:
        f = l.split()
        cur[f[0]] = (int(f[1]), int(f[2]))
final = blocks[-1] if blocks else {}
before = blocks[-2] if len(blocks) > 1 else {}
links = [(k, v[0] - before.get(k, (0, 0))[0], v[1] - before.get(k, (0, 0))[1])
         for k, v in final.items()]
with open(work + "/wan-links", "w") as f:
    f.write("# link pkts bytes bytes_per_round (isthmus-wan's counters at exit)\n")
    for name_, pk, by in links:
        f.write("%s %d %d %.0f\n" % (name_, pk, by, by / rounds))
tot_b = sum(by for _, _, by in links)
print("WAN links_used=%d bytes=%d bytes_per_round=%.0f (per link: %s/wan-links)"
      % (sum(1 for _, _, by in links if by), tot_b, tot_b / rounds, work))
print("SUMMARY schedule=%s islands=%d rounds=%d aggregates=%d verified=%d wrong=%d partial=%d missing=%d nacks=%d resent=%d round_ms_mean=%.1f round_ms_planned=%s lost=%d"
      % (name, n, rounds, tot["aggregates"], tot["verified"], tot["wrong"], tot["partial"],
         tot["missing"], tot["nacks"], tot["resent"], mean, planned, tot["lost"]))
open(work + "/summary", "w").write("%d %d\n" % (tot["wrong"], finished))
PY
read -r WRONG FINISHED <"$WORK/summary"
# --kill-edge: the killed island prints no summary
if [ "$WRONG" = 0 ] && [ "$FINISHED" = $((KILL >= 0 ? N - 1 : N)) ]; then
	FAILED=0
	exit 0
fi
exit 1
