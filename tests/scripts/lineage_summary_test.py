#!/usr/bin/python3
"""tests/scripts/lineage_summary_test.py — scripts/gpu/lineage_summary.py on hand-written logs.

Issue 48's notes quote this script's item-1 figures: best-of, and each ensemble of bench_continual
--ensembles, minus the method with the best mean of {student, adapter, fine-tune}, paired by run; and its
item-2 figures: each zero-shot model's rises step to step, paired by run, and its level against the
trunk's. Runs in bench_continual's format, whose differences are known, check the pairing and which
method is "the best mean" on each step.

Run by ctest as `/usr/bin/python3 lineage_summary_test.py`.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "gpu", "lineage_summary.py")


def line(name, platform, top1):
    return f"  {name:<30} on {platform:<10} top-1 {top1:.4f}/0.5000 tuning 0.3000 sets 0.5000/0.5000"


def run_log(seed, student, adapter, fine_tune, best_of, ensemble):
    """One run of a → b → c: per new platform (b, c) each method's top-1 and one ensemble's."""
    out = [f"# bench_continual --platforms a,b,c --seed {seed}",
           "step 0 (a): base top-1 0.8000/0.6000 (mean/sum) tuning 0.4000 on 4 eval tasks; 10 params"]
    for k, p in enumerate(["b", "c"]):
        out += [f"  rdu selection on {p}: 10 of 100 (embed 1.0 s, select 0.1 s) [abc]",
                line("column of distill", p, fine_tune[k]),
                f"  best-of choice on {p}  adapter on the parent's trunk (choice adapter; validation top-1 on 0 of 9 tasks: 0 s)",
                line("distill", p, student[k]), line("(d) adapter", p, adapter[k]), line("(e) best-of", p, best_of[k]),
                line("member adapter", p, adapter[k]),
                line("ensemble of adapter and fine-tune", p, ensemble[k])]
    return "\n".join(out) + "\n"


class LineageSummaryTest(unittest.TestCase):

    def summary(self, *logs, reverse=False):
        """The script's output on these runs, their paths given in order (or reversed, as another glob may)."""
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i, text in enumerate(logs):
                paths.append(os.path.join(d, f"run{i}.log"))
                with open(paths[-1], "w") as f:
                    f.write(text)
            if reverse:
                paths.reverse()
            done = subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 0, done.stderr)
            return done.stdout

    def test_the_ensemble_and_best_of_against_the_best_mean_paired_by_run(self):
        # b: the adapter has the best mean (0.70) though the fine-tune beats it in run 2;
        # c: the fine-tune has the best mean (0.62).
        out = self.summary(
            run_log(1, student=[0.60, 0.50], adapter=[0.72, 0.55], fine_tune=[0.60, 0.60], best_of=[0.72, 0.58],
                    ensemble=[0.70, 0.61]),
            run_log(2, student=[0.62, 0.52], adapter=[0.68, 0.57], fine_tune=[0.69, 0.64], best_of=[0.68, 0.66],
                    ensemble=[0.67, 0.63]))
        self.assertIn("# Sequence a → b → c: 2 runs", out)
        self.assertRegex(out, r"- b: − adapter: \+0\.0000 ± 0\.0000 \(n 2\)")
        self.assertRegex(out, r"- c: − fine-tune: \+0\.0000 ± 0\.2541 \(n 2\)")  # −0.02, +0.02: t(1) 12.706 · 0.02
        ens = re.findall(r"^\| (\w) \| adapter and fine-tune \| (\S+) .*\| − (\S+): (\S+) .*\(n 2\) \|$", out, re.M)
        self.assertEqual(ens, [("b", "0.6850", "adapter", "-0.0150"), ("c", "0.6200", "fine-tune", "+0.0000")])
        # The switch rule's figure: best-of − the adapter, paired (c: +0.03, +0.09; t(1) 12.706 · 0.03).
        rule = out.split("best-of − the adapter (the per-platform adapter on the first trunk)")[1].split("##")[0]
        self.assertEqual(re.findall(r"^- (\w): (.+)$", rule, re.M),
                         [("b", "+0.0000 ± 0.0000 (n 2)"), ("c", "+0.0600 ± 0.3812 (n 2)")])
        # Every method's row on the new platform, and no "member" line read as a method.
        self.assertIn("| c | fine-tune | 0.6200", out)
        self.assertNotIn("member", out)

    def test_best_of_candidates_against_the_best_mean_and_their_worst_step(self):
        # --best-of-candidates: the adapter on the student of (e) and of (f) on each new platform. The best
        # means are the adapter's on b (0.70) and the fine-tune's on c (0.62), as above.
        methods = {1: dict(student=[0.60, 0.50], adapter=[0.72, 0.55], fine_tune=[0.60, 0.60], best_of=[0.72, 0.58]),
                   2: dict(student=[0.62, 0.52], adapter=[0.68, 0.57], fine_tune=[0.69, 0.64], best_of=[0.68, 0.66])}

        def with_candidates(seed, on_student_e, on_student_f):
            lines = []
            for l in run_log(seed, ensemble=[0.7, 0.6], **methods[seed]).splitlines():
                lines.append(l)
                m = re.match(r"^  \(e\) best-of\s+on (\w)", l)
                if m:
                    p, k = m.group(1), "bc".index(m.group(1))
                    lines += [line("candidate adapter on the student of (e) best-of", p, on_student_e[k]),
                              line("candidate adapter on the student of (f) best-of, trunk KD", p, on_student_f[k]),
                              line("(f) best-of, trunk KD", p, on_student_f[k])]
            return "\n".join(lines) + "\n"
        out = self.summary(with_candidates(1, [0.74, 0.61], [0.71, 0.50]),
                           with_candidates(2, [0.70, 0.65], [0.70, 0.52]))
        rows = re.findall(r"^\| (\w) \| (best-of(?:, trunk KD)?) \| adapter on the student \| (\S+) .*\| − (\S+): (\S+) ",
                          out, re.M)
        # (e): b +0.02, +0.02 over the adapter; c +0.01, +0.01 over the fine-tune. (f): b −0.01, +0.02; c −0.10, −0.12.
        self.assertEqual(rows, [("b", "best-of", "0.7200", "adapter", "+0.0200"),
                                ("c", "best-of", "0.6300", "fine-tune", "+0.0100"),
                                ("b", "best-of, trunk KD", "0.7050", "adapter", "+0.0050"),
                                ("c", "best-of, trunk KD", "0.5100", "fine-tune", "-0.1100")])
        worst = re.findall(r"^\| \*\*worst step\*\* \| (.+?) \| adapter on the student \| \| \| (.+) \|$", out, re.M)
        self.assertEqual(worst, [("best-of", "c: +0.0100"), ("best-of, trunk KD", "c: -0.1100")])
        # (f) is a lineage of its own in the forgetting table once a run has it.
        self.assertIn("| platform | after step | student | adapter | best-of | best-of, trunk KD |", out)

    def test_zero_shot_models_their_rises_paired_by_run_and_their_level_against_the_trunk(self):
        # a → b → c → d: d is scored zero-shot after steps 0, 1 and 2 by the trunk and (--zero-shot-candidates)
        # the same-kind mean of (e). Run 3 is cut after step 1; run 2 has no step-0 line of the mean.
        def with_zero_shot(seed, trunk, mean):
            lines = [f"# bench_continual --platforms a,b,c,d --seed {seed}",
                     "step 0 (a): base top-1 0.8000/0.6000 (mean/sum) tuning 0.4000 on 4 eval tasks; 10 params"]
            for k, p in enumerate(["a", "b", "c"][:len(trunk)]):
                if k > 0:
                    lines += [f"  rdu selection on {p}: 10 of 100 (embed 1.0 s, select 0.1 s) [abc]",
                              line("(e) best-of", p, 0.7)]
                lines.append(line("zero-shot (e) best-of", "d", trunk[k]))
                if mean[k] is not None:
                    lines.append(line("zero-shot same-kind mean (e) best-of", "d", mean[k]))
            return "\n".join(lines) + "\n"
        out = self.summary(with_zero_shot(1, trunk=[0.10, 0.70, 0.64], mean=[0.10, 0.70, 0.74]),
                           with_zero_shot(2, trunk=[0.30, 0.66, 0.64], mean=[None, 0.66, 0.70]),
                           with_zero_shot(3, trunk=[0.20, 0.90], mean=[0.20, 0.60]))
        self.assertRegex(out, r"\| d \| 2 \(c\) \| best-of \| same-kind mean \| 0\.7200 ± 0\.2541 \(n 2\) \|")
        rows = {m.group(1): m.groups()[1:] for m in re.finditer(
            r"^\| best-of \| (trunk|same-kind mean) \| (.*) \| (.*) \| (\S+) \| (.*) \|$", out, re.M)}
        # Trunk: d 0 → 1 +0.60, +0.36, +0.70 (mean +0.5533); 1 → 2 −0.06, −0.02 (paired; run 3 has no step 2).
        self.assertEqual(rows["trunk"][0], "d 0 → 1: +0.5533 ± 0.4341 (n 3); d 1 → 2: -0.0400 ± 0.2541 (n 2)")
        self.assertEqual(rows["trunk"][1], "d 1 → 2: -0.0400")
        # The mean: 0 → 1 +0.60, +0.40 (run 2 has no step-0 line); 1 → 2 +0.04, +0.04. Its pairs' means
        # (d after 1: 0.6533, after 2: 0.72) average 0.6867; its lowest pair − the trunk: d after 1, −0.10.
        self.assertEqual(rows["same-kind mean"],
                         ("d 0 → 1: +0.5000 ± 1.2706 (n 2); d 1 → 2: +0.0400 ± 0.0000 (n 2)", "d 1 → 2: +0.0400",
                          "0.6867", "d after 1: -0.1000"))

    def test_best_of_trunk_against_the_student_trunk_paired_by_run(self):
        # a → b → c → d: d zero-shot after steps 1 and 2 by the student's and best-of's trunks; run 2 has no
        # student line after step 2, so that pair has one run.
        def with_trunks(seed, student, best_of):
            lines = [f"# bench_continual --platforms a,b,c,d --seed {seed}",
                     "step 0 (a): base top-1 0.8000/0.6000 (mean/sum) tuning 0.4000 on 4 eval tasks; 10 params"]
            for k, p in enumerate(["a", "b", "c"]):
                if k > 0:
                    lines += [f"  rdu selection on {p}: 10 of 100 (embed 1.0 s, select 0.1 s) [abc]",
                              line("distill", p, 0.6), line("(e) best-of", p, 0.7)]
                if student[k] is not None:
                    lines.append(line("zero-shot distill", "d", student[k]))
                lines.append(line("zero-shot (e) best-of", "d", best_of[k]))
            return "\n".join(lines) + "\n"
        out = self.summary(with_trunks(1, student=[0.1, 0.70, 0.72], best_of=[0.1, 0.70, 0.60]),
                           with_trunks(2, student=[0.2, 0.66, None], best_of=[0.2, 0.66, 0.50]))
        table = out.split("Best-of's trunk − the student lineage's trunk, zero-shot top-1, paired by run:\n\n")[1]
        self.assertEqual(table.split("\n\n")[0].splitlines(),
                         ["| platform | after step | lineage | − the student's trunk |", "|---|---|---|---|",
                          "| d | 1 (b) | best-of | +0.0000 ± 0.0000 (n 2) |", "| d | 2 (c) | best-of | -0.1200 (n 1) |"])

    def test_the_same_figures_whatever_order_the_logs_are_given_in(self):
        # The student's top-1 on c over these four runs has a mean of 0.75355 in decimal: summed first to last it
        # prints 0.7536, last to first 0.7535, so the script must read its logs in one order.
        logs = [run_log(seed, [0.6, c], [0.6, 0.6], [0.6, 0.6], [0.6, 0.6], [0.6, 0.6])
                for seed, c in enumerate([0.6626, 0.8417, 0.5633, 0.9466], 1)]
        out = self.summary(*logs)
        self.assertIn("| c | student | 0.7536", out)
        self.assertEqual(self.summary(*logs, reverse=True), out)

    def test_no_ensemble_lines_no_ensemble_table(self):
        text = run_log(1, [0.6, 0.5], [0.7, 0.6], [0.6, 0.6], [0.7, 0.6], [0.7, 0.6])
        text = "\n".join(l for l in text.splitlines() if "ensemble of" not in l) + "\n"
        self.assertNotIn("## Ensembles", self.summary(text))


if __name__ == "__main__":
    unittest.main()
