"""The choices a profile run takes, in one torch-free place (the CLI imports them without
loading torch; the passes, visprof.profile and the sweep's plan validate against them)."""
from __future__ import annotations

from typing import Sequence

from visprof.base.errors import BadInputError
from visprof.base.spelling import option

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
REDUCED_PRECISIONS = ("bf16", "fp16")  # the ones that autocast or a model cast applies to
PASSES = ("timing", "attributed", "memory")
DEFAULT_BATCH = {"cuda": 64, "cpu": 2}
DEFAULT_PRECISION = {"cuda": "bf16", "cpu": "fp32"}


def passes_for(passes: Sequence[str] | str | None, kind: str) -> tuple[str, ...]:
    """The passes to run on a device of ``kind`` ("cuda" or "cpu"), in the order profile() runs
    them (so one set always makes one sweep key): None is every pass the device can run; a
    comma-separated string or a sequence is checked, and the memory pass on the CPU refused."""
    if passes is None:  # all that can run here: host memory is not measured (reported as such)
        return tuple(p for p in PASSES if kind == "cuda" or p != "memory")
    if isinstance(passes, str):
        passes = [p.strip() for p in passes.split(",") if p.strip()]
    elif not isinstance(passes, (list, tuple, set, frozenset)):
        raise BadInputError(f"passes must be a list of pass names or a comma-separated string, got {passes!r}; "
                            f"choose from {', '.join(PASSES)}")
    if not passes:
        raise BadInputError(f"no pass named; choose from {', '.join(PASSES)}")
    unknown = [p for p in passes if p not in PASSES]
    if unknown:
        raise BadInputError(f"unknown pass(es) {unknown!r}; choose from {', '.join(PASSES)}")
    if kind == "cpu" and "memory" in passes:
        others = tuple(p for p in PASSES if p in passes and p != "memory") or ("timing", "attributed")
        raise BadInputError("the memory pass needs a GPU: it measures CUDA allocations, and host memory is not "
                            f"profiled; on the CPU, run {option('passes', others)}")
    return tuple(p for p in PASSES if p in passes)


# The latency regime (visprof/passes/runner.py). The defaults are what timm's benchmark.py
# does, so visprof's latencies join the model zoo's published ones.
GRAD_MODES = ("no_grad", "inference_mode")
# timm's benchmark.py runs under torch.inference_mode() since its commit 8630947d (2025-07-03;
# the pt291 CSVs), torch.no_grad() before it (the pt240 CSVs).
DEFAULT_GRAD_MODE = "inference_mode"
AUTOCAST_MODES = ("per-forward", "whole-loop", "model-cast")
DEFAULT_AUTOCAST = "per-forward"
AUTOCAST_OFF = "off"  # fp32/tf32: no autocast whatever was asked
# The grad mode and autocast of a run that left no record of them (an nsys import of a program
# that wrote no visprof run mark): said as unknown rather than guessed.
UNKNOWN_REGIME = "unknown"


def autocast_at(precision: str, autocast: str) -> str:
    """The autocast scope a run at ``precision`` has: fp32/tf32 have nothing to autocast to."""
    return autocast if precision in REDUCED_PRECISIONS else AUTOCAST_OFF


def idle_autocast_note(autocast: str | None, precision: str) -> str | None:
    """The note for an ``autocast`` asked for at a ``precision`` that has nothing to autocast to, or
    None: ``visprof.profile`` puts it in its result, and a sweep warns of it before any cell runs."""
    if autocast in (None, DEFAULT_AUTOCAST) or autocast_at(precision, autocast) == autocast:
        return None
    return f"autocast={autocast} does nothing at {precision}: the model runs in {precision} without autocast"


# What visprof.profile does when a keyword is not given, for the keywords a sweep passes on as
# they are (its -O): a sweep cell that restates one of these is the cell without it, one key and
# one stored row, not a second measurement of the same thing.
PROFILE_OPTION_DEFAULTS = {"compile": False, "grad_mode": DEFAULT_GRAD_MODE, "autocast": DEFAULT_AUTOCAST,
                           "warmup": None, "iterations": None, "attributed_iterations": 5, "top_modules": 15}


def regime_label(config) -> str:
    """The latency regime of a run config in a few words, for report headers:
    "bf16 autocast per forward, no_grad"."""
    if config.grad_mode == UNKNOWN_REGIME:
        return f"{config.precision}, grad mode and autocast unknown"
    kind = {"per-forward": "autocast per forward", "whole-loop": "autocast around the loop",
            "model-cast": "model cast", "off": ""}.get(config.autocast, config.autocast)
    return f"{config.precision} {kind}".strip() + f", {config.grad_mode}"


# Which time a speed-up between two GPUs divides (visprof.analysis.time_basis): end to end, as
# measured or published, or a profile's GPU busy time, which leaves the host's idle time out.
TIME_END_TO_END, TIME_GPU = "end-to-end", "gpu"
TIME_BASES = (TIME_END_TO_END, TIME_GPU)
