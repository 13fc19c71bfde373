#!/usr/bin/env python3
"""bench/gate_check.sh's runs over seeds, summarised: per arm, how many seeds the promotion gate kept,
and the old platform's change from teacher to student (top-1 task-mean, top-1 sum, tuning proxy) as
mean ± 95% t-interval over the seeds, with the median; with a second arm, the second minus the first,
paired by seed, and the new platform's top-1 (bench_train's "evaluate" line for the records distilled).

  scripts/gpu/gate_summary.py ARM_DIR [ARM_DIR]   (each holds seed-N/{gate,distill}.log, as
                                                  scripts/gpu/gate_check.sh writes them)
"""
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "lib"))
from intervals import half_width  # noqa: E402

GATE = re.compile(r"top-1 mean [\d.]+ -> [\d.]+ \(([-+][\d.]+).*?sum [\d.]+ -> [\d.]+ \(([-+][\d.]+)"
                  r".*?tuning proxy [\d.]+ -> [\d.]+ \(([-+][\d.]+)%")
NEW = re.compile(r"^evaluate (?!.*gpu-v100).*student top-1 ([\d.]+)")
MEASURES = ("top-1 mean", "top-1 sum", "tuning proxy %", "new platform top-1")


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def read_arm(folder):
    """({seed: (mean change, sum change, tuning change %, new platform top-1, not kept)} of finished runs,
    the seeds whose folder holds no gate verdict: a run that failed or has not finished)."""
    runs, unfinished = {}, []
    for run in glob.glob(os.path.join(folder, "seed-*")):
        if not os.path.isdir(run):
            continue
        seed = int(re.search(r"seed-(\d+)$", run).group(1))
        verdict = next((line for line in read_lines(os.path.join(run, "gate.log")) if line.startswith("all:")), "")
        m = GATE.search(verdict)
        if not m:
            unfinished.append(seed)
            continue
        new = [float(n.group(1)) for n in map(NEW.match, read_lines(os.path.join(run, "distill.log"))) if n]
        runs[seed] = (float(m.group(1)), float(m.group(2)), float(m.group(3)), new[0] if new else float("nan"),
                      "forgot" in verdict)
    return runs, sorted(unfinished)


def cell(values):
    values = [v for v in values if v == v]
    if len(values) < 2:
        return "n/a"
    return f"{statistics.mean(values):+.4f} ± {half_width(values):.4f} (median {statistics.median(values):+.4f})"


def main(folders):
    arms = []
    for folder in folders:
        runs, unfinished = read_arm(folder)
        arms.append((folder, runs))
        forgot = sorted(s for s, r in runs.items() if r[4])
        print(f"{folder}: {len(runs)} seeds, kept {len(runs) - len(forgot)}, not kept {len(forgot)} {forgot}"
              + (f"; no verdict (left out): {unfinished}" if unfinished else ""))
        for i, name in enumerate(MEASURES):
            print(f"  {name}: {cell([r[i] for r in runs.values()])}")
    if len(arms) == 2:
        (a, ra), (b, rb) = arms
        seeds = sorted(set(ra) & set(rb))
        print(f"{b} minus {a}, paired by seed ({len(seeds)} seeds):")
        for i, name in enumerate(MEASURES):
            print(f"  {name}: {cell([rb[s][i] - ra[s][i] for s in seeds])}")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1:])
