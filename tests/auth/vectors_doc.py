#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""doc/protocol.md's test vectors checked by a second implementation.

tests/auth/vectors.c writes the vector block with lib/auth (OpenSSL,
intel-ipsec-mb) and its test keeps the text in step with lib/auth; this
script reads the same block as an outsider would and recomputes, with
Python's `cryptography` package and the formulas the document states,
every direction key from the key file shown, and for every message vector
its key, IV and tag from its `msg` bytes. So a value in the document that
both lib/auth and the document's own description would not produce fails
here. Exit 77 (skip) without `cryptography`.

    vectors_doc.py doc/protocol.md
"""
import re
import struct
import sys

try:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
except ImportError:
    print("SKIP: python3-cryptography not installed")
    sys.exit(77)

DIRS = {"UP": 1, "DOWN": 2, "WAN": 3, "WAN_PAIR": 4}


def derive(master, job, epoch, d, owner, recv=None):
    info = b"isthmus/v2 gmac" + struct.pack(">IBBB", job, epoch, d, owner)
    if recv is not None:
        info += bytes([recv])
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"isthmus/v2",
                info=info).derive(master)


def main():
    text = open(sys.argv[1]).read()
    m = re.search(r"<!-- vectors:begin.*?-->\n(.*)<!-- vectors:end -->", text, re.S)
    if not m:
        sys.exit("FAIL: no vectors block")
    block = m.group(1)
    job = int(re.search(r"^job (\d+)$", block, re.M).group(1))
    epochs = {}  # id -> (start round, master)
    for e, r, k in re.findall(r"^epoch (\d+) round (\d+) key ([0-9a-f]{64})$", block, re.M):
        epochs[int(e)] = (int(r), bytes.fromhex(k))
    bad = checked = 0

    def expect(what, got, want):
        nonlocal bad, checked
        checked += 1
        if got != want:
            print(f"FAIL: {what}: document {want}, recomputed {got}")
            bad += 1

    for e, d, o, t, val in re.findall(
            r"^\| K\((\d+), (UP|DOWN|WAN|WAN_PAIR), (\d+)(?:, (\d+))?\) \| `([0-9a-f]{64})` \|$",
            block, re.M):
        k = derive(epochs[int(e)][1], job, int(e), DIRS[d], int(o), int(t) if t else None)
        expect(f"K({e}, {d}, {o}{', ' + t if t else ''})", k.hex(), val)

    for v in re.findall(r"```\n(key .*?)```", block, re.S):
        km = re.match(r"key +([0-9a-f]{64}) +K\((\d+), (UP|DOWN|WAN), (\d+)\)", v)
        msg = bytes.fromhex("".join(re.findall(r"^(?:msg)? +((?:[0-9a-f]{2,8} ?)+)$",
                                               v[v.index("msg"):v.index("iv")], re.M))
                            .replace(" ", ""))
        iv_doc = re.search(r"^iv +([0-9a-f]+)$", v, re.M).group(1)
        tag_doc = re.search(r"^tag +([0-9a-f]+)$", v, re.M).group(1)
        e, d, o = int(km.group(2)), DIRS[km.group(3)], int(km.group(4))
        # the header says what the key is: its epoch byte, its round
        rnd, epoch_byte = struct.unpack(">I", msg[12:16])[0], msg[21]
        epoch_of = max((s, i) for i, (s, _) in epochs.items() if s <= rnd)[1]
        expect("epoch byte = epoch_of(round)", epoch_byte, epoch_of)
        expect("epoch of the key", e, epoch_byte)
        key = derive(epochs[e][1], job, e, d, o)
        expect("key", key.hex(), km.group(1))
        iv = msg[3:4] + msg[20:21] + msg[4:6] + msg[24:32]
        expect("iv", iv.hex(), iv_doc)
        expect("tag", AESGCM(key).encrypt(iv, b"", msg).hex(), tag_doc)
    # the WAN tag list: per receiver t, its key K(e, WAN_PAIR, s, t) and the
    # tag of the message under it; the list's bitmap names the receivers
    for v in re.findall(r"```\n(msg .*?)```", block, re.S):
        msg = bytes.fromhex("".join(re.findall(r"^(?:msg)? +((?:[0-9a-f]{2,8} ?)+)$",
                                               v[:v.index("iv")], re.M)).replace(" ", ""))
        iv = msg[3:4] + msg[20:21] + msg[4:6] + msg[24:32]
        expect("list iv", iv.hex(), re.search(r"^iv +([0-9a-f]+)$", v, re.M).group(1))
        bitmap = int(re.search(r"^list +([0-9a-f]{16})$", v, re.M).group(1), 16)
        keys = re.findall(r"^key (\d+) +([0-9a-f]{64}) +K\((\d+), WAN_PAIR, (\d+), (\d+)\)$",
                          v, re.M)
        tags = dict(re.findall(r"^tag (\d+) +([0-9a-f]{32})$", v, re.M))
        rcv = [t for t in range(64) if bitmap >> t & 1]
        expect("list: trailer_len = 8 + 16k", msg[7], 8 + 16 * len(rcv))
        expect("list: a key per receiver", sorted(int(k[0]) for k in keys), rcv)
        for t, kh, e, snd, t2 in keys:
            e, snd = int(e), int(snd)
            key = derive(epochs[e][1], job, e, DIRS["WAN_PAIR"], snd, int(t))
            expect("list key", key.hex(), kh)
            expect("list sender", snd, msg[20])
            expect("list tag", AESGCM(key).encrypt(iv, b"", msg).hex(), tags.get(t))
    if checked < 40:
        sys.exit(f"FAIL: only {checked} values found in the block")
    print(f"vectors_doc: {checked} values of {sys.argv[1]} recomputed, {bad} differ")
    sys.exit(1 if bad else 0)


main()
