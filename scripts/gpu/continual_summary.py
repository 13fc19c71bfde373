#!/usr/bin/env python3
"""Mean and 95% t-interval over seeds of bench_continual's tables.

  scripts/gpu/continual_summary.py LOG...     (bench_continual's stdout, one per seed)

Per step and method: each platform's top-1 mean ratio (sum ratio) and tuning
proxy and pairwise accuracy on its evaluation split, and the forgetting table (top-1 mean now minus
right after the platform was learned). Cells: mean ± half-width of the 95%
t-interval over the logs that have the cell, and n.
"""
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench/lib"))
from intervals import half_width  # noqa: E402

CELL = re.compile(r"([-+]?\d+\.\d+) \(([-+]?\d+\.\d+)\)(?:, tuning (\d+\.\d+))?(?:, pairwise (\d+\.\d+))?")


def interval(xs):
    m = statistics.mean(xs)
    h = half_width(xs)
    return f"{m:.4f} (n=1)" if h is None else f"{m:.4f} ± {h:.4f}"


def parse(path, cells):
    step, table, header = None, None, None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("## Step"):
            step, table = line[3:], None
        elif line.startswith("Forgetting"):
            table = "forgetting"
        elif line.startswith("| method |") and step:
            header = [c.strip() for c in line.strip("|").split("|")]
            table = table if table == "forgetting" else "scores"
            if header[1:2] == ["phase"]:
                table = None
        elif line.startswith("| ") and not line.startswith("|---") and step and table and header:
            cols = [c.strip() for c in line.strip("|").split("|")]
            for name, cell in zip(header[1:], cols[1:]):
                m = CELL.match(cell)
                if not m or name == "params":
                    continue
                key = (step, table, cols[0], name)
                cells[key + ("top-1 mean",)].append(float(m.group(1)))
                cells[key + ("top-1 sum",)].append(float(m.group(2)))
                if m.group(3):
                    cells[key + ("tuning",)].append(float(m.group(3)))
                if m.group(4):
                    cells[key + ("pairwise",)].append(float(m.group(4)))
        elif not line.startswith("|"):
            header = None if line.strip() == "" else header


def main():
    cells = defaultdict(list)
    for path in sys.argv[1:]:
        parse(path, cells)
    last = None
    for key in sorted(cells, key=lambda k: (k[0], k[1] != "scores", k[2], k[3], k[4])):
        step, table, method, platform, metric = key
        if (step, table) != last:
            print(f"\n## {step} — {table} (mean ± 95% t-interval over seeds)")
            last = (step, table)
        print(f"{method:14s} {platform:12s} {metric:11s} {interval(cells[key])}  n={len(cells[key])}")


if __name__ == "__main__":
    main()
