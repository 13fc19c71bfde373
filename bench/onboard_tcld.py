#!/usr/bin/env python3
"""bench/onboard_tcld.py — issue 21 item 2 through the product: onboard a platform into a lineage
with tcld and tclctl (the workflow users run) and score each resulting version on the platform's
held-out tasks through POST /v1/predict.

Steps (a throwaway PostgreSQL and tcld from bench/lib/stack.sh, started by bench/onboard_tcld.sh):
  1. The base: BASE's records uploaded, a default train job → version 1 (production).
  2. The target's tasks split (30% held out, by a seeded shuffle of the sorted task keys); the pool
     is the other tasks' programs as candidates.
  3. Per run, a platform of its own (same target and hardware_params), production moved back to the
     base, then `tclctl onboard --candidates POOL --answers RECORDS --rounds 2 --fraction 0.1
     --finetune-epochs 2 --distill --strategy S --seed N` (the README's tour); the run's version is the
     distill job's, promoted or not. "all": every pool program's measurement uploaded, one distill.
     "zero-shot": the base on a platform with nothing measured.
  4. Each version scores every held-out program; per task: top-1 = best cost / cost of the top-scored
     program (mean over tasks, and sum of bests / sum of picks), pairwise accuracy over pairs of
     different cost, the tuning proxy (trials in model order to a program within 5% of the best over
     random order's expected (n+1)/(g+1), geometric mean over tasks where not all qualify).
Prints one row per run with its version's status ("promoted" where the promotion gate promoted it,
"candidate" where it did not), the epochs its training finished of those planned ("budget" where the
time budget stopped it) and the gate's reasons, then the mean and 95% t-interval per strategy; writes
RESULTS.tsv in --out.
"""
import argparse
import gzip
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from intervals import interval  # noqa: E402


def call(base, token, method, path, body=None, timeout=600):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def read_records(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def cost_of(rec):
    res = rec["r"]
    return statistics.mean(res[0]) if res[1] == 0 else None


def as_candidate(rec):
    rec = json.loads(json.dumps(rec))
    rec["r"] = [[0], 0, 0, rec["r"][3]]
    return rec


def wait_job(base, token, job_id, what):
    t0 = time.time()
    while True:
        job = call(base, token, "GET", "/v1/jobs/%s" % job_id)
        if job["state"] in ("succeeded", "failed", "cancelled"):
            if job["state"] != "succeeded":
                sys.exit("%s: job %s %s: %s" % (what, job_id, job["state"], json.dumps(job)[:600]))
            print("  %s: job %s in %.0f s" % (what, job_id, time.time() - t0), flush=True)
            return job
        time.sleep(2)


def tclctl(args, env):
    print("  $ tclctl " + " ".join(args), flush=True)
    p = subprocess.run([env["TCLCTL"]] + args, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("tclctl failed (%d): %s\n%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout


def score_tasks(base, token, platform, version, tasks):
    """Per held-out task: (costs, scores) of its measured programs under `version`."""
    out = {}
    for key, recs in tasks.items():
        got = call(base, token, "POST", "/v1/predict",
                   {"platform": platform, "model": str(version), "records": [as_candidate(r) for r, _ in recs]})
        out[key] = ([c for _, c in recs], got["scores"])
    return out


def metrics(scored):
    top1, picks, bests, pairs, right, proxies = [], 0.0, 0.0, 0, 0, []
    for costs, scores in scored.values():
        order = sorted(range(len(costs)), key=lambda i: -scores[i])
        best = min(costs)
        top1.append(best / costs[order[0]])
        picks += costs[order[0]]
        bests += best
        for i in range(len(costs)):
            for j in range(i + 1, len(costs)):
                if costs[i] == costs[j] or scores[i] == scores[j]:
                    continue
                pairs += 1
                right += (costs[i] < costs[j]) == (scores[i] > scores[j])
        good = sum(1 for c in costs if c <= 1.05 * best)
        if good < len(costs):
            trials = next(k for k, i in enumerate(order, 1) if costs[i] <= 1.05 * best)
            proxies.append(trials / ((len(costs) + 1) / (good + 1)))
    return {"top1_mean": statistics.mean(top1), "top1_sum": bests / picks, "pairwise": right / max(pairs, 1),
            "tuning": math.exp(statistics.mean(math.log(p) for p in proxies)) if proxies else float("nan")}



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-platform", default="gpu-v100")
    ap.add_argument("--base-records", required=True)
    ap.add_argument("--base-target", required=True)
    ap.add_argument("--records", required=True, help="the target platform's measured pool")
    ap.add_argument("--name", default="gpu-h100")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--strategies", default="rdu,random")
    ap.add_argument("--holdout", type=float, default=0.3)
    ap.add_argument("--split-seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    base, token = os.environ["TCL_URL"], os.environ["TCL_TOKEN"]
    env = dict(os.environ)
    os.makedirs(a.out, exist_ok=True)

    # 1. The base lineage.
    t0 = time.time()
    hp = json.loads(read_records(a.base_records)[0])["i"][0][2]
    call(base, token, "POST", "/v1/platforms",
         {"name": a.base_platform, "target": a.base_target, "hardware_params": hp})
    tclctl(["upload", "--platform", a.base_platform, "--quiet", a.base_records], env)
    job = call(base, token, "POST", "/v1/platforms/%s/jobs" % a.base_platform, {"kind": "train"})
    wait_job(base, token, job["id"], "base train")
    base_version = call(base, token, "GET", "/v1/aliases/production")["version"]
    print("base: version %d on %s (%.0f s)" % (base_version, a.base_platform, time.time() - t0), flush=True)

    # 2. The target's split.
    records = [json.loads(line) for line in read_records(a.records)]
    tasks = sorted({r["i"][0][0] for r in records})
    random.Random(a.split_seed).shuffle(tasks)
    held = set(tasks[:round(a.holdout * len(tasks))])
    pool = [r for r in records if r["i"][0][0] not in held]
    held_out = {}
    for r in records:
        c = cost_of(r)
        if r["i"][0][0] in held and c is not None:
            held_out.setdefault(r["i"][0][0], []).append((r, c))
    pool_path = os.path.join(a.out, "pool.jsonl")
    with open(pool_path, "w") as f:
        for r in pool:
            f.write(json.dumps(as_candidate(r)) + "\n")
    measured_path = os.path.join(a.out, "pool-measured.jsonl")
    with open(measured_path, "w") as f:
        for r in pool:
            f.write(json.dumps(r) + "\n")
    target, params = records[0]["i"][0][1], records[0]["i"][0][2]
    print("%s: %d tasks, %d held out (%d programs), pool %d programs" %
          (a.name, len(tasks), len(held), sum(len(v) for v in held_out.values()), len(pool)), flush=True)

    def new_platform(name):
        call(base, token, "POST", "/v1/platforms", {"name": name, "target": target, "hardware_params": params})
        call(base, token, "PUT", "/v1/aliases/production", {"version": base_version, "reason": "bench: next run"})

    rows = []

    def record(run, strategy, seed, platform, version, seconds):
        m = metrics(score_tasks(base, token, platform, version, held_out))
        m.update(run=run, strategy=strategy, seed=seed, version=version, seconds=round(seconds))
        # Issue 19 item 4 asks that the default job's version be promoted: its gate's verdict, in full.
        info = call(base, token, "GET", "/v1/models/%d" % version)
        m["status"] = info.get("status", "")
        # How far the version's training got: a CPU job stops at its budget (the student's, for a distill).
        summary = info.get("training_summary") or {}
        m["epochs"] = "%s/%s%s" % (summary.get("epochs_done", "?"), summary.get("epochs_planned", "?"),
                                   " budget" if summary.get("budget_exhausted") else "")
        rows.append(m)
        print("%-14s v%-3d top-1 %.4f (sum %.4f) pairwise %.4f tuning %.4f  %4.0f s  %s, epochs %s" %
              (run, version, m["top1_mean"], m["top1_sum"], m["pairwise"], m["tuning"], seconds, m["status"],
               m["epochs"]), flush=True)
        if version != base_version:
            for reason in (info.get("status_reasons") or {}).get("reasons", []):
                print("  gate: " + reason, flush=True)

    # 3. Zero-shot, every pool program, then the onboardings.
    new_platform(a.name + "-zs")
    record("zero-shot", "zero-shot", 0, a.name + "-zs", base_version, 0)
    t0 = time.time()
    new_platform(a.name + "-all")
    tclctl(["upload", "--platform", a.name + "-all", "--quiet", measured_path], env)
    job = call(base, token, "POST", "/v1/platforms/%s-all/jobs" % a.name, {"kind": "distill"})
    done = wait_job(base, token, job["id"], "all: distill")
    record("all", "all", 0, a.name + "-all", done["result_version"], time.time() - t0)
    for seed in range(1, a.seeds + 1):
        for strategy in a.strategies.split(","):
            name = "%s-%s-s%d" % (a.name, strategy, seed)
            t0 = time.time()
            new_platform(name)
            tclctl(["onboard", "--platform", name, "--candidates", pool_path, "--answers", measured_path,
                    "--rounds", "2", "--fraction", "0.1", "--finetune-epochs", "2", "--distill", "--strategy",
                    strategy, "--seed", str(seed), "--state", os.path.join(a.out, name + ".state.json")], env)
            # The distill job ran last: the newest version is its result (promoted or not).
            version = max(v["version"] for v in call(base, token, "GET", "/v1/models")["versions"])
            record("%s s%d" % (strategy, seed), strategy, seed, name, version, time.time() - t0)

    with open(os.path.join(a.out, "RESULTS.tsv"), "w") as f:
        keys = ["run", "strategy", "seed", "version", "status", "epochs", "top1_mean", "top1_sum", "pairwise", "tuning", "seconds"]
        f.write("\t".join(keys) + "\n")
        for r in rows:
            f.write("\t".join(str(r[k]) for k in keys) + "\n")
    print("\nmean and 95%% t-interval over seeds (%s held-out tasks)" % len(held))
    for strategy in ["zero-shot", "all"] + a.strategies.split(","):
        sel = [r for r in rows if r["strategy"] == strategy]
        print("%-10s n=%d top-1 %s  sum %s  pairwise %s  tuning %s" %
              (strategy, len(sel), interval([r["top1_mean"] for r in sel]), interval([r["top1_sum"] for r in sel]),
               interval([r["pairwise"] for r in sel]), interval([r["tuning"] for r in sel])))


if __name__ == "__main__":
    main()
