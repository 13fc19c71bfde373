#!/usr/bin/env python3
"""scripts/gpu/adapter_study.sh's runs, summarised: per arm folder, each model bench_train printed (the
column, every adapter) on the new platform's held-out tasks: top-1 task-mean and sum and the tuning proxy
as mean ± 95% t-interval over the subsets, and each adapter minus the column, paired by subset.

  scripts/gpu/adapter_summary.py ARM_DIR ...   (each holds seed-N.log)
"""
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "lib"))
from intervals import half_width  # noqa: E402

RESULT = re.compile(r"^(column|adapter r\d+ \w+): wall .*?eval top-1 ([\d.]+) mean / ([\d.]+) sum, "
                    r".*?tuning proxy ([\d.]+)")
TRAINED = re.compile(r"^(adapter r\d+ \w+): (\d+) parameters trained \(learning rate ([\d.e-]+)\)")
MEASURES = ("top-1 mean", "top-1 sum", "tuning proxy")


def show(values):
    hw = half_width(values)
    return f"{statistics.mean(values):+.4f} ± {hw:.4f}" if hw is not None else f"{statistics.mean(values):+.4f}"


def read_arm(folder):
    """{model: {seed: (top-1 mean, top-1 sum, tuning proxy)}}, {model: 'N parameters, lr X'}."""
    models, trained = {}, {}
    for path in sorted(glob.glob(os.path.join(folder, "seed-*.log"))):
        seed = int(re.search(r"seed-(\d+)\.log$", path).group(1))
        with open(path) as f:
            for line in f:
                if m := RESULT.match(line):
                    models.setdefault(m.group(1), {})[seed] = tuple(float(m.group(i)) for i in (2, 3, 4))
                elif t := TRAINED.match(line):
                    trained[t.group(1)] = f"{t.group(2)} parameters, lr {t.group(3)}"
    return models, trained


def main(folders):
    for folder in folders:
        models, trained = read_arm(folder)
        column = models.get("column", {})
        print(f"== {folder}: {len(column)} subsets")
        for name, runs in models.items():
            seeds = sorted(runs)
            cells = [show([runs[s][i] for s in seeds]) for i in range(3)]
            line = f"{name:<18} n={len(seeds)}  " + "  ".join(f"{m} {c}" for m, c in zip(MEASURES, cells))
            paired = [s for s in seeds if s in column]
            if name != "column" and len(paired) >= 2:
                diffs = [show([runs[s][i] - column[s][i] for s in paired]) for i in range(3)]
                line += "\n" + " " * 21 + "minus column: " + "  ".join(f"{m} {d}" for m, d in zip(MEASURES, diffs))
            if name in trained:
                line += f"  ({trained[name]})"
            print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
