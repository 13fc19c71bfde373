#!/usr/bin/env python3
"""Runs every panel query of a Grafana dashboard through Prometheus's HTTP API.

  query_panels.py DASHBOARD.json PROMETHEUS_URL [--rate-interval 1m]

Each target's expr, with Grafana's variables replaced ($__rate_interval and
$__interval by --rate-interval, $platform by .*), is sent to
/api/v1/query (an instant query now). A panel passes when every target
evaluates without error and returns at least one series. Prints one line per
target and exits 1 when any fails.
"""
import argparse
import json
import sys
import urllib.parse
import urllib.request


def substitute(expr, rate_interval):
    for name in ("$__rate_interval", "${__rate_interval}", "$__interval", "${__interval}"):
        expr = expr.replace(name, rate_interval)
    for name in ("${platform}", "$platform"):
        expr = expr.replace(name, ".*")
    if "$" in expr.replace("$labels", ""):
        raise ValueError("unknown variable left in: " + expr)
    return expr


def panels(dashboard):
    for p in dashboard["panels"]:
        if p.get("type") == "row":
            yield from p.get("panels", [])
        else:
            yield p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("prometheus")
    ap.add_argument("--rate-interval", default="1m")
    args = ap.parse_args()
    with open(args.dashboard) as f:
        dashboard = json.load(f)
    failed = checked = 0
    for panel in panels(dashboard):
        targets = panel.get("targets", [])
        if not targets:
            print(f"FAIL {panel['title']}: no targets")
            failed += 1
        for t in targets:
            checked += 1
            try:
                expr = substitute(t["expr"], args.rate_interval)
                url = args.prometheus + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
                with urllib.request.urlopen(url, timeout=10) as r:
                    answer = json.load(r)
                result = answer.get("data", {}).get("result", [])
                ok = answer.get("status") == "success" and len(result) > 0
                why = f"{len(result)} series" if ok else json.dumps(answer)[:300]
            except Exception as e:  # HTTP 400 (bad PromQL) lands here too
                ok, why = False, f"{type(e).__name__}: {getattr(e, 'read', lambda: b'')().decode()[:300] or e}"
            print(f"{'ok  ' if ok else 'FAIL'} {panel['title']} [{t.get('refId')}]: {why}")
            failed += 0 if ok else 1
    print(f"{checked} queries, {failed} failed")
    return 1 if failed or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
