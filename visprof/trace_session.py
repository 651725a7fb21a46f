"""`with visprof.trace(): ...` — attribution for arbitrary user code.

    with visprof.trace(model) as session:
        model(x)                # anything: several models, pre/post-processing, ...
    print(session.table())      # GPU time by category and sub-category
    session.save("run.json.gz") # the recording, replayable by visprof.attribution.attribute
    session.chrome_trace("run.trace.json")

On a GPU it traces kernels with CUPTI; without one, or for a ``model`` whose weights are on the
CPU, it times each op with the host clock (``gpu=True``/``False`` chooses). ``model`` (optional)
names modules by their path in it; other modules by their class.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from visprof import attribution as attribution_mod
from visprof.capture import live
from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import CategoryTable, table_or_default
from visprof.base.errors import BadInputError
from visprof.native.tracer import KernelTracer
from visprof.passes.torch_noise import quiet_torch_noise
from visprof.passes.attributed import build_trace
from visprof.native.records import CapturedTrace


class TraceSession:
    def __init__(self, model: torch.nn.Module | None = None, table: CategoryTable | None = None,
                 gpu: bool | None = None):
        if model is not None and not isinstance(model, torch.nn.Module):
            named = f" {model!r}" if isinstance(model, str) else ""
            raise BadInputError(f"trace() takes the nn.Module the traced code runs, got a {type(model).__name__}{named} "
                                "(timm.create_model(name) builds one; visprof.profile(name) profiles a model by name)")
        if gpu is not None and not isinstance(gpu, bool):  # "no" is truthy: it had asked for the GPU
            raise BadInputError(f"trace(gpu=...) takes True, False or None (choose by the model), got {gpu!r}")
        _warn_of_replicas(model)
        self.table_ = table_or_default(table)
        self._model = model
        self._tracker: ModuleTracker | None = None
        self._capture: OpCapture | None = None
        use_gpu = _runs_on_gpu(model) if gpu is None else gpu
        if use_gpu and not torch.cuda.is_available():  # gpu=True asked: the remedy is in Python's terms
            from visprof.base.errors import NoGPUError
            from visprof.base.hardware import no_gpu_reason

            raise NoGPUError(no_gpu_reason(), cpu_remedy="trace with gpu=False for the host clock")
        self._tracer = KernelTracer() if use_gpu else None
        self.trace: CapturedTrace | None = None
        self.attribution: attribution_mod.Attribution | None = None

    def __enter__(self) -> "TraceSession":
        # Each block is a recording of its own: a session entered again (a notebook cell run
        # twice) had added the earlier block's ops to the new one, still called one iteration.
        if self._capture is not None:
            raise BadInputError("this trace session is recording already: one `with` block at a time")
        if live.recording_here():
            raise BadInputError("visprof.trace() inside another visprof.trace() block: each op would be timed with "
                                "the outer block's per-op work inside it; trace one block at a time")
        self.trace = self.attribution = None
        self._tracker = ModuleTracker(self._model)
        # FLOPs and bytes are counted after each op's end, outside its timed span (as the roles
        # are): without them a trace's rows said 0 FLOPs for every convolution and GEMM
        self._capture = OpCapture(self._tracker, self.table_, structure=True, flops=True, backward=True)
        if self._tracer:
            self._tracer.start()
        self._quiet = contextlib.ExitStack()
        try:
            # torch's warning that a compiled module runs under global hooks is about visprof's hooks
            self._quiet.enter_context(quiet_torch_noise())
            self._tracker.__enter__()
            self._capture.__enter__()
        except BaseException:  # a Ctrl-C between the two had left the tracker's global hooks for good
            try:
                self._tracker.__exit__(None, None, None)
            finally:
                if self._tracer:
                    self._tracer.stop()
                self._capture = None
                self._quiet.close()
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
                capture, tracker, self._capture, self._tracker = self._capture, self._tracker, None, None
                self._quiet.close()
        records = self._tracer.records if self._tracer else None
        self.trace = build_trace(records, capture, tracker, iterations=1)
        self.attribution = attribution_mod.attribute(self.trace, self.table_)
        earlier = capture.backward_of_an_earlier_forward
        if earlier:  # their attention backward had read as linear and activation, without a word
            _warn(f"trace(): {earlier} backward op(s) differentiate forward ops that ran before the block, so they are "
                  "classified by their op names alone (an attention's backward reads as linear and activation): put "
                  "the forward inside the block for their modules and roles")
        if self._tracer is None and tracker.has_compiled:
            # coverage says 1.0 of the ops seen: a block whose fused work was 30% of its time had said nothing
            _warn("trace(): a torch.compile'd model ran on the CPU, where Inductor's generated C++ kernels "
                  "have no op: the trace holds only the ops compiled code calls (its GEMMs, convolutions, fallbacks), "
                  "not the fused work. Run the eager model in the block for a breakdown of all of it, or profile(model, "
                  "compile=True) on a GPU, where fused kernels are attributed by name")
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

        attribution = self._need()
        if self.trace.measurement == "gpu" and not len(self.trace.kernels):
            return (f"(no GPU kernel ran inside the block, {len(self.trace.ops):,} ops: code on the CPU is timed "
                    "with visprof.trace(model on the CPU) or visprof.trace(gpu=False))")
        return format_categories(attribution.category_rows(), cpu=self.trace.measurement == "cpu",
                                 empty="(no op that takes time ran inside the block, on this thread: nothing to break "
                                       "down; ops on other threads are not traced)")

    def save(self, path: str | Path) -> None:
        self._need()
        self.trace.save(path)

    def chrome_trace(self, path: str | Path) -> None:
        from visprof.report.chrome_trace import to_chrome_trace

        to_chrome_trace(self.trace, self._need(), path)

    def _need(self) -> attribution_mod.Attribution:
        if self.attribution is None:
            raise BadInputError("the trace is available after the `with visprof.trace()` block ends")
        return self.attribution


def _warn_of_replicas(model: torch.nn.Module | None) -> None:
    """A warning for a DataParallel model over several GPUs: its forward runs each GPU's replica on
    a thread of its own (torch's parallel_apply), and a trace records the ops of the thread that
    entered it (its dispatch mode is thread-local), so the replicas' ops would go unattributed."""
    if isinstance(model, torch.nn.DataParallel) and len(model.device_ids) > 1:
        import warnings

        from visprof.base.errors import VisprofWarning

        warnings.warn(VisprofWarning(
            f"trace(): this DataParallel runs its forward on {len(model.device_ids)} GPUs, each replica on a thread of "
            "its own, and a trace records the ops of the thread that entered it: the replicas' ops would not be "
            "attributed. Trace model.module on one GPU, or trace in each process of a DistributedDataParallel run"),
            stacklevel=4)  # the caller of visprof.trace()


def _warn(text: str) -> None:
    """A VisprofWarning at the caller of the ``with`` block's exit (the user's line)."""
    import warnings

    from visprof.base.errors import VisprofWarning

    warnings.warn(VisprofWarning(text), stacklevel=3)


def _runs_on_gpu(model: torch.nn.Module | None) -> bool:
    """CUPTI for a model on a GPU, the host clock for one on the CPU: on a machine with a GPU, a
    CPU model traced with CUPTI would show no kernels at all. Without a model (or one with no
    weights), whether there is a GPU decides."""
    if not torch.cuda.is_available():
        return False
    if model is not None:
        tensor = next(iter(model.parameters()), None)
        tensor = tensor if tensor is not None else next(iter(model.buffers()), None)
        if tensor is not None:
            return tensor.is_cuda
    return True


def trace(model: torch.nn.Module | None = None, *, table: CategoryTable | None = None,
          gpu: bool | None = None) -> TraceSession:
    return TraceSession(model, table, gpu)
