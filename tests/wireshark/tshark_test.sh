#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Decode a pcap written by the project's encoder with tshark and the Lua
# dissector, and check every field against what was encoded.
#
#   tshark_test.sh PCAP_GEN LUA_SCRIPT WORKDIR [SELFTEST_LUA]
#
# PCAP_GEN writes the pcap, EXPECTED.tsv (first line: the field names) and
# the key file its version 2 frames are sealed with (lib/auth), which
# tshark is given (-o isthmus.key_file) to verify the tags, and edge 2's
# site file with what tshark must say of the tags with that instead;
# this script asks tshark for exactly those fields and compares them
# value by value: numbers numerically (tshark prints hex for hex fields),
# floats to 1e-6 relative, byte strings without separators; "*" in
# EXPECTED.tsv means "not compared". Exit 77 when tshark is missing.
set -euo pipefail

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
	echo "usage: $0 PCAP_GEN LUA_SCRIPT WORKDIR [SELFTEST_LUA]" >&2
	exit 2
fi
gen=$1 lua=$2 work=$3 selftest=${4:-}

if ! command -v tshark >/dev/null 2>&1; then
	echo "SKIP: tshark not installed"
	exit 77
fi

mkdir -p "$work"
"$gen" "$work/isthmus.pcap" "$work/expected.tsv" "$work/keys.conf"

args=()
IFS=$'\t' read -r -a fields <"$work/expected.tsv"
for f in "${fields[@]}"; do
	args+=(-e "$f")
done

# No user or global profile may change the decoding: a private home.
export HOME=$work/home WIRESHARK_CONFIG_DIR=$work/home/.config/wireshark
mkdir -p "$WIRESHARK_CONFIG_DIR"
rc=0
tshark -n -X lua_script:"$lua" -o isthmus.islands:8 \
	-o isthmus.key_file:"$work/keys.conf" -r "$work/isthmus.pcap" \
	-T fields -E separator=/t -E occurrence=a -E aggregator=, \
	"${args[@]}" >"$work/actual.tsv" 2>"$work/tshark.err" || rc=$?
# Debian's tshark warns when run as root; anything else is an error, in
# particular a Lua error, which tshark reports without failing.
grep -v -e '^Running as user "root"' "$work/tshark.err" >"$work/tshark.err2" || true
if [ "$rc" -ne 0 ] || [ -s "$work/tshark.err2" ]; then
	echo "FAIL: tshark exited $rc:" >&2
	cat "$work/tshark.err2" >&2
	exit 1
fi

# compare EXPECTED ACTUAL: field by field (see the head of this file)
compare() {
	python3 - "$1" "$2" <<'PY'
import sys

def same(e, a):
    if e == a:
        return True
    try:
        return int(e, 0) == int(a, 0)
    except ValueError:
        pass
    try:
        fe, fa = float(e), float(a)
        return abs(fe - fa) <= 1e-6 * max(1.0, abs(fe))
    except ValueError:
        pass
    return e.replace(':', '').lower() == a.replace(':', '').lower()

exp = open(sys.argv[1]).read().rstrip('\n').split('\n')
act = open(sys.argv[2]).read().rstrip('\n').split('\n')
names = exp[0].split('\t')
rows = exp[1:]
bad = 0
if len(act) != len(rows):
    print(f"FAIL: {len(rows)} frames written, tshark decoded {len(act)}")
    sys.exit(1)
checked = 0
for i, (er, ar) in enumerate(zip(rows, act), 1):
    ev, av = er.split('\t'), ar.split('\t')
    av += [''] * (len(ev) - len(av))
    for name, e, a in zip(names, ev, av):
        if e == '*':
            continue
        es, as_ = (e.split(',') if e else []), (a.split(',') if a else [])
        checked += 1
        if len(es) != len(as_) or not all(same(x, y) for x, y in zip(es, as_)):
            print(f"FAIL: frame {i}: {name}: expected '{e}', tshark '{a}'")
            bad += 1
print(f"tshark: {len(rows)} frames, {checked} fields compared, {bad} mismatches")
sys.exit(1 if bad else 0)
PY
}
compare "$work/expected.tsv" "$work/actual.tsv"

# The same capture with edge 2's site file (derived keys only, no
# master): tags under keys it holds verify, WRONG stays WRONG, the rest is
# "no key for ...", never WRONG.
tshark -n -X lua_script:"$lua" -o isthmus.islands:8 \
	-o isthmus.key_file:"$work/keys.conf.site" -r "$work/isthmus.pcap" \
	-T fields -E separator=/t -E occurrence=a -E aggregator=, \
	-e isthmus.tag.status -e isthmus.tag.key >"$work/site.tsv" 2>"$work/site.err"
if grep -v -e '^Running as user "root"' "$work/site.err" | grep -q .; then
	echo "FAIL: tshark with the site file:" >&2
	cat "$work/site.err" >&2
	exit 1
fi
compare "$work/expected.tsv.site" "$work/site.tsv"

# Expert info: a refused frame carries the error named by its verdict
# (isthmus.malformed.<reason>); a valid one carries no error at all.
reasons=(hdr_trunc magic version type flags dtype island bitmap count trailer
	length range reserved round_body)
eargs=(-e isthmus.verdict -e _ws.expert.severity)
for r in "${reasons[@]}"; do
	eargs+=(-e "isthmus.malformed.$r")
done
tshark -n -X lua_script:"$lua" -o isthmus.islands:8 \
	-o isthmus.key_file:"$work/keys.conf" -r "$work/isthmus.pcap" \
	-T fields -E separator=/t -E occurrence=a -E aggregator=, \
	"${eargs[@]}" >"$work/expert.tsv" 2>/dev/null
python3 - "$work/expert.tsv" "${reasons[@]}" <<'PY'
import sys

ERROR = 0x00800000  # PI_ERROR
reasons = sys.argv[2:]
bad = n_err = 0
for i, line in enumerate(open(sys.argv[1]).read().rstrip('\n').split('\n'), 1):
    cols = line.split('\t')
    cols += [''] * (2 + len(reasons) - len(cols))
    verdict, sev = cols[0], [int(x, 0) for x in cols[1].split(',') if x]
    present = {r for r, c in zip(reasons, cols[2:]) if c}
    if verdict == 'ok':
        if ERROR in sev or present:
            print(f"FAIL: frame {i}: valid, yet expert errors {sorted(present)}")
            bad += 1
    else:
        n_err += 1
        if verdict not in present or ERROR not in sev:
            print(f"FAIL: frame {i}: verdict {verdict} without its expert info")
            bad += 1
print(f"tshark: expert info checked on {i} frames ({n_err} malformed), {bad} mismatches")
sys.exit(1 if bad else 0)
PY

# The dissector's pure-Lua SHA-256, HMAC, HKDF, AES-256 and GMAC against
# their standards' published values (FIPS 180-2, RFC 4231, RFC 5869,
# FIPS 197, NIST CAVP): a mismatch is a Lua error on stderr.
if [ -n "$selftest" ]; then
	out=$(tshark -n -X lua_script:"$lua" -X lua_script:"$selftest" \
		-r "$work/isthmus.pcap" -c 1 2>"$work/selftest.err" >"$work/selftest.out"; \
		cat "$work/selftest.out")
	grep -v -e '^Running as user "root"' "$work/selftest.err" >"$work/selftest.err2" || true
	if [ -s "$work/selftest.err2" ] || ! grep -q 'crypto self-test: .* values ok' <<<"$out"; then
		echo "FAIL: crypto self-test:" >&2
		cat "$work/selftest.err2" "$work/selftest.out" >&2
		exit 1
	fi
	grep 'crypto self-test' <<<"$out"
fi
