#!/usr/bin/env python3
"""scripts/gpu/tune_anchors.py RUNS NETWORK — issue 47's physical anchors on the GPU machine: for each
task of NETWORK (read from a run's run.json in RUNS, with its weight), the best program of each run
(RUNS/NETWORK-MODEL-sSEED/best.jsonl, the fastest over seeds) against PyTorch doing the same operator
on the same GPU (cuBLAS / cuDNN, FP32 with TF32 off; CUDA events, the median of 50 calls after 10
warm-ups) and against the roofline: FLOPs / the sustained FP32 rate of an 8192^3 product. The FLOP
counts are measure/operators.cc's flop_count (2 per multiply-add, 4 per softmax element)."""
import glob
import json
import math
import os
import re
import statistics
import sys

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True


def seconds(fn):
    for _ in range(10):
        fn()
    times = []
    for _ in range(50):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def op(key):
    """(PyTorch call, FLOPs) for a tcl.* workload key (measure/operators.h)."""
    kind, *a = json.loads(key)
    r = lambda *s: torch.randn(*s, device="cuda")  # noqa: E731
    if kind == "tcl.matmul":
        m, n, k = a
        x, y = r(m, k), r(k, n)
        return (lambda: torch.mm(x, y)), 2 * m * n * k
    if kind == "tcl.batch_matmul":
        b, m, n, k = a
        x, y = r(b, m, k), r(b, k, n)
        return (lambda: torch.bmm(x, y)), 2 * b * m * n * k
    if kind in ("tcl.conv2d_nhwc", "tcl.depthwise_conv2d_nhwc"):
        if kind == "tcl.conv2d_nhwc":
            n, h, w, ci, co, kh, kw, s, p = a
            groups, wshape = 1, (co, ci, kh, kw)
        else:
            n, h, w, ci, kh, kw, s, p = a
            co, groups, wshape = ci, ci, (ci, 1, kh, kw)
        x = r(n, ci, h, w).to(memory_format=torch.channels_last)
        k = r(*wshape).to(memory_format=torch.channels_last)
        oh, ow = (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1
        macs = n * oh * ow * co * kh * kw * (ci // groups)
        return (lambda: torch.nn.functional.conv2d(x, k, stride=s, padding=p, groups=groups)), 2 * macs
    if kind == "tcl.softmax":
        rows, cols = a
        x = r(rows, cols)
        return (lambda: torch.softmax(x, 1)), 4 * rows * cols
    raise ValueError(key)


def main():
    runs, network = sys.argv[1], sys.argv[2]
    folders = sorted(glob.glob(os.path.join(runs, network + "-*-s*")))
    tasks = json.load(open(os.path.join(folders[0], "run.json")))["tasks"]
    best = {}  # model -> key -> seconds
    for folder in folders:
        model = re.match(rf"{network}-(.*)-s\d+$", os.path.basename(folder)).group(1)
        for line in open(os.path.join(folder, "best.jsonl")):
            rec = json.loads(line)
            key, cost = rec["i"][0][0], statistics.mean(rec["r"][0])
            best.setdefault(model, {})[key] = min(cost, best.get(model, {}).get(key, math.inf))
    big = torch.randn(8192, 8192, device="cuda")
    peak = 2 * 8192 ** 3 / seconds(lambda: torch.mm(big, big))
    print(f"{network} on {torch.cuda.get_device_name()}: PyTorch {torch.__version__} FP32 (TF32 off); "
          f"roofline peak {peak / 1e12:.1f} TFLOP/s (an 8192^3 mm)\n")
    models = sorted(best)
    print("| task | weight | PyTorch ms | roofline ms | " + " | ".join(f"{m} ms (÷ PyTorch)" for m in models) + " |")
    print("|---|---|---|---|" + "---|" * len(models))
    sums = {"torch": 0.0, "roof": 0.0, **{m: 0.0 for m in models}}
    for key, weight in tasks:
        fn, flops = op(key)
        t, roof = seconds(fn), flops / peak
        sums["torch"] += weight * t
        sums["roof"] += weight * roof
        cells = []
        for m in models:
            b = best[m].get(key, math.nan)
            sums[m] += weight * b
            cells.append(f"{b * 1e3:.4f} ({b / t:.2f}x)")
        print(f"| `{key}` | {weight} | {t * 1e3:.4f} | {roof * 1e3:.4f} | " + " | ".join(cells) + " |")
    print(f"| network | | {sums['torch'] * 1e3:.3f} | {sums['roof'] * 1e3:.3f} | " +
          " | ".join(f"{sums[m] * 1e3:.3f} ({sums[m] / sums['torch']:.2f}x)" for m in models) + " |")


if __name__ == "__main__":
    main()
