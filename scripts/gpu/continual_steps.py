#!/usr/bin/env python3
"""bench_continual's per-step score lines, summarised over seeds, for runs cut
short as well as finished ones (continual_summary.py reads the final tables,
which a run stopped by its budget never prints).

  scripts/gpu/continual_steps.py LOG...     (bench_continual's stdout, one per seed)
  scripts/gpu/continual_steps.py LOG... --minus LOG...   (two runs of the same seeds, in the same order)
  scripts/gpu/continual_steps.py LOG... --between FIRST SECOND   (two lineages' names, as this script prints them)

Reads the "  METHOD on PLATFORM  top-1 MEAN/SUM tuning T [sets MEAN/SUM]" lines each step prints
(and step 0's base line: every method starts from the base).
The main distill lineage is named by its weights (old_weight, ewc, column_weight where
it is not 1 or is per old platform, old_weight_other_kind where it is not 1, student_from_column where it
is 1, old_bank_ratio where it is not 1, feature_weight where it is not 0, student_lr where it is not
0.002 (the job's and the rate of every log before the flag), teacher_mix where it is not 0, and
old_weight_same_kind where it is not 1) — from the log's "# settings:" line, or for older logs (before
it was printed) from the command line's --old-weight and --ewc, whose defaults were then 1 and 0.05 — so
runs whose main and extra lineages were swapped summarise together. Fine-tuning trains on the main
lineage's selection, so it is named by that lineage too. Runs pooled by this
script must share every other flag (epochs, bank, platforms); logs of several split salts pool as
more draws, each salt and seed a run of its own, and each cell then adds the top-1 mean's interval over
the draws' means ("over D draws", in every mode): a draw's seeds share its tasks, so the runs are not
independent. Per method:
  new     each platform's top-1 right after the step that learned it;
  forgot  each old platform's top-1 after each later step minus that;
  paired  the main lineage minus fine-tuning on its selection, right after each
          step (the same selection, so the difference is the method's alone);
          and each distill lineage minus its own active column ("column of"
          lines, logs since session 17): the student's score minus its
          column's on the new platform;
top-1 task-mean and sum, as mean ± 95% t-interval over the seeds that reached
the cell, and n; the paired section adds the tuning proxy (lower is better).
In every mode but --minus, the logs of one run (the same seed, threads and
settings but the main lineage's weights) are pooled: a log given twice counts
once, and two lineages may come from two runs (a rerun with --column-weight 3
beside the default run: a run is reproducible given its seed, threads and
settings); logs of one run that disagree on a score stop the script.
With --between FIRST SECOND, the same two sections for two lineages of the same
seeds (a second lineage from --extra-distill against the main one), seed by seed.
Each difference's line (and each paired line) gives the runs (seeds) its task-mean would need at the same
spread for an interval of ±0.02, item 4's tolerance (intervals.runs_for). --between adds a last section:
each lineage's gap to its own active column on the new platform, the first's minus the second's. Logs since
session 22 also print top-1 in sets of 64 (trainer::top1_in_sets, the promotion gate's: fewer argmax flips
than one pick per task); every section then adds its task-mean ("sets") and the runs it would need.
With --minus, two sections instead, the first run's minus the second's, seed
by seed (a setting bench_continual does not name in the lineage, e.g.
--column-epochs, against another on the same seeds; after step 1 the
selections differ with it): every score each method printed after each step,
and the forgetting above (for a setting such as --platform-slots that changes
the base too, where the scores' difference mixes the two).
"""
import math
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench/lib"))
from intervals import interval, runs_for  # noqa: E402

STEP = re.compile(r"^(\S+): \d+ records")
SCORE = re.compile(r"^  (.+?)\s+on (\S+)\s+top-1 ([\d.]+)/([\d.]+) tuning ([\d.]+)(?: sets ([\d.]+)/([\d.]+))?")
EXTRA = re.compile(r"^distill \(old_weight ([\d.]+), ewc ([\d.]+)(?:, unlabeled [\d.]+)?(?:, column_weight ([\d.]+))?")
BASE = re.compile(r"^step 0 \((\S+)\): base top-1 ([\d.]+)/([\d.]+)(?: \(mean/sum\) tuning ([\d.]+))?"
                  r"(?: sets ([\d.]+)/([\d.]+))?")
SETTINGS = re.compile(r"^# settings: old_weight ([\d.]+), ewc ([\d.]+)")
# The settings line's fields that name the main lineage beyond old_weight and ewc, as lineage()'s keywords;
# a field older logs lack is None there.
SETTINGS_NAMED = {
    "column_weight": re.compile(r", column_weight ([\d.e+-]+(?: per old platform)?)"),
    "other_kind": re.compile(r", old_weight_other_kind ([\d.e+-]+)"),
    "from_column": re.compile(r", student_from_column (\d)"),
    "bank_ratio": re.compile(r", old_bank_ratio ([\d.e+-]+)"),
    "feature": re.compile(r", feature_weight ([\d.e+-]+)"),
    "lr": re.compile(r", student_lr ([\d.e+-]+)"),
    "mix": re.compile(r", teacher_mix ([\d.e+-]+)"),
    "same_kind": re.compile(r", old_weight_same_kind ([\d.e+-]+)"),
}
UNNAMED_STUDENT_LR = 0.002  # the students' learning rate before --student-lr: a lineage at it is named as before
# The settings line's fields that name the main lineage (the patterns above), not the run.
LINEAGE_FIELDS = ("old_weight ", "ewc ", "column_weight ", "old_weight_other_kind ", "student_from_column ",
                  "old_bank_ratio ", "feature_weight ", "student_lr ", "teacher_mix ",
                  "old_weight_same_kind ")
# Item 4's tolerance: a difference's task-mean interval this narrow decides a lever of that size. The
# differences print how many runs of the same spread would reach it.
DECIDES = 0.02
FINE_TUNE = "(a) fine-tune on the selection of "
COLUMN = "column of "  # a distill lineage's active column, scored on its platform only


def flag(header, name, default):
    m = re.search(rf"--{name} (\S+)", header)
    return float(m.group(1)) if m else default


# Settings that later bench_continual versions print and earlier ones did not: at these values a log that
# names them is the same run as one that does not.
DEFAULT_FIELDS = ("validation 0", "platform_slots 0", "split_salt 0")


def run_settings(line):
    """The fields of a settings line that make two logs of one seed parts of one run: all but the main
    lineage's settings (LINEAGE_FIELDS), which name its lineage apart, and the fields at DEFAULT_FIELDS'
    values."""
    fields = line[len("# settings: "):].strip().split(", ")
    return tuple(f for f in fields if not f.startswith(LINEAGE_FIELDS) and f not in DEFAULT_FIELDS)


def number(text):
    """A score field; NaN where the log has none (a field later versions print)."""
    return float(text) if text else float("nan")


def merge(a, b):
    """Two logs' score tuples of one cell as one, NaN (a field one log lacks: an older bench) filled from the
    other; None where both have a field and disagree on it."""
    if any(x != y for x, y in zip(a, b) if not (math.isnan(x) or math.isnan(y))):
        return None
    return tuple(y if math.isnan(x) else x for x, y in zip(a, b))


def read_keyed_runs(paths):
    """{(seed, threads, settings): {cell: scores}}, one per run (see read): a run's logs pooled, e.g. a rerun
    at --column-weight 3 with the earlier default run of the same seed, and a log given twice counted once.
    A log of an older bench that lacks a field (top-1 in sets) pools with one that has it."""
    runs = {}
    for path in paths:
        key, scores = read(path)
        run = runs.setdefault(key, {})
        for key, v in scores.items():
            merged = merge(run.get(key, v), v)
            if merged is None:
                sys.exit(f"continual_steps.py: {path} disagrees with another log of its run (same seed and "
                         f"settings) on {key}: {v} against {run[key]}")
            run[key] = merged
    return runs


def lineage(old_weight, ewc, column_weight=None, other_kind=None, from_column=None, bank_ratio=None, feature=None,
            lr=None, mix=None, same_kind=None):
    """A distill lineage's name; the column weight ("3", or "1 per old platform": times their count) only where
    it is not the default 1 (older logs have none), old_weight_other_kind only where it is not 1, and
    student_from_column only where it is 1, old_bank_ratio only where it is not 1, feature_weight only where
    it is not 0, student_lr only where it is not 0.002, teacher_mix only where it is not 0,
    old_weight_same_kind only where it is not 1."""
    column = ""
    if column_weight is not None:
        weight, _, per_old = str(column_weight).partition(" ")
        if float(weight) != 1 or per_old:
            column = f", column_weight {float(weight):g}" + (f" {per_old}" if per_old else "")
    if other_kind is not None and float(other_kind) != 1:
        column += f", old_weight_other_kind {float(other_kind):g}"
    if from_column == "1":
        column += ", student_from_column"
    if bank_ratio is not None and float(bank_ratio) != 1:
        column += f", old_bank_ratio {float(bank_ratio):g}"
    if feature is not None and float(feature) != 0:
        column += f", feature_weight {float(feature):g}"
    if lr is not None and float(lr) != UNNAMED_STUDENT_LR:
        column += f", student_lr {float(lr):g}"
    if mix is not None and float(mix) != 0:
        column += f", teacher_mix {float(mix):g}"
    if same_kind is not None and float(same_kind) != 1:
        column += f", old_weight_same_kind {float(same_kind):g}"
    return f"distill (old_weight {float(old_weight):g}, ewc {float(ewc):g}{column})"


def read(path):
    """(run, scores) of one seed's log: scores = {(step, platform_learned, method, platform): (top-1 mean,
    top-1 sum, tuning)}; run = (seed, threads, settings) — the --seed and --threads of the command line and
    run_settings of the settings line (older logs: the command line's --split-salt and --validation) — the
    same for two logs of one run."""
    scores, step, learned, base = {}, -1, None, None
    with open(path) as f:
        header = f.readline()
        main = lineage(flag(header, "old-weight", 1), flag(header, "ewc", 0.05))
        settings = (flag(header, "split-salt", 0), flag(header, "validation", 0))
        for line in f:
            m = SETTINGS.match(line)
            if m:
                found = {key: pattern.search(line) for key, pattern in SETTINGS_NAMED.items()}
                main = lineage(m.group(1), m.group(2), **{key: x.group(1) if x else None for key, x in found.items()})
                settings = run_settings(line)
                continue
            m = STEP.match(line)
            if m:
                step, learned = step + 1, m.group(1)
                continue
            m = BASE.match(line)
            if m:
                base = (m.group(1), (float(m.group(2)), float(m.group(3)), number(m.group(4)), number(m.group(5)),
                                     number(m.group(6))))
                continue
            m = SCORE.match(line)
            if not m:
                continue
            method = m.group(1).strip()
            column = method.startswith(COLUMN)
            if column:
                method = method[len(COLUMN):]
            e = EXTRA.match(method)
            if method == "distill":
                method = main
            elif e:
                method = lineage(e.group(1), e.group(2), e.group(3))
            elif method == "(a) fine-tune":
                method = f"{FINE_TUNE}{main}"
            if column:
                method = COLUMN + method
            scores[(step, learned, method, m.group(2))] = (float(m.group(3)), float(m.group(4)), float(m.group(5)),
                                                           number(m.group(6)), number(m.group(7)))
            if base:  # every method starts from the base: its score on the first platform
                scores.setdefault((0, base[0], method, base[0]), base[1])
    return (flag(header, "seed", 1), flag(header, "threads", 0), settings), scores


def forgetting(scores):
    """{(method, step, learned, old platform): (top-1 mean, top-1 sum, top-1 in sets' mean) after the step
    minus right after the old platform's own step} of one seed's scores."""
    learned_at = {learned: step for step, learned, _, _ in scores}
    out = {}
    for (step, learned, method, platform), top1 in scores.items():
        if step == 0 or platform == learned or platform not in learned_at:
            continue
        first = scores.get((learned_at[platform], platform, method, platform))
        if first is not None:
            out[(method, step, learned, platform)] = (top1[0] - first[0], top1[1] - first[1], top1[3] - first[3])
    return out


class Cell(list):
    """A cell's values, one per run, and the draw of tasks each came from (a run's key but its seed: its
    threads and settings, among them the split salt and the validation share)."""

    def __init__(self):
        super().__init__()
        self.draws = []

    def add(self, value, draw):
        self.append(value)
        self.draws.append(draw)

    def draw_means(self, k):
        """Field k's mean over each draw's runs, one per draw."""
        by_draw = defaultdict(list)
        for value, draw in zip(self, self.draws):
            by_draw[draw].append(value[k])
        return [sum(xs) / len(xs) for xs in by_draw.values()]


def cells(xs):
    """A cell's top-1 mean and sum, mean ± interval over its runs, and n. Runs of several draws (split salts):
    the seeds of one draw share its tasks, so the interval over the draws' means is printed beside."""
    draws = xs.draw_means(0)
    by_draw = f"  over {len(draws)} draws: mean {interval(draws, 4)}" if len(draws) > 1 else ""
    return f"mean {interval([x[0] for x in xs], 4)}  sum {interval([x[1] for x in xs], 4)}  n={len(xs)}{by_draw}"


def runs_cell(values):
    """'  runs for ±0.02: N' (the runs at values' spread for that interval), or '' for one value."""
    runs = runs_for(values, DECIDES)
    return f"  runs for ±{DECIDES}: {runs}" if runs else ""


def sets_cell(xs, k):
    """Field k (top-1 in sets' mean) as '  sets MEAN ± H  runs for ±0.02: N', or '' where a log lacks it."""
    values = [x[k] for x in xs]
    if any(math.isnan(v) for v in values):
        return ""
    return f"  sets {interval(values, 4)}{runs_cell(values)}"


def main(paths):
    new, forgot = defaultdict(Cell), defaultdict(Cell)
    paired = {FINE_TUNE: defaultdict(Cell), COLUMN: defaultdict(Cell)}
    for (_, *draw), scores in read_keyed_runs(paths).items():
        draw = tuple(draw)
        for (step, learned, method, platform), top1 in scores.items():
            if step == 0 or platform != learned:  # step 0 is the base: learned, not new
                continue
            new[(method, platform)].add(top1, draw)
            for prefix, pairs in paired.items():
                other = scores.get((step, learned, prefix + method, platform))
                if other is not None:
                    pairs[(method, platform)].add(tuple(a - b for a, b in zip(top1, other)), draw)
        for key, loss in forgetting(scores).items():
            forgot[key].add(loss, draw)

    print("## new platform: top-1 right after its step\n")
    for (method, platform), xs in sorted(new.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"{platform:11s} {method:68s} {cells(xs)}{sets_cell(xs, 3)}")
    print("\n## forgetting: top-1 after a later step minus right after its own\n")
    for key, xs in sorted(forgot.items()):
        print(forgetting_line(key, xs))
    for prefix, title in ((FINE_TUNE, "fine-tuning on its selection"), (COLUMN, "its active column")):
        if not paired[prefix]:
            continue  # e.g. logs from before the column was scored, or runs without fine-tuning
        print(f"\n## paired: the lineage minus {title}, right after the step\n")
        for (method, platform), xs in sorted(paired[prefix].items(), key=lambda kv: (kv[0][1], kv[0][0])):
            print(f"{platform:11s} {method:68s} {cells(xs)}  tuning {interval([x[2] for x in xs], 4)}"
                  f"{runs_cell([x[0] for x in xs])}{sets_cell(xs, 3)}")


def subtract(a, b):
    """{key: a's tuple minus b's} for the keys both have."""
    return {key: tuple(p - q for p, q in zip(x, b[key])) for key, x in a.items() if key in b}


def minus(first, second):
    """Every score, and the forgetting, of the first runs minus the second's, seed by seed."""
    if len(first) != len(second):
        sys.exit("continual_steps.py: --minus needs as many logs as before it (one per seed, same order)")
    diffs, forgot = defaultdict(Cell), defaultdict(Cell)
    for a_path, b_path in zip(first, second):
        (a_seed, *draw), a = read(a_path)
        draw = tuple(draw)
        (b_seed, *_), b = read(b_path)
        if a_seed != b_seed:
            sys.exit(f"continual_steps.py: --minus pairs {a_path} (seed {a_seed:g}) with {b_path} "
                     f"(seed {b_seed:g}): give the logs in the same seed order")
        for (step, learned, method, platform), d in subtract(a, b).items():
            if step > 0:  # the base is not a method's
                diffs[(method, step, learned, platform)].add(d, draw)
        for key, d in subtract(forgetting(a), forgetting(b)).items():
            forgot[key].add(d, draw)
    if not diffs:
        sys.exit("continual_steps.py: --minus found no cell in both runs (do their lineages' weights differ?)")
    print_differences("the first runs minus the second", "the first runs' minus the second's", diffs, forgot)


def between(paths, first, second):
    """Every score, and the forgetting, of lineage `first` minus lineage `second`, seed by seed, the logs of
    one run pooled (each lineage selects with its own student, so after step 1 their selections differ);
    then each lineage's gap to its own active column on the new platform, the first's minus the second's
    (the student phase's share of the difference: the columns differ too after step 1)."""
    diffs, forgot, gaps = defaultdict(Cell), defaultdict(Cell), defaultdict(Cell)
    label = f"{first} − {second}"

    def of(cells, name, at):  # the cells of one method (named at key position `at`), keyed without it
        return {key[:at] + key[at + 1:]: v for key, v in cells.items() if key[at] == name}

    for (_, *draw), scores in read_keyed_runs(paths).items():
        draw = tuple(draw)
        stepped = {key: v for key, v in scores.items() if key[0] > 0}  # the base is not a method's
        for key, d in subtract(of(stepped, first, 2), of(stepped, second, 2)).items():
            diffs[(label,) + key].add(d, draw)
        lost = forgetting(scores)
        for key, d in subtract(of(lost, first, 0), of(lost, second, 0)).items():
            forgot[(label,) + key].add(d, draw)
        for (step, learned, platform), d in subtract(gap_to_column(stepped, first), gap_to_column(stepped, second)).items():
            gaps[(label, step, learned, platform)].add(d, draw)
    if not diffs:
        sys.exit(f"continual_steps.py: --between found no cell of both {first!r} and {second!r}")
    print_differences("the first lineage minus the second", "the first lineage's minus the second's", diffs, forgot)
    if gaps:
        print("\n## the gap to its own active column on the new platform, the first lineage's minus the second's\n")
        for key, xs in sorted(gaps.items()):
            print(difference_line(key, xs))


def gap_to_column(scores, lineage):
    """{(step, learned, platform): lineage's scores minus its column's} on each new platform, right after its
    step, where the log scored the column."""
    out = {}
    for (step, learned, method, platform), v in scores.items():
        column = scores.get((step, learned, COLUMN + lineage, platform))
        if method == lineage and platform == learned and column is not None:
            out[(step, learned, platform)] = tuple(a - b for a, b in zip(v, column))
    return out


def difference_line(key, xs):
    """One cell of score differences (method, step, learned, platform): top-1, the tuning proxy, the runs a
    ±0.02 interval would need, top-1 in sets where the logs have it."""
    method, step, learned, platform = key
    return (f"{method:68s} step {step} (+{learned:10s}) {platform:11s} {cells(xs)}  "
            f"tuning {interval([x[2] for x in xs], 4)}{runs_cell([x[0] for x in xs])}{sets_cell(xs, 3)}")


def forgetting_line(key, xs):
    """One cell of forgetting (method, step, learned, platform): top-1, and top-1 in sets where the logs
    have it."""
    method, step, learned, platform = key
    return f"{method:68s} step {step} (+{learned:10s}) {platform:11s} {cells(xs)}{sets_cell(xs, 2)}"


def print_differences(title, forgetting_title, diffs, forgot):
    print(f"## {title}, after each step\n")
    for key, xs in sorted(diffs.items()):
        print(difference_line(key, xs))
    print(f"\n## forgetting, {forgetting_title}\n")
    for key, xs in sorted(forgot.items()):
        print(forgetting_line(key, xs))


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--between" in args:
        k = args.index("--between")
        if len(args) != k + 3:
            sys.exit("continual_steps.py: --between needs two lineage names after it, and the logs before it")
        between(args[:k], args[k + 1], args[k + 2])
    elif "--minus" in args:
        k = args.index("--minus")
        minus(args[:k], args[k + 1:])
    else:
        main(args)
