#!/usr/bin/python3
"""tests/scripts/bench_continual_test.py — bench_continual's cache on the real records.

Every issue-19 figure comes from bench_continual, whose cache names each trained piece by what produced
it (docs/benchmarks.md), so that a rerun resumes and a variation reuses what it shares. A tiny run
(x86-16c → gpu-2080ti, one epoch each, 1% selected) trains into one cache; a second run into a copy of it
without the rdu selection computes the selection again. The same picks must name the same column and
student: the second run loads them, and prints the same digest and scores. (Before session 21 the
selection's digest covered its timings as well as its picks, so a recomputed selection retrained
everything after it.)

Run by ctest with BENCH_CONTINUAL (the binary) and DATA (../shared/data) set; about a minute here.
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

BENCH = os.environ.get("BENCH_CONTINUAL", "")
DATA = os.environ.get("DATA", "")
FLAGS = ["--platforms", "x86-16c,gpu-2080ti", "--methods", "distill", "--epochs", "1", "--column-epochs", "1",
         "--base-epochs", "1", "--base-max-records", "500", "--mc-samples", "2", "--fraction", "0.01",
         "--old-bank", "100", "--unlabeled-ratio", "0", "--device", "cpu", "--threads", "2"]
SELECTION = re.compile(r"^  rdu selection on (\S+): (\d+) of \d+ \(embed [\d.]+ s, select [\d.]+ s\) \[(\w+)\]$", re.M)
SCORE = re.compile(r"^  .+ on \S+\s+top-1 .*$", re.M)


class BenchContinualCacheTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def run_bench(self, cache):
        done = subprocess.run([BENCH, "--data", DATA, "--out", os.path.join(self.dir.name, "out"), "--cache", cache,
                               *FLAGS], capture_output=True, text=True, timeout=270)
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        return done.stdout

    def test_a_recomputed_selection_reuses_what_follows_it(self):
        first_cache = os.path.join(self.dir.name, "first")
        first = self.run_bench(first_cache)
        second_cache = os.path.join(self.dir.name, "second")
        shutil.copytree(first_cache, second_cache)
        selections = glob.glob(os.path.join(second_cache, "select-*"))
        self.assertEqual(len(selections), 1, os.listdir(second_cache))
        os.remove(selections[0])
        second = self.run_bench(second_cache)

        self.assertEqual(len(glob.glob(os.path.join(second_cache, "select-*"))), 1)  # computed again
        picked = SELECTION.findall(first)
        self.assertEqual(len(picked), 1, first)
        self.assertEqual(picked[0][0], "gpu-2080ti")
        self.assertGreater(int(picked[0][1]), 0)
        self.assertEqual(SELECTION.findall(second), picked)  # the same picks, the same digest
        for what in ("column", "distill"):
            self.assertRegex(second, rf"(?m)^  {what} +gpu-2080ti +cached \(", second)
            self.assertNotRegex(second, rf"(?m)^  {what} +gpu-2080ti +trained:", second)
        scores = SCORE.findall(first)
        self.assertGreaterEqual(len(scores), 3, first)  # the column and the student on both platforms
        self.assertEqual(SCORE.findall(second), scores)


if __name__ == "__main__":
    if not (BENCH and os.path.exists(BENCH) and os.path.isdir(os.path.join(DATA, "gpu-2080ti"))):
        raise SystemExit("bench_continual_test: set BENCH_CONTINUAL and DATA (../shared/data)")
    unittest.main()
