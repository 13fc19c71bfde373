#!/usr/bin/env python3
"""scripts/gpu/h100_summary.py RUNS.tsv... — the H100 onboarding study (h100_onboarding_study.sh)
over every split and seed found in bench_onboarding run logs: per strategy the mean and 95%
t-interval over runs (split × seed; zero-shot: one per split) of top-1 (sum and mean ratio),
pairwise accuracy and the tuning proxy, then rdu − random paired by split and seed."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench/lib"))
from intervals import interval  # noqa: E402

FIELDS = {"top-1 sum": 1, "top-1 mean": 2, "pairwise": 5, "tuning": 10}

runs = {}
for path in sys.argv[1:]:
    for line in open(path):
        key, values = line.rstrip("\n").split("\t")
        _, seed, strategy, _, settings = key.split("|")[:5]
        salt = re.search(r"salt=(\d+)", settings).group(1)
        k = (strategy, salt, "0" if strategy == "zero-shot" else seed)
        runs.setdefault(k, [float(v) for v in values.split()])  # the first of a run's keys
print("| strategy | runs | top-1 sum | top-1 mean | pairwise | tuning proxy |\n|---|---|---|---|---|---|")
for strategy in ["zero-shot", "rdu", "random", "all"]:
    rows = [v for k, v in runs.items() if k[0] == strategy]
    if rows:
        print("| %s | %d | %s |" % (strategy, len(rows), " | ".join(interval([r[i] for r in rows]) for i in FIELDS.values())))
pairs = [(k[1], k[2]) for k in runs if k[0] == "rdu" and ("random", k[1], k[2]) in runs]
print("\nrdu − random, paired by split and seed (%d pairs): " % len(pairs) + "; ".join(
    "%s %s" % (name, interval([runs[("rdu",) + p][i] - runs[("random",) + p][i] for p in pairs]))
    for name, i in FIELDS.items()))
