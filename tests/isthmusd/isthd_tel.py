# SPDX-License-Identifier: BSD-3-Clause
"""A minimal client of DPDK's telemetry socket for the isthmusd tests."""
import json
import socket
import sys
import time


def connect(path, deadline):
    """Connect to the telemetry socket at path (it appears at EAL init),
    retrying until deadline (time.time()); exit the test if it never does."""
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(path)
            break
        except OSError:
            if time.time() > deadline:
                sys.exit("no telemetry socket at " + path)
            time.sleep(0.05)
    json.loads(s.recv(16384))  # the greeting
    return s


def ask(s, cmd):
    """One command; its answer (None while the command is not registered).
    Raises OSError once the process has gone."""
    s.send(cmd.encode())
    b = s.recv(1 << 20)
    if not b:
        raise OSError("closed")
    return json.loads(b).get(cmd)
