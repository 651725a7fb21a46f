"""Pass 2: the attributed pass. The CUPTI tracer (with RUNTIME/DRIVER activity, without
which CUPTI emits no external-correlation records) plus op capture: every kernel carries the
id of the op that launched it, which links it to a module and a category.

On the CPU the same pass times each op with the host clock instead, and records one
pseudo-kernel (KIND_CPU_OP) per op, so attribution runs unchanged on both."""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, replace

import numpy as np

from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import CategoryTable
from visprof.native.aten_observer import load_observer
from visprof.native.timer import EventTimer
from visprof.native.tracer import KernelTracer, SpanCheck, TraceRecords, span_check
from visprof.passes.runner import ModelRunner
from visprof.passes.timing import warm_up
from visprof.native.records import KERNEL_DTYPE, KIND_CPU_OP, CapturedTrace, duration_sum_ns, rows_by_iteration
from visprof.capture.replay import ReplayCapture
from visprof.passes.kernel_sequence import KernelSequence, sequence_of


@dataclass
class AttributedResult:
    trace: CapturedTrace
    wall_ns_per_iteration: list[int]  # host wall time of each captured iteration (sync included)
    span: SpanCheck | None
    dropped: int = 0
    warnings: list[str] = field(default_factory=list)
    # The template forward's capture (op modules, categories, roles by position), which the
    # memory pass reuses to tag allocations; None for a compiled model on a GPU.
    template: OpCapture | None = None
    sequence: KernelSequence | None = None  # what each captured iteration launched (GPU path)

    @property
    def kernel_ns(self) -> float:
        """Kernel-time sum per iteration (median over iterations; GPU path only)."""
        return float(np.median(self.trace.meta["kernel_ns_per_iteration"]))


def api_activity_kinds() -> int | None:
    """Tracer kinds for the attributed pass, by VISPROF_API_TRACE:

    callback  (default) no API records and no CUPTI push per op: a CUPTI callback on the
              work-submitting calls reads the op id that op_enter leaves in a thread-local.
              Validated on the H200 (bench/results/h200-callback-1): 100% of a ResNet-50
              forward's kernels linked, and op_enter/op_exit with NVTX cost 238 ns per op
              against 619 ns for CUPTI's external-id push+pop alone. When CUPTI's subscription
              is held by an idle tool (after torch.profiler) the tracer falls back to `all`.
    all       every runtime and driver API call is recorded and each op pushes a CUPTI
              external correlation id. Validated on all 12 reference models.
    work      only the calls that submit GPU work are recorded, with external ids (driver-call
              recording alone added ~3.8 ms per ResNet-50 batch). Linked 100% of a ResNet-50
              forward's kernels on the H200 (bench/results/h200-observer-1).
    """
    import os

    from visprof.native import native

    mode = os.environ.get("VISPROF_API_TRACE", "callback")
    t = native().tracer
    kinds = {
        "all": None,
        "work": t.KERNELS | t.MEMCPY | t.MEMSET | t.EXTERNAL_CORRELATION | t.WORK_APIS,
        "callback": t.KERNELS | t.MEMCPY | t.MEMSET | t.CALLBACK_CORRELATION,
    }
    if mode not in kinds:
        from visprof.base.errors import BadInputError

        raise BadInputError(f"VISPROF_API_TRACE must be one of {', '.join(kinds)}, got {mode!r}")
    return kinds[mode]


def run_attributed_pass(runner: ModelRunner, table: CategoryTable, iterations: int = 5, *,
                        nvtx: bool = True, settle: int = 0) -> AttributedResult:
    """Runs `iterations` captured forwards after one more that only counts FLOPs (its
    shapes are the same every iteration, so FLOPs are counted once and copied).

    ``settle``: forwards run first, uncaptured, where no earlier pass warmed the model up. A model's
    first forwards may run other code than its later ones: TorchScript's executor profiles a graph
    on its first call and optimizes it for the next, so a fresh frozen module's template matched no
    later forward (every op "differed from the first forward", its FLOPs uncounted); torch.compile
    compiles on its first.

    The captured iterations link ops from C++ (ReplayCapture) where the ATen observer is
    available and its recording aligns with the template; otherwise, or when an iteration
    departs from the recording, from the Python dispatch mode (OpCapture).

    A torch.compile'd model on a GPU is traced without op capture: a dispatch mode makes
    torch.compile fall back to eager, which would attribute a different program than the
    one timed. Its kernels are linked to the aten ops and modules Inductor made them from
    (visprof.capture.compiled), or classified by their names where that provenance is missing."""
    cuda = runner.config.is_cuda
    compiled = runner.config.compile and cuda
    if settle:
        warm_up(runner, settle)
    tracker = ModuleTracker(runner.spec.module)
    warnings = []
    template = None
    if compiled:
        captures = [OpCapture(tracker, table, nvtx=False)]  # never entered: records no op
        method = "none (kernel names)"
    else:
        # torch.compile on the CPU: op capture runs the model eagerly, so it runs the eager model.
        with runner.eager() if runner.config.compile else contextlib.nullcontext():
            template, captures, method = _op_captures(runner, tracker, table, iterations, nvtx)
        if runner.config.compile:
            warnings.append("torch.compile on the CPU: op capture runs the model eagerly, so the breakdown is "
                            "of the eager model")
    for capture in captures:
        with runner.eager() if runner.config.compile and not compiled else contextlib.nullcontext():
            records, walls, bounds, tracer, span, marks = _captured_iterations(runner, capture, iterations,
                                                                                         compiled)
        diverged = getattr(capture, "diverged_iterations", None)
        if not diverged:
            break
        method = "python dispatch mode (the op sequence changed between iterations)"
        warnings.append(f"iteration(s) {', '.join(map(str, diverged))} ran a different op sequence than the first "
                        "forward (data-dependent code); the attributed pass ran again with op-by-op capture")

    ops = None
    if compiled and records is not None:
        ops, method = _link_compiled(runner, records, tracker, bounds, table, warnings)
    trace = build_trace(records, capture, tracker, iterations, ops=ops)
    trace.meta["op_capture"] = method
    if marks:
        trace.meta["span_marks_ns"] = marks
    if ops is not None:
        trace.meta["inductor_conv_layout"] = runner.compile_recorder.program.conv_layout()
    if capture.misaligned:
        warnings.append(f"{capture.misaligned} ops differed from the first forward (data-dependent code); "
                        "they were classified without their module and their FLOPs are not counted")
    if records is None:
        return AttributedResult(trace, walls, None, 0, warnings, template)
    per_iteration = rows_by_iteration(records.kernel_rows, bounds)
    sequence = sequence_of(per_iteration, records.kernel_names)
    trace.meta.update(kernel_ns_per_iteration=[duration_sum_ns(rows) for rows in per_iteration],
                      shared_subscription=tracer.shared_subscription)
    if tracer.shared_subscription:
        warnings.append("CUPTI was still subscribed by an idle tool (a finished torch.profiler session); "
                        "visprof traced alongside it")
    return AttributedResult(trace, walls, span, records.dropped, warnings, template, sequence)


def _op_captures(runner: ModelRunner, tracker: ModuleTracker, table: CategoryTable, iterations: int, nvtx: bool):
    """The template forward (with dataflow: roles are decided from it), then the captures for
    the timed iterations, C++ first where it aligns. Returns (template, captures, method)."""
    template = OpCapture(tracker, table, nvtx=False, flops=True, structure=True, inputs=(runner.input,))
    with tracker, template:
        runner()
        runner.sync()
    # The timed iterations run without module hooks: modules, categories and FLOPs come
    # from the template by position (see OpCapture), which keeps per-op work to a minimum.
    python_capture = OpCapture(tracker, table, nvtx=nvtx, template=template, model_name=runner.spec.name)
    # torch.compile on the CPU: the dispatch mode runs the model eagerly, and so must the replay.
    replay, why_not = (None, "") if runner.config.compile else _replay_capture(runner, python_capture, iterations)
    captures = [python_capture] if replay is None else [replay, python_capture]
    method = "python dispatch mode" if replay is None else "aten observer"
    if why_not:
        method += f" ({why_not})"
    return template, captures, method


def _link_compiled(runner: ModelRunner, records: TraceRecords, tracker: ModuleTracker, bounds, table: CategoryTable,
                   warnings: list[str]):
    """Ops for a compiled run's kernels from Inductor's provenance; (ops or None, method)."""
    from visprof.capture.compiled import attribute_rows

    recorder = runner.compile_recorder
    warnings.extend(recorder.warnings if recorder is not None else [])
    program = recorder.program if recorder is not None else None
    if program is None or not program.calls:
        if recorder is not None and recorder.supported:
            warnings.append("torch.compile: no kernel provenance was recorded (the model was compiled before, or "
                            "by another backend); kernels are attributed by their names only")
        return None, "none (kernel names)"
    if not records.kernels.flags.writeable:
        records.kernels = records.kernels.copy()  # their external ids are filled in
    ops, stats = attribute_rows(records.kernels, records.kernel_names, program, tracker.modules, bounds, table)
    share = stats["linked_ns"] / stats["ns"] if stats["ns"] else 1.0
    if share < 0.999:
        warnings.append(f"torch.compile: {share:.1%} of kernel time was linked to the ops and modules Inductor made "
                        f"its kernels from; the rest ({stats['rows'] - stats['linked_rows']} kernels) is attributed "
                        "by kernel names")
    return ops, f"inductor provenance ({len(program.calls)} kernel calls, {share:.1%} of kernel time linked)"


def _replay_capture(runner: ModelRunner, python_capture: OpCapture, iterations: int) -> tuple[ReplayCapture | None, str]:
    """The C++ capture for the timed iterations, or (None, why not)."""
    observer, why_not = load_observer()
    if observer is None:
        return None, f"ATen observer unavailable: {why_not}"

    def forward() -> None:
        runner()
        runner.sync()

    return ReplayCapture.prepare(observer, python_capture, forward, iterations)


# The span check compares the traced kernels' span with a CUDA-event pair around the loop. The
# two must start at the same moment. With an idle GPU, the start event fires as soon as it is
# recorded, while the first traced kernel starts only when the host gets to launch it. On the
# H200 (span marks in the recordings, bench/results/h200-s16-call1) the first launch after
# CUPTI starts tracing blocks the host for 1.2-12 ms, and the way from the start event to the
# first op is 0.2 ms more (0.22-0.46 ms of event span the kernels never saw: an eager TinyHybrid
# failed the check, host-bound at 1.25 ms an iteration). So: a lead kernel takes CUPTI's first
# launch before anything is timed; then the start event is recorded and a marker kernel queued
# right behind it, and the kernel span counts from the marker's start. Both spans then hold the
# host's way to the first launch, whatever its length (Dynamo's guards on a compiled model).
# Lead and marker are dropped from the records after that: they are no work of the model.
LEAD_MARKER_CYCLES = 1000  # ~0.5 us: lead and marker only have to be there
MARKER_KERNEL = "spin_kernel"  # torch.cuda._sleep's kernel (ATen/cuda/Sleep.cu)


def split_lead_marker(records: TraceRecords | None) -> tuple[TraceRecords | None, int | None]:
    """(``records`` without the lead and marker kernels that ``_captured_iterations`` queued
    first, the marker's start ns), or (``records``, None) when the first kernel is not one."""
    if records is None or len(records.kernels) == 0:
        return records, None
    marker_ids = [i for i, name in enumerate(records.kernel_names) if MARKER_KERNEL in name]
    order = np.argsort(records.kernels["start_ns"], kind="stable")
    lead = 0  # the leading run of spin kernels: the lead, then the marker
    while lead < min(2, len(order)) and int(records.kernels["name_id"][order[lead]]) in marker_ids:
        lead += 1
    if lead == 0:
        return records, None
    marker_start = int(records.kernels["start_ns"][order[lead - 1]])
    keep = np.ones(len(records.kernels), dtype=bool)
    keep[order[:lead]] = False
    records.kernels = records.kernels[keep]
    return records, marker_start


def marker_span_check(records: TraceRecords, marker_start_ns: int | None, event_span_ns: int) -> SpanCheck:
    """The span check from the marker's start to the last kernel's end (see LEAD_MARKER_CYCLES);
    from the first kernel when there was no marker."""
    check = span_check(records, event_span_ns)
    if marker_start_ns is None or len(records.kernel_rows) == 0:
        return check
    return replace(check, kernel_span_ns=int(records.kernel_rows["end_ns"].max()) - marker_start_ns)


def _captured_iterations(runner: ModelRunner, capture, iterations: int, names_only: bool):
    """Runs the captured iterations under the tracer (GPU) or the host clock (CPU).
    Returns (records or None, wall ns per iteration, (begin, end) per iteration, tracer,
    the span check (None on the CPU), host-clock marks of the span check's steps).
    The marks (the lead's launch begun, the start event recorded, the marker queued, the stop
    event recorded) are on the tracer's clock, so a recording shows where a gap between the
    two spans lies."""
    walls: list[int] = []
    bounds: list[tuple[int, int]] = []
    marks: dict[str, int] = {}
    cuda = runner.config.is_cuda
    tracer = KernelTracer(kinds=api_activity_kinds()) if cuda else None
    timer = EventTimer(runner.device.index) if cuda else None
    stream = runner.stream()
    if tracer is not None:
        tracer.start()
    try:
        with contextlib.nullcontext() if names_only else capture:
            # The event pair brackets the iterations and nothing else: the capture's own set-up
            # and tear-down (host work, no kernels) stay outside, or the span check would count
            # them against a model whose iterations are short.
            whole = None
            if timer is not None:
                import torch

                marks["lead_queued_from"] = time.perf_counter_ns()
                with torch.cuda.device(runner.device):
                    torch.cuda._sleep(LEAD_MARKER_CYCLES)  # the lead: CUPTI's slow first launch
                    whole = timer.start(stream)
                    marks["start_event_recorded"] = time.perf_counter_ns()
                    torch.cuda._sleep(LEAD_MARKER_CYCLES)  # the marker
                marks["marker_queued"] = time.perf_counter_ns()
            for iteration in range(iterations):
                capture.start_iteration(iteration)
                begin = time.perf_counter_ns()
                runner()
                if timer is not None and iteration == iterations - 1:
                    timer.stop(whole, stream)
                    marks["stop_event_recorded"] = time.perf_counter_ns()
                runner.sync()
                end = time.perf_counter_ns()
                walls.append(end - begin)
                bounds.append((begin, end))
        runner.sync()
    finally:
        records, marker_start_ns = split_lead_marker(tracer.stop() if tracer is not None else None)
    span = marker_span_check(records, marker_start_ns, int(timer.elapsed_ns()[0])) if timer is not None else None
    return records, walls, bounds, tracer, span, marks


def build_trace(records: TraceRecords | None, capture: OpCapture, tracker: ModuleTracker,
                iterations: int, ops: list | None = None) -> CapturedTrace:
    """The recording of a captured run: GPU kernels from the tracer, or (records None, the
    CPU path) one host-timed row per op. `ops` replaces the capture's (a compiled run)."""
    ops = capture.to_records() if ops is None else ops
    if records is not None:
        trace = CapturedTrace(records.kernels, records.kernel_names, ops, tracker.modules, "gpu", iterations)
        trace.meta.update(dropped=records.dropped, external_correlations=records.external_correlations)
        return trace
    names = sorted({op.name for op in ops})
    index = {name: i for i, name in enumerate(names)}
    rows = np.zeros(len(ops), dtype=KERNEL_DTYPE)
    rows["kind"] = KIND_CPU_OP
    rows["name_id"] = [index[op.name] for op in ops]
    rows["start_ns"] = [op.cpu_start_ns for op in ops]
    rows["end_ns"] = [op.cpu_end_ns for op in ops]
    rows["device"] = -1
    rows["external_id"] = [op.external_id for op in ops]
    return CapturedTrace(rows, names, ops, tracker.modules, "cpu", iterations)
