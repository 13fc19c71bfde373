#!/usr/bin/python3
"""tests/scripts/task_errors_test.py — scripts/gpu/task_errors.py on a hand-written dump.

Three held-out tasks whose first picks, losses and operators are known, and one training task,
so the figures the notes quote (top-1 as trainer/evaluation.h defines it, the shares of the
losses, the operators no training task has) can be checked by hand.

Run by ctest as `/usr/bin/python3 task_errors_test.py`.
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "gpu", "task_errors.py")

# task 0 (op aaaa): best 1.0, first pick 2.0 (the highest score) -> top-1 0.5, sum loss 1.0
# task 1 (op aaaa): best 4.0 picked first -> top-1 1.0
# task 2 (op bbbb, in no training task): best 2.0, first pick 5.0 -> top-1 0.4, sum loss 3.0
# task 3 (op aaaa) is not in the dump: it trained.
DUMP = """task,latency,label,score
0,2.0,0.5,0.9
0,1.0,1.0,0.1
1,4.0,1.0,0.8
1,6.0,0.6,0.2
2,5.0,0.4,0.7
2,2.0,1.0,0.3
2,3.0,0.6,0.1
"""
TASKS = """task\tkey
0\t["aaaa1111",[1,2]]
1\t["aaaa1111",[3,4]]
2\t["bbbb2222",[5,6]]
3\t["aaaa1111",[7,8]]
"""


class TaskErrorsTest(unittest.TestCase):

    def test_the_figures_of_a_known_dump(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "seed_1_mamba.csv"), "w") as f:
                f.write(DUMP)
            with open(os.path.join(d, "seed_1_tasks.tsv"), "w") as f:
                f.write(TASKS)
            out = subprocess.run([sys.executable, SCRIPT, d, "1", "mamba"], capture_output=True, text=True,
                                 check=True).stdout
        # task-mean (0.5 + 1 + 0.4) / 3; sum (1 + 4 + 2) / (2 + 4 + 5)
        self.assertIn("3 held-out tasks: top-1 task-mean 0.6333, sum 0.6364", out)
        # the sum's loss is 4.0, task 2 holds 3.0 of it; were its pick the best: 7 / 8
        self.assertIn("| worst 1 | 0.75 | 0.8750 |", out)
        # the task-mean's loss 0.5 + 0.6 = 1.1; task 2 holds 0.6; were its pick the best: 0.6333 + 0.6 / 3
        self.assertIn("| worst 1 | 0.55 | 0.8333 |", out)
        self.assertIn("| operator not in a training task | 1 | 0.400 | 0.75 | 0.55 |", out)
        self.assertIn("| operator in a training task | 2 | 0.750 | 0.25 | 0.45 |", out)
        # task 2's row says its operator trained nowhere; aaaa has 3 tasks, bbbb 1
        self.assertIn("| 0.400 | 0.75 | no |", out)
        self.assertIn("All 4 tasks of the tasks file hold 2 operators; 1 of them have one or two tasks.", out)


if __name__ == "__main__":
    unittest.main()
