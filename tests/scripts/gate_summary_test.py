#!/usr/bin/python3
"""tests/scripts/gate_summary_test.py — scripts/gpu/gate_summary.py on hand-written gate_check logs.

The issue notes quote its kept counts and paired differences, so both are checked here on two arms of
three seeds whose figures are known; a seed without a verdict is named and left out.

Run by ctest as `/usr/bin/python3 gate_summary_test.py`.
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "gpu", "gate_summary.py")


def gate_line(mean, total, tuning, verdict="kept"):
    return (f"all: 116 tasks (every measured task, at most 256 programs each, top-1 averaged over sets of 64); "
            f"top-1 mean 0.9400 -> 0.9400 ({mean:+.4f} ± 0.0030 se), sum 0.9000 -> 0.9000 ({total:+.4f} ± 0.0090 "
            f"se), tuning proxy 0.280 -> 0.290 ({tuning:+.1f}% ± 1.5% se, 116 tasks); margins 0.0100 top-1, 10% "
            f"tuning proxy: {verdict}\n")


class GateSummaryTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def arm(self, name, runs):
        """runs: {seed: (mean, sum, tuning, new top-1, verdict)}, or {seed: None} for a run with no verdict."""
        folder = os.path.join(self.dir.name, name)
        for seed, run in runs.items():
            os.makedirs(os.path.join(folder, f"seed-{seed}"))
            if run is None:
                continue
            mean, total, tuning, new, verdict = run
            with open(os.path.join(folder, f"seed-{seed}", "gate.log"), "w") as f:
                f.write("# bench_gate ...\n" + gate_line(mean, total, tuning, verdict))
            with open(os.path.join(folder, f"seed-{seed}", "distill.log"), "w") as f:
                f.write("evaluate /data/gpu-v100: student top-1 0.9000, teacher 0.9100 (change -0.0100)\n"
                        f"evaluate /data/h100.jsonl.gz: student top-1 {new:.4f}, teacher 0.1000 (change +0.5)\n")
        return folder

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, check=True).stdout

    def test_counts_verdicts_and_pairs_by_seed(self):
        forgot = "forgot (top-1 sum fell 0.0200, over 2 se)"
        a = self.arm("default", {1: (-0.010, -0.020, 3.0, 0.70, forgot), 2: (-0.004, -0.006, 2.0, 0.72, "kept"),
                                 3: (-0.001, -0.004, 1.0, 0.74, "kept"), 4: None})
        b = self.arm("lever", {1: (-0.006, -0.010, 2.0, 0.66, "kept"), 2: (0.000, -0.002, 1.0, 0.70, "kept"),
                               3: (+0.003, -0.001, 0.0, 0.72, "kept")})
        out = self.run_script(a, b)
        self.assertIn("default: 3 seeds, kept 2, not kept 1 [1]; no verdict (left out): [4]", out)
        self.assertIn("lever: 3 seeds, kept 3, not kept 0 []", out)
        # The default's task-mean: mean -0.005, sd 0.004583, t(2) 4.303 -> ± 0.0114.
        self.assertIn("top-1 mean: -0.0050 ± 0.0114 (median -0.0040)", out)
        # Lever minus default, seed by seed: +0.004 each -> mean +0.0040, no spread.
        paired = out.split("paired by seed (3 seeds):")[1]
        self.assertIn("top-1 mean: +0.0040 ± 0.0000", paired)
        self.assertIn("new platform top-1: -0.0267", paired)  # (-0.04 - 0.02 - 0.02) / 3

    def test_one_arm_alone(self):
        a = self.arm("default", {1: (-0.010, -0.020, 3.0, 0.70, "kept"), 2: (-0.004, -0.006, 2.0, 0.72, "kept")})
        out = self.run_script(a)
        self.assertIn("default: 2 seeds, kept 2, not kept 0 []", out)
        self.assertNotIn("paired", out)


if __name__ == "__main__":
    unittest.main()
