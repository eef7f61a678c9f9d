#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Train one small MLP per island on its shard of scikit-learn's digits,
decentralised over isthmus rounds, or synchronously with torch.distributed
(gloo) all-reduce of the gradients every step, and compare the two.

  train.py worker --mode isthmus|gloo --island K --islands N --out DIR ...
      one island (one process); writes DIR/<mode>-<K>.jsonl
  train.py local --out DIR ...
      both runs on this host: N worker processes each, the isthmus run
      against loopback edges (isthmus.loopback: rounds of --period-ms,
      rotating cliques), the gloo run over 127.0.0.1
  train.py net --mode isthmus|gloo --out DIR ...
      one run over the emulated WAN, as the command of `scripts/testbed.sh
      up [--edges] -- ...` (its TB_* variables): N workers, each in its
      site's namespace (scripts/train.sh --testbed runs both)
  train.py size [--hidden H]
      the model's parameter count (the edges' elements)
  train.py report DIR [--target A]
      summary table, DIR/accuracy.png, DIR/summary.json
  train.py check DIR [--bf16-sums]
      recomputes every isthmus aggregate from what each island sent
      (--record) and checks it is the exact sum over its bitmap

Same model, data, shards and seeds in both runs. --compute-ms pads each
step (forward, backward, optimiser) to a GPU-like step time, so that the
compute/communication ratio is the regime studied (doc/training.md).
"""
import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

try:
    import torch
    import torch.nn as nn
except ImportError:                     # pragma: no cover
    sys.exit("train.py: needs PyTorch (Debian python3-torch)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lm_train import BASELINES, ISTHMUS, flat_elems, worker_lm   # noqa: E402

LM_MODES = BASELINES + ISTHMUS


# Per model, what an option left unset means: the lm's are the benchmark's
# settings (doc/training.md, "The language model against DiLoCo"), so that
# `train.sh --testbed --model lm` alone runs it: a GPU-like step of 1 s,
# 200 steps, and H = 1 for the isthmus runs (a contribution every step:
# the tree's round, 0.7 s, is shorter than a step; H = 1, 2 and 4 reached
# the target loss in 64, 74 and 76 s there).
MODEL_DEFAULTS = {
    "mlp": {"steps": 300, "compute_ms": 50.0, "local_steps": 1},
    "lm": {"steps": 200, "compute_ms": 1000.0, "local_steps": 1},
}


def check_model_mode(ap, a):
    """The modes of each model: mlp has isthmus and gloo, lm the five runs."""
    modes = [a.mode] if hasattr(a, "mode") else a.runs.split(",")
    ok = LM_MODES if a.model == "lm" else ("isthmus", "gloo")
    bad = [m for m in modes if m not in ok]
    if bad:
        ap.error("--model %s runs %s, not %s" % (a.model, ", ".join(ok), ", ".join(bad)))


# ---- data and model --------------------------------------------------------

def island_key_file(e, k):
    """The key file island k is given on a testbed run with auth on."""
    if e.get("TB_KEY_DIR"):
        return os.path.join(e["TB_KEY_DIR"], "island-%d.key" % k)
    return e["TB_KEY_FILE"]


def digits(path=None):
    """scikit-learn's digits (8x8 images, 10 classes), or the copy the
    launcher saved at @path (workers then need not import scikit-learn)."""
    if path:
        z = np.load(path)
        return z["data"], z["target"]
    from sklearn.datasets import load_digits
    d = load_digits()
    return d.data, d.target


def load_data(seed=0, path=None):
    data, target = digits(path)
    x = torch.tensor(data / 16.0, dtype=torch.float32)
    y = torch.tensor(target, dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(y), generator=g)
    n_test = len(y) // 5
    te, tr = perm[:n_test], perm[n_test:]
    return x[tr], y[tr], x[te], y[te]


def make_model(hidden, seed):
    torch.manual_seed(seed)             # the same start on every island
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


# ---- one island --------------------------------------------------------------

def island_group(a):
    """--island-ranks K > 1: this island's gloo group (rank --island-rank,
    rendezvous at --island-master, data on --island-ifname), else None."""
    if a.island_ranks == 1:
        return None
    import datetime
    import torch.distributed as dist
    if a.island_ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = a.island_ifname
    dist.init_process_group("gloo", init_method="tcp://" + a.island_master,
                            rank=a.island_rank, world_size=a.island_ranks,
                            timeout=datetime.timedelta(seconds=120))
    return dist.group.WORLD


def ranks_identical(group, params):
    """The largest difference between this island's ranks' parameters
    (0.0: identical bit for bit); a collective call."""
    import torch.distributed as dist
    x = torch.cat([p.detach().reshape(-1) for p in params])
    hi, lo = x.clone(), x.clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX, group=group)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN, group=group)
    return float((hi - lo).max())


def worker(a):
    torch.set_num_threads(1)
    xtr, ytr, xte, yte = load_data(a.seed, a.data)
    shard = torch.arange(a.island, len(ytr), a.islands)
    # an island of K ranks: rank h takes every K-th sample of the island's
    # shard and its share of the island's batch (batch / K, the first
    # batch % K ranks one more), so that the island's batch (the ranks'
    # gradients, weighted by their shares, summed each step) is the same
    shard = shard[a.island_rank::a.island_ranks]
    batch = a.batch // a.island_ranks + (a.island_rank < a.batch % a.island_ranks)
    xs, ys = xtr[shard], ytr[shard]
    model = make_model(a.hidden, a.seed)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=a.lr)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(a.seed * 1000 + a.island + 100000 * a.island_rank)
    os.makedirs(a.out, exist_ok=True)
    label = a.label or a.mode
    lead = a.island_rank == 0           # logs and records the island
    log = open(os.path.join(a.out, "%s-%d.jsonl" % (label, a.island)) if lead else os.devnull,
               "w")

    avg = sess = pg = None
    record = None
    flat_n = sum(p.numel() for p in params)
    group = island_group(a)
    if group is not None:
        igrad = torch.zeros(flat_n)
    if a.mode == "isthmus":
        import isthmus
        from isthmus.torch import Averager
        host, port = a.edge.rsplit(":", 1)
        bhost, bport = (a.bind.rsplit(":", 1) if a.bind else ("0.0.0.0", "0"))
        sess = isthmus.Session(job=a.job, island=a.island, n_islands=a.islands,
                               elems=flat_n, edge=(host, int(port)),
                               bind=(bhost, int(bport)), dtype=a.dtype,
                               grace=a.grace_ms / 1e3, key_file=a.key_file,
                               auth=a.key_file is not None,
                               hosts=a.island_ranks, host=a.island_rank)
        if a.record and lead:
            record = {"round": [], "sent": [], "sum": [], "bitmaps": []}

            def on_result(rnd, sent, out, res):
                record["round"].append(rnd)
                record["sent"].append(sent.numpy().copy())
                record["sum"].append(out.numpy().copy())
                record["bitmaps"].append(list(res.chunk_bitmaps))
        avg = Averager(params, sess, local_steps=a.local_steps, mode=a.avg_mode,
                       blend=a.blend, max_inflight=a.overlap,
                       on_result=on_result if record is not None else None, group=group)
    else:
        import torch.distributed as dist
        if a.ifname:
            os.environ["GLOO_SOCKET_IFNAME"] = a.ifname
        # the rank is the island's place in gloo's ring (--rank-order);
        # the island (its shard, its seed) stays what it is
        dist.init_process_group("gloo", init_method="tcp://" + a.master,
                                rank=a.island if a.rank is None else a.rank,
                                world_size=a.islands,
                                timeout=__import__("datetime").timedelta(seconds=120))
        pg = dist
        grad = torch.zeros(flat_n)
        # one all-reduce before the clock starts: rendezvous is not training
        pg.all_reduce(grad)

    # Ready; start together at the launcher's GO time (CLOCK_REALTIME ns),
    # so that both runs' clocks start at one instant on every island.
    if a.launcher:
        print("READY %d" % (sess.local_port if sess else 0), flush=True)
        line = sys.stdin.readline().split()
        if len(line) != 2 or line[0] != "GO":
            sys.exit("train.py worker %d: no GO from the launcher" % a.island)
        wait = (int(line[1]) - time.time_ns()) / 1e9
        if wait > 0:
            time.sleep(wait)        # a start time, not a synchronisation
    t0 = time.perf_counter()
    compute_s = comm_s = 0.0
    ev = {"t": 0.0, "step": 0, "acc": accuracy(model, xte, yte)}
    log.write(json.dumps(ev) + "\n")
    for step in range(1, a.steps + 1):
        c0 = time.perf_counter()
        idx = torch.randint(0, len(ys), (batch,), generator=g)
        opt.zero_grad()
        loss = loss_fn(model(xs[idx]), ys[idx])
        loss.backward()
        if group is not None:
            island_grad(group, params, igrad, batch / a.batch)
        if pg is None:
            opt.step()
        # pad to the step time a GPU would take: this is the model of
        # compute, not a synchronisation
        spent = time.perf_counter() - c0
        if a.compute_ms / 1e3 > spent:
            time.sleep(a.compute_ms / 1e3 - spent)
        compute_s += time.perf_counter() - c0
        m0 = time.perf_counter()
        if pg is not None:
            off = 0
            for p in params:
                grad[off:off + p.numel()] = p.grad.reshape(-1)
                off += p.numel()
            pg.all_reduce(grad)
            if a.allreduce_pad_ms:      # local mode only: a modelled WAN
                time.sleep(a.allreduce_pad_ms / 1e3)
            grad /= a.islands
            off = 0
            for p in params:
                p.grad.copy_(grad[off:off + p.numel()].view_as(p))
                off += p.numel()
            opt.step()
        else:
            avg.step()
        comm_s += time.perf_counter() - m0
        if lead and (step % a.eval_every == 0 or step == a.steps):
            ev = {"t": time.perf_counter() - t0, "step": step,
                  "acc": accuracy(model, xte, yte), "loss": float(loss)}
            if avg is not None:
                ev["staleness"] = avg.staleness()
            log.write(json.dumps(ev) + "\n")
            log.flush()
    wall = time.perf_counter() - t0
    summ = {"summary": True, "mode": a.mode, "label": label, "island": a.island,
            "rank": a.rank, "steps": a.steps, "island_ranks": a.island_ranks,
            "wall_s": wall, "steps_per_s": a.steps / wall,
            "idle_frac": comm_s / wall, "compute_s": compute_s,
            "final_acc": accuracy(model, xte, yte)}
    if avg is not None:
        avg.flush(timeout=2 * a.period_ms / 1e3 + 1.0)
        summ.update(staleness=avg.staleness(), **{"avg_" + k: v for k, v in avg.stats.items()})
        summ["counters"] = {k: v for k, v in sess.counters().items() if v}
        # the edges' chunk size (smaller with auth: the tag and header)
        ce = sess.chunk_elems
        sess.close()
        if group is not None:
            # every rank of the island took the same steps and corrections
            summ["ranks_max_diff"] = ranks_identical(group, params)
        if record is not None:
            np.savez(os.path.join(a.out, "record-%s-%d.npz" % (label, a.island)),
                     round=np.array(record["round"], np.int64),
                     sent=np.array(record["sent"], np.float32).reshape(-1, flat_n),
                     sum=np.array(record["sum"], np.float32).reshape(-1, flat_n),
                     bitmaps=np.array(record["bitmaps"], np.uint64).reshape(len(record["round"]), -1),
                     chunk_elems=np.int64(ce))
    else:
        pg.destroy_process_group()
    if group is not None:
        from torch import distributed as tdist
        tdist.destroy_process_group()
    log.write(json.dumps(summ) + "\n")
    log.close()
    return 0


def island_grad(group, params, buf, share):
    """Data parallel inside the island: the ranks' gradients, each weighted
    by its @share of the island's batch, summed (one flat all-reduce over
    the island's group), so that every rank takes the island's step."""
    import torch.distributed as dist
    off = 0
    for p in params:
        buf[off:off + p.numel()] = p.grad.reshape(-1)
        off += p.numel()
    buf *= share
    dist.all_reduce(buf, group=group)
    off = 0
    for p in params:
        p.grad.copy_(buf[off:off + p.numel()].view_as(p))
        off += p.numel()


# ---- launching workers ---------------------------------------------------------

def launch(cmds, mode, env, on_port=None, prefix=None, not_before=0):
    """Start one worker per command (each after its @prefix, e.g. a
    `testbed.sh exec` into its namespace), wait until every one is READY
    (socket bound, or rendezvous done), then send them all one GO time,
    not before @not_before (CLOCK_REALTIME ns)."""
    prefix = prefix or [()] * len(cmds)
    procs = [subprocess.Popen(list(pre) + cmd + ["--launcher"], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for cmd, pre in zip(cmds, prefix)]
    for k, p in enumerate(procs):
        line = p.stdout.readline().split()
        if len(line) != 2 or line[0] != "READY":
            for q in procs:
                q.kill()
            sys.exit("train.py: %s worker %d exited before it was ready" % (mode, k))
        if on_port is not None:
            on_port(k, int(line[1]))
    go = time.time_ns() + int(0.5e9)
    if not_before > go:
        print("train.py: %s: the clock starts at the edges' epoch, %.1f s after every worker "
              "was ready" % (mode, (not_before - go) / 1e9 + 0.5), file=sys.stderr)
        go = not_before
    for p in procs:
        p.stdin.write("GO %d\n" % go)
        p.stdin.flush()
    return procs


def wan_bytes(e):
    """Bytes the sites (or their edges) have sent into the emulated WAN:
    the receive counters of every port of the emulator's namespace."""
    try:
        out = subprocess.run(["ip", "-j", "-s", "-n", e["TB_WAN_NS"], "link", "show"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, KeyError, subprocess.CalledProcessError):
        return None
    return sum(l["stats64"]["rx"]["bytes"] for l in json.loads(out) if l["ifname"] != "lo")


MPI_AGENT = """#!/bin/sh
# Open MPI's rsh agent for the testbed: each namespace is a host, with a
# UTS namespace of its own so that every host has its own name
host=$1
shift
exec ip netns exec "$host" unshare --uts /bin/sh -c "hostname $host; $*"
"""


def mpi_command(a, e, rank_sites):
    """mpirun in the management namespace, one rank per site namespace in
    @rank_sites order (Open MPI's ring follows the ranks), data over the
    WAN: the tuned ring of doc/peers.md (algorithm 4, yield when idle)."""
    agent = os.path.join(a.out, "mpi-agent.sh")
    with open(agent, "w") as f:
        f.write(MPI_AGENT)
    os.chmod(agent, 0o755)
    hosts = os.path.join(a.out, "mpi-hosts")
    with open(hosts, "w") as f:
        for k in rank_sites:
            f.write("%s slots=1\n" % e["TB_NS_%d" % k])
    ns = ",".join(e["TB_NS_%d" % k] for k in range(a.islands))
    return ([a.testbed, "exec", e["TB_ENV"], "mgmt", "mpirun", "--hostfile", hosts,
             "-np", str(a.islands), "--map-by", "node", "--bind-to", "none",
             "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
             "--mca", "oob_tcp_if_include", e["TB_MGMT_NET"], "--mca", "pml", "ob1",
             "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", e["TB_DATA_NET"],
             "--mca", "mpi_yield_when_idle", "1", "--mca", "coll_tuned_use_dynamic_rules", "1",
             "--mca", "coll_tuned_allreduce_algorithm", "4",
             "-x", "PYTHONPATH"]
            + worker_args(a, a.mode, -1) + ["--ns-list", ns])


def run_net(a):
    """One run on the testbed's sites (run as `scripts/testbed.sh up ... --
    train.py net ...`, which exports the env file's TB_* variables): each
    worker in its site's namespace through `testbed.sh exec` (with --comm
    mpi: one mpirun, its ranks in the sites' namespaces)."""
    e = os.environ
    isth = a.mode.startswith("isthmus")
    need = ["TB_ENV", "TB_N"] + (["TB_EDGE_PORT", "TB_JOB", "TB_ELEMS"]
                                 if isth else ["TB_MGMT_IP_0", "TB_DATA_IF"])
    miss = [v for v in need if v not in e]
    if miss:
        sys.exit("train.py net: not under `scripts/testbed.sh up%s`: no %s"
                 % (" --edges" if isth else "", ", ".join(miss)))
    n = int(e["TB_N"])
    if n != a.islands:
        sys.exit("train.py net: the testbed has %d sites, --islands is %d" % (n, a.islands))
    flat_n = model_elems(a)
    if isth and int(e["TB_ELEMS"]) != flat_n:
        sys.exit("train.py net: the edges expect %s elements, the model has %d "
                 "(testbed.sh up --edges --payload-bytes %d)" % (e["TB_ELEMS"], flat_n, 4 * flat_n))
    os.makedirs(a.out, exist_ok=True)
    if a.model == "mlp":
        data, target = digits()
        np.savez(os.path.join(a.out, "digits.npz"), data=data, target=target)
    if isth and e.get("TB_SCHED"):
        # the schedule the edges run, for check (tree rounds) and report
        # (planned T); the testbed's copy goes with its run directory
        shutil.copyfile(e["TB_SCHED"], os.path.join(a.out, "sched-%s.txt" % (a.label or a.mode)))
        json.dump({"schedule": e.get("TB_SCHED_NAME", "?"),
                   "round_ms": int(e.get("TB_ROUND_NS", 0)) / 1e6},
                  open(os.path.join(a.out, "edges-%s.json" % (a.label or a.mode)), "w"))
    names = [e.get("TB_SITE_%d" % k, str(k)) for k in range(n)]
    rank = list(range(n))               # gloo: rank of site k
    if a.rank_order:
        order = a.rank_order.replace(",", " ").split()
        if sorted(order) != sorted(names):
            sys.exit("train.py net: --rank-order %s does not name the testbed's sites %s once each"
                     % (" ".join(order), " ".join(names)))
        for r, name in enumerate(order):
            rank[names.index(name)] = r
    if not isth and a.tcp_sysctl:
        # TCP settings of the sites' kernels (one network namespace each)
        for k in range(n):
            subprocess.run([a.testbed, "exec", e["TB_ENV"], str(k), "sysctl", "-q", "-w"]
                           + a.tcp_sysctl, check=True)
    K = a.island_ranks
    if isth and K != int(e.get("TB_ISLAND_HOSTS", "1")):
        sys.exit("train.py net: --island-ranks %d, but the testbed's islands are %s hosts "
                 "(testbed.sh up --edges --island-hosts %d)" % (K, e.get("TB_ISLAND_HOSTS", 1), K))
    if isth:
        print("train.py: %s: %d islands of %d rank%s, auth %s" % (
            a.label or a.mode, n, K, "s" if K > 1 else "", e.get("TB_AUTH", "?")), file=sys.stderr)
    extra, prefix, isl = [], [], []
    for k in range(n):
        for h in range(K if isth else 1):
            isl.append(k)
            # --island-ranks K: rank h in host h's namespace of island k,
            # its gloo group on the island's bridge, rendezvous at host 0
            hp = "%d_%d" % (k, h)
            prefix.append((a.testbed, "exec", e["TB_ENV"], "%d/%d" % (k, h) if K > 1 else str(k)))
            if not isth:
                continue
            extra.append(["--edge", "%s:%s" % (e["TB_EDGE_IP_%d" % k], e["TB_EDGE_PORT"]),
                          "--bind", "%s:9471" % (e["TB_HOST_IP_" + hp] if K > 1
                                                 else e["TB_DATA_IP_%d" % k]),
                          "--job", e["TB_JOB"], "--grace-ms", e.get("TB_GRACE_MS", "0")]
                         # with --auth on: island k's own site file (it cannot
                         # seal as another island), else the run's job file;
                         # the hosts of an island share it
                         + (["--key-file", island_key_file(e, k)] if e.get("TB_KEY_FILE") else [])
                         + (["--island-rank", str(h), "--island-ifname", e["TB_HOST_IF"],
                             "--island-master", "%s:29500" % e["TB_HOST_IP_%d_0" % k]]
                            if K > 1 else []))
        if not isth:
            master = e["TB_MGMT_IP_%d" % rank.index(0)]     # rank 0's site
            extra.append(["--master", "%s:29500" % master, "--ifname", e["TB_DATA_IF"],
                          "--rank", str(rank[k])])
    t = time.time()
    b0 = wan_bytes(e)
    if a.model == "lm" and not isth and a.comm == "mpi":
        env = dict(e, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        rc = subprocess.run(mpi_command(a, e, [rank.index(r) for r in range(n)]),
                            env=env).returncode
    else:
        # isthmus: the clock starts at the edges' first round, not while
        # the islands could only train alone (before it, no ROUND comes)
        procs = launch([worker_args(a, a.mode, k) + extra[j] for j, k in enumerate(isl)],
                       a.mode, dict(e), prefix=prefix,
                       not_before=int(e["TB_EPOCH_NS"]) if isth else 0)
        rc = 0
        for p in procs:
            rc |= p.wait()
    b1 = wan_bytes(e)
    label = a.label or a.mode
    if b0 is not None and b1 is not None:
        # the whole run: start-up (rendezvous, a warm-up all-reduce, idle
        # rounds) included, which counts against every run alike
        json.dump({"bytes": b1 - b0, "seconds": time.time() - t},
                  open(os.path.join(a.out, "wan-%s.json" % label), "w"))
    print("train.py: %s run over the testbed took %.1f s" % (label, time.time() - t),
          file=sys.stderr)
    return 1 if rc else 0


# ---- both runs on this host ---------------------------------------------------

def worker_args(a, mode, k):
    args = [sys.executable, os.path.abspath(__file__), "worker", "--mode", mode,
            "--island", str(k), "--islands", str(a.islands), "--out", a.out,
            "--steps", str(a.steps), "--compute-ms", str(a.compute_ms),
            "--batch", str(a.batch), "--lr", str(a.lr), "--hidden", str(a.hidden),
            "--seed", str(a.seed), "--eval-every", str(a.eval_every),
            "--dtype", a.dtype, "--local-steps", str(a.local_steps),
            "--avg-mode", a.avg_mode, "--blend", str(a.blend),
            "--overlap", str(a.overlap), "--period-ms", str(a.period_ms),
            "--data", os.path.join(a.out, "digits.npz")]
    if mode == "isthmus":
        args += ["--island-ranks", str(a.island_ranks)]
    if a.model == "lm":
        args += ["--model", "lm", "--d-model", str(a.d_model), "--layers", str(a.layers),
                 "--heads", str(a.heads), "--ctx", str(a.ctx), "--inner-lr", str(a.inner_lr),
                 "--weight-decay", str(a.weight_decay),
                 "--diloco-local-steps", str(a.diloco_local_steps),
                 "--outer-lr", str(a.outer_lr), "--outer-momentum", str(a.outer_momentum),
                 "--eval-s", str(a.eval_s), "--eval-batch", str(a.eval_batch),
                 "--corpus", a.corpus, "--comm", a.comm]
    if a.label:
        args += ["--label", a.label]
    if a.record:
        args.append("--record")
    return args


def model_elems(a):
    if a.model == "lm":
        return flat_elems(a)
    return sum(p.numel() for p in make_model(a.hidden, a.seed).parameters())


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_local(a):
    from isthmus.loopback import LoopbackEdges, all_to_all, triangles
    os.makedirs(a.out, exist_ok=True)
    for f in glob.glob(os.path.join(a.out, "*.jsonl")) + glob.glob(os.path.join(a.out, "*.npz")):
        os.remove(f)
    flat_n = model_elems(a)
    if a.model == "mlp":
        data, target = digits()
        np.savez(os.path.join(a.out, "digits.npz"), data=data, target=target)
    env = dict(os.environ)
    rc = 0
    order = a.runs.split(",")
    for mode in order:
        t = time.time()
        edges = None
        if mode.startswith("isthmus"):
            # lm: isthmus-diloco has one clique of every island (an exact
            # global sum a round), isthmus-cliques rotating triangles
            tri = (a.cliques == "triangles" if mode == "isthmus" else mode == "isthmus-cliques")
            cl = triangles(a.islands) if tri else all_to_all(a.islands)
            K = a.island_ranks if mode == "isthmus" else 1
            edges = LoopbackEdges(a.islands, flat_n, period=a.period_ms / 1e3,
                                  cliques=cl, start_in=0.2, hosts=K).start()
            isl = [(k, h) for k in range(a.islands) for h in range(K)]
            # --island-ranks K: island k's ranks rendezvous at a port of its own
            master = [free_port() for _ in range(a.islands)]
            extra = [["--edge", "127.0.0.1:%d" % edges.ports[k], "--bind", "127.0.0.1:0"]
                     + (["--island-rank", str(h), "--island-master", "127.0.0.1:%d" % master[k]]
                        if K > 1 else [])
                     for k, h in isl]
            on_port = (lambda j, port: edges.register(isl[j][0], port, host=isl[j][1]))
        else:
            isl = [(k, 0) for k in range(a.islands)]
            port = free_port()
            extra = [["--master", "127.0.0.1:%d" % port] +
                     (["--allreduce-pad-ms", str(a.allreduce_pad_ms)] if a.allreduce_pad_ms else [])
                     for k in range(a.islands)]
        procs = launch([worker_args(a, mode, k) + extra[j] for j, (k, _) in enumerate(isl)],
                       mode, env, on_port if edges is not None else None)
        for p in procs:
            rc |= p.wait()
        if edges is not None:
            edges.stop()
            print("train.py: loopback edges: %s" % edges.stats, file=sys.stderr)
        print("train.py: %s run took %.1f s" % (mode, time.time() - t), file=sys.stderr)
    if rc:
        sys.exit("train.py: a worker failed")
    return report(a)


# ---- report and check ----------------------------------------------------------

def read_runs(out):
    runs = {}
    for f in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
        mode, k = os.path.basename(f)[:-6].rsplit("-", 1)
        ev, summ = [], None
        for line in open(f):
            d = json.loads(line)
            if d.get("summary"):
                summ = d
            else:
                ev.append(d)
        runs.setdefault(mode, {})[int(k)] = (ev, summ)
    return runs


def time_to(ev, target):
    for e in ev:
        if e["acc"] >= target:
            return e["t"]
    return math.inf


def report(a):
    runs = read_runs(a.out)
    if any(s and s.get("model") == "lm" for isl in runs.values() for _, s in isl.values()):
        from lm_report import report_lm
        return report_lm(a, runs)
    table = {}
    for mode, isl in sorted(runs.items()):
        summ = [s for _, s in isl.values() if s]
        if len(summ) != len(isl):
            sys.exit("train.py: %s: %d of %d islands finished" % (mode, len(summ), len(isl)))
        tt = [time_to(ev, a.target) for ev, _ in isl.values()]
        table[mode] = {
            "islands": len(isl),
            "steps_per_s": float(np.mean([s["steps_per_s"] for s in summ])),
            "wall_s": float(np.max([s["wall_s"] for s in summ])),
            "final_acc": float(np.mean([s["final_acc"] for s in summ])),
            "final_acc_min": float(np.min([s["final_acc"] for s in summ])),
            "idle_frac": float(np.mean([s["idle_frac"] for s in summ])),
            "time_to_target_s": float(np.max(tt)),      # every island there
            "staleness_rounds": float(np.mean([s.get("staleness", 0.0) for s in summ])),
        }
        if mode.startswith("isthmus"):
            table[mode]["rounds_partial"] = int(sum(s.get("avg_partial", 0) for s in summ))
            table[mode]["rounds_applied"] = int(sum(s.get("avg_applied", 0) for s in summ))
            # islands summed per applied round, self included: 1 means
            # that no peer's contribution ever reached this island
            applied = table[mode]["rounds_applied"]
            table[mode]["contributors"] = (
                float(sum(s.get("avg_contributors_sum", 0) for s in summ)) / applied
                if applied else 0.0)
            table[mode]["island_ranks"] = max(s.get("island_ranks", 1) for s in summ)
            if table[mode]["island_ranks"] > 1:
                # the largest difference between two ranks of one island
                table[mode]["ranks_max_diff"] = max(s["ranks_max_diff"] for s in summ)
    print("%-8s %7s %10s %9s %9s %9s %12s %10s" % ("run", "islands", "steps/s", "final_acc",
                                                 "min_acc", "idle", "t_target_s", "staleness"))
    for mode, t in table.items():
        print("%-8s %7d %10.2f %9.3f %9.3f %9.3f %12.2f %10.2f" % (
            mode, t["islands"], t["steps_per_s"], t["final_acc"], t["final_acc_min"],
            t["idle_frac"], t["time_to_target_s"], t["staleness_rounds"]))
        if "contributors" in t:
            print("%s: %d rounds applied, %d partial, %.2f islands summed per round (self "
                  "included)%s" % (mode, t["rounds_applied"], t["rounds_partial"],
                                   t["contributors"],
                                   ": NO PEER CONTRIBUTION ARRIVED, the islands trained alone"
                                   if t["contributors"] <= 1.0 else ""))
        if t.get("island_ranks", 1) > 1:
            print("%s: islands of %d ranks; the ranks of an island %s" % (
                mode, t["island_ranks"], "identical" if t["ranks_max_diff"] == 0 else
                "DIFFER, by %g at most" % t["ranks_max_diff"]))
    # every isthmus run against every synchronous one (gloo, gloo-tuned)
    for mine in [m for m in list(table) if m.startswith("isthmus")]:
        for base in [m for m in list(table) if m.startswith("gloo")]:
            a_, b_ = table[mine]["time_to_target_s"], table[base]["time_to_target_s"]
            ratio = (b_ / a_ if a_ > 0 and math.isfinite(a_) and math.isfinite(b_)
                     else float("nan"))
            print("time to %.2f accuracy: %s / %s = %.2f" % (a.target, base, mine, ratio))
            key = "speedup_time_to_target"
            if (mine, base) != ("isthmus", "gloo"):
                key += "_%s_vs_%s" % (mine, base)
            table[key] = ratio
    for mode in [m for m in list(table) if isinstance(table[m], dict)]:
        # the machine's load average when the run started and ended
        # (train.sh writes OUT/load-<run>.txt: `uptime` before and after)
        f = os.path.join(a.out, "load-%s.txt" % mode)
        if os.path.exists(f):
            table[mode]["load"] = [l.split("load average:")[-1].strip()
                                   for l in open(f) if "load average" in l]
            print("%s: load average %s" % (mode, " -> ".join(table[mode]["load"])))
    table["target"] = a.target
    json.dump(table, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        colours = {"isthmus": "tab:blue", "isthmus-triangles": "tab:cyan",
                   "gloo": "tab:red", "gloo-tuned": "tab:orange"}
        for mode, isl in sorted(runs.items()):
            for k, (ev, _) in sorted(isl.items()):
                ax.plot([e["t"] for e in ev], [e["acc"] for e in ev],
                        color=colours.get(mode, "k"), alpha=0.35, lw=1,
                        label=mode if k == 0 else None)
        ax.axhline(a.target, color="grey", ls=":", lw=1)
        ax.set_xlabel("wall-clock time (s)")
        ax.set_ylabel("test accuracy (each island)")
        ax.set_title("digits MLP, %d islands" % max(len(i) for i in runs.values()))
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "accuracy.png"), dpi=110)
    except ImportError:
        print("train.py: no matplotlib (python3-matplotlib): no plot", file=sys.stderr)
    return 0


def table(a):
    """One markdown table over the repetitions (each DIR a `report`ed
    run set, e.g. train.sh --pairs P: OUT/rep1 ... OUT/repP)."""
    first = os.path.join(a.dirs[0], "summary.json")
    if os.path.exists(first) and json.load(open(first)).get("model") == "lm":
        from lm_report import table_lm
        return table_lm(a)
    print("| rep | run | steps/s | wall s | final acc (mean / min) | idle | time to %.2f s "
          "| staleness (rounds) | rounds partial / applied, islands summed | load average (start -> end) |" % a.target)
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios = {}
    for d in a.dirs:
        f = os.path.join(d, "summary.json")
        if not os.path.exists(f):
            print("| %s | (no summary.json) |" % os.path.basename(d))
            continue
        t = json.load(open(f))
        for mode, r in t.items():
            if not isinstance(r, dict):
                if mode.startswith("speedup"):
                    ratios.setdefault(mode, []).append(r)
                continue
            part = ("%d / %d, %.2f" % (r["rounds_partial"], r["rounds_applied"],
                                       r.get("contributors", 0))
                    if "rounds_applied" in r else "-")
            load = " -> ".join(x.split(",")[0] for x in r.get("load", []))
            print("| %s | %s | %.2f | %.1f | %.3f / %.3f | %.3f | %s | %.2f | %s | %s |" % (
                os.path.basename(d.rstrip("/")), mode, r["steps_per_s"], r["wall_s"],
                r["final_acc"], r["final_acc_min"], r["idle_frac"],
                "%.2f" % r["time_to_target_s"] if math.isfinite(r["time_to_target_s"])
                else "not reached", r["staleness_rounds"], part, load))
    print()
    for k, v in sorted(ratios.items()):
        print("%s: %s" % (k, ", ".join("%.2f" % x for x in v)))
    return 0


def check(a):
    """Every recorded aggregate must be the sum over its bitmap of what
    those islands sent for that round, within the fp32 summation bound
    (doc/island.md): |got - exact| <= (m - 1) * 2^-24 * sum |x_k|, plus,
    with --bf16-sums, 2^-8 * sum |x_peer| for the edge's rounding."""
    from lm_record import check_lm, sum_bound, tree_height
    # the run's schedule as the edges ran it (run_net keeps it): tree
    # rounds round at every edge with children (sum_bound)
    th = tree_height(os.path.join(a.out, "sched-%s.txt" % a.run))
    if glob.glob(os.path.join(a.out, "record-%s-*.bin" % a.run)):
        # --model lm: streamed records (lm_record.py)
        n = model_elems(a)
        isl, rounds, chunks, wrong, unchecked = check_lm(a.out, a.run, n, a.bf16_sums, th)
        # unchecked: chunks with a member whose send was not recorded
        # ends in wrong=W: the system tests and scripts look for that
        print("CHECK run=%s islands=%d %srounds=%d chunks=%d unchecked=%d wrong=%d"
              % (a.run, isl, "tree_height=%d " % th if th else "", rounds, chunks,
                 unchecked, wrong))
        return 0 if wrong == 0 and chunks > 0 else 1
    recs = {}
    for f in glob.glob(os.path.join(a.out, "record-%s-*.npz" % a.run)):
        k = os.path.basename(f)[len("record-%s-" % a.run):-4]
        if not k.isdigit():
            continue                    # another run's (isthmus-triangles)
        k = int(k)
        z = np.load(f)
        recs[k] = {int(r): (z["sent"][i].astype(np.float64), z["sum"][i].astype(np.float64),
                            [int(b) for b in z["bitmaps"][i]])
                   for i, r in enumerate(z["round"])}
        ce = int(z["chunk_elems"])
    if not recs:
        sys.exit("train.py check: no record-%s-*.npz in %s (run with --record)" % (a.run, a.out))
    chunks = wrong = rounds = 0
    for k, rr in sorted(recs.items()):
        for r, (sent, got, bitmaps) in sorted(rr.items()):
            rounds += 1
            for c, bm in enumerate(bitmaps):
                sl = slice(c * ce, (c + 1) * ce)
                members = [j for j in range(64) if bm >> j & 1]
                parts = []
                for j in members:
                    if j == k:
                        parts.append(sent[sl])
                    elif r in recs.get(j, {}):
                        parts.append(recs[j][r][0][sl])
                    else:
                        parts = None    # a contributor that never applied r
                        break
                if parts is None:
                    continue
                exact = np.sum(parts, axis=0)
                bound = sum_bound(parts, members, k, a.bf16_sums, th)
                chunks += 1
                if np.any(np.abs(got[sl] - exact) > bound + 1e-30):
                    wrong += 1
    print("CHECK run=%s islands=%d %srounds=%d chunks=%d wrong=%d"
          % (a.run, len(recs), "tree_height=%d " % th if th else "", rounds, chunks, wrong))
    return 0 if wrong == 0 and chunks > 0 else 1


# ---- command line --------------------------------------------------------------

def common(p):
    p.add_argument("--out", required=True, help="directory for logs, plot, summary")
    p.add_argument("--islands", type=int, default=9)
    p.add_argument("--steps", type=int, default=None,
                   help="optimiser steps per island (default: mlp %d, lm %d)"
                        % (MODEL_DEFAULTS["mlp"]["steps"], MODEL_DEFAULTS["lm"]["steps"]))
    p.add_argument("--compute-ms", type=float, default=None,
                   help="pad every step to this long, a GPU-like step time (default: mlp "
                        "%g, lm %g)" % (MODEL_DEFAULTS["mlp"]["compute_ms"],
                                        MODEL_DEFAULTS["lm"]["compute_ms"]))
    p.add_argument("--batch", type=int, default=None,
                   help="per island and step: images (mlp, default 32) or windows of "
                        "--ctx bytes (lm, default 8)")
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="bf16",
                   help="isthmus: element type on the wire")
    p.add_argument("--local-steps", type=int, default=None,
                   help="isthmus: H, optimiser steps between exchanges, at least (default: "
                        "mlp %d, lm %d)" % (MODEL_DEFAULTS["mlp"]["local_steps"],
                                            MODEL_DEFAULTS["lm"]["local_steps"]))
    p.add_argument("--avg-mode", choices=["params", "delta"], default="delta")
    p.add_argument("--blend", type=float, default=1.0)
    p.add_argument("--overlap", type=int, default=2, help="isthmus: rounds in flight")
    p.add_argument("--period-ms", type=float, default=565.0,
                   help="round period T (loopback edges; flush bound)")
    p.add_argument("--data", default=None,
                   help="digits as an .npz (data, target); default: scikit-learn's")
    p.add_argument("--record", action="store_true",
                   help="isthmus: keep what was sent and summed, for `check`")
    p.add_argument("--label", default=None,
                   help="the run's name in the logs (default: the mode), e.g. gloo-tuned")
    p.add_argument("--island-ranks", type=int, default=1, choices=range(1, 5), metavar="K",
                   help="mlp, isthmus: every island is K ranks (1..4), data parallel "
                        "inside the island over gloo, each rank a session of hosts=K "
                        "exchanging its chunk range (--batch is the island's, shared by the "
                        "ranks; net: the testbed's island hosts, `up --island-hosts K`)")
    lmo = p.add_argument_group("--model lm (examples/lm.py, lm_train.py, diloco.py)")
    lmo.add_argument("--model", choices=["mlp", "lm"], default="mlp",
                     help="mlp: the digits MLP (modes isthmus, gloo); lm: the byte-level "
                          "transformer on Debian's fortunes (modes %s)" % ", ".join(LM_MODES))
    lmo.add_argument("--d-model", type=int, default=128)
    lmo.add_argument("--layers", type=int, default=1)
    lmo.add_argument("--heads", type=int, default=4)
    lmo.add_argument("--ctx", type=int, default=32, help="context, bytes")
    lmo.add_argument("--inner-lr", type=float, default=2e-3, help="AdamW learning rate")
    lmo.add_argument("--weight-decay", type=float, default=0.01)
    lmo.add_argument("--diloco-local-steps", type=int, default=20,
                     help="diloco, diloco-overlap: H, inner steps per outer step")
    lmo.add_argument("--outer-lr", type=float, default=1.0,
                     help="DiLoCo outer (Nesterov) learning rate, every DiLoCo run (default "
                          "1; the paper's 0.7 with momentum 0.9 was slower for diloco and "
                          "diverged for the overlapped runs: doc/training.md)")
    lmo.add_argument("--outer-momentum", type=float, default=0.0,
                     help="DiLoCo outer Nesterov momentum, every DiLoCo run (default 0: with "
                          "--outer-lr 1, the plain mean of the pseudo-gradients)")
    lmo.add_argument("--eval-s", type=float, default=10.0,
                     help="evaluation loss every this many seconds")
    lmo.add_argument("--eval-batch", type=int, default=16,
                     help="held-out windows of --ctx bytes in the evaluation")
    lmo.add_argument("--corpus", default="/usr/share/games/fortunes",
                     help="the text (Debian package fortunes)")
    lmo.add_argument("--comm", choices=["gloo", "mpi"], default="gloo",
                     help="the baselines' all-reduce: gloo (torch.distributed) or Open MPI "
                          "(mpi4py; net mode: mpirun, the tuned ring in shortest-ring order)")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker")
    common(w)
    w.add_argument("--mode", choices=["isthmus", "gloo"] + list(LM_MODES), required=True)
    w.add_argument("--island", type=int, required=True,
                   help="-1 with --comm mpi: the site whose namespace (--ns-list) this rank is in")
    w.add_argument("--ns-list", default="",
                   help="--comm mpi: the sites' namespaces in order, comma-separated")
    w.add_argument("--job", type=int, default=1)
    w.add_argument("--edge", default="10.10.0.1:9471", help="isthmus: edge IP:PORT")
    w.add_argument("--bind", default=None, help="isthmus: local IP:PORT")
    w.add_argument("--grace-ms", type=float, default=0.0)
    w.add_argument("--key-file", default=None,
                   help="isthmus: the job's key file (wire v2, authenticated); "
                        "without it the session speaks version 1 (auth off) and warns")
    w.add_argument("--launcher", action="store_true",
                   help="print READY <port> and wait for GO <ns> on stdin")
    w.add_argument("--master", default="127.0.0.1:29500", help="gloo: rendezvous IP:PORT")
    w.add_argument("--rank", type=int, default=None,
                   help="gloo: this island's rank (default: the island)")
    w.add_argument("--ifname", default=None, help="gloo: interface for the data")
    w.add_argument("--allreduce-pad-ms", type=float, default=0.0,
                   help="gloo, local mode only: add a modelled WAN all-reduce time")
    w.add_argument("--island-rank", type=int, default=0,
                   help="--island-ranks K: this process's rank in its island (0..K-1)")
    w.add_argument("--island-master", default="127.0.0.1:29600",
                   help="--island-ranks K: the island's gloo rendezvous IP:PORT (rank 0's)")
    w.add_argument("--island-ifname", default=None,
                   help="--island-ranks K: the interface of the island's gloo traffic")
    lo = sub.add_parser("local")
    common(lo)
    lo.add_argument("--runs", default="isthmus,gloo")
    lo.add_argument("--cliques", choices=["triangles", "all"], default="triangles")
    lo.add_argument("--allreduce-pad-ms", type=float, default=0.0,
                    help="gloo: add this modelled WAN all-reduce time per step")
    lo.add_argument("--target", type=float, default=0.9)
    r = sub.add_parser("report")
    r.add_argument("out")
    r.add_argument("--target", type=float, default=0.9)
    nt = sub.add_parser("net")
    common(nt)
    nt.add_argument("--mode", choices=["isthmus", "gloo"] + list(LM_MODES), required=True)

    nt.add_argument("--rank-order", default=None,
                    help="gloo, mpi: site names in rank order (their rings follow the "
                         "ranks), e.g. the planner's shortest ring")
    nt.add_argument("--tcp-sysctl", action="append", default=[], metavar="KEY=VALUE",
                    help="gloo: a sysctl for every site's kernel TCP (repeatable)")
    nt.add_argument("--testbed", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "..", "scripts", "testbed.sh"))
    sz = sub.add_parser("size", help="print the model's parameter count")
    sz.add_argument("--hidden", type=int, default=128)
    sz.add_argument("--seed", type=int, default=1)
    sz.add_argument("--model", choices=["mlp", "lm"], default="mlp")
    sz.add_argument("--d-model", type=int, default=128)
    sz.add_argument("--layers", type=int, default=1)
    sz.add_argument("--heads", type=int, default=4)
    sz.add_argument("--ctx", type=int, default=32)
    tb = sub.add_parser("table", help="one markdown table over repetitions' summaries")
    tb.add_argument("dirs", nargs="+")
    tb.add_argument("--target", type=float, default=0.9)
    c = sub.add_parser("check")
    c.add_argument("out")
    c.add_argument("--run", default="isthmus", help="the isthmus run's label")
    c.add_argument("--model", choices=["mlp", "lm"], default="mlp")
    c.add_argument("--hidden", type=int, default=128)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--d-model", type=int, default=128)
    c.add_argument("--layers", type=int, default=1)
    c.add_argument("--heads", type=int, default=4)
    c.add_argument("--ctx", type=int, default=32)
    c.add_argument("--bf16-sums", action="store_true",
                   help="the edges returned bf16 sums ([agg] bf16_out = bf16, isthmusd's "
                        "default): allow their one rounding")
    a = ap.parse_args()
    if getattr(a, "batch", 0) is None:
        a.batch = 8 if a.model == "lm" else 32
    for k, v in MODEL_DEFAULTS.get(getattr(a, "model", None), {}).items():
        if getattr(a, k, 0) is None:
            setattr(a, k, v)
    if a.cmd in ("worker", "local", "net"):
        check_model_mode(ap, a)
        if a.island_ranks > 1 and (a.model != "mlp" or getattr(a, "mode", "isthmus") != "isthmus"):
            ap.error("--island-ranks: islands of several ranks run the mlp's isthmus mode only "
                     "(local: the gloo run keeps one process an island)")
        if a.batch < a.island_ranks:
            ap.error("--batch %d: fewer than --island-ranks %d" % (a.batch, a.island_ranks))
        if a.cmd == "worker" and not 0 <= a.island_rank < a.island_ranks:
            ap.error("--island-rank must be below --island-ranks")
    if a.cmd == "worker":
        if not (0 <= a.island < a.islands or (a.island == -1 and a.comm == "mpi")):
            ap.error("--island must be below --islands")
        return worker_lm(a) if a.model == "lm" else worker(a)
    if a.cmd == "local":
        if a.model == "lm" and a.comm == "mpi":
            ap.error("local: the baselines' all-reduce is gloo over 127.0.0.1 (--comm mpi: --testbed)")
        if a.islands != 9 and ("isthmus" in a.runs.split(",") and a.cliques == "triangles"
                               or "isthmus-cliques" in a.runs.split(",")):
            ap.error("triangles (isthmus --cliques triangles, isthmus-cliques) need --islands 9")
        return run_local(a)
    if a.cmd == "report":
        return report(a)
    if a.cmd == "net":
        return run_net(a)
    if a.cmd == "table":
        return table(a)
    if a.cmd == "size":
        print(model_elems(a))
        return 0
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
