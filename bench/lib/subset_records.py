#!/usr/bin/env python3
"""A share of a records file, drawn line by line: each record kept with probability FRACTION, in
order, by Python's random.Random(SEED) (the 10% subsets of docs/benchmarks.md, "A 10% distill forgets
more": tests/data/gpu-h100 at 0.1, seeds 1-4).

  bench/lib/subset_records.py RECORDS.jsonl[.gz] FRACTION SEED OUT.jsonl.gz
"""
import gzip
import random
import sys


def main(path, fraction, seed, out):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    draw = random.Random(seed)
    kept = [line for line in lines if draw.random() < fraction]
    with gzip.open(out, "wt") as f:
        f.write("\n".join(kept) + "\n")
    print(f"{out}: {len(kept)} of {len(lines)} records")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
