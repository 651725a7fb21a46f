"""``visprof profile MODEL --nvtx-only``: the model with visprof's NVTX ranges and nothing else.

No CUPTI (Nsight Systems or Nsight Compute own it), no hooks in the measured iterations:
the same C++ op replay as the attributed pass pushes each op's category and op ranges and
the module ranges between ops (visprof/capture/nvtx_scheme.py). Exactly the measured
iterations run between ``cudaProfilerStart`` and ``cudaProfilerStop``, so

    nsys profile --capture-range=cudaProfilerApi ... visprof profile MODEL --nvtx-only
    ncu --profile-from-start off --nvtx --nvtx-include "visprof@attention/" ... visprof profile MODEL --nvtx-only

see only them, not the model's construction, the template forward or the warm-up.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch

from visprof.base.options import regime_label
from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import CategoryTable
from visprof.capture.nvtx_scheme import RUN_MARK_PREFIX
from visprof.result import LatencyStats

DEFAULT_ITERATIONS = 10


@dataclass
class NvtxRun:
    """What an ``--nvtx-only`` run did (it measures nothing a profile would report as clean)."""

    model: str
    batch_size: int
    img_size: int
    precision: str
    device: str
    warmup: int
    iterations: int
    ops_per_iteration: int
    ranged_ops: int  # ops per iteration that pushed their category and op ranges
    folded_ops: int  # kernel-less ops (allocations, views) inside the range of the op that wraps them
    op_capture: str  # "aten observer" or "python dispatch mode (why)"
    profiler_api: bool  # cudaProfilerStart/Stop were issued around the measured iterations
    latency_ms: LatencyStats | None  # CUDA events (host clock on the CPU) around each iteration
    warnings: list[str] = field(default_factory=list)
    template: list[tuple] = field(default_factory=list, repr=False)  # (op name, module, category key) per op
    regime: str = ""  # "bf16 model cast, inference_mode" (options.regime_label); the precision alone if empty

    def summary(self) -> str:
        lines = [
            f"visprof profile --nvtx-only: {self.model} · batch {self.batch_size} · {self.img_size}px · "
            f"{self.regime or self.precision} · {self.device}",
            f"NVTX ranges only (no CUPTI): {self.iterations} measured iteration(s) after {self.warmup} warm-up"
            + (", between cudaProfilerStart/Stop" if self.profiler_api else " (no cudaProfilerStart/Stop on the CPU)"),
            f"ops per iteration: {self.ops_per_iteration}, {self.ranged_ops} with category and op ranges"
            + (f", {self.folded_ops} kernel-less (allocations, views) inside their wrapper op's range"
               if self.folded_ops else "") + f" (op capture: {self.op_capture})",
        ]
        if self.latency_ms is not None:
            lat = self.latency_ms
            clock = "CUDA events" if self.profiler_api else "host clock"
            lines.append(f"latency with ranges ({clock}): median {lat.median:.3f} ms  p10 {lat.p10:.3f}  "
                         f"p90 {lat.p90:.3f}")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def run_nvtx_only(model: str | torch.nn.Module, *, batch_size: int | None = None, img_size: Any = None,
                  precision: str | None = None, channels_last: bool | None = None, device: str | None = None,
                  grad_mode: str | None = None, autocast: str | None = None, warmup: int | None = None,
                  iterations: int | None = None, table: CategoryTable | None = None,
                  category_file: str | None = None, progress: bool = True,
                  ranged_ops: Callable[[list[tuple]], Iterable[int]] | None = None) -> NvtxRun:
    """Runs `model` under visprof's NVTX ranges only; see the module doc.

    ``ranged_ops`` (for ``visprof ncu``) picks, from the template's ops (op name, module index,
    category key), the positions that push their category and op ranges; by default all do."""
    from visprof.base.errors import VisprofError
    from visprof.base.progress import Progress
    from visprof.passes.setup import check_count, make_runner, raised_in_a_forward, resolve_run
    from visprof.passes.user_module import kept_as_given

    iterations = DEFAULT_ITERATIONS if iterations is None else iterations
    check_count("iterations", iterations, 1)
    check_count("warmup", warmup, 0)
    setup = resolve_run(model, batch_size=batch_size, img_size=img_size, precision=precision,
                        channels_last=channels_last, device=device, grad_mode=grad_mode, autocast=autocast,
                        table=table, category_file=category_file)
    spec, config, table = setup.spec, setup.config, setup.table
    with kept_as_given(spec.user_state, spec.module), Progress(3, spec.name, enabled=progress) as bar:
        bar.step("loading model")
        runner = make_runner(spec, config)
        try:
            bar.step("warm-up and template forward")
            run = _run(runner, spec, table, warmup, iterations, ranged_ops, bar)
            run.warnings[:0] = setup.notes  # e.g. an --autocast that does nothing at fp32
        except VisprofError:
            raise
        except Exception as exc:
            if not raised_in_a_forward(exc):
                raise
            raise spec.forward_error(config.batch_size, exc) from exc
        finally:
            runner.close()
    return run


def _run(runner, spec, table, warmup, iterations, ranged_ops, bar) -> NvtxRun:
    from visprof.native import native
    from visprof.native.aten_observer import load_observer
    from visprof.native.timer import EventTimer
    from visprof.passes.timing import warm_up
    from visprof.capture.replay import ReplayCapture

    config = runner.config
    cuda = config.is_cuda
    warmed = warm_up(runner, warmup)
    tracker = ModuleTracker(spec.module)
    template = OpCapture(tracker, table, nvtx=False, flops=True)  # FLOPs go into the run mark
    with tracker, template:
        runner()
        runner.sync()
    capture = OpCapture(tracker, table, nvtx=True, template=template, model_name=spec.name)
    ops = [(str(func), module, _category_key(table, func, module, attrs, tracker))
           for func, module, attrs, _ in capture.template_ops()]
    ranged = list(range(len(ops))) if ranged_ops is None else sorted(set(ranged_ops(ops)))
    if ranged_ops is not None:
        capture.restrict_nvtx(ranged)

    def forward() -> None:
        runner()
        runner.sync()

    observer, why_not = load_observer()
    replay, why_not = (ReplayCapture.prepare(observer, capture, forward, iterations, timestamps=False)
                       if observer else (None, why_not))
    method = "aten observer" if replay is not None else f"python dispatch mode ({why_not})"
    folded = set(replay.folded_ops) if replay is not None else set()
    measured = replay if replay is not None else capture

    bar.step(f"{iterations} measured iteration(s) with NVTX ranges")
    timer = EventTimer(runner.device.index if cuda else None)
    stream = runner.stream()
    c = native()
    with measured:
        if cuda:
            torch.cuda.profiler.start()  # cudaProfilerStart: nsys/ncu capture from here
        try:
            c.nvtx.mark(RUN_MARK_PREFIX + json.dumps(_run_settings(spec, config, iterations, capture), sort_keys=True))
            for iteration in range(iterations):
                measured.start_iteration(iteration)
                interval = timer.start(stream)
                runner()
                timer.stop(interval, stream)
                runner.sync()
        finally:
            if cuda:
                torch.cuda.profiler.stop()
    warnings = []
    diverged = getattr(measured, "diverged_iterations", None)
    if diverged:
        warnings.append(f"iteration(s) {', '.join(map(str, diverged))} ran a different op sequence than the first "
                        "forward (data-dependent code): their ops after the change have no NVTX ranges")
    samples = [ns / 1e6 for ns in timer.elapsed_ns()]
    return NvtxRun(model=spec.name, batch_size=config.batch_size, img_size=spec.input_size[1],
                   precision=config.precision, device=config.device, warmup=warmed, iterations=iterations,
                   ops_per_iteration=len(ops), ranged_ops=len(set(ranged) - folded),
                   folded_ops=len(folded), op_capture=method, profiler_api=cuda,
                   latency_ms=LatencyStats.from_samples(samples), warnings=warnings, template=ops,
                   regime=regime_label(config))


def _category_key(table: CategoryTable, func, module: int, attrs, tracker: ModuleTracker) -> str:
    return table.classify_op(str(func), tracker.classes(module), attrs).key


def _run_settings(spec, config, iterations: int, capture: OpCapture) -> dict:
    """The run's settings, written as an NVTX mark for `visprof nsys import`: the latency
    regime (grad mode, autocast), and the template's op names, costs ([FLOPs, bytes, weight
    bytes, tensor-core precision] per op, for the roofline) and attributes (a convolution's
    groups and kernel size, for its op type; a weight cast): op j of iteration i has the id
    (payload) first_op_id + i * len(op_names) + j."""
    from visprof import __version__
    from visprof.capture.op_costs import NO_COST
    from visprof.capture.replay import FIRST_ID

    template = capture.template_ops()
    return {"op_names": [str(func) for func, *_ in template],
            "op_costs": [list(cost or NO_COST) for *_, cost in template],
            "op_attrs": [attrs or {} for _, _, attrs, _ in template],
            "first_op_id": FIRST_ID, "model": spec.name, "source": spec.source, "param_count": spec.param_count,
            "batch_size": config.batch_size, "img_size": spec.input_size[1],
            "input_shape": list(spec.input_shape(config.batch_size)), "precision": config.precision,
            "grad_mode": config.grad_mode, "autocast": config.autocast,
            "channels_last": config.channels_last, "device": config.device, "iterations": iterations,
            "visprof": __version__, "time": time.time()}
