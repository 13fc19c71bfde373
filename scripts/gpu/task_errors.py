#!/usr/bin/env python3
"""Which held-out tasks hold a model's top-1 error, from bench_quality --dump.

  scripts/gpu/task_errors.py DUMP_DIR SEED LABEL     (e.g. /tmp/dump 1 mamba)

Reads DUMP_DIR/seed_SEED_LABEL.csv[.gz] (task,latency,label,score per held-out
program; dumps before session 15 print scores to 6 digits, so ties may be broken
otherwise than the trainer did) and DUMP_DIR/seed_SEED_tasks.tsv (task, canonical workload key).
Per task, as trainer/evaluation.h defines them: best = the lowest latency,
first = the latency of the highest-scored program, top-1 = best / first; the
task-mean is the mean of top-1, the sum ratio is sum(best) / sum(first). Prints
  * the two figures (they match bench_quality's row for the seed);
  * how the sum's loss, sum(first - best), is shared: the tasks that hold most
    of it, and the sum ratio were the worst K tasks' first picks the best;
  * the task-mean's loss, sum(1 - top-1), by the same cut;
  * both by operator (the key's first element, TVM's hash of the compute DAG:
    one per fused operator kind), by whether any training task has that
    operator (the tasks of the tasks file not in the dump trained), and by
    the task's size in programs; and how many tasks each operator has.
"""
import csv
import gzip
import math
import os
import sys
from collections import defaultdict


def read_tasks(dump, seed, label):
    label = label.replace(":", "-").replace(" ", "-")  # as bench_quality names the file
    path = os.path.join(dump, f"seed_{seed}_{label}.csv")
    opener = open
    if not os.path.exists(path):
        path, opener = path + ".gz", gzip.open
    best, first, top_score, n = {}, {}, {}, defaultdict(int)
    with opener(path, "rt") as f:
        for row in csv.DictReader(f):
            t, lat, score = int(row["task"]), float(row["latency"]), float(row["score"])
            n[t] += 1
            best[t] = min(best.get(t, math.inf), lat)
            if score > top_score.get(t, -math.inf):
                top_score[t], first[t] = score, lat
    keys = {}
    with open(os.path.join(dump, f"seed_{seed}_tasks.tsv")) as f:
        next(f)
        for line in f:
            t, key = line.rstrip("\n").split("\t", 1)
            keys[int(t)] = key
    trained_ops = {operator(k) for t, k in keys.items() if t not in best}
    return [(t, n[t], best[t], first[t], keys.get(t, "?")) for t in best if n[t] >= 2], trained_ops, keys


def operator(key):
    return key.split(",", 1)[0].strip('["')[:8]


def main(dump, seed, label):
    tasks, trained_ops, keys = read_tasks(dump, seed, label)
    sum_best = sum(b for _, _, b, _, _ in tasks)
    sum_first = sum(f for _, _, _, f, _ in tasks)
    mean = sum(b / f for _, _, b, f, _ in tasks) / len(tasks)
    print(f"{len(tasks)} held-out tasks: top-1 task-mean {mean:.4f}, sum {sum_best / sum_first:.4f}")

    excess = sorted(tasks, key=lambda x: x[3] - x[2], reverse=True)
    lost = sum_first - sum_best
    missing = sum(1 - b / f for _, _, b, f, _ in tasks)
    if lost <= 0 or missing <= 0:
        print("every first pick is its task's best: no loss to share")
        return
    print("\n## the sum's loss, sum(first - best), by task (largest first)\n")
    print("| tasks | share of the loss | sum ratio were their first picks the best |")
    print("|---|---|---|")
    for k in (1, 3, 5, 10, 20):
        gain = sum(f - b for _, _, b, f, _ in excess[:k])
        print(f"| worst {k} | {gain / lost:.2f} | {sum_best / (sum_first - gain):.4f} |")
    print("\n| task | programs | best (ms) | first pick (ms) | top-1 | share of the sum's loss | operator trained | key |")
    print("|---|---|---|---|---|---|---|---|")
    for t, n, b, f, key in excess[:8]:
        trained = "yes" if operator(key) in trained_ops else "no"
        print(f"| {t} | {n} | {b * 1e3:.3f} | {f * 1e3:.3f} | {b / f:.3f} | {(f - b) / lost:.2f} | {trained} "
              f"| `{key[:70]}` |")

    worst = sorted(tasks, key=lambda x: x[2] / x[3])
    print("\n## the task-mean's loss, sum(1 - top-1), by task (largest first)\n")
    print("| tasks | share of the loss | task-mean were their first picks the best |")
    print("|---|---|---|")
    for k in (1, 3, 5, 10, 20):
        gain = sum(1 - b / f for _, _, b, f, _ in worst[:k])
        print(f"| worst {k} | {gain / missing:.2f} | {mean + gain / len(tasks):.4f} |")
    below = [x for x in tasks if x[2] / x[3] < 0.8]
    print(f"\n{len(below)} of {len(tasks)} tasks have top-1 < 0.8; {sum(1 for x in tasks if x[2] / x[3] >= 0.95)} "
          f"have ≥ 0.95.")

    print("\n## by operator (TVM's DAG hash, first 8 characters) and by task size\n")
    print("| group | tasks | top-1 task-mean | share of the sum's loss | share of the task-mean's loss |")
    print("|---|---|---|---|---|")
    groups = defaultdict(list)
    for x in tasks:
        groups["op " + operator(x[4])].append(x)
        groups["operator " + ("in" if operator(x[4]) in trained_ops else "not in") + " a training task"].append(x)
    sizes = sorted(x[1] for x in tasks)
    cut = sizes[len(sizes) // 2]
    for x in tasks:
        groups[f"size {'<' if x[1] < cut else '≥'} {cut} programs"].append(x)
    for name, xs in sorted(groups.items(), key=lambda kv: (kv[0].startswith("op "), -len(kv[1]))):
        if len(xs) < 3 and name.startswith("op "):
            continue
        m = sum(b / f for _, _, b, f, _ in xs) / len(xs)
        ls = sum(f - b for _, _, b, f, _ in xs) / lost
        lm = sum(1 - b / f for _, _, b, f, _ in xs) / missing
        print(f"| {name} | {len(xs)} | {m:.3f} | {ls:.2f} | {lm:.2f} |")
    per_op = defaultdict(int)
    for key in keys.values():
        per_op[operator(key)] += 1
    print(f"\nAll {len(keys)} tasks of the tasks file hold {len(per_op)} operators; "
          f"{sum(1 for c in per_op.values() if c <= 2)} of them have one or two tasks.")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
