"""Tests of tcl_client against a live tcld (no mocks).

Environment: TCL_URL, TCL_TOKEN (an admin token), TCL_RECORDS (a file of
measured TVM records, JSON lines; ~1,500 are plenty). The tcld must run a
training worker (--train-workers 1) and start with an empty database.
ctest runs this through tests/clients/python_client_test.cc; by hand:

    TCL_URL=... TCL_TOKEN=... TCL_RECORDS=... python3 clients/python/test_tcl_client.py -v
"""

from __future__ import annotations

import gzip
import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tcl_client import TclClient, TclError  # noqa: E402

PLATFORM = "py-x16"
TARGET = "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu"
HW = [16, 64, 64, 0, 0, 0, 0, 0]
TOKEN_DIM = 50  # core/features.h kTokenDim


def unmeasured(line: str) -> str:
    """The record as a candidate: costs zeroed."""
    r = json.loads(line)
    r["r"] = [[0], 0, 0, r["r"][3]]
    return json.dumps(r)


class TclClientTest(unittest.TestCase):
    tcl: TclClient
    lines: list
    version: int

    @classmethod
    def setUpClass(cls) -> None:
        cls.tcl = TclClient(os.environ["TCL_URL"], os.environ["TCL_TOKEN"], timeout=120)
        with open(os.environ["TCL_RECORDS"], encoding="utf-8") as f:
            cls.lines = [l.strip() for l in f if l.strip()]
        # One platform and one trained version, shared by the tests below.
        cls.tcl.create_platform(PLATFORM, TARGET, HW, "from the Python client test")
        report = cls.tcl.upload_measurements(PLATFORM, cls.lines[:1000])
        assert report["accepted"] > 0 and report["accepted"] + report["duplicates"] == 1000, report
        job = cls.tcl.start_job(PLATFORM, "train", epochs=1, max_records=1000, eval_fraction=0.25, seed=1)
        done = cls.tcl.wait_job(job["id"], timeout=600, poll=0.5)
        assert done["state"] == "succeeded", done
        cls.version = done["result_version"]

    # --- platforms ---------------------------------------------------------

    def test_platforms(self) -> None:
        names = [p["name"] for p in self.tcl.list_platforms()]
        self.assertIn(PLATFORM, names)
        p = self.tcl.get_platform(PLATFORM)
        self.assertEqual(p["hardware_params"], HW)
        self.assertGreater(p["counts"]["measurements"], 0)
        with self.assertRaises(TclError) as dup:
            self.tcl.create_platform(PLATFORM, TARGET, HW)
        self.assertEqual((dup.exception.status, dup.exception.code), (409, "ALREADY_EXISTS"))
        with self.assertRaises(TclError) as missing:
            self.tcl.get_platform("no-such-platform")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "NOT_FOUND"))
        self.assertIn("no-such-platform", missing.exception.message)

    # --- uploads -----------------------------------------------------------

    def test_upload_a_gzip_file_twice_is_idempotent(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "more.jsonl.gz")
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.write("\n".join(self.lines[1000:1200]) + "\n")
            first = self.tcl.upload_measurements(PLATFORM, path)
            again = self.tcl.upload_measurements(PLATFORM, path)  # same content: same key, the same report
        self.assertEqual(first["lines"], 200)
        self.assertGreater(first["accepted"], 0)
        self.assertEqual(again["upload_id"], first["upload_id"])
        self.assertEqual(again["accepted"], first["accepted"])

    def test_upload_bytes_reports_bad_lines(self) -> None:
        body = (self.lines[1200] + "\n" + '{"i": 1}\n').encode()
        report = self.tcl.upload_measurements(PLATFORM, body)
        self.assertEqual(report["lines"], 2)
        self.assertEqual(report["rejected_count"], 1)
        self.assertEqual(report["rejected"][0]["line"], 2)
        downloaded = self.tcl.download_measurements(PLATFORM)
        self.assertGreater(len(downloaded), 0)
        self.assertIn("i", json.loads(downloaded[0]))

    # --- sample requests ---------------------------------------------------

    def test_sample_requests(self) -> None:
        report = self.tcl.upload_candidates(PLATFORM, (unmeasured(l) for l in self.lines[1300:1400]),
                                            idempotency_key="py-candidates-1")
        self.assertGreater(report["accepted"], 0)
        created = self.tcl.create_sample_request(PLATFORM, budget=6, strategy="rdu", seed=3)
        picked = len(created["items"])
        self.assertGreater(picked, 0)
        got = self.tcl.get_sample_request(created["id"])
        self.assertEqual(got["status"], "open")
        self.assertEqual(got["items_total"], picked)
        to_measure = self.tcl.download_sample_request(created["id"])
        self.assertEqual(len(to_measure), picked)
        self.assertIn("i", json.loads(to_measure[0]))
        cancelled = self.tcl.cancel_sample_request(created["id"])
        self.assertEqual(cancelled["status"], "cancelled")
        with self.assertRaises(ValueError):
            self.tcl.create_sample_request(PLATFORM)
        with self.assertRaises(TclError) as bad:
            self.tcl.create_sample_request(PLATFORM, fraction=2.0)
        self.assertEqual(bad.exception.status, 400)

    # --- jobs --------------------------------------------------------------

    def test_jobs(self) -> None:
        job = self.tcl.start_job(PLATFORM, "train", epochs=500, max_records=1000)
        self.assertIn(job["state"], ("queued", "running"))
        self.assertEqual(self.tcl.get_job(job["id"])["id"], job["id"])
        self.assertIn(job["id"], [j["id"] for j in self.tcl.list_jobs(PLATFORM)])
        self.tcl.cancel_job(job["id"])
        done = self.tcl.wait_job(job["id"], timeout=120, poll=0.2)
        self.assertEqual(done["state"], "cancelled")
        with self.assertRaises(TclError) as bad:
            self.tcl.start_job(PLATFORM, "retrain")
        self.assertEqual(bad.exception.status, 400)
        slow = self.tcl.start_job(PLATFORM, "train", epochs=500, max_records=1000)
        with self.assertRaises(TimeoutError):
            self.tcl.wait_job(slow["id"], timeout=0, poll=0)
        self.tcl.cancel_job(slow["id"])
        self.assertEqual(self.tcl.wait_job(slow["id"], timeout=120, poll=0.2)["state"], "cancelled")

    # --- predict -----------------------------------------------------------

    def test_predict_records_and_programs(self) -> None:
        by_lines = self.tcl.predict(PLATFORM, records=self.lines[:20])
        self.assertEqual(by_lines["model_version"], self.version)
        self.assertEqual(len(by_lines["scores"]), 20)
        self.assertTrue(all(math.isfinite(s) for s in by_lines["scores"]))
        objects = [json.loads(l) for l in self.lines[:20]]
        programs = [{"workload_key": r["i"][0][0], "steps": r["i"][1][1]} for r in objects]
        by_programs = self.tcl.predict(PLATFORM, programs=programs, model=self.version)
        for a, b in zip(by_lines["scores"], by_programs["scores"]):
            self.assertAlmostEqual(a, b, places=5)
        for a, b in zip(self.tcl.predict(PLATFORM, records=objects[:3])["scores"], by_lines["scores"]):
            self.assertAlmostEqual(a, b, places=6)
        with self.assertRaises(TclError) as bad:
            self.tcl.predict(PLATFORM, programs=[{"workload_key": "k", "steps": [["SP", 0]]}])
        self.assertEqual(bad.exception.code, "INVALID_ARGUMENT")
        self.assertEqual(bad.exception.details["index"], 0)

    # --- lineage -----------------------------------------------------------

    def test_lineage_and_aliases(self) -> None:
        versions = self.tcl.models()
        self.assertIn(self.version, [v["version"] for v in versions])
        self.assertEqual(self.tcl.model()["version"], self.version)
        self.assertEqual(self.tcl.model(self.version)["platforms"], [PLATFORM])
        self.assertGreater(len(self.tcl.weights(self.version)), 1000)
        self.assertEqual(self.tcl.get_alias("production")["version"], self.version)
        moved = self.tcl.set_alias("py-canary", self.version, reason="client test")
        self.assertTrue(moved["changed"])
        self.assertFalse(self.tcl.set_alias("py-canary", self.version)["changed"])
        history = self.tcl.alias_history("py-canary")
        self.assertEqual(len(history), 1)
        self.assertEqual(history[0]["reason"], "client test")
        with self.assertRaises(TclError) as missing:
            self.tcl.get_alias("no-such-alias")
        self.assertEqual(missing.exception.status, 404)

    # --- Open Inference Protocol ---------------------------------------------

    def test_v2_infer(self) -> None:
        self.assertTrue(self.tcl.server_live())
        self.assertTrue(self.tcl.server_ready())
        meta = self.tcl.model_metadata()
        self.assertEqual(meta["parameters"]["version"], str(self.version))
        self.assertEqual(meta["inputs"][0]["shape"][-1], TOKEN_DIM)
        self.assertEqual(self.tcl.model_metadata(self.version)["name"], "tcl")
        # Two programs of 3 and 1 steps; padding past a length is ignored.
        step = [1.0] + [0.0] * (TOKEN_DIM - 1)
        tokens = [[step, step, step], [step, [9.0] * TOKEN_DIM, [9.0] * TOKEN_DIM]]
        answer = self.tcl.infer(PLATFORM, tokens, lengths=[3, 1], request_id="py-1")
        self.assertEqual(answer["id"], "py-1")
        self.assertEqual(answer["model_version"], str(self.version))
        scores = answer["outputs"][0]["data"]
        self.assertEqual(len(scores), 2)
        flat = [x for row in [step] for x in row]
        alone = self.tcl.infer(PLATFORM, flat, shape=[1, 1, TOKEN_DIM], version=self.version)
        self.assertAlmostEqual(alone["outputs"][0]["data"][0], scores[1], places=5)
        with self.assertRaises(TclError) as bad:
            self.tcl.infer(PLATFORM, [[[0.0] * 7]])
        self.assertEqual((bad.exception.status, bad.exception.code), (400, "INVALID_ARGUMENT"))
        self.assertIn("D = 7", bad.exception.message)
        with self.assertRaises(TclError) as unknown:
            self.tcl.infer("no-such-platform", tokens, lengths=[3, 1])
        self.assertEqual(unknown.exception.status, 404)

    # --- errors ------------------------------------------------------------

    def test_errors(self) -> None:
        with self.assertRaises(TclError) as anon:
            TclClient(self.tcl.url, token="").list_platforms()
        self.assertEqual((anon.exception.status, anon.exception.code), (401, "UNAUTHENTICATED"))
        with self.assertRaises(TclError) as down:
            TclClient("http://127.0.0.1:9", token="x", timeout=5).list_platforms()
        self.assertEqual((down.exception.status, down.exception.code), (0, "UNAVAILABLE"))


if __name__ == "__main__":
    unittest.main()
