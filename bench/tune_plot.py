#!/usr/bin/env python3
"""bench/tune_plot.py OUT.svg DIR[=PREFIX]... [--title TEXT] [--x measured|wall] [--only MODEL]

Issue 47's study plots: the network latency of every run folder in each DIR (bench_tune's / tclctl tune's
NETWORK-MODEL-sSEED, read as bench/tune_summary.py reads them) against measurements (or wall seconds), one
colour per folder and model, one line per seed, the y axis logarithmic; --only keeps one model (e.g. lineage).
PREFIX names a DIR's models in the legend (e.g. whole=, before=). A plain SVG, no plotting library (Debian's
python3 here has none)."""
import argparse
import html
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from tune_summary import read_runs  # noqa: E402

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
W, H, LEFT, RIGHT, TOP, BOTTOM = 820, 420, 70, 260, 40, 50


def series(dirs, x_key, only):
    """[(label, [[(x, latency ms)...] per seed])], models in the order first seen."""
    out = []
    for spec in dirs:
        root, _, prefix = spec.partition("=")
        runs = read_runs(root)
        for network, models in runs.items():
            for model, seeds in models.items():
                if only and model.split(" ")[0] != only:
                    continue
                lines = []
                for seed in sorted(seeds):
                    points = [(r[x_key], r["latency"] * 1e3) for r in seeds[seed] if not math.isnan(r["latency"])]
                    if points:
                        lines.append(points)
                label = html.escape((prefix + " " if prefix else "") + model + (f" {network}" if len(runs) > 1 else ""))
                out.append((f"{label} ({len(lines)} seeds)", lines))
    return out


def ticks(lo, hi):
    """Round values for a log axis between lo and hi: 1, 2, 5 × powers of ten, finer when that gives few."""
    for mantissas in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 7), (1, 1.2, 1.5, 1.7, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 9)):
        values = [round(m * 10 ** e, 10) for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                  for m in mantissas if lo <= m * 10 ** e <= hi]
        if len(values) >= 4:
            break
    return values


def svg(all_series, title, x_name):
    xs = [x for _, lines in all_series for line in lines for x, _ in line]
    ys = [y for _, lines in all_series for line in lines for _, y in line]
    x_hi, y_lo, y_hi = max(xs), min(ys) * 0.95, max(ys) * 1.05
    px = lambda x: LEFT + (W - LEFT - RIGHT) * x / x_hi  # noqa: E731
    py = lambda y: TOP + (H - TOP - BOTTOM) * (math.log(y_hi) - math.log(y)) / (math.log(y_hi) - math.log(y_lo))  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{LEFT}" y="22" font-size="14">{html.escape(title)}</text>',
             f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}" stroke="black"/>',
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{H - BOTTOM}" stroke="black"/>',
             f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">{x_name}</text>',
             f'<text x="16" y="{(TOP + H - BOTTOM) / 2}" transform="rotate(-90 16 {(TOP + H - BOTTOM) / 2})" '
             'text-anchor="middle">network latency (ms, log)</text>']
    for v in ticks(y_lo, y_hi):
        parts.append(f'<line x1="{LEFT}" y1="{py(v):.1f}" x2="{W - RIGHT}" y2="{py(v):.1f}" stroke="#ddd"/>'
                     f'<text x="{LEFT - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    step = 10 ** math.floor(math.log10(x_hi))
    step = step / 2 if x_hi / step < 4 else step
    for i in range(int(x_hi // step) + 1):
        parts.append(f'<text x="{px(i * step):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{i * step:g}</text>')
    for k, (label, lines) in enumerate(all_series):
        colour = COLOURS[k % len(COLOURS)]
        for line in lines:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5" opacity="0.8"/>')
        y = TOP + 18 * k
        parts.append(f'<line x1="{W - RIGHT + 10}" y1="{y}" x2="{W - RIGHT + 30}" y2="{y}" stroke="{colour}" '
                     f'stroke-width="3"/><text x="{W - RIGHT + 34}" y="{y + 4}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", metavar="OUT.svg")
    parser.add_argument("dirs", metavar="DIR[=PREFIX]", nargs="+")
    parser.add_argument("--title", default="")
    parser.add_argument("--x", choices=("measured", "wall"), default="measured")
    parser.add_argument("--only", metavar="MODEL", default="")
    args = parser.parse_args()
    found = series(args.dirs, args.x, args.only)
    if not found:
        sys.exit("no run folders with a network latency in " + " ".join(args.dirs))
    with open(args.out, "w") as f:
        f.write(svg(found, args.title, "measurements" if args.x == "measured" else "wall seconds"))


if __name__ == "__main__":
    main()
