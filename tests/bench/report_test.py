#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# Unit test of scripts/bench-report.py, the parser behind scripts/bench.sh,
# on recorded outputs (tests/bench/samples/): agg, mcast, resend, backend,
# plan and auth are a real `scripts/bench.sh --quick` run of 2026-12-01
# (plan: the full run, killed during 64 islands); isthmusd.txt is a
# `bench_isthmusd --reps 7` run of 2026-12-02 (with the 1/2-worker
# block), isthmusd-csum.txt a `bench_isthmusd --quick` run of 2026-12-03
# (UDP checksums in software and by the NIC); testbed.txt is doc/testbed.md's
# SUMMARY line; island.txt is a full bench_island run of 2026-12-02. Expected values are read off those files by eye, not
# computed by the parser. No benchmark runs here and no timing is judged.
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "bench-report.py")
SAMPLES = os.path.join(HERE, "samples")

spec = importlib.util.spec_from_file_location("bench_report", SCRIPT)
br = importlib.util.module_from_spec(spec)
spec.loader.exec_module(br)


def sample(name):
    with open(os.path.join(SAMPLES, name + ".txt"), encoding="utf-8") as fh:
        return fh.read()


def run(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args),
                          capture_output=True, text=True, check=False)


class Parsers(unittest.TestCase):
    def test_agg(self):
        f = br.parse_agg(sample("agg"))
        # agg.txt line 9: L1 fp32 avx512 0.017 cyc/B, x memcpy 0.53, x vcopy 1.62
        self.assertEqual(f["agg.sum.L1.fp32.avx512.cyc_per_B"], 0.017)
        self.assertEqual(f["agg.sum.L1.fp32.avx512.x_memcpy"], 0.53)
        self.assertEqual(f["agg.sum.L1.fp32.avx512.x_vcopy"], 1.62)
        # line 26: mem fp32 avx2 is the fastest kernel in memory (0.130 < 0.395)
        self.assertEqual(br.best_kernel(f, "mem", "fp32"), "avx2")
        self.assertEqual(br.best_kernel(f, "L1", "fp32"), "avx512")
        # 3 working sets x 3 dtypes x 3 kernels, 4 figures each
        self.assertEqual(len([k for k in f if k.startswith("agg.sum.")]), 3 * 3 * 3 * 4)
        self.assertIn("agg.engine.8s.skewed.avx512.gbit_in", f)

    def test_mcast(self):
        f = br.parse_mcast(sample("mcast"))
        self.assertEqual(f["mcast.hot.zerocopy.D8.per_extra_dest"], 454.4)
        self.assertEqual(f["mcast.hot.zerocopy.D1.total"], 547)
        # D = 1 has no extra destination ("-")
        self.assertNotIn("mcast.hot.zerocopy.D1.per_extra_dest", f)
        self.assertIn("mcast.cold.copy.D8.total", f)

    def test_resend(self):
        f = br.parse_resend(sample("resend"))
        self.assertEqual(f["resend.1432B.fresh"], 4067)
        self.assertEqual(f["resend.1432B.resend"], 649)
        self.assertEqual(f["resend.256B.fresh_per_busy"], 1.27)

    def test_backend(self):
        f = br.parse_backend(sample("backend"))
        self.assertEqual(f["backend.sw.contrib_per_s"], 2878502)
        self.assertEqual(f["backend.fpga.x_sw"], 0.04)
        self.assertEqual(f["backend.fpga_capped.gbit"], 1.29)

    def test_isthmusd(self):
        f = br.parse_isthmusd(sample("isthmusd"))
        self.assertEqual(f["isthmusd.aligned.pipeline_per_readfwd"], 0.461)
        self.assertEqual(f["isthmusd.skewed.pipeline_per_readfwd"], 0.387)
        self.assertEqual(f["isthmusd.skewed.pipeline_per_iofwd"], 0.018)
        self.assertEqual(f["isthmusd.aligned.pipeline.gbit_in"], 66.3)
        self.assertEqual(f["isthmusd.aligned.read-fwd.cyc_per_pkt"], 119.6)
        self.assertEqual(f["isthmusd.skewed.stage.parse"], 92.2)
        self.assertEqual(f["isthmusd.aligned.stage.lookup_etc"], -110.7)
        self.assertEqual(f["isthmusd.aligned.stage.rest"], -8.3)
        self.assertEqual(f["isthmusd.skewed.preempted_pct"], 0.38)
        # the 1- and 2-worker block of each layout
        self.assertEqual(f["isthmusd.aligned.w1.worker0.cyc_per_data"], 247.2)
        self.assertEqual(f["isthmusd.aligned.w2.worker0.cyc_per_data"], 268.9)
        self.assertEqual(f["isthmusd.aligned.w2.worker1.cyc_per_data"], 816.8)
        self.assertEqual(f["isthmusd.aligned.w2.wall.cyc_per_data"], 414.2)
        self.assertEqual(f["isthmusd.skewed.w2_per_w1.cycles"], 0.900)
        self.assertEqual(f["isthmusd.skewed.w2_per_w1.wall"], 1.007)
        rows = {r[3] for r in br.headline(f)}
        self.assertIn("isthmusd.skewed.w2.worker1.cyc_per_data", rows)
        self.assertIn("isthmusd.aligned.w2_per_w1.cycles", rows)

    def test_isthmusd_udp_checksums(self):
        # a `bench_isthmusd --quick` run of 2026-12-03: the pipeline row with
        # the peers' UDP checksums verified in software, nic-csum with the
        # NIC's (the rows and lines the earlier sample does not have)
        f = br.parse_isthmusd(sample("isthmusd-csum"))
        self.assertEqual(f["isthmusd.aligned.pipeline.cyc_per_pkt"], 323.1)
        self.assertEqual(f["isthmusd.aligned.nic-csum.cyc_per_pkt"], 254.3)
        self.assertEqual(f["isthmusd.skewed.nic-csum.gbit_in"], 89.3)
        self.assertEqual(f["isthmusd.aligned.pipeline_per_readfwd"], 0.543)
        self.assertEqual(f["isthmusd.aligned.niccsum_per_readfwd"], 0.690)
        self.assertEqual(f["isthmusd.skewed.niccsum_per_readfwd"], 0.770)
        rows = {r[3]: r for r in br.headline(f)}
        self.assertIn("isthmusd.skewed.niccsum_per_readfwd", rows)
        self.assertIn("checked by the NIC", rows["isthmusd.skewed.niccsum_per_readfwd"][0])
        # the earlier sample has no such row, and the table none either
        old = br.parse_isthmusd(sample("isthmusd"))
        self.assertNotIn("isthmusd.aligned.niccsum_per_readfwd", old)
        self.assertNotIn("isthmusd.aligned.niccsum_per_readfwd",
                         {r[3] for r in br.headline(old)})

    def test_isthmusd_egress(self):
        # the egress summary line as bench_isthmusd prints it (2026-12-03)
        line = ("summary: egress (the island's DATA to 8 peers), cyc/DATA: 1 worker: "
                "worker 0 1336.2; 2 workers, WAN queue each: worker 0 1085.9, worker 1 "
                "941.3, 2w/1w rate from the workers' cycles 1.230, wall 1.637; 2 workers, "
                "through worker 0: worker 0 1304.1, worker 1 1642.9, 2w/1w rate 0.813, "
                "wall 0.870")
        f = br.parse_isthmusd(sample("isthmusd") + "\n" + line + "\n")
        self.assertEqual(f["isthmusd.egress.w1.worker0"], 1336.2)
        self.assertEqual(f["isthmusd.egress.queue_each.worker1"], 941.3)
        self.assertEqual(f["isthmusd.egress.queue_each.rate_per_w1"], 1.230)
        self.assertEqual(f["isthmusd.egress.queue_each.wall_per_w1"], 1.637)
        self.assertEqual(f["isthmusd.egress.via_worker0.worker0"], 1304.1)
        self.assertEqual(f["isthmusd.egress.via_worker0.wall_per_w1"], 0.870)
        rows = {r[3] for r in br.headline(f)}
        self.assertIn("isthmusd.egress.queue_each.rate_per_w1", rows)
        self.assertIn("isthmusd.egress.via_worker0.rate_per_w1", rows)
        # without the section (older runs): no egress figures, no error
        self.assertNotIn("isthmusd.egress.w1.worker0", br.parse_isthmusd(sample("isthmusd")))

    def test_plan(self):
        f = br.parse_plan(sample("plan"))
        self.assertEqual(f["plan.n32.all-to-all.M0.25.plan_ms"], 19823.59)
        self.assertEqual(f["plan.n9.pairs.M0.00.lp_iterations"], 35)
        # 3 sizes x 3 families x 2 memory settings
        self.assertEqual(len([k for k in f if k.endswith(".plan_ms")]), 18)

    def test_auth(self):
        f = br.parse_auth(sample("auth"))
        # "ipsec-mb verify" must not swallow "ipsec-mb verify32(+sum)"
        self.assertEqual(f["auth.ipsec-mb_verify.cycles"], 251.2)
        self.assertEqual(f["auth.ipsec-mb_verify32.cycles"], 209.6)
        self.assertEqual(f["auth.ipsec-mb_verify32+sum.cycles"], 272.5)
        self.assertEqual(f["auth.openssl_verify.x_memcpy"], 9.61)
        self.assertEqual(len([k for k in f if k.endswith(".cycles")]), 10)

    def test_island(self):
        f = br.parse_island(sample("island"))
        self.assertEqual(f["island.t1.send_lib.gbps_per_core"], 5.20)
        self.assertEqual(f["island.t2.recv_ref.mpps_per_core"], 3.718)
        self.assertEqual(f["island.t1.send.lib_over_ref"], 0.79)
        # 2 thread counts x (4 phases x 3 figures + 2 ratios + 2 core counts)
        self.assertEqual(len(f), 32)
        with self.assertRaisesRegex(br.ParseError, r"^island:2: not 'name value unit'"):
            br.parse_island(sample("island").replace(" Gbit/s\n", "\n", 1))
        with self.assertRaisesRegex(br.ParseError, "island: no island.\\* rows"):
            br.parse_island("# bench_island: nothing\n")

    def test_testbed(self):
        f = br.parse_testbed(sample("testbed"))
        self.assertEqual(f["testbed.round_ms_mean"], 141.0)
        self.assertAlmostEqual(f["testbed.round_per_T"], 141.0 / 188.4)
        f = br.parse_testbed("SUMMARY schedule=x islands=3 round_ms_mean=5.0 round_ms_planned=-\n")
        self.assertIsNone(f["testbed.round_ms_planned"])
        self.assertNotIn("testbed.round_per_T", f)

    def test_changed_format_is_an_error(self):
        with self.assertRaisesRegex(br.ParseError, "resend: no payload rows"):
            br.parse_resend("resend bench: nothing\n")
        with self.assertRaisesRegex(br.ParseError, "isthmusd: no layout rows"):
            br.parse_isthmusd(sample("isthmusd").split("== layout")[0])
        bad = sample("resend").replace("6.27", "6,27")
        with self.assertRaisesRegex(br.ParseError, r"^resend:5: not a number: '6,27'"):
            br.parse_resend(bad)
        with self.assertRaisesRegex(br.ParseError, "testbed: no SUMMARY"):
            br.parse_testbed("testbed: failed\n")


class Headline(unittest.TestCase):
    def setUp(self):
        self.f = {}
        for b in ("agg", "mcast", "resend", "backend", "isthmusd", "plan", "auth", "testbed",
                  "island"):
            self.f.update(br.PARSERS[b](sample(b), b))
        self.rows = {r[0]: r[1] for r in br.headline(self.f)}

    def test_rows(self):
        r = self.rows
        self.assertEqual(r["summation / vcopy, fp32 L1 (avx512)"], 1.62)
        self.assertEqual(r["summation / vcopy, fp32 mem (avx2)"], 0.35)
        self.assertEqual(r["pipeline / read-fwd, aligned"], 0.461)
        self.assertEqual(r["pipeline / read-fwd, skewed"], 0.387)
        self.assertEqual(r["cycles per DATA, 1 worker, skewed"], 317.9)
        self.assertEqual(r["cycles per DATA, 2 workers, worker 1, aligned"], 816.8)
        self.assertEqual(r["2-worker rate / 1-worker rate, aligned"], 0.605)
        self.assertEqual(r["island recv Gbit/s per core, 1 session"], 21.64)
        self.assertEqual(r["fan-out cycles per extra destination, zerocopy D=8, hot"], 454.4)
        self.assertAlmostEqual(r["resend / fresh, 1432 B"], 649 / 4067)
        self.assertEqual(r["auth verify / memcpy, ipsec-mb bursts of 32"], 2.93)
        self.assertEqual(r["island send / plain sendmmsg, 1 session"], 0.79)
        self.assertEqual(r["island send Gbit/s per core, 1 session"], 5.20)
        # slowest plan at 16 islands: all-to-all with M = 0, 776.00 ms
        self.assertAlmostEqual(r["planner seconds, 16 islands (slowest family)"], 0.776)
        self.assertNotIn("planner seconds, 64 islands (slowest family)", r)
        self.assertAlmostEqual(r["testbed round / planned T"], 141.0 / 188.4)


class Commands(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="isth-bench-report-%d-" % os.getpid())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def report(self, out, raw=SAMPLES, extra=()):
        p = run("report", "--dir", raw, "--out", out,
                "--benches", "agg,mcast,resend,backend,isthmusd,plan,auth",
                "--skip", "testbed=not root", "--meta", "commit=abc123",
                "--meta", "machine.nproc=2", "--meta", "machine.loadavg=3.1 2.0 1.5", *extra)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_report_json_and_table(self):
        out = os.path.join(self.tmp, "a.json")
        table = self.report(out)
        with open(out, encoding="utf-8") as fh:
            doc = json.load(fh)
        self.assertEqual(doc["commit"], "abc123")
        self.assertEqual(doc["machine"], {"nproc": "2", "loadavg": "3.1 2.0 1.5"})
        self.assertEqual(doc["skipped"], {"testbed": "not root"})
        self.assertEqual(doc["figures"]["resend.1432B.fresh"], 4067)
        self.assertEqual(doc["raw"]["resend"], sample("resend"))
        self.assertIn("pipeline / read-fwd, skewed", table)
        self.assertRegex(table, r"testbed\s+-\s+skipped: not root")
        t = run("table", out)
        self.assertEqual(t.stdout, table)

    def test_compare(self):
        old = os.path.join(self.tmp, "old.json")
        new = os.path.join(self.tmp, "new.json")
        self.report(old)
        raw = os.path.join(self.tmp, "raw")
        shutil.copytree(SAMPLES, raw)
        # the new run: a resend twice as dear at 1432 B (649 -> 1298 cycles)
        with open(os.path.join(raw, "resend.txt"), "w", encoding="utf-8") as fh:
            fh.write(sample("resend").replace("4067        649", "4067       1298"))
        self.report(new, raw)
        p = run("compare", new, old)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = {ln.split()[0]: ln.split()[1:] for ln in p.stdout.splitlines()[2:]}
        self.assertEqual(lines["resend.1432B.resend"], ["1298", "649.0", "2.000"])
        self.assertEqual(lines["resend.1432B.fresh"][-1], "1.000")

    def test_missing_output_names_the_file(self):
        p = run("report", "--dir", self.tmp, "--benches", "agg")
        self.assertEqual(p.returncode, 1)
        self.assertIn("%s/agg.txt" % self.tmp, p.stderr)
        p = run("compare", os.path.join(self.tmp, "none.json"), os.path.join(self.tmp, "x"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("none.json", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
