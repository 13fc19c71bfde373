#!/usr/bin/python3
"""tests/scripts/quality_summary_test.py — scripts/gpu/quality_summary.py on hand-written logs.

Two settings run as separate processes name their rows alike ("mamba"); LABEL=LOG tells them
apart so that they pair by seed, and the same row twice without labels is refused.

Run by ctest as `/usr/bin/python3 quality_summary_test.py`.
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "gpu", "quality_summary.py")


def row(seed, top1_mean, tuning):
    return (f"seed {seed} mamba          top-1 0.5000/{top1_mean:.4f} top-5 0.9000/0.9000 pairwise 0.7000 "
            f"tuning {tuning:.4f} (0.60 better) | floor top-1 0.1/0.6\n")


class QualitySummaryTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.logs = {}
        # default: top-1 mean 0.80 / 0.70, tuning 0.40 / 0.50; all4: +0.02 and +0.04, tuning +0.10 both
        for name, text in {"default_s1": row(1, 0.80, 0.40), "default_s2": row(2, 0.70, 0.50),
                           "all4_s1": row(1, 0.82, 0.50), "all4_s2": row(2, 0.74, 0.60)}.items():
            path = os.path.join(self.dir.name, name + ".log")
            with open(path, "w") as f:
                f.write(text)
            self.logs[name] = path

    def tearDown(self):
        self.dir.cleanup()

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_labelled_logs_pair_by_seed(self):
        done = self.run_script("--against", "default mamba",
                               "default=" + self.logs["default_s1"], "default=" + self.logs["default_s2"],
                               "all4=" + self.logs["all4_s1"], "all4=" + self.logs["all4_s2"])
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"\| default mamba \| 1,2 \| 0\.500 ± 0\.000 \| 0\.750 ± ")
        paired = [l for l in done.stdout.splitlines() if l.startswith("| all4 mamba − default mamba |")]
        self.assertEqual(len(paired), 1, done.stdout)
        cells = [c.strip() for c in paired[0].strip("|").split("|")]
        self.assertEqual(cells[1], "1,2")
        self.assertTrue(cells[3].startswith("0.030 ± "), cells)  # top-1 mean: +0.02 and +0.04
        self.assertEqual(cells[7], "0.100 ± 0.000")  # tuning proxy: +0.10 in both seeds

    def test_the_same_row_twice_without_labels_is_refused(self):
        done = self.run_script(self.logs["default_s1"], self.logs["all4_s1"])
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("seed 1 of mamba seen twice", done.stderr)


if __name__ == "__main__":
    unittest.main()
