#!/usr/bin/python3
"""tests/scripts/continual_steps_test.py — scripts/gpu/continual_steps.py on hand-written logs.

The issue notes quote this script's figures (forgetting, the paired gap to fine-tuning, and one run
minus another seed by seed), so its pairing is checked here on two-seed logs in bench_continual's
format whose differences are known: pairing across seeds gives the same means but other intervals,
which the tests assert.

Run by ctest as `/usr/bin/python3 continual_steps_test.py`.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "gpu", "continual_steps.py")


def log(seed, new16, old24, ft16, column_epochs=6, base24=0.80, column16=None, settings_tail=""):
    """One seed's log: base on x86-24c, then step 1 learns x86-16c (distill and fine-tuning; with
    column16, the distill lineage's column scored first, as logs since session 17 have it)."""
    column = ([f"  column of distill              on x86-16c    top-1 {column16:.4f}/0.5000 tuning 0.2500"]
              if column16 is not None else [])
    return "\n".join([
        f"# bench_continual --old-bank 20000 --seed {seed}",
        f"# settings: old_weight 2, ewc 0.2, epochs 12, column_epochs {column_epochs}, unlabeled_ratio 1, old_bank 20000"
        + settings_tail,
        "x86-24c: 100 records, 90 measured; pool 80 programs in 8 tasks; eval split 4 tasks / 20 records (0.1 s)",
        f"step 0 (x86-24c): base top-1 {base24:.4f}/0.6000 (mean/sum) tuning 0.4000 on 4 eval tasks; 10 params",
        "x86-16c: 50 records, 45 measured; pool 40 programs in 4 tasks; eval split 2 tasks / 10 records (0.1 s)",
        *column,
        f"  distill                        on x86-24c    top-1 {old24:.4f}/0.6000 tuning 0.4000  (10 params)",
        f"  distill                        on x86-16c    top-1 {new16:.4f}/0.5000 tuning 0.3000  (10 params)",
        "  (a) fine-tune                  on x86-24c    top-1 0.7000/0.5000 tuning 0.6000  (10 params)",
        f"  (a) fine-tune                  on x86-16c    top-1 {ft16:.4f}/0.5000 tuning 0.2000  (10 params)",
        "",
    ])


def cell(out, section, pattern):
    """The first line of `section` (a '## ' heading's text) matching `pattern`."""
    body = out.split("## " + section, 1)[1].split("\n## ", 1)[0]
    for line in body.splitlines():
        if re.search(pattern, line):
            return line
    raise AssertionError(f"no line matching {pattern!r} under {section!r}:\n{out}")


class ContinualStepsTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def write_two_draws(self, prefix, new16, ft16=(0.60, 0.60, 0.60)):
        """Three runs' logs: seeds 1 and 2 at split salt 1, seed 1 at salt 2, x86-16c's distill and
        fine-tuning scores given per run."""
        runs = ((1, ", validation 0, split_salt 1"), (2, ", validation 0, split_salt 1"), (1, ", validation 0, split_salt 2"))
        return [self.write(f"{prefix}{i}.log", log(seed, new, 0.79, ft, settings_tail=tail))
                for i, ((seed, tail), new, ft) in enumerate(zip(runs, new16, ft16))]

    def run_script(self, *args):
        done = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, check=True)
        return done.stdout

    def test_pairs_each_seed_with_its_own_fine_tuning(self):
        # Gaps distill − fine-tuning: seed 1 −0.10, seed 2 −0.20, so −0.15 ± 0.635 (t with 1 degree
        # of freedom); across seeds (seed 1's distill against seed 2's fine-tuning) they would be
        # −0.05 and −0.25: the same mean, twice the interval.
        a = self.write("s1.log", log(1, new16=0.50, old24=0.79, ft16=0.60))
        b = self.write("s2.log", log(2, new16=0.55, old24=0.78, ft16=0.75))
        out = self.run_script(a, b)
        paired = cell(out, "paired", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)")
        self.assertIn("mean -0.1500 ± 0.6353", paired)
        self.assertIn("sum 0.0000 ± 0.0000", paired)
        self.assertIn("tuning 0.1000 ± 0.0000", paired)
        self.assertIn("n=2", paired)
        # Forgetting: x86-24c after step 1 minus the base's 0.80: −0.01 and −0.02.
        forgot = cell(out, "forgetting", r"^distill .* step 1 \(\+x86-16c\s*\) x86-24c")
        self.assertIn("mean -0.0150 ± 0.0635", forgot)

    def test_pairs_each_student_with_its_own_column(self):
        # Student − column: seed 1 0.50 − 0.62 = −0.12, seed 2 0.55 − 0.61 = −0.06: −0.09 ± 0.381; the
        # tuning proxy 0.30 − 0.25 in both. The column is the new platform's alone: no forgetting row.
        a = self.write("s1.log", log(1, new16=0.50, old24=0.79, ft16=0.60, column16=0.62))
        b = self.write("s2.log", log(2, new16=0.55, old24=0.78, ft16=0.75, column16=0.61))
        out = self.run_script(a, b)
        paired = cell(out, "paired: the lineage minus its active column", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)")
        self.assertIn("mean -0.0900 ± 0.3812", paired)
        self.assertIn("tuning 0.0500 ± 0.0000", paired)
        new = cell(out, "new platform", r"^x86-16c\s+column of distill \(old_weight 2, ewc 0.2\)")
        self.assertIn("mean 0.6150", new)
        self.assertNotIn("column of", out.split("## forgetting", 1)[1].split("\n## ", 1)[0])
        # Logs from before the column was scored print no such section.
        self.assertNotIn("its active column", self.run_script(self.write("old.log", log(1, 0.5, 0.79, 0.6))))

    def test_names_a_column_weight_other_than_the_default(self):
        # Runs at --column-weight 3 are another lineage: pooled with default runs they stay apart.
        a = self.write("w3.log", log(1, 0.50, 0.79, 0.60, settings_tail=", split_salt 0, column_weight 3"))
        b = self.write("w1.log", log(1, 0.70, 0.79, 0.60, settings_tail=", split_salt 0, column_weight 1"))
        out = self.run_script(a, b)
        self.assertIn("mean 0.5000", cell(out, "new platform", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2, column_weight 3\)"))
        self.assertIn("mean 0.7000", cell(out, "new platform", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)\s"))

    def test_names_a_column_weight_per_old_platform(self):
        # A column weight per old platform (the default since session 19) is another lineage than a
        # constant one (--column-weight-constant), even at weight 1.
        a = self.write("p1.log", log(1, 0.50, 0.79, 0.60,
                                     settings_tail=", split_salt 0, column_weight 1 per old platform"))
        b = self.write("w1.log", log(1, 0.70, 0.79, 0.60, settings_tail=", split_salt 0, column_weight 1"))
        out = self.run_script(a, b)
        self.assertIn("mean 0.5000", cell(out, "new platform",
                                          r"^x86-16c\s+distill \(old_weight 2, ewc 0.2, column_weight 1 per old platform\)"))
        self.assertIn("mean 0.7000", cell(out, "new platform", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)\s"))

    def test_names_an_old_weight_on_other_kinds_other_than_1(self):
        # --old-weight-other-kind 0 names its lineage apart; at 1 (what today's bench prints by default)
        # it is the same lineage as a log that never printed the field, and pools with it by seed.
        per_old = ", split_salt 0, column_weight 1 per old platform"
        a = self.write("k0.log", log(1, 0.50, 0.79, 0.60, settings_tail=per_old + ", old_weight_other_kind 0"))
        b = self.write("k1.log", log(2, 0.70, 0.79, 0.60, settings_tail=per_old + ", old_weight_other_kind 1"))
        c = self.write("old.log", log(3, 0.80, 0.79, 0.60, settings_tail=per_old))
        out = self.run_script(a, b, c)
        self.assertIn("mean 0.5000", cell(out, "new platform", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2, "
                                          r"column_weight 1 per old platform, old_weight_other_kind 0\)"))
        self.assertIn("mean 0.7500", cell(out, "new platform", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2, "
                                          r"column_weight 1 per old platform\)\s"))
        out = self.run_script(a, self.write("k1s1.log", log(1, 0.70, 0.79, 0.60,
                                                             settings_tail=per_old + ", old_weight_other_kind 1")),
                              "--between", "distill (old_weight 2, ewc 0.2, column_weight 1 per old platform, "
                              "old_weight_other_kind 0)", "distill (old_weight 2, ewc 0.2, column_weight 1 per old platform)")
        self.assertIn("mean -0.2000", cell(out, "the first lineage minus the second", r"x86-16c\s+mean"))

    PER_OLD = ", split_salt 0, column_weight 1 per old platform, old_weight_other_kind 1"
    DEFAULT = "distill (old_weight 2, ewc 0.2, column_weight 1 per old platform)"

    def assert_names_apart(self, field_on, field_off, name):
        """A lever's settings field (field_on) names its lineage apart as DEFAULT + name, and pairs by seed with
        the default run (field_off, or a log that never printed it) under --between. Returns the lineage."""
        a = self.write("on.log", log(1, 0.50, 0.79, 0.60, settings_tail=self.PER_OLD + field_on))
        b = self.write("off.log", log(1, 0.70, 0.79, 0.60, settings_tail=self.PER_OLD + field_off))
        c = self.write("old.log", log(2, 0.80, 0.79, 0.60, settings_tail=self.PER_OLD))
        lever = self.DEFAULT[:-1] + name + ")"
        out = self.run_script(a, b, c)
        self.assertIn("mean 0.5000", cell(out, "new platform", r"^x86-16c\s+" + re.escape(lever) + r"\s"))
        self.assertIn("mean 0.7500", cell(out, "new platform", r"^x86-16c\s+" + re.escape(self.DEFAULT) + r"\s"))
        out = self.run_script(a, b, "--between", lever, self.DEFAULT)
        self.assertIn("mean -0.2000", cell(out, "the first lineage minus the second", r"x86-16c\s+mean"))
        return lever

    def test_names_a_student_from_the_column(self):
        lever = self.assert_names_apart(", student_from_column 1", ", student_from_column 0", ", student_from_column")
        # With the columns scored, the gap to each lineage's own column: (0.50 − 0.60) − (0.70 − 0.75) = −0.05.
        a = self.write("c1col.log", log(1, 0.50, 0.79, 0.60, column16=0.60,
                                        settings_tail=self.PER_OLD + ", student_from_column 1"))
        b = self.write("c0col.log", log(1, 0.70, 0.79, 0.60, column16=0.75,
                                        settings_tail=self.PER_OLD + ", student_from_column 0"))
        out = self.run_script(a, b, "--between", lever, self.DEFAULT)
        self.assertIn("mean -0.0500", cell(out, "the gap to its own active column", r"x86-16c\s+mean"))

    def test_names_a_bank_ratio_other_than_1(self):
        self.assert_names_apart(", student_from_column 0, old_bank_ratio 2",
                                ", student_from_column 0, old_bank_ratio 1", ", old_bank_ratio 2")

    def test_names_a_feature_weight_other_than_0(self):
        self.assert_names_apart(", old_bank_ratio 1, feature_weight 0.5", ", old_bank_ratio 1, feature_weight 0",
                                ", feature_weight 0.5")

    def test_names_a_student_lr_other_than_0_002(self):
        self.assert_names_apart(", feature_weight 0, student_lr 0.001", ", feature_weight 0, student_lr 0.002",
                                ", student_lr 0.001")
        # Older logs, at 0.002, print no rate: they pair with a lever's as the default.
        self.assert_names_apart(", feature_weight 0, student_lr 0.004", ", feature_weight 0",
                                ", student_lr 0.004")

    def test_names_a_teacher_mix_other_than_0(self):
        self.assert_names_apart(", student_lr 0.002, teacher_mix 0.25", ", student_lr 0.002, teacher_mix 0",
                                ", teacher_mix 0.25")
        # Older logs print no mix: they pair with a lever's as the default.
        self.assert_names_apart(", student_lr 0.002, teacher_mix 0.5", ", student_lr 0.002", ", teacher_mix 0.5")

    def test_names_an_old_weight_same_kind_other_than_1(self):
        self.assert_names_apart(", teacher_mix 0, old_weight_same_kind 0", ", teacher_mix 0, old_weight_same_kind 1",
                                ", old_weight_same_kind 0")
        self.assert_names_apart(", teacher_mix 0, old_weight_same_kind 0.5", ", teacher_mix 0",
                                ", old_weight_same_kind 0.5")

    def test_between_subtracts_two_lineages_of_the_same_logs(self):
        # A second lineage (old KD 3) on x86-16c: 0.56 and 0.50 against the main lineage's 0.50 and 0.55,
        # so +0.06 and −0.05; on x86-24c 0.80 and 0.78 against 0.79 and 0.78, so it forgets 0.01 and 0 less.
        def with_extra(seed, new16, old16, old24, main24):
            extra = "  distill (old_weight 3, ewc 0.3, unlabeled 1) on {} top-1 {:.4f}/0.5000 tuning 0.3000  (10 params)"
            return log(seed, new16=old16, old24=main24, ft16=0.6) + "\n".join(
                [extra.format("x86-24c", old24), extra.format("x86-16c", new16), ""])
        a = self.write("s1.log", with_extra(1, new16=0.56, old16=0.50, old24=0.80, main24=0.79))
        b = self.write("s2.log", with_extra(2, new16=0.50, old16=0.55, old24=0.78, main24=0.78))
        out = self.run_script(a, b, "--between", "distill (old_weight 3, ewc 0.3)", "distill (old_weight 2, ewc 0.2)")
        line = cell(out, "the first lineage minus the second", r"step 1 \(\+x86-16c\s*\) x86-16c")
        self.assertIn("mean 0.0050 ± 0.6988", line)  # +0.06 and −0.05
        # sd 0.0778: 1.96 · 0.0778 / √58 = 0.02002 is over ±0.02, / √59 = 0.01985 is under.
        self.assertTrue(line.endswith("runs for ±0.02: 59"), line)
        forgot = cell(out, "forgetting, the first lineage", r"step 1 \(\+x86-16c\s*\) x86-24c")
        self.assertIn("mean 0.0050 ± 0.0635", forgot)
        done = subprocess.run([sys.executable, SCRIPT, a, "--between", "distill (old_weight 9, ewc 9)",
                               "distill (old_weight 2, ewc 0.2)"], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("no cell of both", done.stderr)

    def test_between_adds_top1_in_sets_where_the_logs_print_it(self):
        # Logs since session 22 print "sets MEAN/SUM" after the tuning proxy. The second lineage's sets on
        # x86-16c: 0.64 and 0.63 against 0.60 and 0.62, so +0.04 and +0.01 (sd 0.0212: 7 runs for ±0.02).
        # x86-24c's lines print none, so its cells add no sets column.
        def with_sets(seed, main16, extra16, main24=None):
            extra = ("  distill (old_weight 3, ewc 0.3, unlabeled 1) on x86-24c top-1 0.7900/0.6000 tuning 0.4000\n"
                     "  distill (old_weight 3, ewc 0.3, unlabeled 1) on x86-16c top-1 0.5000/0.5000 tuning 0.3000"
                     f" sets {extra16:.4f}/0.5000  (10 params)\n")
            text = log(seed, new16=0.5, old24=0.79, ft16=0.6)
            text = text.replace("on x86-16c    top-1 0.5000/0.5000 tuning 0.3000",
                                f"on x86-16c    top-1 0.5000/0.5000 tuning 0.3000 sets {main16:.4f}/0.5000")
            if main24 is not None:  # the base's line and the main lineage's x86-24c line with sets too
                text = text.replace("tuning 0.4000 on 4 eval", "tuning 0.4000 sets 0.8000/0.6000 on 4 eval")
                text = text.replace("on x86-24c    top-1 0.7900/0.6000 tuning 0.4000",
                                    f"on x86-24c    top-1 0.7900/0.6000 tuning 0.4000 sets {main24:.4f}/0.6000")
            return text + extra
        a = self.write("s1.log", with_sets(1, main16=0.60, extra16=0.64))
        b = self.write("s2.log", with_sets(2, main16=0.62, extra16=0.63))
        out = self.run_script(a, b, "--between", "distill (old_weight 3, ewc 0.3)", "distill (old_weight 2, ewc 0.2)")
        line = cell(out, "the first lineage minus the second", r"step 1 \(\+x86-16c\s*\) x86-16c")
        self.assertTrue(line.endswith("sets 0.0250 ± 0.1906  runs for ±0.02: 7"), line)
        self.assertNotIn("sets", cell(out, "the first lineage minus the second", r"step 1 \(\+x86-16c\s*\) x86-24c"))
        out = self.run_script(a, a, b)  # a log given twice with sets still counts once
        line = cell(out, "new platform", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)")
        self.assertIn("n=2", line)
        self.assertIn("sets 0.6100 ± 0.1271", line)  # each lineage's own sets beside its top-1
        # The base's sets and the main lineage's on x86-24c: it forgets 0.10 and 0.06 of them.
        out = self.run_script(self.write("f1.log", with_sets(1, 0.60, 0.64, main24=0.70)),
                              self.write("f2.log", with_sets(2, 0.62, 0.63, main24=0.74)))
        self.assertIn("sets -0.0800", cell(out, "forgetting", r"^distill \(old_weight 2, ewc 0.2\)\s+step 1"))
        # An older log of seed 1's run (no sets) pools with the newer one: its cells take the sets it lacks.
        older = self.write("s1-old.log", log(1, new16=0.5, old24=0.79, ft16=0.6))
        out = self.run_script(older, a, b, "--between", "distill (old_weight 3, ewc 0.3)", "distill (old_weight 2, ewc 0.2)")
        line = cell(out, "the first lineage minus the second", r"step 1 \(\+x86-16c\s*\) x86-16c")
        self.assertTrue(line.endswith("sets 0.0250 ± 0.1906  runs for ±0.02: 7"), line)

    def test_between_pools_two_runs_of_one_seed(self):
        # A rerun at --column-weight 3 (its main lineage) against the default run of the same seeds:
        # 0.50 − 0.60 and 0.70 − 0.55, so −0.10 and +0.15. Seed 1 at split salt 3 is another run: kept apart.
        def run(seed, new16, weight, salt=0):
            text = log(seed, new16, 0.79, 0.60, settings_tail=f", split_salt {salt}, column_weight {weight}")
            return text.replace(f"--seed {seed}", f"--split-salt {salt} --seed {seed}")
        logs = [self.write("w3-1.log", run(1, 0.50, 3)), self.write("w3-2.log", run(2, 0.70, 3)),
                self.write("w1-1.log", run(1, 0.60, 1)), self.write("w1-2.log", run(2, 0.55, 1)),
                self.write("w1-1-salt3.log", run(1, 0.10, 1, salt=3))]
        out = self.run_script(*logs, "--between", "distill (old_weight 2, ewc 0.2, column_weight 3)",
                              "distill (old_weight 2, ewc 0.2)")
        line = cell(out, "the first lineage minus the second", r"step 1 \(\+x86-16c\s*\) x86-16c")
        self.assertIn("mean 0.0250 ± 1.5882", line)  # −0.10 and +0.15
        self.assertIn("n=2", line)

    def test_pools_an_older_log_that_names_no_default_fields(self):
        # Session 15's logs end their settings at old_bank; today's add validation 0, platform_slots 0
        # and split_salt 0. At those values both are one run of the seed: 0.50 − 0.60.
        old = self.write("old.log", log(1, 0.60, 0.79, 0.60))
        new = self.write("new.log", log(1, 0.50, 0.79, 0.60, settings_tail=", validation 0, platform_slots 0, "
                                        "split_salt 0, column_weight 1 per old platform"))
        out = self.run_script(new, old, "--between", "distill (old_weight 2, ewc 0.2, column_weight 1 per old platform)",
                              "distill (old_weight 2, ewc 0.2)")
        line = cell(out, "the first lineage minus the second", r"step 1 \(\+x86-16c\s*\) x86-16c")
        self.assertIn("mean -0.1000", line)
        self.assertIn("n=1", line)

    def test_pools_only_logs_of_one_run(self):
        # A validation-split run of seed 1 is another run than the held-out one: --between finds no
        # cell of both lineages rather than subtracting scores of two splits.
        a = self.write("v.log", log(1, 0.50, 0.79, 0.60, settings_tail=", validation 0.3, split_salt 0, column_weight 3"))
        b = self.write("h.log", log(1, 0.60, 0.79, 0.60, settings_tail=", validation 0, split_salt 0, column_weight 1"))
        done = subprocess.run([sys.executable, SCRIPT, a, b, "--between", "distill (old_weight 2, ewc 0.2, column_weight 3)",
                               "distill (old_weight 2, ewc 0.2)"], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("no cell of both", done.stderr)

    def test_pools_the_draws_of_several_salts(self):
        # Session 20's table over five draws of held-out tasks: the logs of one seed at two split salts
        # are two runs (each its own pair with fine-tuning), not one run whose scores disagree.
        a = self.write("s1.log", log(1, 0.50, 0.79, 0.60, settings_tail=", validation 0, split_salt 1"))
        b = self.write("s2.log", log(1, 0.55, 0.79, 0.75, settings_tail=", validation 0, split_salt 2"))
        out = self.run_script(a, b)
        paired = cell(out, "paired", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)")
        self.assertIn("mean -0.1500 ± 0.6353", paired)
        self.assertIn("n=2", paired)

    def test_prints_the_interval_over_the_draws_means(self):
        # Salt 1, seeds 1 and 2: gaps −0.10 and −0.20 (mean −0.15); salt 2, seed 1: −0.30. Over the three
        # runs −0.2000 ± 0.2484; over the two draws' means (−0.15, −0.30) −0.2250 ± 0.9529.
        a, b, c = self.write_two_draws("r", (0.50, 0.55, 0.40), (0.60, 0.75, 0.70))
        paired = cell(self.run_script(a, b, c), "paired", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)")
        self.assertIn("mean -0.2000 ± 0.2484", paired)
        self.assertIn("n=3  over 2 draws: mean -0.2250 ± 0.9529", paired)
        one_draw = cell(self.run_script(a, b), "paired", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)")
        self.assertNotIn("draws", one_draw)

    def test_between_prints_the_interval_over_the_draws_means(self):
        # The same three runs as above, the student against fine-tuning named as a lineage (session 21's
        # student against joint training over five draws went through --between).
        a, b, c = self.write_two_draws("r", (0.50, 0.55, 0.40), (0.60, 0.75, 0.70))
        lineages = ("distill (old_weight 2, ewc 0.2)", "(a) fine-tune on the selection of distill (old_weight 2, ewc 0.2)")
        out = self.run_script(a, b, c, "--between", *lineages)
        new = cell(out, "the first lineage minus the second", r"step 1 \(\+x86-16c\s*\) x86-16c ")
        self.assertIn("mean -0.2000 ± 0.2484", new)
        self.assertIn("n=3  over 2 draws: mean -0.2250 ± 0.9529", new)
        one_draw = self.run_script(a, b, "--between", *lineages)
        self.assertNotIn("draws", cell(one_draw, "the first lineage minus the second", r"x86-16c "))

    def test_counts_a_log_given_twice_once(self):
        a = self.write("s1.log", log(1, new16=0.50, old24=0.79, ft16=0.60))
        out = self.run_script(a, a)
        self.assertIn("n=1", cell(out, "new platform", r"^x86-16c\s+distill \(old_weight 2, ewc 0.2\)\s"))

    def test_stops_on_logs_of_one_run_that_disagree(self):
        a = self.write("a.log", log(1, new16=0.50, old24=0.79, ft16=0.60))
        b = self.write("b.log", log(1, new16=0.55, old24=0.79, ft16=0.60))
        done = subprocess.run([sys.executable, SCRIPT, a, b], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("disagrees with another log of its run", done.stderr)

    def test_minus_subtracts_seed_by_seed(self):
        first = [self.write("a1.log", log(1, 0.50, 0.79, 0.60, 12)), self.write("a2.log", log(2, 0.70, 0.78, 0.60, 12))]
        second = [self.write("b1.log", log(1, 0.45, 0.79, 0.60)), self.write("b2.log", log(2, 0.60, 0.78, 0.60))]
        out = self.run_script(*first, "--minus", *second)
        line = cell(out, "the first runs minus the second", r"^distill .* step 1 \(\+x86-16c\s*\) x86-16c")
        self.assertIn("mean 0.0750 ± 0.3176", line)  # +0.05 and +0.10; across seeds −0.10 and +0.25: ± 2.22
        unchanged = cell(out, "the first runs minus the second", r"^\(a\) fine-tune .* x86-16c")
        self.assertIn("mean 0.0000 ± 0.0000", unchanged)

    def test_minus_prints_the_interval_over_the_draws_means(self):
        # The runs of test_prints_the_interval_over_the_draws_means against runs that score fine-tuning's
        # numbers: differences −0.10 and −0.20 at salt 1, −0.30 at salt 2.
        first = self.write_two_draws("a", (0.50, 0.55, 0.40))
        second = self.write_two_draws("b", (0.60, 0.75, 0.70))
        out = self.run_script(*first, "--minus", *second)
        line = cell(out, "the first runs minus the second", r"^distill .* step 1 \(\+x86-16c\s*\) x86-16c")
        self.assertIn("mean -0.2000 ± 0.2484", line)
        self.assertIn("n=3  over 2 draws: mean -0.2250 ± 0.9529", line)

    def test_minus_subtracts_forgetting_when_the_base_moves_too(self):
        # The first runs' base scores 0.82 on x86-24c, the second's 0.80 (a setting such as
        # --platform-slots changes the base). After step 1 the first runs score 0.80 / 0.79 there, the
        # second's 0.79 / 0.78: the scores differ by +0.01, but the first runs lose 0.02 / 0.03 where the
        # second lose 0.01 / 0.02, so they forget 0.01 more.
        first = [self.write("a1.log", log(1, 0.5, 0.80, 0.6, base24=0.82)),
                 self.write("a2.log", log(2, 0.5, 0.79, 0.6, base24=0.82))]
        second = [self.write("b1.log", log(1, 0.5, 0.79, 0.6)), self.write("b2.log", log(2, 0.5, 0.78, 0.6))]
        out = self.run_script(*first, "--minus", *second)
        scores = cell(out, "the first runs minus the second", r"^distill .* step 1 \(\+x86-16c\s*\) x86-24c")
        self.assertIn("mean 0.0100 ± 0.0000", scores)
        forgot = cell(out, "forgetting, the first runs", r"^distill .* step 1 \(\+x86-16c\s*\) x86-24c")
        self.assertIn("mean -0.0100 ± 0.0000", forgot)

    def test_minus_refuses_logs_of_other_seeds(self):
        first = [self.write("a1.log", log(1, 0.5, 0.79, 0.6)), self.write("a2.log", log(2, 0.5, 0.79, 0.6))]
        swapped = [self.write("b2.log", log(2, 0.5, 0.79, 0.6)), self.write("b1.log", log(1, 0.5, 0.79, 0.6))]
        done = subprocess.run([sys.executable, SCRIPT, *first, "--minus", *swapped], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("same seed order", done.stderr)

    def test_minus_refuses_unequal_lists(self):
        a = self.write("a.log", log(1, 0.5, 0.79, 0.6))
        done = subprocess.run([sys.executable, SCRIPT, a, a, "--minus", a], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("as many logs", done.stderr)


if __name__ == "__main__":
    unittest.main()
