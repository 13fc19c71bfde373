#!/usr/bin/python3
"""tests/scripts/bench_continual_test.py — bench_continual's cache on the real records.

Every issue-19 figure comes from bench_continual, whose cache names each trained piece by what produced
it (docs/benchmarks.md), so that a rerun resumes and a variation reuses what it shares. A tiny run
(x86-16c → gpu-2080ti, one epoch each, 1% selected) trains into one cache; a second run into a copy of it
without the rdu selection computes the selection again. The same picks must name the same column and
student: the second run loads them, and prints the same digest and scores. (Before session 21 the
selection's digest covered its timings as well as its picks, so a recomputed selection retrained
everything after it.) A run with --student-lr (issue 19's lever of session 26) into a copy of the first
cache shares the column and trains a student of its own, with another learning rate. A run with
--zero-shot-candidates scores the models a lineage could serve a platform it has not learned.

Run by ctest with BENCH_CONTINUAL (the binary) and DATA (../shared/data) set; about 90 s here.
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
         "--old-bank", "100", "--unlabeled-ratio", "0", "--no-zero-shot", "--device", "cpu", "--threads", "2"]
SELECTION = re.compile(r"^  rdu selection on (\S+): (\d+) of \d+ \(embed [\d.]+ s, select [\d.]+ s\) \[(\w+)\]$", re.M)
SCORE = re.compile(r"^  .+ on \S+\s+top-1 .*$", re.M)


def run_bench(out, cache, *more, flags=FLAGS):
    """bench_continual's stdout; a failed run raises with its output's end."""
    done = subprocess.run([BENCH, "--data", DATA, "--out", out, "--cache", cache, *flags, *more],
                          capture_output=True, text=True, timeout=270)
    if done.returncode != 0:
        raise AssertionError(done.stdout[-3000:] + done.stderr[-3000:])
    return done.stdout


class BenchContinualCacheTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        # One run of the defaults: every test copies its cache.
        cls.dir = tempfile.TemporaryDirectory()
        cls.first_cache = os.path.join(cls.dir.name, "first")
        cls.first = run_bench(os.path.join(cls.dir.name, "out"), cls.first_cache)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def copy_of_first_cache(self, name):
        cache = os.path.join(self.dir.name, name)
        shutil.copytree(self.first_cache, cache)
        return cache

    def run_bench(self, cache, *more, flags=FLAGS):
        return run_bench(os.path.join(self.dir.name, "out"), cache, *more, flags=flags)

    def test_a_recomputed_selection_reuses_what_follows_it(self):
        first = self.first
        second_cache = self.copy_of_first_cache("second")
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

    def assert_trains_its_own_student(self, name, flag, value, setting):
        """A run with FLAG VALUE on a copy of the first run's cache: its settings line names SETTING, the
        column comes from the cache and the student is trained anew, into a checkpoint of its own."""
        cache = self.copy_of_first_cache(name)
        out = self.run_bench(cache, flag, value)
        self.assertRegex(out, rf"(?m)^# settings: .*, {setting}(,|$)")
        self.assertRegex(out, r"(?m)^  column +gpu-2080ti +cached \(", out)
        self.assertRegex(out, r"(?m)^  distill +gpu-2080ti +trained:", out)
        students = sorted(glob.glob(os.path.join(cache, "distill-*.ckpt")))
        self.assertEqual(len(students), 2, os.listdir(cache))  # the default's and this one's
        with open(students[0], "rb") as a, open(students[1], "rb") as b:
            self.assertNotEqual(a.read(), b.read())

    def test_a_student_lr_trains_its_own_student_beside_the_shared_column(self):
        self.assert_trains_its_own_student("lr", "--student-lr", "0.02", r"student_lr 0\.02")
        self.assertRegex(self.first, r"(?m)^# settings: .*, student_lr 0\.002(,|$)")  # the job's

    def test_a_teacher_mix_trains_its_own_student_beside_the_shared_column(self):
        self.assert_trains_its_own_student("mix", "--teacher-mix", "0.5", r"teacher_mix 0\.5")
        self.assertRegex(self.first, r"(?m)^# settings: .*, teacher_mix 0(,|$)")  # the job's

    def test_zero_shot_candidates_of_a_platform_with_no_sibling_are_the_trunk(self):
        # --zero-shot-candidates (issue 48 item 2) with the adapter lineage: after step 0 only x86-16c is
        # learned, so gpu-2080ti's nearest learned platform is x86-16c, whose model is the trunk, and it has
        # none of its kind, so the same-kind mean is the trunk alone: all three score alike.
        flags = [f for f in FLAGS if f != "--no-zero-shot"]
        flags[flags.index("--methods") + 1] = "distill,adapter"
        out = self.run_bench(self.copy_of_first_cache("zero"), "--zero-shot-candidates", flags=flags)
        lines = {}
        for what in ("zero-shot", "zero-shot nearest", "zero-shot same-kind mean"):
            m = re.search(rf"(?m)^  {what} \(d\) adapter +on gpu-2080ti +(top-1 .*)$", out)
            self.assertIsNotNone(m, out)
            lines[what] = m.group(1)
        self.assertEqual(lines["zero-shot nearest"], lines["zero-shot"])
        self.assertEqual(lines["zero-shot same-kind mean"], lines["zero-shot"])
        self.assertIn("  (the learned platform nearest gpu-2080ti: x86-16c; 0 of its kind)", out)


if __name__ == "__main__":
    if not (BENCH and os.path.exists(BENCH) and os.path.isdir(os.path.join(DATA, "gpu-2080ti"))):
        raise SystemExit("bench_continual_test: set BENCH_CONTINUAL and DATA (../shared/data)")
    unittest.main()
