#!/usr/bin/env python3
"""scripts/gpu/adapter_study.sh's runs, summarised: per arm folder, each model bench_train printed (the
column, every adapter) on the new platform's held-out tasks: top-1 task-mean and sum and the tuning proxy
as mean ± 95% t-interval over the subsets, and each adapter and the distilled student (adapter_study.sh
STUDENT=1) minus the column, paired by subset; with a student, each adapter minus the student too.

  scripts/gpu/adapter_summary.py [--seeds A-B] ARM_DIR ...   (each holds seed-N.log)
  scripts/gpu/adapter_summary.py --seeds A-B --choose CASE_DIR ...
      The rule of docs/continual.md ("The per-platform adapter"), on subsets A-B only: over every
      (arm, rank) of every CASE_DIR/ARM, the mean over the cases of (adapter - column) top-1
      task-mean; among the candidates within 0.01 of the best, the one with the fewest parameters
      (then the lowest learning rate).
"""
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "lib"))
from intervals import half_width  # noqa: E402

RESULT = re.compile(r"^(column|distill|adapter r\d+ \w+): wall .*?eval top-1 ([\d.]+) mean / ([\d.]+) sum, "
                    r".*?tuning proxy ([\d.]+)")
SPLIT = re.compile(r"^(column|distill|adapter r\d+ \w+): device .*?, eval (\d+) tasks")
TRAINED = re.compile(r"^(adapter r\d+ \w+): (\d+) parameters trained \((learning rate [\d.e-]+[^)]*)\)")
MEASURES = ("top-1 mean", "top-1 sum", "tuning proxy")


def show(values):
    hw = half_width(values)
    return f"{statistics.mean(values):+.4f} ± {hw:.4f}" if hw is not None else f"{statistics.mean(values):+.4f}"


def read_arm(folder, seeds=None):
    """{model: {seed: (top-1 mean, top-1 sum, tuning proxy)}}, {model: 'N parameters, lr X'}; only the
    subsets in `seeds` when given. A draw whose held-out split has no task (a small platform's salt can
    give none) scores 0 everywhere and is left out."""
    models, trained = {}, {}
    for path in sorted(glob.glob(os.path.join(folder, "seed-*.log"))):
        seed = int(re.search(r"seed-(\d+)\.log$", path).group(1))
        if seeds is not None and seed not in seeds:
            continue
        empty = set()
        with open(path) as f:
            for line in f:
                if (split := SPLIT.match(line)) and split.group(2) == "0":
                    empty.add(split.group(1))
                if (m := RESULT.match(line)) and m.group(1) not in empty:
                    models.setdefault(m.group(1), {})[seed] = tuple(float(m.group(i)) for i in (2, 3, 4))
                elif t := TRAINED.match(line):
                    trained[t.group(1)] = f"{t.group(2)} parameters, {t.group(3)}"
    return models, trained


def choose(cases, seeds):
    """The rule's candidate: (mean difference, parameters, learning rate, arm, model) of each
    (arm, rank) found in every case, the chosen one first."""
    scores = {}
    for case in cases:
        for arm in sorted(os.listdir(case)):
            if not os.path.isdir(os.path.join(case, arm)) or arm == "records":
                continue
            models, trained = read_arm(os.path.join(case, arm), seeds)
            column = models.get("column", {})
            for name, runs in models.items():
                paired = [s for s in runs if s in column]
                if not name.startswith("adapter ") or not paired:
                    continue
                print(f"{os.path.basename(case)}/{arm} {name}: {len(paired)} draws")
                diff = statistics.mean(runs[s][0] - column[s][0] for s in paired)
                params, lr = re.match(r"(\d+) parameters, learning rate ([\d.e-]+)", trained[name]).groups()
                scores.setdefault((arm, name), (int(params), float(lr), []))[2].append(diff)
    full = {k: (statistics.mean(v[2]), v[0], v[1]) for k, v in scores.items() if len(v[2]) == len(cases)}
    if not full:
        sys.exit("no adapter was run in every case")
    best = max(d for d, _, _ in full.values())
    ranked = sorted(full.items(), key=lambda kv: (kv[1][0] < best - 0.01, kv[1][1], kv[1][2], -kv[1][0]))
    for (arm, name), (diff, params, lr) in ranked:
        print(f"{arm:<10} {name:<18} mean over cases of (adapter - column) top-1 mean {diff:+.4f}; "
              f"{params} parameters, lr {lr:g}")
    print(f"chosen: {ranked[0][0][0]} {ranked[0][0][1]}")


def main(folders, seeds=None):
    for folder in folders:
        models, trained = read_arm(folder, seeds)
        column = models.get("column", {})
        print(f"== {folder}: {len(column)} subsets")
        for name, runs in models.items():
            keys = sorted(runs)
            cells = [show([runs[s][i] for s in keys]) for i in range(3)]
            line = f"{name:<18} n={len(keys)}  " + "  ".join(f"{m} {c}" for m, c in zip(MEASURES, cells))
            for base in ("column", "distill"):
                other = models.get(base, {})
                paired = [s for s in keys if s in other]
                if name in (base, "column") or len(paired) < 2:
                    continue
                diffs = [show([runs[s][i] - other[s][i] for s in paired]) for i in range(3)]
                line += "\n" + " " * 21 + f"minus {base}: " + "  ".join(f"{m} {d}" for m, d in zip(MEASURES, diffs))
            if name in trained:
                line += f"  ({trained[name]})"
            print(line)


if __name__ == "__main__":
    args = sys.argv[1:]
    subsets = None
    if args[:1] == ["--seeds"] and len(args) >= 2:
        low, high = map(int, args[1].split("-"))
        subsets, args = set(range(low, high + 1)), args[2:]
    if args[:1] == ["--choose"] and len(args) >= 2 and subsets is not None:
        choose(args[1:], subsets)
    elif args and not args[0].startswith("--"):
        main(args, subsets)
    else:
        sys.exit(__doc__)
