#!/usr/bin/env python3
"""Mean and 95% t-interval over seeds of bench_quality's per-seed rows, and each
row's paired difference from a reference row of the same seed.

  scripts/gpu/quality_summary.py [--against NAME] [LABEL=]LOG...   (default NAME: mamba)

Reads every "seed S NAME top-1 SUM/MEAN top-5 SUM/MEAN pairwise P tuning T (B better)"
line of the logs (one log per seed with quality_study.sh SPLIT_SEEDS=1, or one for all),
so seeds run as separate processes summarise like one run. Rows of one seed and name
seen twice are an error. Members of an ensemble ("NAME member K") are left out.
LABEL=LOG names that log's rows "LABEL NAME", so that two settings run as separate
processes (quality_study.sh default all4: both rows "mamba") pair by seed:
  quality_summary.py --against "default mamba" default=quality_v_default_s*.log all4=quality_v_all4_s*.log
(each LABEL= applies to the one path it prefixes; the shell expands the rest unlabelled,
so write LABEL= before every path: for f in ...; do echo default=$f; done).
"""
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench/lib"))
from intervals import interval  # noqa: E402

ROW = re.compile(r"^seed (\d+) (.+?)\s+top-1 ([\d.]+)/([\d.]+) top-5 ([\d.]+)/([\d.]+) pairwise ([\d.]+) "
                 r"tuning ([\d.]+) \(([\d.]+) better\)")
COLUMNS = ["top-1 sum", "top-1 mean", "top-5 sum", "top-5 mean", "pairwise", "tuning proxy", "better than random"]


def read(paths):
    rows = defaultdict(dict)  # name -> seed -> values
    for arg in paths:
        label, sep, path = arg.partition("=")
        if not sep or "/" in label or os.path.exists(arg):  # a path with "=" in it is a path
            label, path = "", arg
        with open(path) as f:
            for line in f:
                m = ROW.match(line)
                if not m or " member " in m.group(2):
                    continue
                seed, name = int(m.group(1)), (label + " " if label else "") + m.group(2).strip()
                if seed in rows[name]:
                    sys.exit(f"{path}: seed {seed} of {name} seen twice")
                rows[name][seed] = [float(x) for x in m.groups()[2:]]
    return rows


def main(argv):
    against = "mamba"
    if len(argv) > 1 and argv[0] == "--against":
        against, argv = argv[1], argv[2:]
    rows = read(argv)
    if not rows:
        sys.exit("no per-seed rows found")
    print("| row | seeds | " + " | ".join(COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for name, by_seed in rows.items():
        cells = [interval([v[c] for v in by_seed.values()]) for c in range(len(COLUMNS))]
        print(f"| {name} | {','.join(map(str, sorted(by_seed)))} | " + " | ".join(cells) + " |")
    if against not in rows:
        return
    print(f"\nPaired difference from {against} (same seed), mean ± 95% t-interval:\n")
    print("| row | seeds | " + " | ".join(COLUMNS[:6]) + " |")
    print("|---|---|" + "---|" * 6)
    for name, by_seed in rows.items():
        seeds = sorted(set(by_seed) & set(rows[against]))
        if name == against or not seeds:
            continue
        cells = [interval([by_seed[s][c] - rows[against][s][c] for s in seeds]) for c in range(6)]
        print(f"| {name} − {against} | {','.join(map(str, seeds))} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
