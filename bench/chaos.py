#!/usr/bin/env python3
"""Replays issue 18's hostile-client findings against a running tcld; one line per check.

    bench/chaos.py --url http://127.0.0.1:8080 --token ADMIN_TOKEN [--records ../shared/data/x86-16c/records.jsonl.gz]

Bounded: at most 32 attacking connections, each for at most 40 s; the whole run takes about a minute.
Talks only to the given loopback tcld. It creates a platform named chaos-<pid> (the measurements of
--records, 6,000 lines, go there) and leaves it behind. Standard library only.
Each line: PASS|FAIL, the check, what was seen. Exit status 1 when any check fails.
"""
import argparse
import gzip
import http.client
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib

failures = 0


def report(ok, check, seen):
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'}  {check:<58} {seen}", flush=True)


class Tcld:
    def __init__(self, url, token):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.tls = u.hostname, u.port or 8080, u.scheme == "https"
        self.token = token

    def connect(self, rcvbuf=None):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(30)
        s.connect((self.host, self.port))
        if self.tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            s = ctx.wrap_socket(s)
        return s

    def call(self, method, path, body=None, headers=None, token=True):
        cls = http.client.HTTPSConnection if self.tls else http.client.HTTPConnection
        kw = {"context": ssl._create_unverified_context()} if self.tls else {}
        c = cls(self.host, self.port, timeout=60, **kw)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + self.token
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.getheaders()), data

    def raw(self, payload, wait=10):
        """Sends bytes on one connection; returns all that came back before the close."""
        s = self.connect()
        s.settimeout(wait)
        s.sendall(payload)
        out = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                out += d
        except (socket.timeout, ConnectionError):
            pass
        s.close()
        return out


def trickle(t, path, stop):
    try:
        s = t.connect()
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {t.token}\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n".encode())
        end = time.time() + 40
        while not stop.is_set() and time.time() < end:
            s.sendall(b"1\r\n{\r\n")
            time.sleep(1.0)  # 1 byte/s
    except OSError:
        pass


def never_read(t, path, stop):
    try:
        s = t.connect(rcvbuf=4096)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {t.token}\r\n\r\n".encode())
        end = time.time() + 40
        while not stop.is_set() and time.time() < end:
            time.sleep(0.2)
    except OSError:
        pass


def p99(samples):
    s = sorted(samples)
    return s[max(0, -(-len(s) * 99 // 100) - 1)]


def metric(text, series):
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def check_slow_clients(t, platform, predict_body):
    base = f"/v1/platforms/{platform}/measurements"
    stop = threading.Event()
    threads = [threading.Thread(target=f, args=(t, base, stop)) for f in (trickle, never_read) for _ in range(16)]
    for th in threads:
        th.start()
    time.sleep(2)
    health, scores = [], []
    for _ in range(50):
        t0 = time.perf_counter()
        ok_h = t.call("GET", "/healthz", token=False)[0] == 200
        health.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        status = t.call("POST", "/v1/predict", predict_body, {"Content-Type": "application/json"})[0]
        scores.append(time.perf_counter() - t0)
    report(ok_h and p99(health) < 0.1, "1. /healthz under 16 tricklers + 16 non-readers",
           f"p99 {p99(health) * 1e3:.1f} ms, median {statistics.median(health) * 1e3:.1f} ms (50 calls)")
    report(status in (200, 404) and p99(scores) < 0.1, "1. /v1/predict under the same attack",
           f"status {status}, p99 {p99(scores) * 1e3:.1f} ms (50 calls; 404 = no model yet)")
    m = ""
    deadline = time.time() + 45
    while time.time() < deadline:
        m = t.call("GET", "/metrics", token=False)[2].decode()
        if not any(th.is_alive() for th in threads):
            break
        time.sleep(1)
    stop.set()
    for th in threads:
        th.join()
    cut = {r: metric(m, f'tcld_http_connections_cut_total{{reason="{r}"}}')
           for r in ("min_request_body_rate", "min_response_rate", "read_timeout", "write_timeout")}
    busy = metric(m, 'tcld_http_busy_total{lane="stream"}')
    report(sum(cut.values()) + busy >= 32, "1. the attackers were cut or refused, and counted",
           ", ".join(f"{k} {int(v)}" for k, v in cut.items()) + f", busy 503 {int(busy)}")


def check_smuggling(t):
    got = t.raw(b"POST /v1/platforms/fz/measurements HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"3\r\nabcGET /healthz?smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    n = got.count(b"HTTP/1.1 ")
    first = got.split(b"\r\n", 1)[0].decode(errors="replace")
    report(n == 1 and got.startswith(b"HTTP/1.1 400"), "2. bytes after a bad chunk are not run",
           f"{n} answer(s), first: {first}")
    got = t.raw(b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
    report(got.startswith(b"HTTP/1.1 400"), "2. two Host headers", got.split(b"\r\n", 1)[0].decode())
    got = t.raw(b"POST /v1/platforms HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n")
    report(got[:12] in (b"HTTP/1.1 501", b"HTTP/1.1 400"), "2. unknown Transfer-Encoding",
           got.split(b"\r\n", 1)[0].decode())


def check_platform_show(t, platform):
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        t.call("GET", f"/v1/platforms/{platform}")
        times.append(time.perf_counter() - t0)
    report(p99(times) < 0.05, "3. GET /v1/platforms/{name} does not recount rows",
           f"p99 {p99(times) * 1e3:.1f} ms over 20 calls")


def check_gzip_bomb(t, platform):
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = bomb.compress(b"\n" * (1 << 30)) + bomb.flush()  # 1 GiB of newlines, ~1 MiB compressed
    t0 = time.perf_counter()
    status, _, data = t.call("POST", f"/v1/platforms/{platform}/measurements", body, {"Content-Encoding": "gzip"})
    report(status == 413, "4. a gzip bomb is refused early",
           f"{status} after {time.perf_counter() - t0:.2f} s: {data[:120].decode(errors='replace')}")


def check_empty_body(t, platform):
    a = t.call("POST", f"/v1/platforms/{platform}/measurements", b"")[0]
    got = t.raw(f"POST /v1/platforms/{platform}/measurements HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                f"{t.token}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n".encode())
    b = got[9:12].decode()
    report(a == 400 and b == "400", "5. an empty upload is 400 whether sized or chunked", f"{a} / {b}")


def check_leaks(t, platform):
    status, headers, data = t.call("POST", f"/v1/platforms/{platform}/measurements", b"x\n",
                                   {"Idempotency-Key": "\xff"})
    leaked = any(w in data.lower() for w in (b"postgres", b"utf8", b"encoding \"", b"invalid byte"))
    report(status == 400 and not leaked, "6. Idempotency-Key 0xff: our words, no PostgreSQL text",
           f"{status} {data[:100].decode(errors='replace')}")
    rid = t.call("GET", "/healthz", headers={"X-Request-Id": "chaos-1"}, token=False)[1].get("X-Request-Id")
    report(rid == "chaos-1", "6. X-Request-Id is echoed", str(rid))
    status, _, data = t.call("GET", "/readyz", token=False)
    report(b"127.0.0.1" not in data and b"FATAL" not in data, "6. /readyz names no host or database error",
           f"{status}")


def check_validation(t, platform):
    bad = [
        ("step kind ZZ", ["ZZ", 0, 1]),
        ("negative stage_id", ["SP", -1, 0, 512, [8], 1]),
        ("NUL in a kind", ["S\u0000P", 2, 0, 512, [8], 1]),
    ]
    for what, step in bad:
        rec = {"i": [["[\"k\"]", "llvm -keys=cpu"], [[], [step]]], "r": [[0.001], 0, 1.0, 1], "v": "v0.6"}
        status, _, data = t.call("POST", f"/v1/platforms/{platform}/measurements", json.dumps(rec).encode() + b"\n")
        rejected = status in (200, 201) and json.loads(data).get("accepted", 1) == 0 or status == 400
        report(rejected, f"7. an upload with {what} is rejected", f"{status} {data[:110].decode(errors='replace')}")
    status = t.call("PUT", "/v1/aliases/2", b'{"version": 1}', {"Content-Type": "application/json"})[0]
    report(status == 400, "7. an alias name of digits only", str(status))
    status = t.call("POST", "/v1/platforms", b'{"name": "p"}', {"Content-Type": "text/plain"})[0]
    report(status == 415, "7. a JSON route refuses text/plain", str(status))
    status, headers, data = t.call("HEAD", f"/v1/platforms/{platform}")
    report(status == 200 and not data, "7. HEAD is served where GET is", f"{status}, {len(data)} body bytes")


def check_tls(t):
    if not t.tls:
        report(True, "8. TLS suites (skipped: not an https URL)", "")
        return
    rc = subprocess.run(["openssl", "s_client", "-connect", f"{t.host}:{t.port}", "-tls1_2", "-cipher",
                         "AES128-SHA@SECLEVEL=0"], input=b"", capture_output=True).returncode
    report(rc != 0, "8. TLS 1.2 AES128-SHA (no forward secrecy) is refused", f"openssl s_client rc {rc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--token", required=True, help="an admin token")
    ap.add_argument("--records", default=os.path.join(os.path.dirname(__file__), "../../shared/data/x86-16c/records.jsonl.gz"))
    a = ap.parse_args()
    host = urllib.parse.urlparse(a.url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("chaos.py talks to a loopback tcld only")
    t = Tcld(a.url, a.token)
    platform = f"chaos-{os.getpid()}"
    with gzip.open(a.records, "rt") as f:
        lines = [next(f) for _ in range(6000)]
    first = json.loads(lines[0])
    target = first["i"][0][1]
    status, _, data = t.call("POST", "/v1/platforms", json.dumps(
        {"name": platform, "target": target, "hardware_params": [16, 64, 64, 0, 0, 0, 0, 0]}).encode(),
        {"Content-Type": "application/json"})
    if status != 201:
        sys.exit(f"cannot create {platform}: {status} {data[:200]}")
    status, _, data = t.call("POST", f"/v1/platforms/{platform}/measurements", "".join(lines).encode())
    if status != 201:
        sys.exit(f"cannot upload: {status} {data[:200]}")
    predict = json.dumps({"platform": platform, "records": [json.loads(l) for l in lines[:3]]}).encode()
    check_smuggling(t)
    check_platform_show(t, platform)
    check_gzip_bomb(t, platform)
    check_empty_body(t, platform)
    check_leaks(t, platform)
    check_validation(t, platform)
    check_tls(t)
    check_slow_clients(t, platform, predict)
    print(f"{failures} check(s) failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
