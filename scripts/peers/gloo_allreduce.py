#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Gloo all-reduce timing for scripts/peers.sh (doc/peers.md): one rank.

  gloo_allreduce.py RANK WORLD MASTER_IP:PORT BYTES ITERS [WARMUP]

Rendezvous (TCPStore) at MASTER (the management network); data over the
interface GLOO_SOCKET_IFNAME names (the emulated WAN). Rank 0 prints one
"EXCHANGE i ms" line per timed all-reduce and "CHECK ... wrong=N".
"""
import sys
import time

import torch
import torch.distributed as dist


def main():
    rank, world = int(sys.argv[1]), int(sys.argv[2])
    master, nbytes, iters = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    warmup = int(sys.argv[6]) if len(sys.argv) > 6 else 2
    dist.init_process_group("gloo", init_method="tcp://" + master, rank=rank,
                            world_size=world)
    n = (nbytes + 3) // 4
    x = torch.empty(n, dtype=torch.float32)
    for _ in range(warmup):
        x.fill_(rank + 1)
        dist.all_reduce(x)
    dist.barrier()
    t0 = time.monotonic()
    for i in range(iters):
        x.fill_(rank + 1)
        dist.all_reduce(x)
        t1 = time.monotonic()
        if rank == 0:
            print("EXCHANGE %d %.3f" % (i, (t1 - t0) * 1e3), flush=True)
        t0 = time.monotonic()
    want = world * (world + 1) / 2
    wrong = int((x != want).sum())
    if rank == 0:
        print("CHECK ranks=%d elems=%d wrong=%d" % (world, n, wrong), flush=True)
    dist.destroy_process_group()
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
