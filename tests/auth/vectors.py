#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Independent computation of the lib/auth test vectors (doc/protocol.md,
"Authenticated format (v2)"), with Python's `cryptography` package: HKDF
and AES-GCM written against the spec, not against lib/auth's code.
Run: python3 tests/auth/vectors.py; the values are pasted into
tests/auth/auth_test.c and doc/protocol.md."""
import struct
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MASTER = bytes(range(32))
JOB, EPOCH = 42, 1
UP, DOWN, WAN = 1, 2, 3


def derive(master, job, epoch, d, owner):
    info = b"isthmus/v2 gmac" + struct.pack(">IBBB", job, epoch, d, owner)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"isthmus/v2",
                info=info).derive(master)


def header(typ, flags, dtype, job, rnd, chunk, sender, epoch, count, seq, bitmap):
    return struct.pack(">HBBHBBIIIBBHQQ", 0x4953, 2, typ, flags, dtype, 16,
                       job, rnd, chunk, sender, epoch, count, seq, bitmap)


def seal(key, msg):
    typ, sender = msg[3], msg[20]
    iv = bytes([typ, sender]) + msg[4:6] + msg[24:32]
    tag = AESGCM(key).encrypt(iv, b"", msg)  # empty plaintext: output is the tag
    return iv, tag


for d, name in ((UP, "UP"), (DOWN, "DOWN"), (WAN, "WAN")):
    for owner in (0, 2):
        print(f"K(epoch 1, {name}, {owner}) = {derive(MASTER, JOB, EPOCH, d, owner).hex()}")

# DATA: island 2, round 7, chunk 3, int32 [1, 2, 3, 4], seq 1000, flags AUTH
body = struct.pack("<4i", 1, 2, 3, 4)
msg = header(1, 0x0010, 3, JOB, 7, 3, 2, EPOCH, 4, 1000, 1 << 2) + body
iv, tag = seal(derive(MASTER, JOB, EPOCH, UP, 2), msg)
print("DATA msg =", msg.hex())
print("DATA iv  =", iv.hex())
print("DATA tag =", tag.hex())
# The same DATA retransmitted (RESENT, flags 0x0012) has its own IV and tag.
msg2 = header(1, 0x0012, 3, JOB, 7, 3, 2, EPOCH, 4, 1000, 1 << 2) + body
iv2, tag2 = seal(derive(MASTER, JOB, EPOCH, UP, 2), msg2)
print("DATA resent iv  =", iv2.hex())
print("DATA resent tag =", tag2.hex())

# Pairwise WAN keys (direction 4, WAN_PAIR): K(e, 4, s, t) for sender edge
# s and receiver edge t; info ends in s, t (doc/protocol.md, "Keys").
WAN_PAIR = 4


def derive_pair(master, job, epoch, s, t):
    info = b"isthmus/v2 gmac" + struct.pack(">IBBBB", job, epoch, WAN_PAIR, s, t)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"isthmus/v2",
                info=info).derive(master)


for s, t in ((0, 1), (1, 0), (2, 63)):
    print(f"K(epoch 1, WAN_PAIR, {s}, {t}) = {derive_pair(MASTER, JOB, EPOCH, s, t).hex()}")
