#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# system-island-defaults: a Python isthmus.Session and isthmus-island,
# given only the job, the island, the islands, the elements, the edge and
# the key file, reach a real edge of the testbed (`testbed.sh up --edges`,
# two islands, authentication on) and complete rounds exactly: the other
# settings (bind address and port, wire version, timeouts) are their
# defaults, which must be what isthmusd expects. First two Python
# sessions (island_defaults_py.py, fp32) play the same 40 rounds, of
# which at least three must be complete, every sum exact; then two isthmus-island processes (int32, their
# default) play their default ten rounds.
#
#   island_defaults_test.sh BUILD_DIR [PYTHON]
set -uo pipefail

BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TB=$ROOT/scripts/testbed.sh
export BUILD

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (network namespaces, veth)"
	exit 77
fi
if ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: ip netns unavailable"
	exit 77
fi
PY=${2:-python3}	# the interpreter the binding was built for
if ! PYTHONPATH=$BUILD/python "$PY" -c 'import isthmus, numpy' 2>/dev/null; then
	echo "SKIP: the isthmus binding or numpy is not importable with $PY"
	exit 77
fi

tmp=$(mktemp -d /tmp/isth-isldef-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# Runs inside `testbed.sh up --edges`: the TB_* variables of the env file.
# Each island's command runs in its namespace (testbed.sh exec).
cat >"$tmp/job.sh" <<JOB
#!/usr/bin/env bash
set -u
x() { "$TB" exec "\$TB_ENV" "\$@"; }
# both Python islands play the same rounds: those of the next 20 s at
# least 40 (T from the plan), time for two interpreters to start on a
# loaded host
now=\$(date +%s%N)
span=\$(( 20000000000 / TB_ROUND_NS ))
[ "\$span" -ge 40 ] || span=40
until=\$span
[ "\$now" -le "\$TB_EPOCH_NS" ] || until=\$(( (now - TB_EPOCH_NS) / TB_ROUND_NS + span ))
for k in 0 1; do
	ip=TB_EDGE_IP_\$k
	x \$k env PYTHONPATH="$BUILD/python" "$PY" "$HERE/island_defaults_py.py" \\
		--job "\$TB_JOB" --island \$k --islands 2 --elems "\$TB_ELEMS" \\
		--edge "\${!ip}:\$TB_EDGE_PORT" --key-file "\$TB_KEY_DIR/island-\$k.key" \\
		--until-round \$until >"$tmp/py\$k.out" 2>&1 &
	echo \$! >"$tmp/py\$k.pid"
done
rc=0
for k in 0 1; do wait "\$(cat "$tmp/py\$k.pid")" || rc=1; done
[ \$rc = 0 ] || exit 1
for k in 0 1; do
	ip=TB_EDGE_IP_\$k
	# the edge's port left to its default
	x \$k "$BUILD/app/isthmus-island/isthmus-island" --job "\$TB_JOB" --island \$k \\
		--islands 2 --elems "\$TB_ELEMS" --edge "\${!ip}" --key-file "\$TB_KEY_DIR/island-\$k.key" \\
		>"$tmp/cli\$k.out" 2>&1 &
	echo \$! >"$tmp/cli\$k.pid"
done
for k in 0 1; do wait "\$(cat "$tmp/cli\$k.pid")" || rc=1; done
exit \$rc
JOB
chmod +x "$tmp/job.sh"
# --dtype any: the edges admit the Python sessions' fp32 and then
# isthmus-island's int32
"$TB" up --edges --islands 2 --dtype any --auth on -- "$tmp/job.sh" \
	>"$tmp/up.log" 2>&1 </dev/null
rc=$?
for f in "$tmp"/py0.out "$tmp"/py1.out "$tmp"/cli0.out "$tmp"/cli1.out; do
	[ -e "$f" ] && { echo "== $(basename "$f")"; tail -45 "$f"; }
done
[ "$rc" = 0 ] || { tail -20 "$tmp/up.log"; bad "testbed up -- job: exit $rc"; }
for k in 0 1; do
	# island_defaults_py.py checked every sum itself; its summary line
	grep -Eq "^PY island=$k complete=([3-9]|[1-9][0-9]+) wrong=0 " "$tmp/py$k.out" 2>/dev/null ||
		bad "Python island $k: no three exact complete rounds"
	grep -q "^ISLAND island=$k rounds=10 .* wrong=0 " "$tmp/cli$k.out" 2>/dev/null ||
		bad "isthmus-island $k: not ten rounds with wrong=0"
	# at least one round with both contributions (the first may be
	# partial while the other island starts)
	grep -q "^round .* partial 0 .* verified [1-9]" "$tmp/cli$k.out" 2>/dev/null ||
		bad "isthmus-island $k: no complete round"
	grep -q "auth on" "$tmp/cli$k.out" 2>/dev/null || bad "isthmus-island $k: not auth on"
done
[ $fail = 0 ] && echo "PASS"
exit $fail
