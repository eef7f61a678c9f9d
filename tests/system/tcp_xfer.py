#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Kernel TCP across the testbed's emulated WAN (tests/system/testbed_fault_test.sh).

  tcp_xfer.py serve IP PORT READYFILE   accept one connection, read to EOF,
                                        print "RECV bytes=N sha256=H"
  tcp_xfer.py send IP PORT BYTES        send BYTES seeded bytes, print
                                        "SENT bytes=N sha256=H seconds=S"
"""
import hashlib
import os
import random
import socket
import sys
import time


def serve(ip, port, ready):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((ip, port))
    s.listen(1)
    s.settimeout(120)
    # written after listen(): the sender may connect from now on
    with open(ready + ".tmp", "w") as f:
        f.write("ready\n")
    os.rename(ready + ".tmp", ready)
    c, _ = s.accept()
    c.settimeout(120)
    h, n = hashlib.sha256(), 0
    while True:
        b = c.recv(65536)
        if not b:
            break
        h.update(b)
        n += len(b)
    print("RECV bytes=%d sha256=%s" % (n, h.hexdigest()), flush=True)


def send(ip, port, nbytes):
    data = random.Random(7).randbytes(nbytes)
    c = socket.create_connection((ip, port), timeout=120)
    t0 = time.monotonic()
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    # the receiver closes after it has read everything: the time covers
    # delivery, not just the local socket buffer
    while c.recv(65536):
        pass
    t = time.monotonic() - t0
    print("SENT bytes=%d sha256=%s seconds=%.3f" % (nbytes, hashlib.sha256(data).hexdigest(), t),
          flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
