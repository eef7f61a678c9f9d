#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# isthmusd's command line: --help, --check on the shipped config, and the
# documented exit codes and messages for bad input.
set -uo pipefail
ISTHMUSD=$(realpath "$1")	# meson passes it relative to the build dir
KEYS=$2	# isthmus-keys
cd "$(dirname "$0")/../.."
EAL=(--no-huge -m 64 --no-pci --no-telemetry --log-level=lib.*:error "--file-prefix=isth-cli-$$")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/isth-cli-$$ /var/run/dpdk/isth-cli-run-$$' EXIT

expect() {	# name, want exit, want text, command...
	local name=$1 want=$2 text=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ] || ! grep -qF -- "$text" <<<"$out"; then
		echo "FAIL: $name: exit $rc (want $want), output:"
		echo "$out" | tail -5
		echo "  (wanted text: $text)"
		fail=1
	else
		echo "ok: $name"
	fi
}

# The shipped config names /etc/isthmus/job1.keys: run it with a key file
# here (mode 0600; git cannot ship one).
printf 'job 1\nepoch 1 round 0 key %s\n' "$(printf '%064x' 42)" >"$tmp/job1.keys"
chmod 600 "$tmp/job1.keys"
EX=$tmp/example.conf
sed "s|^key_file = .*|key_file = $tmp/job1.keys|" conf/isthmusd/example.conf >"$EX"

expect help 0 "Exit codes: 0 clean stop" "$ISTHMUSD" --help
# the summary must report what the shipped files say (read here, not from isthmusd)
sched=conf/schedules/nine-city-triangles.sched
T_ms=$(awk '$1 == "round-ns" { printf "%.3f", $2 / 1e6 }' "$sched")
cycle=$(awk '$1 == "rounds" { print $2 }' "$sched")
expect check-shipped 0 "island NYC (0 of 9), job 1, schedule $sched: T $T_ms ms, $cycle rounds per cycle" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --check --epoch now+1
# 324: room for the WAN tag list of the most peers a job of 9 islands
# allows, 8: 8 + 8 x 16 bytes: (1500 - 28 - 40 - 136) / 4
expect check-auth-on 0 "auth on: key file $tmp/job1.keys, 1 key epochs, 324 elements per chunk" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --check --epoch now+1
# [auth]: the key file is validated by --check; errors name the file (and
# line), never key bytes
cp "$tmp/job1.keys" "$tmp/open.keys"
chmod 644 "$tmp/open.keys"
sed "s|^key_file = .*|key_file = $tmp/open.keys|" "$EX" >"$tmp/open.conf"
expect key-mode-0644 2 "$tmp/open.keys: mode 0644 gives group or others access to the keys" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/open.conf" --check --epoch now+1
printf 'job 1\nepoch 1 round 0 key 00ff\n' >"$tmp/short.keys"
chmod 600 "$tmp/short.keys"
sed "s|^key_file = .*|key_file = $tmp/short.keys|" "$EX" >"$tmp/short.conf"
expect key-short 2 "$tmp/short.keys:2: key: expected 64 hex digits" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/short.conf" --check --epoch now+1
if "$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/short.conf" --check --epoch now+1 2>&1 | grep -qi "00ff"; then
	echo "FAIL: key-short: the error shows key bytes"; fail=1
fi
printf 'job 2\nepoch 1 round 0 key %s\n' "$(printf '%064x' 42)" >"$tmp/job2.keys"
chmod 600 "$tmp/job2.keys"
sed "s|^key_file = .*|key_file = $tmp/job2.keys|" "$EX" >"$tmp/job2.conf"
expect key-other-job 2 "keys are for job 2, not job 1" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/job2.conf" --check --epoch now+1
# site files (isthmus-keys split of the job file): the edge of island 0
# (NYC) takes its own, refuses another site's and one split for fewer
# islands than the job's nine
"$KEYS" split --job-file "$tmp/job1.keys" --n-islands 9 --out "$tmp/sites" >/dev/null
"$KEYS" split --job-file "$tmp/job1.keys" --n-islands 3 --out "$tmp/sites3" >/dev/null
for f in sites/edge-0 sites/edge-1 sites/island-0 sites3/edge-0; do
	sed "s|^key_file = .*|key_file = $tmp/$f.key|" "$EX" >"$tmp/${f//\//-}.conf"
done
expect site-own 0 "auth on: key file $tmp/sites/edge-0.key, 1 key epochs" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/sites-edge-0.conf" --check --epoch now+1
expect site-other-edge 2 "the key file of edge 1, not of edge 0" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/sites-edge-1.conf" --check --epoch now+1
expect site-island 2 "the key file of island 0, not of edge 0" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/sites-island-0.conf" --check --epoch now+1
expect site-fewer-islands 2 "holds no 'key pair 0 3' (the job has 9 islands" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/sites3-edge-0.conf" --check --epoch now+1
sed "s|^key_file = .*|key_file = $tmp/none.keys|" "$EX" >"$tmp/none.conf"
expect key-missing 2 "$tmp/none.keys: cannot open key file" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/none.conf" --check --epoch now+1
sed "s|^mode = on .*|mode = off|" "$EX" >"$tmp/off.conf"
expect auth-off-warns 0 "WARNING: [auth] mode = off in $tmp/off.conf" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/off.conf" --check --epoch now+1
expect auth-off-summary 0 "auth: off (wire version 1" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/off.conf" --check --epoch now+1
# [access] island_hosts: --check names each host's chunk range, by the rule
# host h of K owns [floor(h*C/K), floor((h+1)*C/K)), C computed here from
# the schedule's payload (auth off: 358 int32 per chunk at MTU 1500)
H3="10.10.0.2/02:00:00:00:00:02 10.10.0.3/02:00:00:00:00:03 10.10.0.4/02:00:00:00:00:0a"
sed -e "s|^island_ip = .*|island_hosts = $H3|" -e '/^island_mac = /d' "$tmp/off.conf" >"$tmp/hosts.conf"
C=$(awk '$1 == "payload-bytes" { printf "%d", int((int(($2 + 3) / 4) + 357) / 358) }' "$sched")
expect island-hosts-1 0 "isthmusd: island host 1 of 3: 10.10.0.3, chunks $((C / 3))-$((2 * C / 3 - 1)) of $C" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/hosts.conf" --check --epoch now+1
expect island-hosts-2 0 "isthmusd: island host 2 of 3: 10.10.0.4, chunks $((2 * C / 3))-$((C - 1)) of $C" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/hosts.conf" --check --epoch now+1
sed -e "s|^island_hosts = .*|island_hosts = 10.10.0.2/02:00:00:00:00:02 10.10.0.3/02:00:00:00:00|" \
	"$tmp/hosts.conf" >"$tmp/badhosts.conf"
line=$(grep -n '^island_hosts = ' "$tmp/badhosts.conf" | cut -d: -f1)
expect island-hosts-bad-mac 2 "$tmp/badhosts.conf:$line: [access] island_hosts: host 2 '10.10.0.3/02:00:00:00:00' is not A.B.C.D/aa:bb:cc:dd:ee:ff" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/badhosts.conf" --check
# with auth on: accepted (each host its own seqs and replay windows), the
# ranges of C chunks of 324 int32 (the tag and the WAN tag list's room,
# as check-auth-on), and --check says how the hosts' seqs are kept apart
sed -e "s|^mode = off|mode = on|" "$tmp/hosts.conf" >"$tmp/authhosts.conf"
CA=$(awk '$1 == "payload-bytes" { printf "%d", int((int(($2 + 3) / 4) + 323) / 324) }' "$sched")
expect island-hosts-auth-on 0 "isthmusd: island host 2 of 3: 10.10.0.4, chunks $((2 * CA / 3))-$((CA - 1)) of $CA" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/authhosts.conf" --check --epoch now+1
expect island-hosts-auth-on-seqs 0 "island hosts with auth: each host's DATA and NACKs in its own replay windows" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/authhosts.conf" --check --epoch now+1
sed -e "s|^island_hosts = .*|&\nisland_ip = 10.10.0.2|" "$tmp/hosts.conf" >"$tmp/bothhosts.conf"
expect island-hosts-and-ip 2 "$tmp/bothhosts.conf:$line: [access] island_hosts: set either island_hosts or island_ip and island_mac, not both" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/bothhosts.conf" --check
expect no-config 2 "--config FILE is required" "$ISTHMUSD" "${EAL[@]}" --
expect bad-epoch 2 "--epoch 'soon'" "$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --epoch soon
expect bad-log-level 2 "--log-level 'loud': want one of err, warning, notice, info, debug" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --log-level loud
sed 's/^memory = 64Mi/memory = lots/' "$EX" >"$tmp/bad.conf"
line=$(grep -n '^memory = lots' "$tmp/bad.conf" | cut -d: -f1)
expect bad-config 2 "$tmp/bad.conf:$line: [agg] memory: 'lots' is not a size" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/bad.conf" --check
# values that cannot work are refused by --check with their line
sed 's/^memory = 64Mi.*/memory = 0/' "$EX" >"$tmp/mem0.conf"
line=$(grep -n '^memory = 0$' "$tmp/mem0.conf" | cut -d: -f1)
expect memory-zero 2 "$tmp/mem0.conf:$line: [agg] memory: 0 bytes holds fewer than 2 slots" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/mem0.conf" --check --epoch now+1
sed 's/^round-ns .*/round-ns 18446744073709551615/' "$sched" >"$tmp/huge-t.sched"
line=$(grep -n '^round-ns ' "$tmp/huge-t.sched" | cut -d: -f1)
expect round-ns-huge 2 "$tmp/huge-t.sched:$line: round-ns 18446744073709551615 out of range" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule "$tmp/huge-t.sched" --check --epoch now+1
grep -v '^\[peer HKG\]' "$EX" | sed '/^ip = 10.0.0.9$/d' >"$tmp/nohkg.conf"
expect missing-peer 2 "[peer HKG] missing: the schedule has that island" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/nohkg.conf" --check --epoch now+1
# one lcore: no worker; refused before any port is touched
expect one-lcore 2 "need 2 to 17 lcores (EAL -l 0,1 or -l 0,1,2,...), given 1" \
	"$ISTHMUSD" "${EAL[@]}" -l 0 -- --config "$tmp/off.conf" --epoch now+1
# the fpga backend drives one device queue: one worker only (refused at
# set-up, before any device is opened)
sed -e 's/^# backend = sw .*/backend = fpga/' -e 's/^port = 0 .*/port = net_null0/' \
    -e 's/^port = 1$/port = net_null1/' "$tmp/off.conf" >"$tmp/fpga.conf"
expect fpga-two-workers 2 "[isthmusd] backend = fpga runs on one worker" \
	"$ISTHMUSD" "${EAL[@]}" --lcores=0@0,1@1,2@0 --vdev net_null0 --vdev net_null1 -- \
	--config "$tmp/fpga.conf" --epoch now+1
expect runtime-epoch 2 "leaves the epoch to run time" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --check
# a schedule whose peak aggregation memory at NYC exceeds example.conf's 64 MiB
sed -e 's/^peak-bytes 0 .*/peak-bytes 0 67108865/' "$sched" >"$tmp/peak.sched"
line=$(grep -n '^peak-bytes 0 ' "$tmp/peak.sched" | cut -d: -f1)
expect peak-over-memory 2 "$tmp/peak.sched:$line: island NYC needs 67108865 B of aggregation memory at its peak, more than [agg] memory = 67108864 B" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule "$tmp/peak.sched" --check --epoch now+1
sed -i 's/^peak-bytes 0 67108865$/peak-bytes 0 67108864/' "$tmp/peak.sched"
expect peak-fits 0 "island NYC (0 of 9)" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule "$tmp/peak.sched" --check --epoch now+1
# A schedule says what it was planned for (doc/schedule-file.md, version 3):
# planned for network replication, run by example.conf's edge replication,
# it is refused, citing its line and the config key
grep -qx 'replication edge' "$sched" || { echo "FAIL: $sched: no 'replication edge' line"; fail=1; }
sed 's/^replication edge$/replication network/' "$sched" >"$tmp/net.sched"
line=$(grep -n '^replication network$' "$tmp/net.sched" | cut -d: -f1)
expect repl-mismatch 2 "$tmp/net.sched:$line: planned for replication network, but [wan] replication = edge in $EX" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule "$tmp/net.sched" --check --epoch now+1
# ... and run by an edge configured for network replication, it is accepted
sed 's/^# replication = edge .*/replication = network/' "$EX" >"$tmp/net.conf"
expect repl-network 0 "island NYC (0 of 9)" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/net.conf" --schedule "$tmp/net.sched" --check --epoch now+1
expect repl-network-refuses-edge 2 "$sched:$line: planned for replication edge, but [wan] replication = network in $tmp/net.conf" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/net.conf" --check --epoch now+1
# planned for bf16 (2-byte elements), run by an fp32 edge: refused
sed '/^replication edge$/a dtype bf16' "$sched" >"$tmp/bf16.sched"
line=$(grep -n '^dtype bf16$' "$tmp/bf16.sched" | cut -d: -f1)
sed 's/^# dtype = any .*/dtype = fp32/' "$EX" >"$tmp/fp32.conf"
expect dtype-mismatch 2 "$tmp/bf16.sched:$line: planned for dtype bf16 (2 B per element), but [isthmusd] dtype = fp32 (4 B) in $tmp/fp32.conf" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/fp32.conf" --schedule "$tmp/bf16.sched" --check --epoch now+1
# [isthmusd] dtype = any admits every type: no refusal, no notice
expect dtype-any 0 "island NYC (0 of 9)" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule "$tmp/bf16.sched" --check --epoch now+1
if "$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule "$tmp/bf16.sched" --check --epoch now+1 2>&1 |
	grep -q "notice:"; then
	echo "FAIL: dtype-any: a notice for a file that states both"; fail=1
fi
# The payload is the bytes that cross the links (isthmus-plan --dtype): a
# bf16 job's tensor has payload / 2 elements, an fp32 job's payload / 4,
# in chunks of 324 (computed here from the file, not by isthmusd)
P=$(awk '$1 == "payload-bytes" { print $2 }' "$sched")
shape() {	# element bytes -> "E elements of S B"
	awk -v p="$P" -v s="$1" 'BEGIN { e = int((p + s - 1) / s)
		printf "%d elements of %d B", e, s }'
}
chunks() { awk -v p="$P" -v s="$1" 'BEGIN { e = int((p + s - 1) / s); printf "%d", int((e + 323) / 324) }'; }
sed 's/^# dtype = any .*/dtype = bf16/' "$EX" >"$tmp/bf16.conf"
expect dtype-bf16 0 "payload $P B a round: $(shape 2) (bf16), $(chunks 2) chunks" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/bf16.conf" --schedule "$tmp/bf16.sched" --check --epoch now+1
expect dtype-any-bf16 0 "payload $P B a round: $(shape 2) (any), $(chunks 2) chunks" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule "$tmp/bf16.sched" --check --epoch now+1
expect dtype-fp32 0 "payload $P B a round: $(shape 4) (fp32), $(chunks 4) chunks" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/fp32.conf" --check --epoch now+1
# a bf16 edge refuses a file planned for fp32
sed '/^replication edge$/a dtype fp32' "$sched" >"$tmp/fp32.sched"
line=$(grep -n '^dtype fp32$' "$tmp/fp32.sched" | cut -d: -f1)
expect dtype-bf16-refuses-fp32 2 "$tmp/fp32.sched:$line: planned for dtype fp32 (4 B per element), but [isthmusd] dtype = bf16 (2 B) in $tmp/bf16.conf" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/bf16.conf" --schedule "$tmp/fp32.sched" --check --epoch now+1
# an older or hand-written file states neither: accepted, with a notice
sed -e 's/^isthmus-schedule 3$/isthmus-schedule 2/' -e '/^replication /d' "$sched" >"$tmp/old.sched"
expect unstated-notice 0 "isthmusd: notice: $tmp/old.sched does not state the replication and element type it was planned for (older or hand-written): not checked against [wan] replication and [isthmusd] dtype" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$tmp/fp32.conf" --schedule "$tmp/old.sched" --check --epoch now+1
expect unstated-notice-any 0 "isthmusd: notice: $tmp/old.sched does not state the replication it was planned for (older or hand-written): not checked against [wan] replication" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule "$tmp/old.sched" --check --epoch now+1
expect bad-schedule 2 "nope.sched" \
	"$ISTHMUSD" "${EAL[@]}" -- --config "$EX" --schedule nope.sched --check

# A running edge on net_null ports (a null RX port is a source of zero-filled
# 64-byte frames: refused as non-IPv4, counted): telemetry answers over
# DPDK's socket, and SIGINT stops it cleanly with exit 0 and final counters.
# It runs with [auth] mode = off: /isthmus/stats must say so (the edges of
# shutdown_test.sh run the shipped config, auth on). It runs two workers
# (three lcores on the two CPUs): /isthmus/workers and the exit print show
# both, and both stop on SIGINT; net_null has a TX queue for each worker
# (tx_queues 2, and the start line says so), on the WAN port too (worker k
# sends the island's DATA to its peers: wan_tx_queues 2, w1_data_out).
PREFIX=isth-cli-run-$$
# Its schedule is a copy, replaced while it runs by one planned for network
# replication: the SIGHUP reload of it is refused, naming the line.
cp "$sched" "$tmp/run.sched"
sed -e 's/^port = 0 .*/port = net_null0/' -e 's/^port = 1$/port = net_null1/' \
    -e 's/^# idle_polls = 0 .*/idle_polls = 16/' -e "s|^schedule = .*|schedule = $tmp/run.sched|" \
    "$tmp/off.conf" >"$tmp/null.conf"
"$ISTHMUSD" --no-huge -m 128 --no-pci "--file-prefix=$PREFIX" --lcores=0@0,1@1,2@0 \
	--log-level=lib.*:error --vdev net_null0 --vdev net_null1 -- \
	--config "$tmp/null.conf" --epoch now+1 >"$tmp/run.out" 2>&1 &
pid=$!
answers=$(PYTHONPATH=tests/isthmusd python3 - "/var/run/dpdk/$PREFIX/dpdk_telemetry.v2" <<'PY'
import sys, time
from isthd_tel import ask, connect
deadline = time.time() + 20
s = connect(sys.argv[1], deadline)
out = {}
for cmd in ("/isthmus/round", "/isthmus/stats", "/isthmus/backend", "/isthmus/pace", "/isthmus/resend",
            "/isthmus/workers"):
    # the socket opens at EAL init, the commands once set-up is done
    while True:
        out[cmd] = ask(s, cmd)
        if out[cmd] is not None:
            break
        if time.time() > deadline:
            sys.exit(cmd + ": no answer")
        time.sleep(0.1)
# wait (bounded) for the null source to show up in the drop counters
while out["/isthmus/stats"]["drop_ethertype"] == 0 and time.time() < deadline:
    out["/isthmus/stats"] = ask(s, "/isthmus/stats")
print(out["/isthmus/round"]["island"], out["/isthmus/round"]["job"],
      out["/isthmus/round"]["round_ns"], out["/isthmus/backend"]["name"],
      "ethertype_drops" if out["/isthmus/stats"]["drop_ethertype"] > 0 else "no_drops",
      "resend" if "next_seq" in out["/isthmus/resend"] else "no_resend",
      "pace" if "late_starts" in out["/isthmus/pace"] else "no_pace",
      "auth_" + out["/isthmus/stats"]["auth"],
      "workers_%d" % out["/isthmus/workers"]["n_workers"],
      "w1" if "w1_peer_data" in out["/isthmus/workers"] else "no_w1",
      "txq_%d" % out["/isthmus/workers"]["tx_queues"],
      "wtxq_%d" % out["/isthmus/workers"]["wan_tx_queues"],
      "w1" if "w1_data_out" in out["/isthmus/workers"] else "no_w1_data_out")
PY
)
cp "$tmp/net.sched" "$tmp/run.sched.new" && mv "$tmp/run.sched.new" "$tmp/run.sched"
line=$(grep -n '^replication network$' "$tmp/run.sched" | cut -d: -f1)
refused="reload refused: $tmp/run.sched:$line: planned for replication network, but [wan] replication = edge in $tmp/null.conf"
kill -HUP "$pid" 2>/dev/null
for _ in $(seq 100); do	# bounded wait on the condition: up to 10 s
	grep -qF -- "$refused" "$tmp/run.out" && break
	sleep 0.1
done
if grep -qF -- "$refused" "$tmp/run.out" && ! grep -q "takes effect at round" "$tmp/run.out"; then
	echo "ok: reload of a schedule planned for another replication refused"
else
	echo "FAIL: reload-mismatch: wanted '$refused'"
	tail -5 "$tmp/run.out"
	fail=1
fi
kill -INT "$pid" 2>/dev/null
wait "$pid"
rc=$?
# net_null offers many TX queues: a TX queue per worker, logged at start
want="0 1 $(awk '$1 == "round-ns" { print $2 }' "$sched") sw ethertype_drops resend pace auth_off workers_2 w1 txq_2 wtxq_2 w1"
if [ "$answers" != "$want" ] || [ "$rc" != 0 ] || ! grep -q "^isthmusd counters:" "$tmp/run.out" ||
	! grep -q "isthmusd: access TX: a queue per worker (2 TX queues)" "$tmp/run.out" ||
	! grep -q "isthmusd: WAN TX: a queue per worker (2 TX queues)" "$tmp/run.out" ||
	! grep -q "^worker 1: peer_data 0 " "$tmp/run.out"; then
	echo "FAIL: running edge: telemetry '$answers' (want '$want'), exit $rc"
	tail -5 "$tmp/run.out"
	fail=1
else
	echo "ok: telemetry and clean SIGINT stop"
fi
rm -rf "/var/run/dpdk/$PREFIX"
exit $fail
