# SPDX-License-Identifier: BSD-3-Clause
"""examples/train.py --model lm: the data split, the baselines' outer step
(against torch.optim.SGD(nesterov=True) and the eager formula computed by
hand), and a short run of the runs on loopback (three islands, gloo over
127.0.0.1 and loopback edges), with every isthmus aggregate checked."""
import json
import os
import subprocess
import sys
import types

import pytest

torch = pytest.importorskip("torch")

EX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
sys.path.insert(0, EX)
import diloco  # noqa: E402
import lm  # noqa: E402

need_corpus = pytest.mark.skipif(not os.path.isdir(lm.CORPUS_DIR),
                                 reason="no %s (apt-get install fortunes)" % lm.CORPUS_DIR)


def test_split_is_disjoint_and_held_out_is_every_tenth_block():
    data = torch.arange(40 * lm.BLOCK, dtype=torch.int64) // lm.BLOCK   # block index
    held_blocks = {9, 19, 29, 39}
    seen = set()
    for k in range(3):
        tr, held = lm.split(data, k, 3)
        mine = set(tr.view(-1, lm.BLOCK)[:, 0].tolist())
        assert not mine & held_blocks
        assert not mine & seen
        seen |= mine
        assert set(held.view(-1, lm.BLOCK)[:, 0].tolist()) == held_blocks
    assert seen == set(range(40)) - held_blocks


class SumComm:
    """All-reduce over a world of islands simulated in one process: each
    island's allreduce() is answered with the sum of @others plus its own."""

    def __init__(self, world, others):
        self.world, self.others = world, others

    def allreduce(self, t):
        t += self.others


def test_diloco_outer_step_is_sgd_nesterov():
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(7))
    ref = p.detach().clone().requires_grad_(True)
    opt = torch.optim.SGD([ref], lr=0.7, momentum=0.9, nesterov=True)
    others = torch.randn(7)
    b = diloco.Baseline("diloco", [p], SumComm(3, others), H=2, outer_lr=0.7, momentum=0.9)
    anchor = p.detach().clone()
    for t in range(3):
        with torch.no_grad():
            p.sub_(0.1 * (t + 1))           # two "inner steps" worth of progress
        b.after_step()
        assert b.outer == t
        b.after_step()
        assert b.outer == t + 1
        g = (anchor - (anchor - 0.1 * (t + 1)) + others) / 3   # mean pseudo-gradient
        ref.grad = g.clone()
        opt.step()
        anchor = ref.detach().clone()
        assert torch.allclose(p.detach(), anchor, atol=1e-6)


def test_eager_uses_own_fresh_and_others_delayed_share():
    p = torch.nn.Parameter(torch.zeros(4))
    others = torch.full((4,), 3.0)          # the two other islands' sum, every step
    b = diloco.Baseline("diloco-overlap", [p], SumComm(3, others), H=1, outer_lr=1.0,
                        momentum=0.0)
    try:
        with torch.no_grad():
            p.sub_(1.0)                     # g_1 = 1
        b.after_step()                      # first step: its own g only
        assert torch.allclose(p.detach(), torch.full((4,), -1.0))
        with torch.no_grad():
            p.sub_(2.0)                     # g_2 = 2
        b.after_step()
        # g_2 / 3 + (mean_1 - g_1 / 3), mean_1 = (1 + 3) / 3
        step = 2 / 3 + (4 / 3 - 1 / 3)
        assert torch.allclose(p.detach(), torch.full((4,), -1.0 - step))
        assert b.staleness() == 1.0
    finally:
        b.close()


@need_corpus
def test_train_lm_on_loopback(tmp_path):
    """Every run trains: the held-out loss falls below where it started
    (a byte model at initialisation is near ln 256 = 5.55), every island
    logs, and every aggregate of the isthmus runs is exact."""
    out = str(tmp_path)
    env = dict(os.environ)
    cmd = [sys.executable, os.path.join(EX, "train.py")]
    r = subprocess.run(cmd + ["local", "--model", "lm", "--islands", "3", "--out", out,
                              "--runs", "ddp,diloco,diloco-overlap,isthmus-diloco",
                              "--steps", "8", "--compute-ms", "0", "--diloco-local-steps", "2",
                              "--local-steps", "2", "--eval-s", "0", "--eval-batch", "4",
                              "--period-ms", "250", "--record", "--target", "5.0"],
                       env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    s = json.load(open(os.path.join(out, "summary.json")))
    for run in ("ddp", "diloco", "diloco-overlap", "isthmus-diloco"):
        assert s[run]["islands"] == 3
        for k in range(3):
            ev = [json.loads(l) for l in open(os.path.join(out, "%s-%d.jsonl" % (run, k)))]
            assert ev[-1]["summary"] and ev[-1]["steps"] == 8
            assert ev[-1]["final_loss"] < ev[0]["loss"] - 0.3, (run, k, ev[0], ev[-1])
    assert s["isthmus-diloco"]["rounds_applied"] > 0
    # each applied round timed, start to end at the island: the loopback
    # edges' rounds of 250 ms end once complete, at the latest at their
    # deadline and one period of grace (a loaded host: a few periods more)
    assert 0 < s["isthmus-diloco"]["round_ms"] < 10 * 250, s["isthmus-diloco"]
    assert os.path.exists(os.path.join(out, "loss.png")) or "matplotlib" in r.stderr
    c = subprocess.run(cmd + ["check", out, "--run", "isthmus-diloco", "--model", "lm"],
                       capture_output=True, text=True, timeout=120)
    assert c.returncode == 0, c.stdout + c.stderr
    assert c.stdout.startswith("CHECK run=isthmus-diloco islands=3 ")
    assert c.stdout.rstrip().endswith(" wrong=0")


# ---- tree rounds: the schedule's height and the check's bound -----------------

TREE_SCHED = """isthmus-schedule 4
islands 9
round-ns 672800000
rounds 1
round 0 0x1ff
tree 0 0 1,2,-,0,3,3,2,6,6
tree 0 1 -,0,0,0,0,0,0,0,0
end
"""


def test_tree_height_of_a_schedule_file(tmp_path):
    import lm_record
    f = tmp_path / "sched.txt"
    f.write_text(TREE_SCHED)
    # tree 0: AMS (4) -> LON (3) -> NYC (0) -> CHI (1) -> LAX (2), the root:
    # 4 links; tree 1 is a star (1)
    assert lm_record.tree_height(str(f)) == 4
    f.write_text(TREE_SCHED.replace("tree 0 0 1,2,-,0,3,3,2,6,6\n", ""))
    assert lm_record.tree_height(str(f)) == 1
    f.write_text(TREE_SCHED.replace("1,2,-,0,3,3,2,6,6", "-,0,1,2,3,4,5,6,7"))  # a chain
    assert lm_record.tree_height(str(f)) == 8
    assert lm_record.tree_height(str(tmp_path / "none.txt")) == 0
    f.write_text("round-ns 1\nround 0 0x7\n")            # a clique round
    assert lm_record.tree_height(str(f)) == 0
    f.write_text("tree 0 0 1,2,0\n")                       # no root: a cycle
    with pytest.raises(ValueError, match="cycle"):
        lm_record.tree_height(str(f))


def bf16(x):
    return x.to(torch.bfloat16).to(torch.float32)


def tree_sums(xs, parents):
    """What isthmusd's tree rounds give each island (doc/isthmusd.md, "Tree
    rounds"), computed here: every edge sums its island's bf16 DATA and its
    children's bf16 PARTIALs in fp32 and sends the sum on as bf16; the root's
    sum comes down as bf16; each edge hands its island the result less the
    island's own, rounded to bf16; the island adds its own in fp32."""
    n = len(parents)
    kids = [[j for j in range(n) if parents[j] == i] for i in range(n)]

    def up(i):
        acc = xs[i].clone()
        for j in kids[i]:
            acc += up(j)
        return bf16(acc)            # a leaf's bf16 DATA goes on unchanged
    total = up(parents.index(-1))
    return [bf16(total - xs[k]) + xs[k] for k in range(n)]


def test_the_check_bound_holds_for_bf16_trees_and_catches_a_missing_contributor():
    """The deepest tree of the LM's plan (height 4): the applied sums of a
    bf16 tree round are within sum_bound(tree_h=4), a clique round's bf16
    bound (one rounding) is too tight for them, and a sum without one
    contributor is outside the tree bound."""
    import numpy as np
    import lm_record
    parents = [1, 2, -1, 0, 3, 3, 2, 6, 6]
    g = torch.Generator().manual_seed(3)
    # pseudo-gradients of one sign in most elements (a step of the same
    # direction everywhere: the partial sums are as large as sum |x|)
    xs = [bf16(torch.rand(20000, generator=g) * 1e-3 + 1e-4 * torch.randn(20000, generator=g))
          for _ in range(9)]
    got = tree_sums(xs, parents)
    parts = [x.double().numpy() for x in xs]
    exact = np.sum(parts, axis=0)
    members = list(range(9))
    over_clique_bound = 0
    for k in range(9):
        err = np.abs(got[k].double().numpy() - exact)
        assert np.all(err <= lm_record.sum_bound(parts, members, k, True, 4)), k
        over_clique_bound += int(np.sum(err > lm_record.sum_bound(parts, members, k, True, 0)))
    assert over_clique_bound > 0
    # island 0's sum without island 5's contribution (a wrong sum)
    wrong = got[0].double().numpy() - parts[5]
    assert np.any(np.abs(wrong - exact) > lm_record.sum_bound(parts, members, 0, True, 4))


def test_train_sh_exact_schedule_option():
    sh = os.path.join(EX, "..", "scripts", "train.sh")
    h = subprocess.run(["bash", sh, "--help"], capture_output=True, text=True, timeout=30)
    assert h.returncode == 0
    assert "--exact-schedule tree|all-to-all" in h.stdout and "tree (default)" in h.stdout
    assert "--edge-dtype bf16|any" in h.stdout
    for opt, bad in (("--exact-schedule", "ring"), ("--edge-dtype", "int8")):
        r = subprocess.run(["bash", sh, opt, bad], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, r.stderr
        assert "%s:" % opt in r.stderr and "'%s'" % bad in r.stderr
    # valid, but read by the lm's testbed runs only: refused elsewhere,
    # not ignored (the mlp's runs and the lm's without --testbed)
    for opt, val in (("--exact-schedule", "tree"), ("--edge-dtype", "any")):
        for extra in ([], ["--model", "lm"], ["--model", "mlp", "--testbed"]):
            r = subprocess.run(["bash", sh, opt, val] + extra, capture_output=True, text=True,
                               timeout=30)
            assert r.returncode == 2, (opt, extra, r.stderr)
            assert "%s: only for the lm" % opt in r.stderr, r.stderr


def test_report_prints_round_time_and_the_edges_plan(tmp_path):
    """The report's round time is the mean over every island's timed
    rounds (not a mean of means), and the schedule and planned T are the
    edges' (edges-<run>.json, written by train.py net)."""
    import lm_report
    json.dump({"schedule": "tree", "round_ms": 672.8},
              open(str(tmp_path / "edges-isthmus-diloco.json"), "w"))
    summ = {"steps": 10, "steps_per_s": 1.0, "wall_s": 10.0, "final_loss": 3.0,
            "util": 0.9, "idle_frac": 0.01, "tokens": 2560, "params": 5, "H": 4}
    runs = {"isthmus-diloco": {
        0: ([{"t": 0.0, "loss": 5.5}], dict(summ, avg_applied=3, avg_partial=1,
                                             avg_contributors_sum=27.0,
                                             avg_rounds_timed=3, avg_round_ms_sum=3000.0)),
        1: ([{"t": 0.0, "loss": 5.5}], dict(summ, avg_applied=1, avg_partial=0,
                                             avg_contributors_sum=9.0,
                                             avg_rounds_timed=1, avg_round_ms_sum=2000.0))}}
    r = lm_report.summarise(str(tmp_path), runs, 3.0)["isthmus-diloco"]
    assert r["round_ms"] == pytest.approx(5000.0 / 4)       # not (1000 + 2000) / 2
    assert r["schedule"] == "tree" and r["planned_T_ms"] == 672.8
    assert r["rounds_applied"] == 4 and r["rounds_partial"] == 1
