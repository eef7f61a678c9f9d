#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# The parser half of scripts/bench.sh (doc/performance.md, "One command"):
# reads the saved text output of each benchmark under tests/bench (and the
# testbed's SUMMARY line), turns it into named figures, prints one table of
# the headline ratios and writes every figure to a JSON file; `compare`
# prints new/old per figure of two such files. It parses the benchmarks'
# existing human-readable output, so a change to a benchmark's printf that
# this script does not follow shows up as "no ... rows" here, not as a
# silently missing figure. Nothing here judges a timing.
#
#   bench-report.py report --dir D --out F.json [--meta KEY=VALUE ...]
#   bench-report.py table F.json
#   bench-report.py compare NEW.json OLD.json
import argparse
import json
import re
import sys

SCHEMA = 1


class ParseError(Exception):
    pass


def num(s, where):
    try:
        return float(s)
    except ValueError:
        raise ParseError("%s: not a number: %r" % (where, s)) from None


def need(figs, bench, what):
    if not figs:
        raise ParseError("%s: no %s rows found (output format changed?)" % (bench, what))


def parse_agg(text, name="agg"):
    """bench_agg: the summation table and the engine table."""
    out = {}
    sums = {}
    eng = {}
    row_sum = re.compile(r"^(L1|L2|mem) \([^)]*\)\s+(\w+)\s+(\w+)\s+"
                         r"(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
    row_eng = re.compile(r"^(\d+)\s+(aligned|skewed)\s+(\w+)\s+(\S+)\s+(\S+)\s+"
                         r"(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s*$")
    for ln, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (name, ln)
        m = row_sum.match(line)
        if m:
            ws, dt, k = m.group(1), m.group(2), m.group(3)
            v = [num(x, where) for x in m.groups()[3:]]
            p = "agg.sum.%s.%s.%s." % (ws, dt, k)
            sums[p + "cyc_per_B"] = v[0]
            sums[p + "GBps"] = v[1]
            sums[p + "x_memcpy"] = v[3]
            sums[p + "x_vcopy"] = v[5]
            continue
        m = row_eng.match(line)
        if m:
            p = "agg.engine.%ss.%s.%s." % m.group(1, 2, 3)
            eng[p + "contrib_per_s"] = num(m.group(5), where)
            eng[p + "ns_per_contrib"] = num(m.group(6), where)
            eng[p + "gbit_in"] = num(m.group(7), where)
            eng[p + "drops"] = num(m.group(8), where)
    need(sums, name, "summation")
    need(eng, name, "engine")
    out.update(sums)
    out.update(eng)
    return out


def parse_mcast(text, name="mcast"):
    out = {}
    temp = None
    row = re.compile(r"^(zerocopy|copy)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$")
    for ln, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (name, ln)
        if line.startswith("hot payloads"):
            temp = "hot"
        elif line.startswith("cold payloads"):
            temp = "cold"
        m = row.match(line)
        if m:
            if temp is None:
                raise ParseError("%s: row before a hot/cold heading" % where)
            p = "mcast.%s.%s.D%s." % (temp, m.group(1), m.group(2))
            out[p + "fanout"] = num(m.group(3), where)
            out[p + "free"] = num(m.group(4), where)
            out[p + "total"] = num(m.group(5), where)
            out[p + "per_copy"] = num(m.group(6), where)
            if m.group(7) != "-":
                out[p + "per_extra_dest"] = num(m.group(7), where)
    need(out, name, "fan-out")
    return out


def parse_resend(text, name="resend"):
    out = {}
    row = re.compile(r"^\s*(\d+) B\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$")
    for ln, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (name, ln)
        m = row.match(line)
        if m:
            p = "resend.%sB." % m.group(1)
            out[p + "fresh"] = num(m.group(2), where)
            out[p + "resend"] = num(m.group(3), where)
            out[p + "busy"] = num(m.group(4), where)
            out[p + "fresh_per_resend"] = num(m.group(5), where)
            out[p + "fresh_per_busy"] = num(m.group(6), where)
    need(out, name, "payload")
    return out


def parse_backend(text, name="backend"):
    out = {}
    keys = {"sw (lib/agg": "sw", "fpga (model, unlimited)": "fpga",
            "fpga (model, 200 MB/s cap)": "fpga_capped"}
    row = re.compile(r"^(.*?)\s+(\S+) contrib/s\s+(\S+) Gbit/s\s+x(\S+) of sw")
    for ln, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (name, ln)
        m = row.match(line)
        if not m:
            continue
        key = next((v for k, v in keys.items() if m.group(1).startswith(k)), None)
        if key is None:
            raise ParseError("%s: unknown backend row %r" % (where, m.group(1)))
        out["backend.%s.contrib_per_s" % key] = num(m.group(2), where)
        out["backend.%s.gbit" % key] = num(m.group(3), where)
        out["backend.%s.x_sw" % key] = num(m.group(4), where)
    need(out, name, "backend")
    return out


def parse_isthmusd(text, name="isthmusd"):
    out = {}
    layout = None
    head = re.compile(r"^== layout (\S+) ")
    loop = re.compile(r"^(pipeline|nic-csum|io-fwd|read-fwd)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
    ratio = re.compile(r"^pipeline rate / (io-fwd|read-fwd) rate\s+=\s+(\S+)")
    # the UDP checksums checked by a NIC (RX offload) rather than in software
    ratio_nc = re.compile(r"^pipeline, UDP checksums checked by the NIC, rate / read-fwd rate"
                          r"\s+=\s+(\S+)")
    pre = re.compile(r"^passes left out as preempted: (\S+) %")
    stage = re.compile(r"^  (rx_burst|parse|add_burst|sum kernel|AGG build|AGG send|"
                       r"free inputs|lookup etc\.|sum of parts|rest)\s+(\S+)")
    # the same edge with 1 and 2 workers (cycles per DATA of each worker)
    w1 = re.compile(r"^  1 worker : worker 0\s+(\S+) cyc/DATA; wall\s+(\S+) cyc/DATA")
    w2 = re.compile(r"^  2 workers: worker 0\s+(\S+) cyc/DATA \(all DATA\), "
                    r"worker 1\s+(\S+) cyc/DATA \(its half\); wall\s+(\S+) cyc/DATA")
    wr = re.compile(r"^  2-worker rate / 1-worker rate: from the workers' cycles (\S+) "
                    r".*; wall (\S+)")
    # the island's DATA out with 1 and 2 workers (the egress section)
    eg = re.compile(r"^summary: egress .*cyc/DATA: 1 worker: worker 0 (\S+); "
                    r"2 workers, WAN queue each: worker 0 (\S+), worker 1 (\S+), "
                    r"2w/1w rate from the workers' cycles (\S+), wall (\S+); "
                    r"2 workers, through worker 0: worker 0 (\S+), worker 1 (\S+), "
                    r"2w/1w rate (\S+), wall (\S+)\s*$")
    for ln, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (name, ln)
        m = eg.match(line)
        if m:
            keys = ("w1.worker0", "queue_each.worker0", "queue_each.worker1",
                    "queue_each.rate_per_w1", "queue_each.wall_per_w1", "via_worker0.worker0",
                    "via_worker0.worker1", "via_worker0.rate_per_w1", "via_worker0.wall_per_w1")
            for i, k in enumerate(keys):
                out["isthmusd.egress." + k] = num(m.group(i + 1), where)
            continue
        m = head.match(line)
        if m:
            layout = m.group(1)
            continue
        if layout is None:
            continue
        p = "isthmusd.%s." % layout
        m = loop.match(line)
        if m:
            out[p + m.group(1) + ".cyc_per_pkt"] = num(m.group(2), where)
            out[p + m.group(1) + ".gbit_in"] = num(m.group(4), where)
            continue
        m = ratio.match(line)
        if m:
            out[p + "pipeline_per_" + m.group(1).replace("-", "")] = num(m.group(2), where)
            continue
        m = ratio_nc.match(line)
        if m:
            out[p + "niccsum_per_readfwd"] = num(m.group(1), where)
            continue
        m = pre.match(line)
        if m:
            out[p + "preempted_pct"] = num(m.group(1), where)
            continue
        m = stage.match(line)
        if m:
            k = m.group(1).replace(" ", "_").replace(".", "")
            out[p + "stage." + k] = num(m.group(2), where)
            continue
        m = w1.match(line)
        if m:
            out[p + "w1.worker0.cyc_per_data"] = num(m.group(1), where)
            out[p + "w1.wall.cyc_per_data"] = num(m.group(2), where)
            continue
        m = w2.match(line)
        if m:
            out[p + "w2.worker0.cyc_per_data"] = num(m.group(1), where)
            out[p + "w2.worker1.cyc_per_data"] = num(m.group(2), where)
            out[p + "w2.wall.cyc_per_data"] = num(m.group(3), where)
            continue
        m = wr.match(line)
        if m:
            out[p + "w2_per_w1.cycles"] = num(m.group(1), where)
            out[p + "w2_per_w1.wall"] = num(m.group(2), where)
    if not any(k.endswith("pipeline_per_readfwd") for k in out):
        raise ParseError("%s: no layout rows found (output format changed?)" % name)
    return out


def parse_plan(text, name="plan"):
    out = {}
    row = re.compile(r"^\s*(\d+) (\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s*$")
    for ln, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (name, ln)
        m = row.match(line)
        if m:
            p = "plan.n%s.%s.M%s." % (m.group(1), m.group(2), m.group(3))
            out[p + "plan_ms"] = num(m.group(4), where)
            out[p + "lp_iterations"] = num(m.group(5), where)
            out[p + "T_ms"] = num(m.group(6), where)
    need(out, name, "planner")
    return out


def parse_auth(text, name="auth"):
    out = {}
    variants = ["tag list k=2 seal32", "tag list k=8 seal32",
                "ipsec-mb verify32+sum", "ipsec-mb verify32", "ipsec-mb verify",
                "ipsec-mb seal32", "openssl verify32", "openssl verify",
                "openssl seal32", "sum fp32", "memcpy", "read"]
    for ln, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (name, ln)
        for v in variants:
            if not line.startswith(v + " "):
                continue
            f = line[len(v):].split()
            if len(f) != 4:
                break
            p = "auth.%s." % v.replace(" ", "_")
            out[p + "cycles"] = num(f[0], where)
            out[p + "x_memcpy"] = num(f[2], where)
            out[p + "gbit_per_core"] = num(f[3], where)
            break
    need(out, name, "variant")
    return out


def parse_testbed(text, name="testbed"):
    """The last SUMMARY line of scripts/testbed.sh run."""
    line = None
    for ln, ln_text in enumerate(text.splitlines(), 1):
        if ln_text.startswith("SUMMARY "):
            line = (ln, ln_text)
    if line is None:
        raise ParseError("%s: no SUMMARY line" % name)
    out = {}
    for kv in line[1].split()[1:]:
        k, sep, v = kv.partition("=")
        if not sep:
            raise ParseError("%s:%d: not key=value: %r" % (name, line[0], kv))
        try:
            out["testbed." + k] = float(v)
        except ValueError:
            if k == "schedule":
                continue
            # round_ms_planned is "-" when the planner gave no T
            out["testbed." + k] = None
    meas, plan = out.get("testbed.round_ms_mean"), out.get("testbed.round_ms_planned")
    if meas is not None and plan:
        out["testbed.round_per_T"] = meas / plan
    return out


def parse_island(text, name="island"):
    """bench_island prints one figure a line, "island.<key> <value> <unit>";
    lines starting with '#' are comments."""
    out = {}
    for ln, line in enumerate(text.splitlines(), 1):
        if not line.startswith("island."):
            continue
        f = line.split()
        if len(f) != 3:
            raise ParseError("%s:%d: not 'name value unit': %r" % (name, ln, line))
        out[f[0]] = num(f[1], "%s:%d" % (name, ln))
    need(out, name, "island.*")
    return out


PARSERS = {
    "agg": parse_agg, "mcast": parse_mcast, "resend": parse_resend,
    "backend": parse_backend, "isthmusd": parse_isthmusd, "plan": parse_plan,
    "auth": parse_auth, "testbed": parse_testbed, "island": parse_island,
}


def best_kernel(figs, ws, dtype):
    """The fastest kernel (fewest cycles per byte) for a working set."""
    best = None
    pre = "agg.sum.%s.%s." % (ws, dtype)
    for k, v in figs.items():
        if k.startswith(pre) and k.endswith(".cyc_per_B"):
            kern = k[len(pre):-len(".cyc_per_B")]
            if best is None or v < figs[pre + best + ".cyc_per_B"]:
                best = kern
    return best


def headline(figs):
    """Rows (label, value, what it is) of the headline ratios present."""
    rows = []

    def add(label, key, what):
        if figs.get(key) is not None:
            rows.append((label, figs[key], what, key))

    for ws in ("L1", "L2", "mem"):
        k = best_kernel(figs, ws, "fp32")
        if k:
            vkey = "agg.sum.%s.fp32.%s.x_vcopy" % (ws, k)
            if figs.get(vkey):
                add("summation / vcopy, fp32 %s (%s)" % (ws, k), vkey,
                    "cycles of the sum over an AVX-512 copy of the same bytes")
            else:
                add("summation / memcpy, fp32 %s (%s)" % (ws, k),
                    "agg.sum.%s.fp32.%s.x_memcpy" % (ws, k),
                    "no AVX-512 here: against libc memcpy")
    layouts = sorted({k.split(".")[1] for k in figs
                      if k.startswith("isthmusd.") and k.endswith("pipeline_per_readfwd")})
    for lay in layouts:
        add("pipeline / read-fwd, %s" % lay, "isthmusd.%s.pipeline_per_readfwd" % lay,
            "rate of the data path over a payload-reading forwarder (target >= %s); "
            "peers' UDP checksums verified in software, the default"
            % ("0.45" if lay == "skewed" else "0.5"))
    for lay in layouts:
        add("pipeline / read-fwd, UDP checksums checked by the NIC, %s" % lay,
            "isthmusd.%s.niccsum_per_readfwd" % lay,
            "RX checksum offload (mlx5, ice, i40e), or [wan] udp_checksum = no")
    for lay in layouts:
        add("pipeline Gbit/s in per lcore, %s" % lay,
            "isthmusd.%s.pipeline.gbit_in" % lay, "absolute, load-dependent")
    for lay in layouts:
        add("cycles per DATA, 1 worker, %s" % lay, "isthmusd.%s.w1.worker0.cyc_per_data" % lay,
            "worker 0 alone: parse, sum, AGGs")
        add("cycles per DATA, 2 workers, worker 0, %s" % lay,
            "isthmusd.%s.w2.worker0.cyc_per_data" % lay,
            "per DATA it received (it parses and steers all, sums half)")
        add("cycles per DATA, 2 workers, worker 1, %s" % lay,
            "isthmusd.%s.w2.worker1.cyc_per_data" % lay, "per DATA it summed (its half)")
        add("2-worker rate / 1-worker rate, %s" % lay, "isthmusd.%s.w2_per_w1.cycles" % lay,
            "from the workers' cycles, each on a core of its own")
    add("island DATA out, 2-worker / 1-worker rate, a WAN queue each",
        "isthmusd.egress.queue_each.rate_per_w1",
        "from the workers' cycles per DATA (the island's DATA to 8 peers)")
    add("island DATA out, 2-worker / 1-worker wall, a WAN queue each",
        "isthmusd.egress.queue_each.wall_per_w1", "round wall time, 1 worker over 2")
    add("island DATA out, 2-worker / 1-worker rate, through worker 0",
        "isthmusd.egress.via_worker0.rate_per_w1", "the WAN port with one TX queue")
    for temp in ("hot", "cold"):
        add("fan-out cycles per extra destination, zerocopy D=8, %s" % temp,
            "mcast.%s.zerocopy.D8.per_extra_dest" % temp, "cycles per packet")
        d8c = figs.get("mcast.%s.copy.D8.total" % temp)
        d8z = figs.get("mcast.%s.zerocopy.D8.total" % temp)
        if d8c and d8z:
            figs["mcast.%s.copy_per_zerocopy.D8" % temp] = d8c / d8z
            add("fan-out copy / zerocopy, D=8, %s" % temp,
                "mcast.%s.copy_per_zerocopy.D8" % temp, "total cycles per packet")
    for p in sorted({int(k.split(".")[1][:-1]) for k in figs if k.startswith("resend.")}):
        r, f = figs.get("resend.%dB.resend" % p), figs.get("resend.%dB.fresh" % p)
        if r is not None and f:
            figs["resend.%dB.resend_per_fresh" % p] = r / f
            add("resend / fresh, %d B" % p, "resend.%dB.resend_per_fresh" % p,
                "cycles of a served NACK over a fresh AGG send")
    add("auth verify / memcpy, ipsec-mb bursts of 32", "auth.ipsec-mb_verify32.x_memcpy",
        "cycles per sealed message over copying it")
    add("auth verify / memcpy, OpenSSL", "auth.openssl_verify.x_memcpy",
        "cycles per sealed message over copying it")
    add("island send Gbit/s per core, 1 session", "island.t1.send_lib.gbps_per_core",
        "libisthmus over loopback, 1432-byte chunks")
    add("island send / plain sendmmsg, 1 session", "island.t1.send.lib_over_ref",
        "per-core rate of isth_island_send over sendmmsg of the same datagrams")
    add("island recv Gbit/s per core, 1 session", "island.t1.recv_lib.gbps_per_core",
        "libisthmus over loopback, AGGs from a fake edge")
    add("island recv / plain recvmmsg, 1 session", "island.t1.recv.lib_over_ref",
        "per-core rate of isth_island_result over recvmmsg of the same datagrams")
    add("island send Gbit/s per core, 1 session, UDP GSO", "island.t1.send_gso.gbps_per_core",
        "libisthmus conf.gso on, loopback to a plain sink (segmentation charged to the sender)")
    add("island recv Gbit/s per core, 1 session, UDP GRO", "island.t1.recv_gro.gbps_per_core",
        "libisthmus conf.gro on, the AGGs arriving as GSO buffers")
    add("backend fpga model / sw", "backend.fpga.x_sw", "contributions/s, device model")
    for n in (9, 16, 32, 64):
        ms = [v for k, v in figs.items()
              if k.startswith("plan.n%d." % n) and k.endswith(".plan_ms")]
        if ms:
            figs["plan.n%d.slowest_s" % n] = max(ms) / 1e3
            add("planner seconds, %d islands (slowest family)" % n,
                "plan.n%d.slowest_s" % n, "wall time of one isth_plan_solve")
    add("testbed round / planned T", "testbed.round_per_T",
        "measured mean round over the planner's T")
    return rows


def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    return "%.3f" % v


def print_table(doc, f=sys.stdout):
    m = doc.get("machine", {})
    print("isthmus bench: commit %s, %s, %s, nproc %s, load average %s%s" % (
        doc.get("commit", "?"), doc.get("date", "?"), m.get("model", "?"),
        m.get("nproc", "?"), m.get("loadavg", "?"),
        ", --quick" if doc.get("quick") else ""), file=f)
    rows = doc["headline"]
    w = max([len(r[0]) for r in rows] + [8])
    print("%-*s  %10s  %s" % (w, "figure", "value", "meaning"), file=f)
    for label, v, what, _ in rows:
        print("%-*s  %10s  %s" % (w, label, fmt(v), what), file=f)
    for b, why in sorted(doc.get("skipped", {}).items()):
        print("%-*s  %10s  skipped: %s" % (w, b, "-", why), file=f)


def cmd_report(a):
    figs = {}
    raw = {}
    skipped = {}
    for kv in a.skip or []:
        b, _, why = kv.partition("=")
        skipped[b] = why
    for b in a.benches.split(","):
        if b in skipped:
            continue
        if b not in PARSERS:
            raise ParseError("unknown benchmark %r" % b)
        path = "%s/%s.txt" % (a.dir, b)
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError as e:
            raise ParseError("%s: %s" % (path, e.strerror)) from None
        raw[b] = text
        figs.update(PARSERS[b](text, path))
    doc = {"schema": SCHEMA, "machine": {}, "quick": a.quick, "skipped": skipped}
    for kv in a.meta or []:
        k, _, v = kv.partition("=")
        if k.startswith("machine."):
            doc["machine"][k[len("machine."):]] = v
        else:
            doc[k] = v
    doc["headline"] = headline(figs)
    doc["figures"] = dict(sorted(figs.items()))
    doc["raw"] = raw
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
    print_table(doc)
    return 0


def load(path):
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise ParseError("%s: %s" % (path, e)) from None
    if doc.get("schema") != SCHEMA or "figures" not in doc:
        raise ParseError("%s: not a bench.sh JSON file (schema %s)" % (path, SCHEMA))
    return doc


def cmd_table(a):
    print_table(load(a.file))
    return 0


def cmd_compare(a):
    new, old = load(a.new), load(a.old)
    nf, of = new["figures"], old["figures"]
    print("new %s (%s, load %s) / old %s (%s, load %s)" % (
        new.get("commit", "?"), new.get("date", "?"), new["machine"].get("loadavg", "?"),
        old.get("commit", "?"), old.get("date", "?"), old["machine"].get("loadavg", "?")))
    head = [r[3] for r in new["headline"]]
    keys = head + sorted(k for k in set(nf) | set(of) if k not in head)
    w = max(len(k) for k in keys) if keys else 8
    print("%-*s  %10s  %10s  %8s" % (w, "figure", "new", "old", "new/old"))
    for k in keys:
        n, o = nf.get(k), of.get(k)
        r = "%.3f" % (n / o) if n is not None and o else "-"
        print("%-*s  %10s  %10s  %8s" % (w, k, fmt(n), fmt(o), r))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="bench-report.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report", help="parse DIR/<bench>.txt, print the table, write JSON")
    r.add_argument("--dir", required=True)
    r.add_argument("--out")
    r.add_argument("--benches", default="agg,mcast,resend,backend,isthmusd,plan,auth")
    r.add_argument("--skip", action="append", metavar="BENCH=REASON")
    r.add_argument("--meta", action="append", metavar="KEY=VALUE")
    r.add_argument("--quick", action="store_true")
    t = sub.add_parser("table", help="print the headline table of a JSON file")
    t.add_argument("file")
    c = sub.add_parser("compare", help="new/old per figure")
    c.add_argument("new")
    c.add_argument("old")
    a = ap.parse_args(argv)
    try:
        return {"report": cmd_report, "table": cmd_table, "compare": cmd_compare}[a.cmd](a)
    except ParseError as e:
        print("bench-report: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        # output piped into head(1): not an error of the report
        sys.stderr.close()
        sys.exit(0)
