#!/usr/bin/env python3
"""bench/tune_summary.py DIR [--after DIR2] — issue 47's tables from bench_tune's run folders
(DIR/NETWORK-MODEL-sSEED/rounds.csv, tuner/run_dir.h):

  final     each model's network latency after its budget: mean and 95% t-interval over seeds
  speedup   the search-time speedup as TLP and TCL define it: for each baseline B and seed, the
            measurements (and the wall seconds) B needs to reach its own final network latency,
            divided by what `lineage` needs to reach that latency (a run that never reaches it
            counts as its whole budget, and the ratio is marked as an upper bound: "<=")
  overhead  search + learning as a share of each round's wall time (mean over rounds)
  first     each run's first whole network (the round where every task first has a valid program):
            measurements, wall seconds and latency there, per seed, and the search share of the
            rounds up to it (the warm-up) and after it
  picks     for runs of another pick rule (DIR/NETWORK-MODEL-pick-RULE-sSEED, bench_tune --picks):
            the network latency after half, three quarters and all of the budget, and the paired
            difference from the same model's `top` runs, seed by seed
  after     with --after DIR2: the same network, model and seed tuned again in DIR2 (e.g. against
            the lineage after it learned from another run): final latency before and after, the
            paired difference, and the speedup: the measurements DIR's run needs to reach its own
            final latency ÷ what DIR2's run needs to reach it

Network latency is known from the round where every task has a valid program; before it a run has
no latency to compare, so "reach" is measured from there on."""
import csv
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from intervals import t95  # noqa: E402

RUN = re.compile(r"^(?P<net>[a-z0-9_]+)-(?P<model>lineage-online|lineage|online|random)"
                 r"(?:-pick-(?P<pick>fast|diversity))?(?:-warmup-(?P<warmup>\d+))?-s(?P<seed>\d+)$")


def read_run(path):
    rows = []
    with open(os.path.join(path, "rounds.csv")) as f:
        for r in csv.DictReader(f):
            rows.append({"measured": int(r["measured"]),
                         "latency": float(r["network_seconds"]) if r["network_seconds"] else math.nan,
                         "wall": float(r["wall_seconds"]),
                         "search": float(r["search_seconds"]) + float(r["learn_seconds"]),
                         "round": float(r["search_seconds"]) + float(r["learn_seconds"]) +
                                  float(r["measure_seconds"]) + float(r["upload_seconds"])})
    return rows


def reach(rows, target):
    """(measurements, wall seconds) at the first round whose latency is <= target; None when never."""
    for r in rows:
        if not math.isnan(r["latency"]) and r["latency"] <= target * (1 + 1e-12):
            return r["measured"], r["wall"]
    return None


def mean_ci(values):
    m = statistics.mean(values)
    if len(values) < 2:
        return f"{m:.4g}"
    h = t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return f"{m:.4g} ± {h:.2g}"


def latency_at(rows, measured):
    """The network latency after `measured` measurements (the last round at or before it)."""
    known = [r["latency"] for r in rows if r["measured"] <= measured and not math.isnan(r["latency"])]
    return known[-1] if known else math.nan


def first_whole(rows):
    """(index, row) of the first round with a network latency."""
    return next((i, r) for i, r in enumerate(rows) if not math.isnan(r["latency"]))


def share(rows):
    """Search + learning as a share of a round's time, the mean over rounds (as the first table)."""
    return statistics.mean(r["search"] / r["round"] for r in rows if r["round"] > 0)


def print_first(models):
    """Each model's first whole network, seed by seed, and the search share before and after it."""
    print("| model | first whole network: measurements | wall (s) | latency (ms), per seed "
          "| search share up to it | after it |")
    print("|---|---|---|---|---|---|")
    for model, seeds in models.items():
        firsts = {seed: first_whole(rows) for seed, rows in seeds.items()}
        counts = sorted({r["measured"] for _, r in firsts.values()})
        walls = [r["wall"] for _, r in firsts.values()]
        lat = ", ".join(f"{r['latency'] * 1e3:.3g}" for _, r in firsts.values())
        up = [100 * share(seeds[s][:i + 1]) for s, (i, _) in firsts.items()]  # the warm-up's rounds
        after = [100 * share(seeds[s][i + 1:]) for s, (i, _) in firsts.items() if i + 1 < len(seeds[s])]
        print(f"| {model} | {'/'.join(map(str, counts))} | {min(walls):.0f}–{max(walls):.0f} | {lat} "
              f"| {mean_ci(up)}% | {mean_ci(after) + '%' if after else '—'} |")
    print()


def print_picks(models):
    """Each pick rule against its model's `top`: latency after 50/75/100% of the budget, paired by seed."""
    picked = [label for label in models if " pick=" in label]
    if not picked:
        return
    budget = max(rows[-1]["measured"] for seeds in models.values() for rows in seeds.values())
    marks = [budget // 2, budget * 3 // 4, budget]
    print("\n| model | seeds | " + " | ".join(f"after {n} (ms)" for n in marks) + " | − top after "
          f"{budget}, paired (ms) |")
    print("|---|---|" + "---|" * len(marks) + "---|")
    for label in sorted(models, key=lambda x: (x.split(" pick=")[0], " pick=" in x, x)):
        seeds = models[label]
        cells = [mean_ci([latency_at(rows, n) * 1e3 for rows in seeds.values()]) for n in marks]
        top = models.get(label.split(" pick=")[0], {})
        # At the same count for both (a run cut short holds its last latency; it is marked).
        diffs = [(latency_at(rows, budget) - latency_at(top[seed], budget)) * 1e3 for seed, rows in seeds.items()
                 if seed in top]
        short = any(rows[-1]["measured"] < budget for rows in seeds.values())
        paired = (mean_ci(diffs) + (" (a run stopped short)" if short else "")) if " pick=" in label and diffs else ""
        print(f"| {label} | {len(seeds)} | " + " | ".join(cells) + f" | {paired} |")
    print()


def read_runs(root):
    """network → model label → seed → rows, for every complete run folder in root."""
    runs = {}
    for name in sorted(os.listdir(root)):
        m = RUN.match(name)
        if m and os.path.exists(os.path.join(root, name, "rounds.csv")):
            rows = read_run(os.path.join(root, name))
            if rows and math.isnan(rows[-1]["latency"]):  # cut off before every task had a program
                print(f"(left out: {name}, stopped at {rows[-1]['measured']} measurements with no network latency)\n")
            elif rows:
                label = m["model"].replace("lineage-online", "lineage+online")
                if m["pick"]:
                    label += " pick=" + m["pick"]
                if m["warmup"]:
                    label += " warmup=" + m["warmup"]
                runs.setdefault(m["net"], {}).setdefault(label, {})[int(m["seed"])] = rows
    return runs


def speedup(base, fast):
    """(measurements, wall) base needs to reach its own final latency ÷ what fast needs; and whether
    fast never reached it (then its whole run counts, and the ratio is an upper bound)."""
    target = base[-1]["latency"]
    b, got = reach(base, target), reach(fast, target)
    bound = got is None
    if bound:
        got = (fast[-1]["measured"], fast[-1]["wall"])
    return b[0] / got[0], b[1] / got[1], bound


def print_after(before, after):
    """Each (network, model) tuned in both folders, paired by seed."""
    print("| network | model | seeds | before (ms) | after (ms) | after − before, paired (ms) "
          "| measurements: before ÷ after to reach before's final latency |")
    print("|---|---|---|---|---|---|---|")
    for net, models in after.items():
        for model, seeds in models.items():
            base = before.get(net, {}).get(model, {})
            pairs = [(base[s], rows) for s, rows in sorted(seeds.items()) if s in base]
            if not pairs:
                continue
            b = [p[0][-1]["latency"] * 1e3 for p in pairs]
            a = [p[1][-1]["latency"] * 1e3 for p in pairs]
            ratios = [speedup(p[0], p[1]) for p in pairs]
            mark = "<= " if any(r[2] for r in ratios) else ""
            print(f"| {net} | {model} | {len(pairs)} | {mean_ci(b)} | {mean_ci(a)} | "
                  f"{mean_ci([y - x for x, y in zip(b, a)])} | {mark}{mean_ci([r[0] for r in ratios])}x |")
    print()


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--after"):
        sys.exit("usage: bench/tune_summary.py DIR [--after DIR2]")
    runs = read_runs(sys.argv[1])
    if len(sys.argv) == 4:
        print_after(runs, read_runs(sys.argv[3]))
        return
    for net, models in runs.items():
        print(f"## {net}\n")
        print("| model | seeds | measurements | final network latency (ms) | wall time (s) | search share of a round |")
        print("|---|---|---|---|---|---|")
        for model, seeds in models.items():
            finals = [rows[-1]["latency"] * 1e3 for rows in seeds.values()]
            shares = [share(rows) for rows in seeds.values()]
            walls = [rows[-1]["wall"] for rows in seeds.values()]
            budget = max(rows[-1]["measured"] for rows in seeds.values())
            print(f"| {model} | {len(seeds)} | {budget} | {mean_ci(finals)} | {mean_ci(walls)} "
                  f"| {mean_ci([100 * s for s in shares])}% |")
        print()
        print_first(models)
        print_picks(models)
        if not any(m == "lineage" or m.startswith("lineage warmup=") for m in models):
            continue
        table = []
        for base, seeds in models.items():
            # Against the lineage's runs of the same warm-up.
            warmup = base[base.index(" warmup="):] if " warmup=" in base else ""
            lineage = models.get("lineage" + warmup, {})
            if base == "lineage" + warmup:
                continue
            by_count, by_wall, bound = [], [], False
            for seed, rows in seeds.items():
                if seed not in lineage:
                    continue
                count, wall, short = speedup(rows, lineage[seed])
                by_count.append(count)
                by_wall.append(wall)
                bound = bound or short
            if by_count:
                mark = "<= " if bound else ""
                each = ", ".join(f"{c:.3g}" for c in by_count)
                table.append(f"| {base} | {len(by_count)} | {mark}{mean_ci(by_count)}x | {each} | {mark}{mean_ci(by_wall)}x |")
        if table:  # a folder of lineage runs alone has no baseline
            print("| baseline | seeds | measurements: baseline ÷ lineage to reach the baseline's final latency "
                  "| per seed | wall time: same |")
            print("|---|---|---|---|---|")
            print("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
