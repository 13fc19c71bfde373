"""tcl_client — a small Python client for tcld (the TCL cost-model registry).

Standard library only (Python 3.9+); one module, copy it where you need it.

    from tcl_client import TclClient, TclError
    tcl = TclClient("http://127.0.0.1:8080", token)          # or TCL_URL / TCL_TOKEN
    tcl.create_platform("x86-16c", "llvm -keys=cpu", [16, 64, 64, 0, 0, 0, 0, 0])
    tcl.upload_measurements("x86-16c", "records.jsonl.gz")   # a path, bytes, or lines
    job = tcl.wait_job(tcl.start_job("x86-16c", epochs=2)["id"])
    scores = tcl.predict("x86-16c", records=lines)["scores"]  # higher is faster

Contracts, for every method: it sends one HTTP request (wait_job polls) and
returns the decoded JSON answer as plain dicts and lists, exactly as the API
document (GET /v1/openapi.yaml) describes it; any non-2xx answer raises
TclError with the status and the error body's code, message and details; a
transport failure (refused, timed out) raises TclError with status 0 and code
"UNAVAILABLE". The client keeps no state beyond its settings: one instance may
be shared between threads.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

__all__ = ["TclClient", "TclError", "V2_MODEL_NAME"]

#: The name tcld serves its one lineage under on the Open Inference Protocol routes.
V2_MODEL_NAME = "tcl"

# Upload bodies: a file path, the bytes themselves, or an iterable of lines
# (str, bytes, or record dicts), sent as they are produced.
Records = Union[str, "os.PathLike[str]", bytes, Iterable[Union[str, bytes, Mapping[str, Any]]]]

_FINISHED_JOB_STATES = ("succeeded", "failed", "cancelled")

# The code tcld would give each status, for answers whose error body carries
# only a message (the Open Inference Protocol's {"error": "..."}).
_CODE_FOR_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "FAILED_PRECONDITION",
    413: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


class TclError(Exception):
    """A request tcld refused or that did not reach it.

    status: the HTTP status (0: no answer); code: tcld's error code
    ("NOT_FOUND", "INVALID_ARGUMENT", ...); message: why; details: what tcld
    added (the field, the index of a bad program, readiness checks, ...).
    """

    def __init__(self, status: int, code: str, message: str, details: Optional[Dict[str, Any]] = None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}

    @classmethod
    def from_answer(cls, status: int, body: bytes) -> "TclError":
        """Parses tcld's {"error": {"code", "message", "details"}} or the v2 {"error": "..."}."""
        try:
            err = json.loads(body.decode("utf-8")).get("error")
        except (ValueError, AttributeError, UnicodeDecodeError):
            err = None
        if isinstance(err, dict):
            return cls(status, str(err.get("code", "")), str(err.get("message", "")), err.get("details") or {})
        message = err if isinstance(err, str) else body.decode("utf-8", "replace").strip() or f"HTTP {status}"
        return cls(status, _CODE_FOR_STATUS.get(status, f"HTTP_{status}"), message)


class TclClient:
    """A client of one tcld. url and token default to $TCL_URL and $TCL_TOKEN.

    timeout is the socket timeout of each request, in seconds. Reading needs
    a token of scope read; uploads, platforms, jobs and sample requests need
    write; moving an alias needs admin.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 60.0):
        url = url or os.environ.get("TCL_URL") or "http://127.0.0.1:8080"
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("TCL_TOKEN", "")
        self.timeout = timeout

    # --- transport ---------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Optional[Dict[str, str]] = None,
        ok: Sequence[int] = (200,),
    ) -> "tuple[int, Dict[str, str], bytes]":
        """Sends one request; returns (status, headers, body) or raises TclError."""
        hdrs = {"Accept": "application/json"}
        if self.token:
            hdrs["Authorization"] = f"Bearer {self.token}"
        data = body
        if body is not None and not isinstance(body, (bytes, bytearray)) and not hasattr(body, "read") \
                and not hasattr(body, "__next__"):
            data = json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                status, payload = res.status, res.read()
                answer_headers = {k.lower(): v for k, v in res.headers.items()}
        except urllib.error.HTTPError as e:
            raise TclError.from_answer(e.code, e.read()) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise TclError(0, "UNAVAILABLE", f"{method} {self.url}{path}: {reason}") from None
        if status not in ok:
            raise TclError.from_answer(status, payload)
        return status, answer_headers, payload

    def _json(self, method: str, path: str, body: Any = None, ok: Sequence[int] = (200,),
              headers: Optional[Dict[str, str]] = None) -> Any:
        _, _, payload = self._request(method, path, body, headers, ok)
        return json.loads(payload.decode("utf-8")) if payload else None

    @staticmethod
    def _q(segment: Union[str, int]) -> str:
        return urllib.parse.quote(str(segment), safe="")

    # --- platforms ---------------------------------------------------------

    def create_platform(self, name: str, target: str, hardware_params: Sequence[int], description: str = "") -> dict:
        """Registers a platform (write). hardware_params: TVM's 8 HardwareParams. 409 if the name is taken."""
        body = {"name": name, "target": target, "hardware_params": list(hardware_params), "description": description}
        return self._json("POST", "/v1/platforms", body, ok=(201,))

    def list_platforms(self) -> List[dict]:
        """Every platform (without counts)."""
        return self._json("GET", "/v1/platforms")["platforms"]

    def get_platform(self, name: str) -> dict:
        """One platform with its counts and onboarding state."""
        return self._json("GET", f"/v1/platforms/{self._q(name)}")

    # --- uploads -----------------------------------------------------------

    def upload_measurements(self, platform: str, records: Records, idempotency_key: Optional[str] = None) -> dict:
        """Uploads measured records (write); returns the upload report.

        records: a path (".gz" is sent compressed), bytes, or an iterable of
        record lines or dicts, streamed as produced. For a path or bytes the
        Idempotency-Key defaults to a hash of the content, so a retry is safe;
        for an iterable pass one yourself. A repeated key answers the first
        report (HTTP 200) without storing anything again.
        """
        return self._upload(platform, "measurements", records, idempotency_key)

    def upload_candidates(self, platform: str, records: Records, idempotency_key: Optional[str] = None) -> dict:
        """Uploads unmeasured candidate records (write); as upload_measurements."""
        return self._upload(platform, "candidates", records, idempotency_key)

    def _upload(self, platform: str, kind: str, records: Records, key: Optional[str]) -> dict:
        headers = {"Content-Type": "application/x-ndjson"}
        if isinstance(records, (str, os.PathLike)):
            path = os.fspath(records)
            if key is None:
                digest = hashlib.sha256(kind.encode() + b"\n")
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        digest.update(block)
                key = "tcl-client-" + digest.hexdigest()
            if path.endswith(".gz"):
                headers["Content-Encoding"] = "gzip"
            headers["Content-Length"] = str(os.path.getsize(path))
            headers["Idempotency-Key"] = key
            with open(path, "rb") as f:
                return self._json("POST", f"/v1/platforms/{self._q(platform)}/{kind}", f, ok=(200, 201),
                                  headers=headers)
        if isinstance(records, (bytes, bytearray)):
            body: Any = bytes(records)
            if key is None:
                key = "tcl-client-" + hashlib.sha256(kind.encode() + b"\n" + body).hexdigest()
        else:
            body = _lines(records)
        if key is not None:
            headers["Idempotency-Key"] = key
        return self._json("POST", f"/v1/platforms/{self._q(platform)}/{kind}", body, ok=(200, 201), headers=headers)

    def download_measurements(self, platform: str) -> List[str]:
        """The platform's measurements as record lines (TVM's load_records reads them)."""
        _, _, payload = self._request("GET", f"/v1/platforms/{self._q(platform)}/measurements",
                                      headers={"Accept": "application/x-ndjson"})
        return payload.decode("utf-8").splitlines()

    # --- sample requests ---------------------------------------------------

    def create_sample_request(self, platform: str, budget: Optional[int] = None, fraction: Optional[float] = None,
                              strategy: Optional[str] = None, **options: Any) -> dict:
        """Picks candidates to measure (write): exactly one of budget or fraction.

        options: "weights" ({"r", "d", "u"}), "seed", "model", "mc_samples",
        "min_per_task". Returns the stored request with its items (201).
        """
        if (budget is None) == (fraction is None):
            raise ValueError("give exactly one of budget or fraction")
        body: Dict[str, Any] = dict(options)
        if strategy is not None:  # None: the daemon's default ("fast")
            body["strategy"] = strategy
        if budget is not None:
            body["budget"] = budget
        else:
            body["fraction"] = fraction
        return self._json("POST", f"/v1/platforms/{self._q(platform)}/sample-requests", body, ok=(201,))

    def get_sample_request(self, request_id: int) -> dict:
        """Status, progress and items of a sample request."""
        return self._json("GET", f"/v1/sample-requests/{self._q(request_id)}")

    def download_sample_request(self, request_id: int) -> List[str]:
        """The records still to measure, as record lines (for an offline lab)."""
        _, _, payload = self._request("GET", f"/v1/sample-requests/{self._q(request_id)}",
                                      headers={"Accept": "application/x-ndjson"})
        return payload.decode("utf-8").splitlines()

    def cancel_sample_request(self, request_id: int) -> dict:
        """Cancels an open sample request (write) and returns it; a cancelled one is returned as it is; 409 when it is completed."""
        return self._json("POST", f"/v1/sample-requests/{self._q(request_id)}/cancel", {})

    # --- jobs --------------------------------------------------------------

    def start_job(self, platform: str, kind: str = "train", **options: Any) -> dict:
        """Queues a "train" or "distill" job (write), e.g. epochs=2, max_records=2000, seed=1; 202, the job."""
        return self._json("POST", f"/v1/platforms/{self._q(platform)}/jobs", {"kind": kind, **options}, ok=(202,))

    def list_jobs(self, platform: str) -> List[dict]:
        """The platform's recent jobs."""
        return self._json("GET", f"/v1/platforms/{self._q(platform)}/jobs")["jobs"]

    def get_job(self, job_id: int) -> dict:
        """State, progress, error and result version of a job."""
        return self._json("GET", f"/v1/jobs/{self._q(job_id)}")

    def wait_job(self, job_id: int, timeout: float = 3600.0, poll: float = 1.0) -> dict:
        """Polls until the job has finished (succeeded, failed or cancelled) and returns it.

        Raises TimeoutError after `timeout` seconds; a failed job is returned,
        not raised: look at its "state" and "error".
        """
        deadline = time.monotonic() + timeout
        while True:
            job = self.get_job(job_id)
            if job.get("state") in _FINISHED_JOB_STATES and job.get("finished_at"):
                return job
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} is still {job.get('state')} after {timeout} s")
            time.sleep(poll)

    def cancel_job(self, job_id: int) -> dict:
        """Cancels a job (write): a queued one at once, a running one at its next heartbeat."""
        return self._json("POST", f"/v1/jobs/{self._q(job_id)}/cancel", {})

    # --- predict -----------------------------------------------------------

    def predict(self, platform: str, records: Optional[Sequence[Union[str, Mapping[str, Any]]]] = None,
                programs: Optional[Sequence[Mapping[str, Any]]] = None, model: str = "production") -> dict:
        """Scores programs on a platform: exactly one of records or programs.

        records: TVM record lines or dicts; programs: {"workload_key", "steps"}.
        model: an alias or a version number. Returns {"model_version",
        "platform", "platform_covered", "platform_adapter", "truncated",
        "scores"}: one score per program in order, higher is faster
        (platform_adapter: the version's adapter for this platform scored
        them). At most 65,536 programs a call.
        """
        if (records is None) == (programs is None):
            raise ValueError("give exactly one of records or programs")
        body: Dict[str, Any] = {"platform": platform, "model": str(model)}
        if records is not None:
            body["records"] = [r if isinstance(r, str) else dict(r) for r in records]
        else:
            body["programs"] = [dict(p) for p in programs or []]
        return self._json("POST", "/v1/predict", body)

    # --- lineage -----------------------------------------------------------

    def models(self) -> List[dict]:
        """Every model version, oldest first (the lineage)."""
        return self._json("GET", "/v1/models")["versions"]

    def model(self, version: Union[int, str] = "production") -> dict:
        """One version (a number or an alias): parent, platforms, metrics, sha256."""
        return self._json("GET", f"/v1/models/{self._q(version)}")

    def weights(self, version: Union[int, str] = "production") -> bytes:
        """The version's checkpoint bytes (checked against the stored SHA-256 by tcld)."""
        _, _, payload = self._request("GET", f"/v1/models/{self._q(version)}/weights",
                                      headers={"Accept": "application/octet-stream"})
        return payload

    def get_alias(self, alias: str = "production") -> dict:
        """{"alias", "version", "updated_at"}."""
        return self._json("GET", f"/v1/aliases/{self._q(alias)}")

    def set_alias(self, alias: str, version: int, reason: Optional[str] = None) -> dict:
        """Moves an alias (admin); {"alias", "version", "changed", "move"?}. Rollback is moving it back."""
        body: Dict[str, Any] = {"version": int(version)}
        if reason is not None:
            body["reason"] = reason
        return self._json("PUT", f"/v1/aliases/{self._q(alias)}", body)

    def alias_history(self, alias: str = "production") -> List[dict]:
        """Every move of the alias, oldest first: from, to, who, when, why."""
        return self._json("GET", f"/v1/aliases/{self._q(alias)}/history")["history"]

    # --- Open Inference Protocol (v2) ---------------------------------------

    def server_live(self) -> bool:
        """GET /v2/health/live: True on 200."""
        return self._health("/v2/health/live")

    def server_ready(self) -> bool:
        """GET /v2/health/ready: True on 200 (database, migrations, production model loaded)."""
        return self._health("/v2/health/ready")

    def _health(self, path: str) -> bool:
        try:
            self._request("GET", path)
            return True
        except TclError as e:
            if 400 <= e.status < 500:
                return False
            raise

    def model_metadata(self, version: Optional[int] = None) -> dict:
        """The served model's metadata: versions, inputs, outputs, and "parameters"
        (version, max_len, token_dim); of `version`, else of production."""
        return self._json("GET", self._v2_path(version))

    def infer(self, platform: str, tokens: Any, lengths: Optional[Sequence[int]] = None,
              version: Optional[int] = None, shape: Optional[Sequence[int]] = None,
              request_id: Optional[str] = None) -> dict:
        """Scores pre-encoded programs (core's step tokens) through POST /v2/models/tcl[/versions/v]/infer.

        tokens: [n][L][D] nested lists, a numpy array, or a flat list with
        `shape` = [n, L, D]; D must be the model's token_dim and L at most its
        max_len (model_metadata()). lengths: the real steps of each program;
        give them when rows are padded (padding past lengths[i] is ignored).
        Returns the protocol's answer: scores are
        answer["outputs"][0]["data"], higher is faster.
        """
        if hasattr(tokens, "shape") and hasattr(tokens, "tolist"):  # numpy, without importing it
            shape = list(tokens.shape)
            data = tokens.reshape(-1).tolist()
        elif shape is not None:
            data = list(tokens)
        else:
            data = tokens if isinstance(tokens, list) else list(tokens)
            shape = [len(data), len(data[0]) if data else 0, len(data[0][0]) if data and data[0] else 0]
        inputs: List[Dict[str, Any]] = [{"name": "tokens", "datatype": "FP32", "shape": list(shape), "data": data}]
        if lengths is not None:
            lens = [int(x) for x in (lengths.tolist() if hasattr(lengths, "tolist") else lengths)]
            inputs.append({"name": "lengths", "datatype": "INT64", "shape": [len(lens)], "data": lens})
        body: Dict[str, Any] = {"parameters": {"platform": platform}, "inputs": inputs}
        if request_id is not None:
            body["id"] = request_id
        return self._json("POST", self._v2_path(version) + "/infer", body)

    @staticmethod
    def _v2_path(version: Optional[int]) -> str:
        path = f"/v2/models/{V2_MODEL_NAME}"
        return path if version is None else f"{path}/versions/{int(version)}"


def _lines(records: Iterable[Union[str, bytes, Mapping[str, Any]]]) -> Iterator[bytes]:
    """Record lines as newline-terminated bytes, produced one at a time."""
    for r in records:
        if isinstance(r, bytes):
            line = r
        elif isinstance(r, str):
            line = r.encode("utf-8")
        else:
            line = json.dumps(r, separators=(",", ":")).encode("utf-8")
        yield line if line.endswith(b"\n") else line + b"\n"
