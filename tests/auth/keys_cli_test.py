#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""isthmus-keys: every subcommand and its refusals. The site files' keys
are checked against HKDF-SHA256 computed here with hashlib/hmac from the
job file's master key (RFC 5869, doc/protocol.md "Keys"), not with
lib/auth's code; no key byte may reach stdout or stderr.
Usage: keys_cli_test.py ISTHMUS_KEYS"""
import hashlib
import hmac
import os
import re
import stat
import struct
import subprocess
import sys
import tempfile

TOOL = sys.argv[1]
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def run(*args):
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def hkdf(ikm, salt, info, n=32):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]


def derive(master, job, epoch, d, owner, receiver=None):
    info = b"isthmus/v2 gmac" + struct.pack(">IBBB", job, epoch, d, owner)
    if receiver is not None:  # direction 4, WAN_PAIR: (sender, receiver)
        info += bytes([receiver])
    return hkdf(master, b"isthmus/v2", info)


def parse(path):
    """job, site, {epoch: (start, master or None, {(dir, owner): key})}"""
    job, site, eps, cur = None, None, {}, None
    for line in open(path):
        w = line.split("#")[0].split()
        if not w:
            continue
        if w[0] == "job":
            job = int(w[1])
        elif w[0] == "site":
            site = (w[1], int(w[2]))
        elif w[0] == "epoch":
            cur = int(w[1])
            eps[cur] = (int(w[3]), bytes.fromhex(w[5]) if len(w) > 4 else None, {})
        elif w[0] == "key" and w[1] == "pair":
            eps[cur][2][(4, int(w[2]), int(w[3]))] = bytes.fromhex(w[-1])
        elif w[0] == "key":
            d = {"up": 1, "down": 2, "wan": 3}[w[1]]
            owner = int(w[2]) if w[1] == "wan" else site[1]
            eps[cur][2][(d, owner)] = bytes.fromhex(w[-1])
    return job, site, eps


def no_key_bytes(text, eps, what):
    for start, master, keys in eps.values():
        for k in ([master] if master else []) + list(keys.values()):
            check(k.hex()[:16] not in text, "%s: key bytes printed" % what)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_generate_split(d):
    jf = os.path.join(d, "job.key")
    rc, out, err = run("generate", "--job", "7", "--out", jf)
    check(rc == 0, "generate: rc %d %s" % (rc, err))
    check(mode(jf) == 0o600, "generate: mode %o" % mode(jf))
    job, site, eps = parse(jf)
    check(job == 7 and site is None and list(eps) == [0], "generate: content")
    no_key_bytes(out + err, eps, "generate")
    master = eps[0][1]
    check(len(master) == 32 and master != bytes(32), "generate: a master key")
    rc, _, err = run("generate", "--job", "7", "--out", jf)
    check(rc == 2 and "exists; refused" in err, "generate: overwrite refused")
    check(parse(jf)[2][0][1] == master, "generate: the refused run changed the file")
    rc, _, _ = run("generate", "--job", "7", "--out", jf, "--force")
    check(rc == 0 and parse(jf)[2][0][1] != master, "generate --force: a new master")
    master = parse(jf)[2][0][1]

    sd = os.path.join(d, "sites")
    rc, out, err = run("split", "--job-file", jf, "--n-islands", "3", "--out", sd)
    check(rc == 0, "split: rc %d %s" % (rc, err))
    check(sorted(os.listdir(sd)) == ["edge-%d.key" % i for i in range(3)] +
          ["island-%d.key" % i for i in range(3)], "split: files %s" % os.listdir(sd))
    check(mode(sd) == 0o700, "split: dir mode %o" % mode(sd))
    for i in range(3):
        for kind in ("island", "edge"):
            p = os.path.join(sd, "%s-%d.key" % (kind, i))
            check(mode(p) == 0o600, "split: %s mode" % p)
            job, site, eps = parse(p)
            want = {(1, i): derive(master, 7, 0, 1, i), (2, i): derive(master, 7, 0, 2, i)}
            if kind == "edge":
                # the pairs from edge i (it seals) and to it (it verifies)
                for t in range(3):
                    if t != i:
                        want[(4, i, t)] = derive(master, 7, 0, 4, i, t)
                        want[(4, t, i)] = derive(master, 7, 0, 4, t, i)
            check(job == 7 and site == (kind, i), "split: %s header" % p)
            check(eps[0][1] is None, "split: %s holds a master key" % p)
            check(eps[0][2] == want, "split: %s keys differ from independent HKDF" % p)
            rc, out, err = run("show", "--key-file", p)
            check(rc == 0 and ("kind %s %d" % (kind, i)) in out, "show %s: %s" % (p, out))
            no_key_bytes(out + err, eps, "show")
    return jf, sd


def test_rotate(jf, sd):
    first = parse(jf)[2]
    for r, n in ((10, 2), (20, 3), (30, 4)):
        rc, out, err = run("rotate", "--job-file", jf, "--from-round", str(r))
        check(rc == 0 and "retired" not in out, "rotate %d: %d %s" % (r, rc, err))
        eps = parse(jf)[2]
        check(len(eps) == n and eps[max(eps)][0] == r, "rotate %d: epochs %s" % (r, eps))
        check(eps[0][1] == first[0][1], "rotate %d: the old master changed" % r)
    # a fifth epoch retires the oldest, possibly the one in use: refused
    # (the file unchanged) unless the operator says it is safe
    before = open(jf).read()
    rc, out, err = run("rotate", "--job-file", jf, "--from-round", "40")
    check(rc == 1 and "--retire-oldest" in err and "retires epoch 0 (rounds 0..9)" in err
          and open(jf).read() == before, "rotate 40 without --retire-oldest: %d %s" % (rc, err))
    rc, out, err = run("rotate", "--job-file", jf, "--from-round", "40", "--retire-oldest")
    eps = parse(jf)[2]
    check(rc == 0 and re.search(r"retired epoch 0 \(from round 0\)", out),
          "rotate 40: retire message: %s" % out)
    check(sorted(eps) == [1, 2, 3, 4] and eps[4][0] == 40, "rotate 40: epochs %s" % sorted(eps))
    check(len({e[1] for e in eps.values()}) == 4, "rotate: masters not distinct")
    check(mode(jf) == 0o600, "rotate: mode %o" % mode(jf))
    no_key_bytes(out + err, eps, "rotate")
    rc, _, err = run("rotate", "--job-file", jf, "--from-round", "40")
    check(rc == 1 and "must be above the newest epoch's start round (40)" in err,
          "rotate: same round refused: %s" % err)
    rc, _, _ = run("split", "--job-file", jf, "--n-islands", "2", "--out", sd)
    _, _, eps2 = parse(os.path.join(sd, "edge-1.key"))
    check(sorted(eps2) == [1, 2, 3, 4] and
          eps2[4][2].get((4, 0, 1)) == derive(eps[4][1], 7, 4, 4, 0, 1), "split after rotate")
    check(not [f for f in os.listdir(sd) + os.listdir(os.path.dirname(jf))
               if ".tmp." in f], "a temporary file was left behind")


def test_refusals(d, jf, sd):
    cases = [
        (("split", "--job-file", os.path.join(sd, "island-0.key"), "--n-islands", "2",
          "--out", sd), 2, "the key file of island 0, not a job file"),
        (("split", "--job-file", jf, "--n-islands", "0", "--out", sd), 1,
         "--n-islands: expected a number 1..64"),
        (("split", "--job-file", jf, "--n-islands", "65", "--out", sd), 1,
         "--n-islands: expected a number 1..64"),
        (("split", "--job-file", jf, "--out", sd), 1, "are required"),
        (("rotate", "--job-file", jf), 1, "are required"),
        (("generate", "--out", os.path.join(d, "x.key")), 1, "are required"),
        (("generate", "--job", "x", "--out", os.path.join(d, "x.key")), 1,
         "--job: expected a number"),
        (("frobnicate",), 1, "unknown command 'frobnicate'"),
        (("show", "--key-file", os.path.join(d, "missing.key")), 2, "cannot open key file"),
        (("split", "--job-file", jf, "--n-islands", "2", "--out",
          os.path.join(d, "no", "such", "dir")), 2, "cannot create"),
    ]
    for args, want_rc, want in cases:
        rc, out, err = run(*args)
        check(rc == want_rc and want in err, "%s: rc %d, stderr %r" % (args, rc, err))
    loose = os.path.join(d, "loose.key")
    with open(jf) as f, open(loose, "w") as g:
        g.write(f.read())
    os.chmod(loose, 0o644)
    rc, _, err = run("rotate", "--job-file", loose, "--from-round", "99")
    check(rc == 2 and "mode 0644" in err, "rotate: a 0644 job file: %s" % err)
    bad = os.path.join(d, "bad.key")
    fd = os.open(bad, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"job 7\nepoch 0 round 0 key 00\n")
    os.close(fd)
    rc, _, err = run("split", "--job-file", bad, "--n-islands", "2", "--out", sd)
    check(rc == 2 and bad + ":2: key: expected 64 hex digits" in err, "split: malformed: %s" % err)
    rc, out, _ = run("--help")
    check(rc == 0 and "island-<i>.key" in out and "edge-<i>.key" in out and
          "operator" in out, "--help explains the files")
    rc, out, _ = run("--version")
    check(rc == 0 and out.startswith("isthmus-keys "), "--version: %s" % out)


def main():
    with tempfile.TemporaryDirectory(prefix="isth-keys-") as d:
        jf, sd = test_generate_split(d)
        test_rotate(jf, sd)
        test_refusals(d, jf, sd)
    if FAILS:
        print("%d failures" % len(FAILS))
        return 1
    print("isthmus-keys: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
