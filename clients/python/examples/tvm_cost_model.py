"""EXAMPLE ONLY — a TVM auto-scheduler cost model backed by tcld.

Not run in CI (TVM is not installed there); the test suite only compiles this
file. It shows where TclClient plugs into TVM's auto-scheduler:

  * predict(): the candidate states of a search round become tcld programs
    ({"workload_key", "steps"}, steps as TVM serializes them in a record) and
    are ranked by POST /v1/predict on this machine's platform;
  * update(): the measured (MeasureInput, MeasureResult) pairs become record
    lines, uploaded as measurements, so the next training or distillation
    job of the lineage sees them.

Usage, with TVM installed and a platform registered in tcld:

    from tvm import auto_scheduler
    model = TclCostModel(TclClient(), platform="x86-16c")
    policy = auto_scheduler.SketchPolicy(task, program_cost_model=model)
    task.tune(auto_scheduler.TuningOptions(num_measure_trials=200,
              measure_callbacks=[auto_scheduler.RecordToFile("log.json")]),
              search_policy=policy)
"""

from __future__ import annotations

import json
import os
import sys
from typing import List, Sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tcl_client import TclClient, TclError  # noqa: E402

try:  # TVM is optional: without it this module still imports (and compiles).
    from tvm.auto_scheduler.cost_model import PythonBasedModel
    from tvm.auto_scheduler.measure import MeasureInput
    from tvm.auto_scheduler.measure_record import dump_record_to_string
except ImportError:  # pragma: no cover - the CI machine has no TVM
    PythonBasedModel = object  # type: ignore[misc,assignment]
    MeasureInput = None  # type: ignore[assignment]
    dump_record_to_string = None  # type: ignore[assignment]


class TclCostModel(PythonBasedModel):  # type: ignore[misc,valid-type]
    """An auto_scheduler cost model whose scores come from tcld.

    tcl: a TclClient (token of scope write, for the uploads); platform: the
    name this machine is registered under in tcld; model: the alias or
    version to rank with. A failed predict falls back to zeros (TVM then
    measures in its own order) rather than stopping the tuning run.
    """

    def __init__(self, tcl: TclClient, platform: str, model: str = "production", batch: int = 4096):
        super().__init__()
        self.tcl = tcl
        self.platform = platform
        self.model = model
        self.batch = batch

    def update(self, inputs: Sequence["MeasureInput"], results: Sequence[object]) -> None:
        """Uploads the measured pairs as TVM record lines (failed ones too: tcld stores and counts them)."""
        lines = [dump_record_to_string(inp, res) for inp, res in zip(inputs, results)]
        if lines:
            self.tcl.upload_measurements(self.platform, lines)

    def predict(self, task: object, states: Sequence[object]) -> List[float]:
        """One score per state, higher is faster (TVM's convention too)."""
        programs = [self._program(task, s) for s in states]
        scores: List[float] = []
        try:
            for start in range(0, len(programs), self.batch):
                answer = self.tcl.predict(self.platform, programs=programs[start:start + self.batch], model=self.model)
                scores.extend(answer["scores"])
        except TclError as e:
            print(f"tcl cost model: predict failed ({e}); using zeros", file=sys.stderr)
            return [0.0] * len(states)
        return scores

    def predict_stages(self, task: object, states: Sequence[object]) -> List[float]:
        """Per-stage scores are not modelled; TVM's sketch policy only needs predict()."""
        raise NotImplementedError("tcld scores whole programs")

    @staticmethod
    def _program(task: object, state: object) -> dict:
        # A serialized MeasureInput is the "i" field of a record:
        # [[workload_key, target, ...], [[], [steps...]]].
        record_input = json.loads(MeasureInput(task, state).serialize()[0])
        return {"workload_key": task.workload_key, "steps": record_input[1][1]}  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(__doc__)
