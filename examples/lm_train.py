# SPDX-License-Identifier: BSD-3-Clause
"""One island of examples/train.py --model lm: the byte-level transformer
of lm.py trained with AdamW on its shard, in one of the runs

  ddp             the gradients all-reduced every step (synchronous)
  diloco          H inner steps, exact all-reduce of the pseudo-gradient,
                  outer Nesterov step (diloco.py)
  diloco-overlap  the same, one-step-delayed (eager), the all-reduce behind
                  the next H inner steps
  isthmus-diloco  the DiLoCo outer step over isthmus rounds of one clique
                  of every island (an exact global sum a round: the edges'
                  reduction trees, or all-to-all; train.sh --exact-schedule)
  isthmus-cliques the same over rotating cliques (each island applies its
                  clique's mean, with bounded staleness)

It writes OUT/<label>-<island>.jsonl: the evaluation loss over wall-clock
time (every --eval-s seconds) and a summary line.
"""
import json
import os
import socket
import sys
import time

import torch

import diloco
import lm

BASELINES = ("ddp", "diloco", "diloco-overlap")
ISTHMUS = ("isthmus-diloco", "isthmus-cliques")


def flat_elems(a):
    return sum(p.numel() for p in lm.make_lm(a).parameters())


def open_comm(a):
    """The baselines' communicator; with mpi the island is the site whose
    namespace this rank runs in (mpirun's hostfile names namespaces)."""
    if a.comm == "mpi":
        comm = diloco.MpiComm()
        if a.island < 0:
            names = a.ns_list.replace(",", " ").split()
            a.island = names.index(socket.gethostname())
        return comm
    return diloco.GlooComm(a.master, a.island if a.rank is None else a.rank, a.islands,
                           a.ifname)


def open_isthmus(a, params):
    """The island's session and T's DiLoCo outer optimizer over it."""
    import isthmus
    import isthmus.torch as it
    host, port = a.edge.rsplit(":", 1)
    bhost, bport = (a.bind.rsplit(":", 1) if a.bind else ("0.0.0.0", "0"))
    sess = isthmus.Session(job=a.job, island=a.island, n_islands=a.islands,
                           elems=sum(p.numel() for p in params), edge=(host, int(port)),
                           bind=(bhost, int(bport)), dtype=a.dtype,
                           grace=a.grace_ms / 1e3, key_file=a.key_file,
                           auth=a.key_file is not None)
    record = None
    if a.record:
        from lm_record import Recorder
        record = Recorder(sess, os.path.join(a.out, "record-%s-%d.bin"
                                             % (a.label or a.mode, a.island)))
    # the communication thread joins every round the edge announces and
    # takes every result as its round ends: the steps never wait for it
    outer = it.DiLoCo(params, record or sess, local_steps=a.local_steps,
                      outer_lr=a.outer_lr, momentum=a.outer_momentum, thread=True,
                      on_result=record.on_result if record else None)
    return sess, outer, record


def wait_go(a, port):
    """READY, then the launcher's GO time (CLOCK_REALTIME ns)."""
    print("READY %d" % port, flush=True)
    line = sys.stdin.readline().split()
    if len(line) != 2 or line[0] != "GO":
        sys.exit("train.py worker %d: no GO from the launcher" % a.island)
    wait = (int(line[1]) - time.time_ns()) / 1e9
    if wait > 0:
        time.sleep(wait)            # a start time, not a synchronisation


def worker_lm(a):
    torch.set_num_threads(1)
    comm = base = sess = outer = record = None
    model = lm.make_lm(a)
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    if a.mode in BASELINES:
        comm = open_comm(a)
        comm.allreduce(torch.zeros(n))   # rendezvous and warm-up: not training
        base = diloco.Baseline(a.mode, params, comm, H=a.diloco_local_steps,
                               outer_lr=a.outer_lr, momentum=a.outer_momentum)
    else:
        sess, outer, record = open_isthmus(a, params)
    text, held = lm.split(lm.corpus(a.corpus), a.island, a.islands)
    ev = lm.eval_set(held, a.eval_batch, a.ctx, a.seed)
    g = torch.Generator().manual_seed(a.seed * 1000 + a.island)
    inner = torch.optim.AdamW(params, lr=a.inner_lr, betas=(0.9, 0.95),
                              weight_decay=a.weight_decay)
    os.makedirs(a.out, exist_ok=True)
    label = a.label or a.mode
    log = open(os.path.join(a.out, "%s-%d.jsonl" % (label, a.island)), "w")
    if a.launcher:
        wait_go(a, sess.local_port if sess else 0)
    elif comm is not None:
        comm.barrier()              # mpirun: start together
    t0 = time.perf_counter()
    compute_s = comm_s = eval_s = 0.0
    last_eval = -1e9

    def evaluate(step, train_loss=None):
        nonlocal eval_s, last_eval
        e0 = time.perf_counter()
        d = {"t": e0 - t0, "step": step, "loss": lm.eval_loss(model, ev)}
        if train_loss is not None:
            d["train_loss"] = train_loss
        if outer is not None:
            d["staleness"] = outer.staleness()
        log.write(json.dumps(d) + "\n")
        log.flush()
        last_eval = e0
        eval_s += time.perf_counter() - e0
        return d["loss"]

    evaluate(0)
    loss = None
    for step in range(1, a.steps + 1):
        c0 = time.perf_counter()
        x, y = lm.batch(text, a.batch, a.ctx, g)
        inner.zero_grad()
        loss = lm.loss_of(model, x, y)
        loss.backward()
        if a.mode != "ddp":
            inner.step()
        # pad to the step time a GPU would take: the model of compute
        spent = time.perf_counter() - c0
        if a.compute_ms / 1e3 > spent:
            time.sleep(a.compute_ms / 1e3 - spent)
        compute_s += time.perf_counter() - c0
        m0 = time.perf_counter()
        if base is not None:
            base.after_backward()           # ddp: the gradients' all-reduce
            if a.mode == "ddp":
                inner.step()
            base.after_step()               # diloco: every H steps
        else:
            outer.step()
        comm_s += time.perf_counter() - m0
        if time.perf_counter() - last_eval >= a.eval_s or step == a.steps:
            evaluate(step, float(loss))
    wall = time.perf_counter() - t0
    summ = {"summary": True, "mode": a.mode, "label": label, "island": a.island,
            "model": "lm", "params": n, "steps": a.steps, "wall_s": wall,
            "steps_per_s": a.steps / wall, "idle_frac": comm_s / wall,
            "compute_s": compute_s, "eval_s": eval_s, "util": compute_s / wall,
            "tokens": a.steps * a.batch * a.ctx, "final_loss": lm.eval_loss(model, ev),
            "comm": a.comm if base is not None else "isthmus"}
    if base is not None:
        base.close()
        summ.update(staleness=base.staleness(), outer_steps=base.outer,
                    H=a.diloco_local_steps if a.mode != "ddp" else 1,
                    payload_bytes=base.bytes_sent)
        comm.close()
    else:
        outer.flush(timeout=4 * a.period_ms / 1e3 + 2.0)
        outer.close()
        summ.update(staleness=outer.staleness(), H=a.local_steps,
                    **{"avg_" + k: v for k, v in outer.stats.items()
                       if isinstance(v, (int, float))})
        summ["counters"] = {k: v for k, v in sess.counters().items() if v}
        if record is not None:
            record.close()
        sess.close()
    log.write(json.dumps(summ) + "\n")
    log.close()
    return 0
