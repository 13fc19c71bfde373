#!/usr/bin/python3
"""tests/scripts/tune_summary_test.py — bench/tune_summary.py and bench/tune_plot.py on hand-written run folders.

The issue notes quote its final latencies, its first-whole-network table (measurements, latency and
search share up to and after it) and its search-time speedup, so each is checked here on two models of
two seeds whose figures are known by construction.

Run by ctest as `/usr/bin/python3 tune_summary_test.py`.
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "bench", "tune_summary.py")
PLOT = os.path.join(ROOT, "bench", "tune_plot.py")
HEADER = ("round,task,task_name,measured,valid,network_seconds,task_best_seconds,wall_seconds,search_seconds,"
          "learn_seconds,measure_seconds,upload_seconds\n")


def write_run(root, name, rounds):
    """rounds: (measured, network seconds or None, wall, search, measure) per round."""
    os.makedirs(os.path.join(root, name))
    with open(os.path.join(root, name, "rounds.csv"), "w") as f:
        f.write(HEADER)
        for i, (measured, net, wall, search, measure) in enumerate(rounds):
            f.write(f"{i},{i % 2},t{i % 2},{measured},2,{'' if net is None else net},0.001,{wall},{search},0,"
                    f"{measure},0\n")


class TuneSummaryTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        root = self.dir.name
        for seed, first in ((1, 0.010), (2, 0.011)):
            # Two warm-up rounds of 2 (search half of each round), then rounds of 16 (a quarter).
            write_run(root, f"net-lineage-warmup-2-s{seed}",
                      [(2, None, 1, 1, 1), (4, first, 2, 1, 1), (20, 0.008, 4, 1, 3), (36, 0.006, 6, 1, 3)])
            # Random reaches its own final (12 ms) at 36; the lineage is under it from 4 on: 9x, wall 4 / 2.
            write_run(root, f"net-random-warmup-2-s{seed}",
                      [(2, None, 1, 0, 1), (4, 0.030, 2, 0, 1), (20, 0.020, 3, 0, 1), (36, 0.012, 4, 0, 1)])
        write_run(root, "net-online-warmup-2-s1", [(2, None, 1, 0, 1)])  # cut off before a latency

    def tearDown(self):
        self.dir.cleanup()

    def summary(self):
        done = subprocess.run([sys.executable, SCRIPT, self.dir.name], capture_output=True, text=True, check=True)
        return done.stdout.splitlines()

    def test_final_first_whole_network_and_speedup(self):
        lines = self.summary()
        self.assertIn("(left out: net-online-warmup-2-s1, stopped at 2 measurements with no network latency)", lines)
        self.assertIn("| lineage warmup=2 | 2 | 36 | 6 ± 0 | 6 ± 0 | 37.5 ± 0% |", lines)
        self.assertIn("| lineage warmup=2 | 4 | 2–2 | 10, 11 | 50 ± 0% | 25 ± 0% |", lines)
        self.assertIn("| random warmup=2 | 4 | 2–2 | 30, 30 | 0 ± 0% | 0 ± 0% |", lines)
        self.assertIn("| random warmup=2 | 2 | 9 ± 0x | 9, 9 | 2 ± 0x |", lines)

    def plot(self, *flags):
        out = os.path.join(self.dir.name, "plot.svg")
        subprocess.run([sys.executable, PLOT, out, self.dir.name + "=study", *flags], capture_output=True, text=True,
                       check=True)
        with open(out) as f:
            return f.read()

    def test_plot_draws_a_line_per_seed_with_a_latency(self):
        svg = self.plot()
        self.assertEqual(svg.count("<polyline"), 4)  # 2 models × 2 seeds; online never had a latency
        self.assertIn(">study lineage warmup=2 (2 seeds)</text>", svg)
        self.assertIn(">study random warmup=2 (2 seeds)</text>", svg)
        self.assertNotIn("online", svg)
        # Each line starts at the first latency (4 measurements) and ends at the right edge (36 of 36).
        first = svg.split('<polyline points="')[1].split('"')[0].split()
        self.assertEqual(len(first), 3)
        self.assertEqual(first[-1].split(",")[0], "560.0")  # LEFT + (W - LEFT - RIGHT) × 36 / 36
        only = self.plot("--only", "random", "--x", "wall")
        self.assertEqual(only.count("<polyline"), 2)
        self.assertIn(">wall seconds</text>", only)


if __name__ == "__main__":
    unittest.main()
