"""visprof.profile(): the three passes, attribution, the self-checks, one result.

    result = visprof.profile("vit_base_patch16_224", batch_size=64, precision="bf16")
    print(visprof.report.table.render(result))

Data flows one way (docs/architecture.md): passes -> CapturedTrace -> attribution ->
ProfileResult. The result is all a report, a store or a comparison ever reads.
"""
from __future__ import annotations

import contextlib
import functools
import platform
import threading
import time
import warnings as warnings_module
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from visprof import attribution as attribution_mod
from visprof import result as R
from visprof.analysis import roofline
from visprof.attribution.categories import CategoryTable
from visprof.attribution.op_types import kernel_family_rows, launch_size_rows, op_type_rows
from visprof.base import hardware
from visprof.base.errors import (BadInputError, BrokenDependencyError, CuptiUnavailableError, OutOfMemoryError,
                                  VisprofError, VisprofWarning)
from visprof.base.options import passes_for
from visprof.base.progress import Progress
from visprof.base.spelling import option, options
from visprof.base.timm_import import import_timm
from visprof.capture import live
from visprof.native import native_info
from visprof.passes.attributed import AttributedResult, run_attributed_pass
from visprof.passes.memory import MemoryResult, run_memory_pass
from visprof.passes.kernel_sequence import KERNEL_TIME_TOLERANCE, isolated_time_ms, kernel_time_check, launch_difference
from visprof.passes.setup import check_counts, check_flag, is_oom, make_runner, raised_in_a_forward, resolve_run
from visprof.passes.timing import TimingResult, run_timing_pass
from visprof.passes.torch_noise import quiet_torch_noise
from visprof.passes.trace_only import TraceOnlyResult, run_trace_only_pass
from visprof.passes.user_module import kept_as_given

# Self-check tolerances (docs/measuring.md, the self-checks).
KERNEL_SUM_TOLERANCE = KERNEL_TIME_TOLERANCE  # the kernel-sum fallback (no sequences) uses the same
TRACE_ONLY_ITERATIONS = 10
# Forwards the attributed pass runs first where no timing pass warmed the model up (run_attributed_pass's settle)
SETTLING_FORWARDS = 2
PEAK_TOLERANCE = 0.02
SPAN_TOLERANCE = 0.05
MAX_UNATTRIBUTED = 0.005
# The memory pass's books against torch's own counters of the same forwards: both count the
# same allocator events (the books at the block sizes torch counts), so they agree to the byte
# unless an event was lost or the block mirror met a setting it does not model.
BOOKS_TOLERANCE = 0.01
# A regime note when weight casts take this share of GPU time or more.
CAST_NOTE_SHARE = 0.02
CAST_COPIES_NOTE_SHARE = 0.01  # of the peak: the cast copies a no_grad loop would also hold
MIB = 1 << 20


# One profile at a time per process: its timers, the ATen observer and the allocator hooks are the
# process's. A second profile() from another thread had failed inside the observer with a bare
# RuntimeError ("the visprof ATen observer is already running"). Reentrant: a profile may call one.
_PROFILE_RUNNING = threading.RLock()


def _one_at_a_time(run: Callable) -> Callable:
    @functools.wraps(run)
    def guarded(*args, **kwargs):
        if not _PROFILE_RUNNING.acquire(blocking=False):
            raise BadInputError("visprof.profile() while another profile runs in this process (on another thread): "
                                "its timers and op observer are the process's, and each would time the other's "
                                "work; profile one model at a time (a sweep runs models one after another)")
        try:
            return run(*args, **kwargs)
        finally:
            _PROFILE_RUNNING.release()
    return guarded


@_one_at_a_time
def profile(
    model: str | torch.nn.Module,
    *,
    batch_size: int | None = None,
    img_size: Any = None,
    in_chans: int | None = None,
    precision: str | None = None,
    channels_last: bool | None = None,
    compile: bool = False,
    device: str | None = None,
    grad_mode: str | None = None,
    autocast: str | None = None,
    warmup: int | None = None,
    iterations: int | None = None,
    passes: Sequence[str] | str | None = None,
    attributed_iterations: int = 5,
    trace_path: str | Path | None = None,
    recording_path: str | Path | None = None,
    table: CategoryTable | None = None,
    category_file: str | Path | None = None,
    progress: bool = True,
    top_modules: int = 15,
    search_batch: bool = True,
    on_trace: Callable[[Any, Any], None] | None = None,
) -> R.ProfileResult:
    """Profiles one model: latency, GPU time and peak memory by operator category.

    `model` is an nn.Module or a timm model name; a module of yours comes back as it was given
    (train/eval modes, device, memory layout; its Parameter objects are the same). `channels_last`:
    None (the default) runs a module in its own memory layout (channels-last where its convolution
    weights are) and a timm name NCHW; True or False runs that layout, with a note where a module's
    own is the other; result.config.channels_last says which ran. `in_chans`: the input channels of a
    module of yours, where visprof would guess them wrong (it takes the module's `in_chans`, its
    pretrained config's, else its first registered 2-D convolution's in_channels, a transposed one's too, else 3). `precision`
    is fp32, tf32, bf16 or fp16 (default bf16 on a GPU, fp32 on the CPU). The latency regime: `grad_mode`
    inference_mode (default, as timm's benchmark.py today) or no_grad; `autocast` per-forward (default, as timm's benchmark.py), whole-loop
    (autocast around all forwards: weight casts are cached) or model-cast (the model cast to
    bf16/fp16 up front); see visprof/passes/runner.py. `iterations=None` times until the
    median is stable. `passes` picks any of timing, attributed, memory; None (the default)
    runs all that the device can (on the CPU: not the memory pass, which needs a GPU; asking
    for it there is a BadInputError). `trace_path` writes the attributed pass as a
    Chrome/Perfetto trace; `recording_path` saves it as a CapturedTrace (.json.gz) that
    visprof.attribution.attribute replays. Both paths are checked before the run (neither may be
    `category_file`) and written atomically.
    `on_trace(trace, attribution)` receives the attributed pass's recording and attribution,
    for callers that write the trace later (the CLI prints the report first).
    On out of memory, `search_batch` looks for the largest batch that fits (on the CPU:
    estimates it) and names it in the OutOfMemoryError (a sweep that decays the batch itself
    turns it off).
    """
    started = time.perf_counter()
    if live.recording_here():
        raise BadInputError("visprof.profile() inside a visprof.trace() block: its timing would include the "
                            "trace's per-op work, and the trace would record the profile's own forwards; "
                            "profile outside the block")
    # top_modules before the run too: it is used only when the result is built
    check_counts(warmup=warmup, iterations=iterations, attributed_iterations=attributed_iterations,
                 top_modules=top_modules)
    # "no" is truthy: progress="no" had printed progress, search_batch="no" searched
    progress, search_batch = check_flag("progress", progress), check_flag("search_batch", search_batch)
    device = hardware.resolve_device(device)
    passes = passes_for(passes, "cuda" if device.startswith("cuda") else "cpu")
    trace_sink = _trace_sink(trace_path, recording_path, on_trace, category_file, passes)

    build_start = time.perf_counter()  # building the model counts: in a sweep it is part of every cell
    setup = resolve_run(model, batch_size=batch_size, img_size=img_size, precision=precision,
                        channels_last=channels_last, compile=compile, device=device, grad_mode=grad_mode,
                        autocast=autocast, table=table, category_file=category_file, in_chans=in_chans)
    spec, config, table, kind, notes = setup.spec, setup.config, setup.table, setup.kind, setup.notes
    if "timing" not in passes:  # each is the timing pass's alone: the result's config still records what was asked
        if warmup:
            notes.append(f"warmup={warmup} did nothing: it is the timing pass's warm-up, and that pass did not run "
                         f"(the attributed pass runs {SETTLING_FORWARDS} forwards before it records)")
        if iterations is not None:
            notes.append(f"iterations={iterations} did nothing: it is the timing pass's count, and that pass did not "
                         f"run (the attributed pass records attributed_iterations={attributed_iterations})")
    steps = 1 + len(passes) + (1 if "timing" in passes and kind == "cuda" else 0)
    # kept_as_given: a user's own module leaves as it came (modes, device, layout), however the run ends
    with kept_as_given(spec.user_state, spec.module), Progress(steps, spec.name, enabled=progress) as bar, \
            quiet_torch_noise():
        bar.step("loading model")
        runner = make_runner(spec, config, search_batch)
        try:  # from here on runner.close() puts the TF32 switches back, however the run ends
            build_s = time.perf_counter() - build_start
            sampler = hardware.ClockSampler(runner.device.index or 0) if kind == "cuda" else _NoSampler()
            with runner.session():
                outcome = _run_passes(runner, passes, table, warmup, iterations, attributed_iterations, bar, notes,
                                      sampler)
        except VisprofError:
            raise
        except Exception as exc:  # the model failed in a later pass (data-dependent code, OOM)
            # A forward at this batch already fit, so a search or an estimate from one forward
            # cannot tell what the later pass needs: a smaller batch is the advice.
            if is_oom(exc, kind == "cuda"):
                raise OutOfMemoryError(config.batch_size, None, config.device) from exc
            if not raised_in_a_forward(exc):
                raise  # visprof's own bug: keep the traceback, do not blame the model
            raise spec.forward_error(config.batch_size, exc) from exc
        finally:
            runner.close()
    outcome["build_s"] = build_s
    result = _build_result(spec, config, passes, warmup, iterations, table, outcome, notes,
                           sampler.summary(), trace_sink, recording_path, top_modules)
    result.wall_s = time.perf_counter() - started
    return result


class _NoSampler:
    """Stands in for hardware.ClockSampler on the CPU: nothing to sample."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def summary(self):
        return None

    def mean_sm_clock(self, windows):
        return None


def _trace_sink(trace_path, recording_path, on_trace, category_file, passes) -> Callable[[Any, Any], None] | None:
    """Checks the output paths before the run (writable, distinct, not the rules file they
    would overwrite, and a pass to write them from); returns what _build_result calls with the
    attributed pass's trace and attribution (None when nobody wants them)."""
    from visprof.base.output_paths import check_output_paths

    check_output_paths({"trace_path": trace_path, "recording_path": recording_path},
                       inputs={"category_file": category_file}, kinds={"trace_path": "chrome-trace", "recording_path": "recording"})
    wanted = [name for name, value in (("trace_path", trace_path), ("recording_path", recording_path),
                                       ("on_trace", on_trace)) if value is not None]
    if wanted and "attributed" not in passes:
        # as the CLI's --trace: silently, the run would end with no file and no word why
        raise BadInputError(f"{' and '.join(wanted)} need{'s' if len(wanted) == 1 else ''} the attributed pass, "
                            "which passes leaves out; add "
                            f"it ({option('passes', (*passes, 'attributed'))})")
    if on_trace is not None and not callable(on_trace):  # it had failed only once the whole run was done
        raise BadInputError(f"on_trace takes a function, called as on_trace(trace, attribution), got "
                            f"{type(on_trace).__name__} {on_trace!r}")
    if trace_path is None and on_trace is None:
        return None

    def sink(trace, attribution) -> None:
        if trace_path is not None:
            from visprof.report.chrome_trace import to_chrome_trace

            to_chrome_trace(trace, attribution, trace_path)
        if on_trace is not None:
            on_trace(trace, attribution)

    return sink


def _run_passes(runner, passes, table, warmup, iterations, attributed_iterations, bar, notes, sampler) -> dict:
    """The passes, in one process, on one model instance, with the GPU's clocks and power
    sampled throughout (NVML from a side thread; on the H200 it did not change the timing
    pass: Swin-T 13.03 ms without, 12.94 ms with, bench/results/overhead-breakdown-h200.json).
    Only the timing pass warms up: the passes after it find the GPU warm."""
    out: dict[str, Any] = {}
    cuda = runner.config.is_cuda
    windows: dict[str, list[tuple[float, float]]] = {"trace_only": [], "attributed": []}
    with sampler:
        if "timing" in passes:
            bar.step("timing pass (clean)")
            out["timing"] = run_timing_pass(runner, warmup=warmup, iterations=iterations, progress=bar.update,
                                            clocks_ramped=getattr(sampler, "clocks_ramped", None))
            if cuda:
                bar.step("tracer-only pass")
                # Half before the attributed pass and half after it: the checks compare the two
                # at the same clock, however the clock drifts (visprof/passes/kernel_sequence.py).
                halves = 2 if "attributed" in passes else 1
                with _window(windows["trace_only"]):
                    out["trace_only"] = _or_warn(lambda: run_trace_only_pass(runner, TRACE_ONLY_ITERATIONS // halves),
                                                 notes)
        if "attributed" in passes:
            bar.step("attributed pass")
            with _window(windows["attributed"]):
                settle = 0 if "timing" in passes else SETTLING_FORWARDS
                out["attributed"] = _or_warn(lambda: run_attributed_pass(runner, table, attributed_iterations,
                                                                         settle=settle), notes)
            if out.get("trace_only") is not None and out["attributed"] is not None:
                with _window(windows["trace_only"]):
                    later = _or_warn(lambda: run_trace_only_pass(runner, TRACE_ONLY_ITERATIONS // 2), notes)
                out["trace_only"] = out["trace_only"].then(later) if later is not None else out["trace_only"]
        # The SM clock of the two passes the kernel-time check compares (visprof/passes/kernel_sequence.py).
        out["sm_clock_mhz"] = {name: sampler.mean_sm_clock(spans) for name, spans in windows.items()}
        if "memory" in passes:
            bar.step("memory pass")
            attributed = out.get("attributed")
            out["memory"] = _memory_or_warn(runner, table, notes, attributed.template if attributed else None)
    return out


@contextlib.contextmanager
def _window(spans: list[tuple[float, float]]):
    """Appends the block's (start, end) on time.perf_counter() to ``spans`` (the clock sampler's windows)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        spans.append((start, time.perf_counter()))


def _memory_or_warn(runner, table, notes: list[str], template=None) -> MemoryResult | None:
    """If the memory pass fails (out of memory once the cache is emptied, a tracker error),
    the passes already done are kept and the result says why memory is missing."""
    try:
        return run_memory_pass(runner, table, template)
    except Exception as exc:  # noqa: BLE001 - reported in the result and on stderr, not lost
        _warn_and_note(f"memory pass failed, results have no memory breakdown: {type(exc).__name__}: {exc}", notes)
        return None


def _or_warn(run, notes: list[str]):
    """CUPTI taken by another profiler: fall back to event timing and NVTX, and say so."""
    try:
        return run()
    except CuptiUnavailableError as exc:
        _warn_and_note(f"kernel tracing skipped: {exc}", notes)
        return None


def _warn_and_note(message: str, notes: list[str]) -> None:
    """Said now (a VisprofWarning, which a notebook can filter) and kept in the result's notes.
    stacklevel points at the caller's line: here < _or_warn < _run_passes < profile() < its
    _one_at_a_time wrapper < caller."""
    warnings_module.warn(message, VisprofWarning, stacklevel=6)
    notes.append(message)


def _build_result(spec, config, passes, warmup, iterations, table, outcome, notes, gpu_state, trace_sink,
                  recording_path, top_modules) -> R.ProfileResult:
    cuda = config.device.startswith("cuda")
    timing: TimingResult | None = outcome.get("timing")
    trace_only: TraceOnlyResult | None = outcome.get("trace_only")
    attributed: AttributedResult | None = outcome.get("attributed")
    memory: MemoryResult | None = outcome.get("memory")

    result = R.ProfileResult(
        model=R.ModelInfo(name=spec.name, source=spec.source, param_count=spec.param_count,
                          input_shape=list(spec.input_shape(config.batch_size)), batch_size=config.batch_size,
                          img_size=spec.input_size[1], img_size_origin=spec.img_size_origin),
        config=R.RunConfig(precision=config.precision, channels_last=config.channels_last, compile=config.compile,
                           device=config.device, warmup=timing.warmup if timing else 0,
                           iterations=iterations if iterations is not None else "auto", passes=list(passes),
                           grad_mode=config.grad_mode, autocast=config.autocast),
        measurement="gpu" if cuda else "cpu",
        environment=_environment(),
        warnings=list(notes),
    )
    if cuda:
        index = torch.device(config.device).index or 0
        result.gpu = {**(hardware.gpu_identity(index) or {"name": torch.cuda.get_device_name(index)}),
                      "during_run": gpu_state}
    result.passes["build"] = R.PassInfo(outcome["build_s"], 1)  # model built, moved, one forward
    if timing is not None:
        latency = timing.latency_ms
        median_ms = latency.median
        busy_ms = trace_only.busy_ns / 1e6 if trace_only else None
        result.timing = R.Timing(
            latency_ms=latency,
            samples_per_s=config.batch_size / (median_ms / 1e3),
            iterations=len(timing.samples_ns),
            busy_ms=busy_ms,
            idle_ms=max(median_ms - busy_ms, 0.0) if busy_ms is not None else None,
            max_memory_allocated_bytes=timing.max_memory_allocated,
            max_memory_reserved_bytes=timing.max_memory_reserved,
        )
        result.passes["timing"] = R.PassInfo(timing.wall_s, len(timing.samples_ns) + timing.warmup)
        result.warnings.extend(_unsteady_latency_warning(result))
    if trace_only is not None:
        result.passes["trace_only"] = R.PassInfo(trace_only.wall_s, trace_only.iterations)
    memory_summary = _memory_summary(memory) if memory else None
    result.memory = memory_summary
    if memory and memory.note:
        result.warnings.append(f"memory pass: {memory.note}")
    if attributed is not None:
        attr = attribution_mod.attribute(attributed.trace, table)
        attach_breakdown(result, attr, memory_summary, top_modules)
        attach_kernel_tables(result, attr)
        walls = sorted(attributed.wall_ns_per_iteration)
        result.passes["attributed"] = R.PassInfo(sum(walls) / 1e9, attributed.trace.iterations)
        result.warnings.extend(attributed.warnings)
        result.notes.extend(_weight_cast_note(result))
        result.notes.extend(_cast_copies_note(result))
        result.warnings.extend(_busy_host_warning(result))
        if trace_sink is not None:
            trace_sink(attributed.trace, attr)
        if recording_path is not None:
            attributed.trace.meta.update(model=spec.name, batch_size=config.batch_size, precision=config.precision,
                                         gpu=(result.gpu or {}).get("name"))
            attributed.trace.save(recording_path)
    if memory:  # after the attributed pass's entry: passes are listed in the order they ran
        result.passes["memory"] = R.PassInfo(memory.wall_s, 1)
    result.checks = _self_checks(result, trace_only, attributed, timing, memory, outcome.get("sm_clock_mhz") or {})
    return result


def attach_breakdown(result: R.ProfileResult, attr: attribution_mod.Attribution,
                     memory: R.MemorySummary | None = None, top_modules: int = 15) -> None:
    """The attributed kernels' totals, categories and top modules, into ``result`` (the
    attributed pass's, and an nsys import's: one breakdown for both)."""
    result.attribution = attribution_mod.summarize(attr)
    result.categories = attr.category_rows(memory)
    result.modules = attribution_mod.module_rows(attr, top=top_modules)


def attach_kernel_tables(result: R.ProfileResult, attr: attribution_mod.Attribution) -> None:
    """Op types, kernel families, launch sizes and the roofline (against the spec row of
    ``result.gpu``), into ``result``; predict, calibrate and ``bounds`` read them."""
    result.op_types = op_type_rows(attr)
    result.kernel_families = kernel_family_rows(attr)
    result.launch_sizes = launch_size_rows(attr, (result.gpu or {}).get("sm_count"))
    roofline.attach(result, attr)  # op groups and time by bound, against the GPU's spec row


def _memory_summary(memory: MemoryResult) -> R.MemorySummary:
    return R.MemorySummary(peak_bytes=memory.peak_bytes, by_category_at_peak=dict(memory.live_at_peak),
                           transient_peak_by_category=dict(memory.transient_peak), alloc_count=memory.allocs,
                           reserved_peak_bytes=memory.reserved_peak_bytes,
                           reserved_by_category_at_peak=dict(memory.reserved_at_peak), method=memory.method,
                           baseline_bytes=memory.baseline_bytes, torch_peaks=dict(memory.torch_peaks),
                           requested_peak_bytes=memory.requested_peak_bytes, block_fallbacks=memory.block_fallbacks)


# On the CPU nothing checks the breakdown against the latency: the op times of the attributed pass
# can only exceed the clean pass's whole iteration where the host was busier during it (other
# processes, threads contending): a review saw 387 ms of ops against a 3 ms latency, shares all
# distorted, with coverage 100% and every check passed. Python's time between ops makes the sum
# smaller than the latency on a quiet machine (0.6x for a small MobileNet), so only "more" is said.
BUSY_HOST_RATIO = 1.5


# On the CPU, a median latency this many times its 10th percentile: the host was busy for most of the timed
# iterations (a review saw a median of 59.9 ms beside a p10 of 0.83 ms on a loaded machine, and a diff then read
# x0.01 as the change a layer made). A quiet CPU run spreads by tens of percent.
UNSTEADY_LATENCY_RATIO = 2.0


def _unsteady_latency_warning(result: R.ProfileResult) -> list[str]:
    latency = result.timing.latency_ms if result.timing else None
    if (result.measurement != "cpu" or latency is None or not latency.p10
            or latency.median < UNSTEADY_LATENCY_RATIO * latency.p10):
        return []
    return [f"the timed iterations spread widely (p10 {latency.p10:.3f} ms, median {latency.median:.3f} ms, "
            f"x{latency.median / latency.p10:.1f}): the host was busy for most of them (other processes, threads "
            "contending), so the latency is the machine's load as much as the model's; profile again on a quieter "
            "machine, or with fewer threads (OMP_NUM_THREADS)"]


def _busy_host_warning(result: R.ProfileResult) -> list[str]:
    if result.measurement != "cpu" or result.timing is None or result.attribution is None:
        return []
    ops, latency = result.attribution.kernel_ms, result.timing.latency_ms.median
    if not latency or ops <= BUSY_HOST_RATIO * latency:
        return []
    return [f"the attributed pass's ops took {ops:.3f} ms per iteration, {ops / latency:.1f}x the clean pass's whole "
            f"iteration ({latency:.3f} ms): the host was busier while they were timed (other processes, threads "
            "contending), so the shares may be distorted; profile again on a quieter machine, or with fewer threads "
            "(OMP_NUM_THREADS)"]


def _weight_cast_note(result: R.ProfileResult) -> list[str]:
    """What re-casting fp32 weights every forward costs, and which regime removes it. Under
    inference_mode torch's autocast caches no cast, so a loop with autocast entered once still
    re-casts; under no_grad it caches them."""
    a = result.attribution
    if a is None or not a.activity_ms or a.weight_cast_ms / a.activity_ms < CAST_NOTE_SHARE:
        return []
    config = result.config
    inference = config.grad_mode == "inference_mode"
    if config.autocast == "model-cast" or (config.autocast == "whole-loop" and not inference):
        return []
    share = a.weight_cast_ms / a.activity_ms
    cached_by = ("under inference_mode autocast caches no cast: a loop under no_grad with autocast entered once "
                 f"around it caches them ({options(grad_mode='no_grad', autocast='whole-loop')})" if inference else
                 f"a loop with autocast entered once around it caches them ({option('autocast', 'whole-loop')})")
    return [f"autocast re-casts the fp32 weights every forward: {a.weight_cast_count:g} casts, "
            f"{a.weight_cast_ms:.3f} ms per iteration ({share:.1%} of {'GPU' if result.measurement == 'gpu' else 'op'} "
            f"time). {cached_by[0].upper() + cached_by[1:]}, and a model cast to {config.precision} has none "
            f"({option('autocast', 'model-cast')})."]


def _cast_copies_note(result: R.ProfileResult) -> list[str]:
    """How much higher a no_grad loop's peak can be than this inference_mode one: under no_grad
    autocast keeps a copy of each weight it casts until its context exits, so a transformer, whose
    peak comes at the end of the forward, holds them all there (ViT-B/16 at batch 64: 168.7 MiB on
    an H100, bench/results/h100-latency-2026-12-05). Said where they are 1% of the peak or more."""
    config, memory = result.config, result.memory
    if (memory is None or not memory.peak_bytes or result.roofline is None or config.grad_mode != "inference_mode"
            or config.autocast not in ("per-forward", "whole-loop") or config.precision not in ("bf16", "fp16")):
        return []
    copies = roofline.weight_cast_copy_bytes(result.roofline.groups, itemsize=2)
    if copies < CAST_COPIES_NOTE_SHARE * memory.peak_bytes:
        return []
    return [f"the peak is under inference_mode, where autocast keeps no cast weight; under no_grad it keeps each "
            f"weight's {config.precision} copy until the autocast context exits, so a no_grad loop's peak can be up to "
            f"{copies / MIB:.1f} MiB higher ({copies / memory.peak_bytes:.0%} of this one; "
            f"{option('grad_mode', 'no_grad')} measures it)."]


def _self_checks(result, trace_only, attributed, timing, memory, sm_clock_mhz: dict) -> list[R.Check]:
    checks: list[R.Check] = []
    # An attributed pass that recorded no time (a model whose forward runs no op, e.g. an identity)
    # has nothing to attribute (coverage None) and nothing to cross-check: not a failure.
    if attributed is not None and result.attribution is not None and result.attribution.coverage is not None:
        checks += unattributed_checks(result.attribution)
        if result.measurement != "gpu":
            pass  # the CPU path times ops on the host clock: no CUPTI, nothing to drop
        elif attributed.dropped or attributed.trace.meta.get("dropped"):
            checks.append(R.Check("dropped CUPTI records", float(attributed.dropped), 0.0, 0.0, False,
                                  detail="CUPTI dropped records; kernel times are incomplete"))
        else:
            checks.append(R.Check("dropped CUPTI records", 0.0, 0.0, 0.0, True))
        if attributed.span is not None:
            span = attributed.span
            checks.append(R.Check.within("kernel span vs CUDA-event span", span.kernel_span_ns / 1e6,
                                         span.event_span_ns / 1e6, SPAN_TOLERANCE, unit="ms",
                                         detail="tracer timestamps are nanoseconds on visprof's clock"))
        if trace_only is not None:
            checks += _same_work_checks(attributed, trace_only, sm_clock_mhz.get("attributed"),
                                        sm_clock_mhz.get("trace_only"))
    if memory is not None:
        checks += _memory_checks(memory, timing)
    return checks


def unattributed_checks(summary: R.AttributionSummary) -> list[R.Check]:
    """The share of the activity time that no category took (the attributed pass's, and an nsys
    import's); none where nothing took time (no share of nothing can be missed)."""
    if summary.coverage is None:
        return []
    unattributed = 1.0 - summary.coverage
    return [R.Check("unattributed time", unattributed, 0.0, MAX_UNATTRIBUTED, unattributed <= MAX_UNATTRIBUTED,
                    unit="share", detail=f"at most {MAX_UNATTRIBUTED:.1%} of activity time without a category")]


def _same_work_checks(attributed: AttributedResult, trace_only: TraceOnlyResult, attributed_mhz: float | None = None,
                      reference_mhz: float | None = None) -> list[R.Check]:
    """Op capture must not change what the GPU runs: the same kernels, the same durations.

    Durations are compared for the kernels that overlapped no other kernel in either pass (a
    kernel launched back to back can start before its predecessor ends and then counts the
    wait), against tracer-only iterations run before and after the attributed pass (slow
    drift cancels), each pass's median iteration (a slow one moves neither), at the SM clock
    each pass ran at; see visprof/passes/kernel_sequence.py."""
    mine, reference = attributed.sequence, trace_only.sequence
    if mine is None or reference is None or not mine.iterations or not reference.iterations:
        return [R.Check.within("kernel sum: attributed vs tracer-only", attributed.kernel_ns / 1e6,
                               trace_only.kernel_ns / 1e6, KERNEL_SUM_TOLERANCE, unit="ms",
                               detail="op capture must not change what the GPU runs")]
    differing = launch_difference(mine, reference)
    # Where they differ, say how ops were captured: a Python dispatch mode (the fallback where the
    # C++ replay does not align) can change what some models run (visprof/passes/memory.py).
    how = f"; op capture: {attributed.trace.meta.get('op_capture')}" if differing else ""
    checks = [R.Check("kernels launched: attributed vs tracer-only", float(differing), 0.0, 0.0, differing == 0,
                      unit="launches",
                      detail=f"kernel launches per iteration that one pass made and the other did not, of "
                             f"{len(reference.names)}: op capture must not change what the GPU runs{how}")]
    if differing == 0:
        ms, reference_ms, compared, total = isolated_time_ms(mine, reference)
        if compared:
            checks.append(kernel_time_check(ms, reference_ms, attributed_mhz, reference_mhz,
                                            f"the {compared} of {total} kernels that overlapped no other kernel in "
                                            "either pass, median over iterations; tracer-only iterations before "
                                            "and after the attributed pass"))
    return checks


def _memory_checks(memory: MemoryResult, timing: TimingResult | None) -> list[R.Check]:
    torch_peaks = memory.torch_peaks
    checks = []
    if memory.method == "caching-allocator trace":
        checks.append(R.Check.within(
            "peak held by tensors: tracker vs torch.cuda.max_memory_allocated", float(memory.peak_bytes),
            float(torch_peaks["max_memory_allocated"]), BOOKS_TOLERANCE, unit="bytes",
            detail="visprof's books at block sizes against torch's allocated_bytes peak, same forwards"))
        if memory.requested_peak_bytes is not None:
            checks.append(R.Check.within(
                "peak requested: tracker vs torch", float(memory.requested_peak_bytes), float(torch_peaks["requested"]),
                BOOKS_TOLERANCE, unit="bytes",
                detail="visprof's books at requested sizes against torch's requested_bytes peak, same forwards"))
        checks.append(R.Check.within(
            "peak reserved: tracker vs torch.cuda.max_memory_reserved", float(memory.reserved_peak_bytes or 0),
            float(torch_peaks["max_memory_reserved"]), BOOKS_TOLERANCE, unit="bytes", detail="same forwards"))
    if timing is not None and timing.max_memory_allocated:
        checks.append(R.Check.within(
            "peak allocated: memory pass vs timing pass", float(torch_peaks["max_memory_allocated"]),
            float(timing.max_memory_allocated), PEAK_TOLERANCE, unit="bytes",
            detail="torch.cuda.max_memory_allocated: the measured forward allocates what the timed ones did"))
    return checks


def _environment() -> dict[str, Any]:
    # The CPU too on a GPU run: the host's speed is a launch-bound model's latency.
    # cpu_threads: torch's intra-op threads, the main setting of a CPU run's latency (a run at 1 and at 2
    # threads had recorded the same settings, and diff called them a rerun)
    env = {"python": platform.python_version(), "torch": str(torch.__version__),  # a str subclass
           "cuda": torch.version.cuda, "native": native_info(), "cpu": hardware.cpu_identity(),
           "cpu_threads": torch.get_num_threads()}
    try:
        env["timm"] = import_timm().__version__
    except (ImportError, BrokenDependencyError):
        pass  # a plain nn.Module was profiled; the result just names no timm version
    return env
