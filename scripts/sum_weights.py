#!/usr/bin/env python3
"""How many tasks a platform's top-1 sum ratio rests on, from its records alone.

  scripts/sum_weights.py PLATFORM...     (folders of ../shared/data, e.g. x86-24c gpu-v100)

The sum ratio, sum(best) / sum(first pick), weighs each task by its latency,
so a few slow tasks carry it. Per platform: the tasks with a measured record
(each task's best = its lowest mean cost of a record with error_no 0, by the
record's workload key), the effective number of tasks in the sum
(sum(w)^2 / sum(w^2) over the best latencies w), and the share of sum(w) the
slowest 1, 5, 10 and 20 tasks carry. A held-out split of a fraction f of the
tasks rests on about f times that effective number.
"""
import gzip
import json
import os
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")


def best_latencies(platform):
    best = {}
    with gzip.open(os.path.join(DATA, platform, "records.jsonl.gz"), "rt") as f:
        for line in f:
            try:
                r = json.loads(line)
                costs, error_no = r["r"][0], r["r"][1]
                key = r["i"][0][0]
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            costs = [c for c in costs if c > 0]
            if error_no != 0 or not costs:
                continue
            m = sum(costs) / len(costs)
            best[key] = min(best.get(key, m), m)
    return sorted(best.values(), reverse=True)


def main(platforms):
    for p in platforms:
        w = best_latencies(p)
        total = sum(w)
        shares = "/".join(f"{sum(w[:n]) / total:.2f}" for n in (1, 5, 10, 20))
        print(f"{p}: {len(w)} tasks; effective number in the sum {total * total / sum(x * x for x in w):.1f}; "
              f"the slowest 1/5/10/20 carry {shares} of it")


if __name__ == "__main__":
    main(sys.argv[1:] or ["x86-24c", "x86-16c", "gpu-2080ti", "gpu-v100"])
