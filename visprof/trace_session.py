"""`with visprof.trace(): ...` — attribution for arbitrary user code.

    with visprof.trace(model) as session:
        model(x)                # anything: several models, pre/post-processing, ...
    print(session.table())      # GPU time by category and sub-category
    session.save("run.json.gz") # the recording, replayable by visprof.attribution.attribute
    session.chrome_trace("run.trace.json")

On a GPU it traces kernels with CUPTI; without one, it times each op with the host clock.
`model` (optional) names modules by their path in it; other modules by their class.
"""
from __future__ import annotations

from pathlib import Path

import torch

from visprof import attribution as attribution_mod
from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import CategoryTable, default_table
from visprof.native.tracer import KernelTracer
from visprof.passes.attributed import build_trace
from visprof.native.records import CapturedTrace


class TraceSession:
    def __init__(self, model: torch.nn.Module | None = None, table: CategoryTable | None = None,
                 gpu: bool | None = None):
        if model is not None and not isinstance(model, torch.nn.Module):
            from visprof.base.errors import BadInputError

            named = f" {model!r}" if isinstance(model, str) else ""
            raise BadInputError(f"trace() takes the nn.Module the traced code runs, got a {type(model).__name__}{named} "
                                "(timm.create_model(name) builds one; visprof.profile(name) profiles a model by name)")
        self.table_ = table or default_table()
        self._tracker = ModuleTracker(model)
        self._capture = OpCapture(self._tracker, self.table_, structure=True)
        use_gpu = torch.cuda.is_available() if gpu is None else gpu
        self._tracer = KernelTracer() if use_gpu else None
        self.trace: CapturedTrace | None = None
        self.attribution: attribution_mod.Attribution | None = None

    def __enter__(self) -> "TraceSession":
        if self._tracer:
            self._tracer.start()
        try:
            self._tracker.__enter__()
            self._capture.__enter__()
        except BaseException:
            if self._tracer:
                self._tracer.stop()
            raise
        return self

    def __exit__(self, *exc) -> bool:
        # Unwind in reverse, each step even if an earlier one raised: no range, hook or
        # tracer may outlive the block.
        try:
            self._capture.__exit__(*exc)
        finally:
            try:
                self._tracker.__exit__(*exc)
            finally:
                if self._tracer:
                    if torch.cuda.is_available():
                        torch.cuda.synchronize()
                    self._tracer.stop()
        records = self._tracer.records if self._tracer else None
        self.trace = build_trace(records, self._capture, self._tracker, iterations=1)
        self.attribution = attribution_mod.attribute(self.trace, self.table_)
        return False

    def __repr__(self) -> str:
        if self.trace is None:
            return "<TraceSession: recording until its `with` block ends>"
        return f"<TraceSession {self.trace!r}: session.table() prints the time by category>"

    def summary(self):
        return attribution_mod.summarize(self._need())

    def category_rows(self):
        return self._need().category_rows()

    def table(self) -> str:
        from visprof.report.table import format_categories

        return format_categories(self.category_rows(), cpu=self.trace.measurement == "cpu")

    def save(self, path: str | Path) -> None:
        self._need()
        self.trace.save(path)

    def chrome_trace(self, path: str | Path) -> None:
        from visprof.report.chrome_trace import to_chrome_trace

        to_chrome_trace(self.trace, self._need(), path)

    def _need(self) -> attribution_mod.Attribution:
        if self.attribution is None:
            raise RuntimeError("the trace is available after the `with visprof.trace()` block ends")
        return self.attribution


def trace(model: torch.nn.Module | None = None, *, table: CategoryTable | None = None,
          gpu: bool | None = None) -> TraceSession:
    return TraceSession(model, table, gpu)
