"""bench/lib/intervals.py — the 95% t-interval of a mean over a few seeds, for
the study scripts' summaries (bench/onboard_tcld.py, scripts/gpu/*_summary.py)."""
import math
import statistics

# Student's t, two-sided 95%, by degrees of freedom; past 30 the normal's.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
       20: 2.086, 25: 2.060, 30: 2.042}


def t95(df):
    """The t quantile for df degrees of freedom (the next smaller tabled one between rows)."""
    if df in T95:
        return T95[df]
    if df > 30:
        return 1.96
    return T95[max(k for k in T95 if k <= df)]


def runs_for(values, target):
    """How many runs would give the mean a 95% t-interval of ±target at values' standard deviation (at
    least 2); None for fewer than 2 values. How many seeds a comparison needs before it can decide."""
    if len(values) < 2:
        return None
    sd = statistics.stdev(values)
    n = 2
    while t95(n - 1) * sd / math.sqrt(n) > target:
        n += 1
    return n


def half_width(values):
    """Half-width of the 95% t-interval of the mean of values; None for fewer than 2."""
    if len(values) < 2:
        return None
    return t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def interval(values, digits=3):
    """'mean ± half-width' (or the mean alone for one value)."""
    m = statistics.mean(values)
    h = half_width(values)
    return f"{m:.{digits}f}" if h is None else f"{m:.{digits}f} ± {h:.{digits}f}"
