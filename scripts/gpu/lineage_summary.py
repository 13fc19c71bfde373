#!/usr/bin/env python3
"""Issue 48's study (scripts/gpu/lineage_study.sh): bench_continual logs of one
platform sequence, one per seed and split salt, summarised as mean ± 95%
t-interval over the runs (each salt and seed a run; a salt's seeds share its
held-out tasks, so the runs are not independent: the interval over the salts'
means is printed beside where there are ≥ 2 salts).

  scripts/gpu/lineage_summary.py LOG...

Reads the per-step lines bench_continual prints (finished or cut runs alike):
  "  rdu selection on PLATFORM: ..."           a step begins (PLATFORM is learned)
  "  NAME on PLATFORM  top-1 MEAN/SUM tuning T ..."   NAME: distill, (d) adapter,
        (e) best-of, (f) best-of, trunk KD, "column of distill" (the fine-tune of
        the student lineage's model on the same selection), "zero-shot LINEAGE"
        (forward transfer; with --zero-shot-candidates also "zero-shot nearest LINEAGE" and
        "zero-shot same-kind mean LINEAGE"), "ensemble of ..." (bench_continual --ensembles),
        "student of L" and "candidate ... of L" (--best-of-candidates)
  "  best-of choice on PLATFORM CANDIDATE (...)"
and prints, per new platform: each method's top-1 task-mean and tuning proxy
right after it is learned, best-of minus the best of {adapter, student,
fine-tune} paired by run and minus the method with the best mean (item 1:
≥ −0.01), and minus the adapter (the switch rule of docs/continual.md); per old platform and later step,
each method's top-1 now minus right after it was learned (item 1: ≥ −0.01);
per platform not yet learned, each lineage's zero-shot top-1 and tuning proxy
after each step (item 2: it should rise as the lineage grows), and per zero-shot model its rises step to
step, the mean of its pairs and its lowest pair − the trunk's (the rule in docs/continual.md), and best-of's
trunk − the student lineage's, paired; each best-of
lineage's candidates minus the method with the best mean, with the worst step
(docs/continual.md, "The two levers"); and the candidates best-of chose.
"""
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench/lib"))
from intervals import half_width  # noqa: E402

SCORE = re.compile(r"^  (.+?)\s+on (\S+)\s+top-1 ([0-9.na-]+)/([0-9.na-]+) tuning ([0-9.na-]+)")
SELECT = re.compile(r"^  rdu selection on (\S+):")
CHOICE = re.compile(r"^  best-of choice on (\S+)\s+(.+?) \(")
BASE = re.compile(r"^step 0 \((\S+)\): base top-1 ([0-9.]+)/([0-9.]+) \(mean/sum\) tuning ([0-9.na-]+)")
PLATFORMS = re.compile(r"--platforms (\S+)")
LINEAGES = ["distill", "(d) adapter", "(e) best-of", "(f) best-of, trunk KD"]
NAMES = {"distill": "student", "(d) adapter": "adapter", "(e) best-of": "best-of", "column of distill": "fine-tune",
         "(f) best-of, trunk KD": "best-of, trunk KD"}
BEST_OF = ["(e) best-of", "(f) best-of, trunk KD"]
# bench_continual --best-of-candidates: a best-of lineage's candidates on its new platform, by the line's name.
CANDIDATES = [("student", "student of {}"), ("adapter on the parent's trunk", "candidate adapter on the parent's trunk of {}"),
              ("adapter on the student", "candidate adapter on the student of {}")]
ENSEMBLE = "ensemble of "
# The model a lineage serves a platform it has not learned: the trunk, and with bench_continual
# --zero-shot-candidates (lineages with a model per platform) two candidates, by the line's name.
ZERO_SHOT = [("trunk", "zero-shot {}"), ("nearest learned platform's model", "zero-shot nearest {}"),
             ("same-kind mean", "zero-shot same-kind mean {}")]


def parse(path):
    """One run: its order of platforms, scores[step][name][platform] = (top1, tuning), choices."""
    order, scores, choices = [], defaultdict(lambda: defaultdict(dict)), {}
    step = 0
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("# bench_continual") and PLATFORMS.search(line):
                order = PLATFORMS.search(line).group(1).split(",")
                continue
            m = BASE.match(line)
            if m:
                for name in LINEAGES:
                    scores[0][name][m.group(1)] = (float(m.group(2)), float(m.group(4)))
                continue
            m = SELECT.match(line)
            if m and m.group(1) in order:
                step = order.index(m.group(1))
                continue
            m = CHOICE.match(line)
            if m:
                choices[m.group(1)] = m.group(2)
                continue
            m = SCORE.match(line)
            if m:
                name, platform = m.group(1).strip(), m.group(2)
                try:
                    scores[step][name][platform] = (float(m.group(3)), float(m.group(5)))
                except ValueError:
                    pass
    return order, scores, choices


def cell(values, digits=4):
    if not values:
        return "–"
    mean = sum(values) / len(values)
    hw = half_width(values)
    return f"{mean:.{digits}f}" + ("" if hw is None else f" ± {hw:.{digits}f}") + f" (n {len(values)})"


def diff_cell(values):
    if not values:
        return "–"
    mean = sum(values) / len(values)
    hw = half_width(values)
    return f"{mean:+.4f}" + ("" if hw is None else f" ± {hw:.4f}") + f" (n {len(values)})"


def best_mean_gap(runs, k, p, candidate="(e) best-of"):
    """(name, candidate − it per run) for the other method with the highest mean top-1 on p at step k."""
    means = {}
    for name in ["distill", "(d) adapter", "column of distill"]:
        v = [s[k][name][p][0] for o, s, _ in runs if k < len(o) and p in s[k].get(name, {})]
        if v:
            means[name] = sum(v) / len(v)
    if not means:
        return "–", []
    best = max(means, key=means.get)
    gap = [s[k][candidate][p][0] - s[k][best][p][0] for o, s, _ in runs
           if k < len(o) and p in s[k].get(candidate, {}) and p in s[k].get(best, {})]
    return NAMES[best], gap


def print_candidates(runs, order):
    """Each best-of lineage's candidates (--best-of-candidates) − the method with the best mean, and its worst step."""
    rows = []
    for lineage in BEST_OF:
        for label, pattern in CANDIDATES:
            name = pattern.format(lineage)
            means = []
            for k in range(1, len(order)):
                p = order[k]
                top = [s[k][name][p][0] for o, s, _ in runs if k < len(o) and p in s[k].get(name, {})]
                if not top:
                    continue
                tun = [s[k][name][p][1] for o, s, _ in runs if k < len(o) and p in s[k].get(name, {})]
                best, v = best_mean_gap(runs, k, p, name)
                rows.append(f"| {p} | {NAMES[lineage]} | {label} | {cell(top)} | {cell(tun, 3)} | − {best}: {diff_cell(v)} |")
                if v:
                    means.append((sum(v) / len(v), p))
            if means:
                worst = min(means)
                rows.append(f"| **worst step** | {NAMES[lineage]} | {label} | | | {worst[1]}: {worst[0]:+.4f} |")
    if not rows:
        return
    print("\n## Best-of's candidates (--best-of-candidates), − the method with the best mean, paired by run "
          "(item 1 on the mean: ≥ −0.01)\n")
    print("| platform | lineage | candidate | top-1 | tuning proxy | − the best mean |\n|---|---|---|---|---|---|")
    for r in rows:
        print(r)


def zero_shot(runs, name, platform, k):
    """Per run, (top-1, tuning proxy) of line `name` on `platform` after step k."""
    return [s[k][name][platform] for _, s, _ in runs if platform in s[k].get(name, {})]


def paired(runs, line, platform, k, other_line, other_k):
    """Per run that has both, top-1 of `line` after step k − top-1 of `other_line` after step other_k."""
    return [s[k][line][platform][0] - s[other_k][other_line][platform][0] for _, s, _ in runs
            if platform in s[k].get(line, {}) and platform in s[other_k].get(other_line, {})]


def zero_shot_figures(runs, order, name, pattern):
    """One zero-shot model's rule figures (docs/continual.md, "The model for a platform not yet learned"): its
    rises (after step k − after step k − 1, k ≥ 1, paired by run), the mean of its (platform, step ≥ 1) pairs'
    means, and its lowest pair − the trunk's (paired by run)."""
    line, trunk = pattern.format(name), ZERO_SHOT[0][1].format(name)
    rises, means, under = [], [], []
    for j in range(2, len(order)):
        for k in range(1, j):
            v = paired(runs, line, order[j], k, line, k - 1)
            if v:
                rises.append((sum(v) / len(v), f"{order[j]} {k - 1} → {k}", diff_cell(v)))
            z = zero_shot(runs, line, order[j], k)
            if z:
                means.append(sum(t for t, _ in z) / len(z))
            v = paired(runs, line, order[j], k, trunk, k)
            if v:
                under.append((sum(v) / len(v), f"{order[j]} after {k}"))
    return rises, means, under


def print_forward_transfer(runs, order, present):
    """Zero-shot scores per platform not yet learned after each step, and each model's rule figures."""
    print("\n## Forward transfer: zero-shot on a platform not yet learned, after each step\n")
    print("| platform | after step | lineage | model | top-1 | tuning proxy |\n|---|---|---|---|---|---|")
    for j in range(1, len(order)):
        for k in range(0, j):
            for name in present:
                for label, pattern in ZERO_SHOT:
                    z = zero_shot(runs, pattern.format(name), order[j], k)
                    if z:
                        print(f"| {order[j]} | {k} ({order[k]}) | {NAMES[name]} | {label} | "
                              f"{cell([t for t, _ in z])} | {cell([u for _, u in z], 3)} |")
    rows = []
    for name in present:
        for label, pattern in ZERO_SHOT:
            rises, means, under = zero_shot_figures(runs, order, name, pattern)
            if not rises:
                continue
            worst, low = min(rises), min(under)
            rows.append(f"| {NAMES[name]} | {label} | " + "; ".join(f"{w}: {c}" for _, w, c in rises) +
                        f" | {worst[1]}: {worst[0]:+.4f} | {sum(means) / len(means):.4f} | {low[1]}: {low[0]:+.4f} |")
    if rows:
        print("\nZero-shot top-1 after step k − after step k − 1, paired by run, from step 1 on (item 2: it should "
              "rise); the mean of the (platform, step ≥ 1) pairs' means; the lowest pair − the trunk's, paired:\n")
        print("| lineage | model | rises | worst | mean | lowest − trunk |\n|---|---|---|---|---|---|")
        for r in rows:
            print(r)
    print_trunks_against_the_student(runs, order, present)


def print_trunks_against_the_student(runs, order, present):
    """(e) best-of's trunk − the student lineage's, zero-shot, paired by run: their students differ in the old
    platforms' KD targets (the models that serve them, or the parent's trunk). (f)'s student takes (f)'s KD from
    the trunk, so its trunk is the student lineage's and is left out."""
    name = BEST_OF[0]
    if name not in present:
        return
    line, student = (ZERO_SHOT[0][1].format(n) for n in (name, "distill"))
    rows = []
    for j in range(2, len(order)):
        for k in range(1, j):
            v = paired(runs, line, order[j], k, student, k)
            if v:
                rows.append(f"| {order[j]} | {k} ({order[k]}) | {NAMES[name]} | {diff_cell(v)} |")
    if rows:
        print("\nBest-of's trunk − the student lineage's trunk, zero-shot top-1, paired by run:\n")
        print("| platform | after step | lineage | − the student's trunk |\n|---|---|---|---|")
        for r in rows:
            print(r)


def main(paths):
    # In path order, whatever order the shell globbed them in: a mean's last digit can depend on the order of
    # its sum (the device's glob order once gave 0.073 where this machine's gave 0.074).
    runs = [parse(p) for p in sorted(paths)]
    runs = [r for r in runs if r[0]]
    if not runs:
        print("no runs")
        return 1
    order = max((r[0] for r in runs), key=len)
    print(f"# Sequence {' → '.join(order)}: {len(runs)} runs\n")

    print("## New platform, right after its step (top-1 task-mean; tuning proxy, lower is better)\n")
    print("| platform | method | top-1 | tuning proxy |\n|---|---|---|---|")
    gaps, against_best = defaultdict(list), {}
    for k in range(1, len(order)):
        p = order[k]
        for name in ["distill", "(d) adapter", "column of distill", "(e) best-of"]:
            top, tun = [], []
            for o, s, _ in runs:
                if k < len(o) and p in s[k].get(name, {}):
                    top.append(s[k][name][p][0])
                    tun.append(s[k][name][p][1])
            print(f"| {p} | {NAMES[name]} | {cell(top)} | {cell(tun, 3)} |")
        against_best[p] = best_mean_gap(runs, k, p)
        for o, s, _ in runs:
            if k >= len(o):
                continue
            row = s[k]
            others = [row[n][p][0] for n in ["distill", "(d) adapter", "column of distill"] if p in row.get(n, {})]
            if p in row.get("(e) best-of", {}) and len(others) == 3:
                gaps[p].append(row["(e) best-of"][p][0] - max(others))
    print("\nbest-of − max(student, adapter, fine-tune) on the new platform, paired by run (item 1: ≥ −0.01):\n")
    for p, v in gaps.items():
        print(f"- {p}: {diff_cell(v)}")
    print("\nbest-of − the method with the best mean of (student, adapter, fine-tune), paired by run "
          "(item 1 on the mean: ≥ −0.01):\n")
    for p, (best, v) in against_best.items():
        print(f"- {p}: − {best}: {diff_cell(v)}")
    print("\nbest-of − the adapter (the per-platform adapter on the first trunk), paired by run "
          "(the default's switch rule: ≥ −0.01):\n")
    for k in range(1, len(order)):
        p = order[k]
        v = [s[k]["(e) best-of"][p][0] - s[k]["(d) adapter"][p][0] for o, s, _ in runs
             if k < len(o) and p in s[k].get("(e) best-of", {}) and p in s[k].get("(d) adapter", {})]
        print(f"- {p}: {diff_cell(v)}")
    ensembles = sorted({n for _, s, _ in runs for row in s.values() for n in row if n.startswith(ENSEMBLE)})
    if ensembles:
        print("\n## Ensembles of the new platform's models (bench_continual --ensembles), − the method with the best "
              "mean, paired by run (item 1 on the mean: ≥ −0.01)\n")
        print("| platform | ensemble | top-1 | tuning proxy | − the best mean |\n|---|---|---|---|---|")
        for k in range(1, len(order)):
            p = order[k]
            for name in ensembles:
                top = [s[k][name][p][0] for o, s, _ in runs if k < len(o) and p in s[k].get(name, {})]
                tun = [s[k][name][p][1] for o, s, _ in runs if k < len(o) and p in s[k].get(name, {})]
                if top:
                    best, v = best_mean_gap(runs, k, p, name)
                    print(f"| {p} | {name[len(ENSEMBLE):]} | {cell(top)} | {cell(tun, 3)} | − {best}: {diff_cell(v)} |")

    print_candidates(runs, order)

    print("\n## Forgetting: old platform's top-1 after a later step − right after it was learned\n")
    # (f) only where a run has it (every lineage has the base's step 0 line).
    present = [n for n in LINEAGES if n in LINEAGES[:3] or any(n in s[k] for _, s, _ in runs for k in s if k > 0)]
    print("| platform | after step | " + " | ".join(NAMES[n] for n in present) + " |\n" + "|---" * (len(present) + 2) + "|")
    for j in range(len(order)):
        for k in range(j + 1, len(order)):
            cells = []
            for name in present:
                v = []
                for o, s, _ in runs:
                    if k < len(o) and order[j] in s[k].get(name, {}) and order[j] in s[j].get(name, {}):
                        v.append(s[k][name][order[j]][0] - s[j][name][order[j]][0])
                cells.append(diff_cell(v))
            print(f"| {order[j]} | {k} ({order[k]}) | " + " | ".join(cells) + " |")

    print_forward_transfer(runs, order, present)

    print("\n## Best-of's choices\n")
    count = defaultdict(lambda: defaultdict(int))
    for _, _, c in runs:
        for p, chosen in c.items():
            count[p][chosen] += 1
    for p in order[1:]:
        print(f"- {p}: " + ", ".join(f"{c} {n}" for c, n in sorted(count[p].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
