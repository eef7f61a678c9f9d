# SPDX-License-Identifier: BSD-3-Clause
"""`train.py report` and `table` for --model lm runs: evaluation loss
against wall-clock time for every run in one plot (OUT/loss.png), and per
run: time to the target loss (every island there), final loss, compute
utilisation (compute time / wall time), WAN bytes per token, staleness,
rounds; then the goal's ratios (time to target of the best DiLoCo-family
baseline and of ddp over the best isthmus run, with the final losses'
difference)."""
import json
import math
import os
import sys

import numpy as np

COLOURS = {"ddp": "tab:red", "diloco": "tab:orange", "diloco-overlap": "tab:brown",
           "isthmus-diloco": "tab:blue", "isthmus-cliques": "tab:cyan"}
DILOCO = ("diloco", "diloco-overlap")


def time_to_loss(ev, target):
    for e in ev:
        if e["loss"] <= target:
            return e["t"]
    return math.inf


def summarise(out, runs, target):
    table = {}
    for label, isl in sorted(runs.items()):
        summ = [s for _, s in isl.values() if s]
        if len(summ) != len(isl):
            sys.exit("train.py: %s: %d of %d islands finished" % (label, len(summ), len(isl)))
        tt = [time_to_loss(ev, target) for ev, _ in isl.values()]
        r = {
            "islands": len(isl),
            "steps": int(summ[0]["steps"]),
            "steps_per_s": float(np.mean([s["steps_per_s"] for s in summ])),
            "wall_s": float(np.max([s["wall_s"] for s in summ])),
            "final_loss": float(np.mean([s["final_loss"] for s in summ])),
            "final_loss_max": float(np.max([s["final_loss"] for s in summ])),
            "util": float(np.mean([s["util"] for s in summ])),
            "idle_frac": float(np.mean([s["idle_frac"] for s in summ])),
            "time_to_target_s": float(np.max(tt)),      # every island there
            "staleness": float(np.mean([s.get("staleness", 0.0) for s in summ])),
            "H": summ[0].get("H"),
            "comm": summ[0].get("comm"),
            "tokens": int(sum(s["tokens"] for s in summ)),
            "params": summ[0]["params"],
        }
        f = os.path.join(out, "wan-%s.json" % label)
        if os.path.exists(f):
            w = json.load(open(f))
            r["wan_bytes"] = w["bytes"]
            r["wan_bytes_per_token"] = w["bytes"] / r["tokens"]
        if "avg_applied" in summ[0]:
            applied = sum(s.get("avg_applied", 0) for s in summ)
            r["rounds_applied"] = int(applied)
            r["rounds_partial"] = int(sum(s.get("avg_partial", 0) for s in summ))
            r["contributors"] = (float(sum(s.get("avg_contributors_sum", 0) for s in summ))
                                 / applied if applied else 0.0)
            timed = sum(s.get("avg_rounds_timed", 0) for s in summ)
            if timed:
                # a round's start to its end at the island, over every
                # island's applied rounds
                r["round_ms"] = float(sum(s.get("avg_round_ms_sum", 0) for s in summ)) / timed
        f = os.path.join(out, "edges-%s.json" % label)
        if os.path.exists(f):
            # the edges' schedule (train.py net): its name and planned T
            w = json.load(open(f))
            r["schedule"], r["planned_T_ms"] = w["schedule"], w["round_ms"]
        f = os.path.join(out, "load-%s.txt" % label)
        if os.path.exists(f):
            r["load"] = [l.split("load average:")[-1].strip() for l in open(f)
                         if "load average" in l]
        table[label] = r
    return table


def ratios(table):
    """time to target: best DiLoCo-family baseline / best isthmus run, and
    ddp / best isthmus run; with the final losses' relative difference."""
    out = {}
    isth = [m for m in table if m.startswith("isthmus")]
    if not isth:
        return out
    best = min(isth, key=lambda m: table[m]["time_to_target_s"])
    for name, cands in (("diloco", [m for m in table if m in DILOCO]),
                        ("ddp", [m for m in table if m == "ddp"])):
        if not cands:
            continue
        base = min(cands, key=lambda m: table[m]["time_to_target_s"])
        a_, b_ = table[best]["time_to_target_s"], table[base]["time_to_target_s"]
        r = b_ / a_ if a_ > 0 and math.isfinite(a_) and math.isfinite(b_) else float("nan")
        dl = (table[best]["final_loss"] - table[base]["final_loss"]) / table[base]["final_loss"]
        out["speedup_vs_" + name] = {"isthmus": best, "baseline": base, "ratio": r,
                                     "final_loss_rel_diff": dl}
    return out


def fmt_t(x):
    return "%.1f" % x if math.isfinite(x) else "not reached"


def report_lm(a, runs):
    table = summarise(a.out, runs, a.target)
    print("%-16s %5s %7s %8s %12s %6s %10s %10s %9s" % (
        "run", "H", "steps/s", "util", "final_loss", "max", "t_target_s", "WAN B/tok",
        "staleness"))
    for label, r in table.items():
        print("%-16s %5s %7.2f %8.3f %12.4f %6.3f %10s %10s %9.2f" % (
            label, r["H"], r["steps_per_s"], r["util"], r["final_loss"], r["final_loss_max"],
            fmt_t(r["time_to_target_s"]),
            "%.1f" % r["wan_bytes_per_token"] if "wan_bytes_per_token" in r else "-",
            r["staleness"]))
        if "rounds_applied" in r:
            print("%s: %d rounds applied, %d partial, %.2f islands summed per round%s" % (
                label, r["rounds_applied"], r["rounds_partial"], r["contributors"],
                ": NO PEER CONTRIBUTION ARRIVED" if r["contributors"] <= 1.0 else ""))
        if "round_ms" in r or "planned_T_ms" in r:
            print("%s: round %s ms mean, start to end at the island (%s rounds, T %s ms planned)" % (
                label, "%.1f" % r["round_ms"] if "round_ms" in r else "-",
                r.get("schedule", "?"),
                "%.1f" % r["planned_T_ms"] if "planned_T_ms" in r else "-"))
        if "load" in r:
            print("%s: load average %s" % (label, " -> ".join(r["load"])))
    rr = ratios(table)
    for k, v in rr.items():
        why = ""
        if not math.isfinite(table[v["isthmus"]]["time_to_target_s"]):
            why = ": %s did not reach it" % v["isthmus"]
        elif not math.isfinite(table[v["baseline"]]["time_to_target_s"]):
            why = ": %s did not reach it" % v["baseline"]
        print("time to loss %.3f: %s / %s = %.2f%s (final loss %+.2f %%)" % (
            a.target, v["baseline"], v["isthmus"], v["ratio"], why,
            100 * v["final_loss_rel_diff"]))
    out = dict(table, target=a.target, model="lm", **rr)
    json.dump(out, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    plot(a, runs)
    return 0


def plot(a, runs):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("train.py: no matplotlib (python3-matplotlib): no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for label, isl in sorted(runs.items()):
        for k, (ev, _) in sorted(isl.items()):
            ax.plot([e["t"] for e in ev], [e["loss"] for e in ev],
                    color=COLOURS.get(label, "k"), alpha=0.45, lw=1,
                    label=label if k == min(isl) else None)
    ax.axhline(a.target, color="grey", ls=":", lw=1)
    ax.set_xlabel("wall-clock time (s)")
    ax.set_ylabel("held-out loss (nats/byte, each island)")
    ax.set_title("byte-level transformer on fortunes, %d islands"
                 % max(len(i) for i in runs.values()))
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "loss.png"), dpi=110)


def table_lm(a):
    """One markdown table over repetitions (train.sh --pairs P)."""
    print("| rep | run | H | steps/s | wall s | final loss (mean / max) | compute util "
          "| time to %.3f s | WAN bytes/token | staleness | rounds partial / applied, islands "
          "summed, round mean (schedule, T planned) | load average (start -> end) |" % a.target)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    sp = {}
    for d in a.dirs:
        f = os.path.join(d, "summary.json")
        if not os.path.exists(f):
            print("| %s | (no summary.json) |" % os.path.basename(d))
            continue
        t = json.load(open(f))
        for label, r in t.items():
            if label.startswith("speedup_vs_"):
                sp.setdefault(label, []).append(r)
            if not isinstance(r, dict) or "steps" not in r:
                continue
            part = ("%d / %d, %.2f" % (r["rounds_partial"], r["rounds_applied"], r["contributors"])
                    if "rounds_applied" in r else "-")
            if "round_ms" in r:
                part += ", round %.0f ms" % r["round_ms"]
            if "planned_T_ms" in r:
                part += " (%s, T %.0f ms)" % (r.get("schedule", "?"), r["planned_T_ms"])
            load = " -> ".join(x.split(",")[0] for x in r.get("load", []))
            print("| %s | %s | %s | %.2f | %.1f | %.4f / %.4f | %.3f | %s | %s | %.2f | %s | %s |" % (
                os.path.basename(d.rstrip("/")), label, r["H"], r["steps_per_s"], r["wall_s"],
                r["final_loss"], r["final_loss_max"], r["util"], fmt_t(r["time_to_target_s"]),
                "%.1f" % r["wan_bytes_per_token"] if "wan_bytes_per_token" in r else "-",
                r["staleness"], part, load))
    print()
    for k, v in sorted(sp.items()):
        print("%s: %s" % (k, ", ".join("%s/%s %.2f (final loss %+.2f %%)" % (
            x["baseline"], x["isthmus"], x["ratio"], 100 * x["final_loss_rel_diff"]) for x in v)))
    return 0
