"""The run set-up every entry point shares: ``profile()``, ``--nvtx-only``, ``ncu`` and the sweep.

One place resolves the defaults (device, precision, grad mode, autocast, batch), checks the
options, loads the category table and builds a ``ModelRunner`` that has run one forward, so
a default changed here changes it for every command.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from visprof.attribution.categories import CategoryTable, table_or_default
from visprof.base import hardware
from visprof.base.hardware import cpu_flags
from visprof.base.errors import BadInputError, OutOfMemoryError, VisprofError
from visprof.base.options import (AUTOCAST_MODES, DEFAULT_AUTOCAST, DEFAULT_BATCH, DEFAULT_GRAD_MODE,
                                  DEFAULT_PRECISION, GRAD_MODES, PRECISIONS, idle_autocast_note)
from visprof.passes.batch_search import is_out_of_memory, largest_fitting_batch, release_cached_memory
from visprof.passes.host_memory import check_host_memory, host_oom_error, is_host_out_of_memory
from visprof.base.sizes import validate_batch_size
from visprof.base.spelling import option
from visprof.base.tf32_switches import Tf32SwitchError
from visprof.passes.models import ModelSpec, check_weights_dtype, resolve_model, weights_precision
from visprof.passes.runner import ModelRunner, RunConfig

__all__ = ["RunSetup", "resolve_run", "choice", "check_flag", "check_count", "check_counts", "COUNT_MINIMUMS",
           "load_table", "make_runner", "raised_in_a_forward", "is_oom"]


@dataclass
class RunSetup:
    """What an entry point runs: the model, the configuration, the category table."""

    spec: ModelSpec
    config: RunConfig
    table: CategoryTable
    kind: str  # "cuda" or "cpu"
    notes: list[str]


def choice(name: str, value: str, allowed: Sequence[str]) -> str:
    """``value`` among ``allowed``, whatever its case (precision="BF16" had been refused)."""
    if isinstance(value, str) and value.lower() in allowed:
        return value.lower()
    if value not in allowed:
        raise BadInputError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")
    return value


def check_flag(name: str, value: Any) -> bool:
    """True or False (numpy's bools too): ``compile="no"`` compiled the model, and the result
    stored "no", which its own loader then refused."""
    if type(value).__name__ not in ("bool", "bool_"):
        raise BadInputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_count(name: str, value: Any, minimum: int) -> None:
    """A whole number >= minimum (None means the entry point's default)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
        raise BadInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")


# The least each of profile()'s counts may be (a sweep's -O checks them before its workers start).
COUNT_MINIMUMS = {"warmup": 0, "iterations": 1, "attributed_iterations": 1, "top_modules": 1}


def check_counts(**counts: Any) -> None:
    """``check_count`` of each of profile()'s counts given, at its ``COUNT_MINIMUMS``."""
    for name, value in counts.items():
        check_count(name, value, COUNT_MINIMUMS[name])


def load_table(table: CategoryTable | None, category_file: str | Path | None) -> CategoryTable:
    """``table`` (default: the default taxonomy) with ``category_file``'s rules in front; a table
    the caller gave is extended as a copy, so that it is not changed, nor grows at every call."""
    if category_file is None:
        return table_or_default(table)
    table = table_or_default(table).copy()
    table.extend_from_file(category_file)
    return table


def resolve_run(model: Any, *, batch_size: int | None = None, img_size: Any = None, precision: str | None = None,
                channels_last: bool | None = None, compile: bool = False, device: str | None = None,
                grad_mode: str | None = None, autocast: str | None = None, table: CategoryTable | None = None,
                category_file: str | Path | None = None, in_chans: int | None = None) -> RunSetup:
    """Defaults filled in and every option checked, before any model is built on the device.

    ``channels_last=None`` (not given) runs a user's module in its own layout, a model visprof
    builds in NCHW; the config holds the layout that runs, a bool."""
    device = hardware.resolve_device(device)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    # A module in bf16 or fp16 runs at that precision unless another is asked: the CPU's default fp32
    # had been refused ("precision fp32 does not feed"), a precision the caller never gave. Its inputs
    # are cast up front (model-cast), as such a module runs: per-forward autocast had added a cast of
    # the input to every forward that a bf16 pipeline does not run.
    own = weights_precision(model) if precision is None else None
    # None is the default; "" is a value, refused as any unknown one is (it had run the defaults)
    precision = choice("precision", own or (DEFAULT_PRECISION[kind] if precision is None else precision), PRECISIONS)
    grad_mode = choice("grad_mode", DEFAULT_GRAD_MODE if grad_mode is None else grad_mode, GRAD_MODES)
    own_cast = own is not None and autocast is None
    autocast = choice("autocast", ("model-cast" if own_cast else DEFAULT_AUTOCAST) if autocast is None else autocast,
                      AUTOCAST_MODES)
    compile = check_flag("compile", compile)
    if channels_last is not None:
        channels_last = check_flag("channels_last", channels_last)
    batch_size = validate_batch_size(batch_size if batch_size is not None else DEFAULT_BATCH[kind])
    table = load_table(table, category_file)
    check_weights_dtype(model, precision)
    spec = resolve_model(model, img_size=img_size, device=device, in_chans=in_chans)
    compile = compile or spec.compiled
    channels_last, layout_notes = _run_layout(spec, channels_last)
    config = RunConfig(batch_size=batch_size, precision=precision, channels_last=channels_last,
                       compile=compile, device=device, grad_mode=grad_mode, autocast=autocast)
    notes = list(spec.notes) + layout_notes + _device_notes(kind, precision)
    if own is not None:
        notes.append(f"{spec.name}'s weights are {own}: it ran at {option('precision', own)}"
                     + (" with its inputs cast up front (autocast model-cast), as such a module runs" if own_cast else "")
                     + "; ask for another precision to run it at that one")
    if (note := idle_autocast_note(autocast, precision)) is not None:
        notes.append(note)
    return RunSetup(spec, config, table, kind, notes)


_LAYOUT_WORDS = {"channels_last": "channels-last", "contiguous": "NCHW"}


def _run_layout(spec: ModelSpec, asked: bool | None) -> tuple[bool, list[str]]:
    """Whether the run is channels-last, and a note where that is not the user's module's own layout.

    A module is profiled as it is: one the user made channels-last used to run NCHW unless asked,
    with nothing said, though its convolutions run other kernels in each layout. A layout asked for
    is run as asked, as comparing the two needs; the note says it is not the module's own (an
    explicit channels_last=False left from older calls would otherwise convert it unseen)."""
    own = spec.layout
    runs = asked if asked is not None else own == "channels_last"  # a built model, a mix, no telling: NCHW
    ran = _LAYOUT_WORDS[_layout(runs)]
    if own == "mixed":  # whichever runs converts some of its weights
        remedy = "" if runs else f" ({option('channels_last', True)} runs it channels-last)"
        return runs, [f"{spec.name}'s convolution weights are a mix of channels-last and NCHW, and a run has one "
                      f"layout: it ran {ran}{remedy}; the module comes back as it was"]
    if own is None or own == _layout(runs):
        return runs, []
    return runs, [f"{spec.name}'s convolution weights are {_LAYOUT_WORDS[own]}, and this run converted them to {ran}, "
                  f"as asked (without {option('channels_last')} a module runs in its own layout); the module comes "
                  "back as it was"]


def _layout(channels_last: bool) -> str:
    return "channels_last" if channels_last else "contiguous"


# The CPU instructions that give fp16 and bf16 convolutions and matmuls fast kernels, as
# /proc/cpuinfo names them: x86 (AVX-512 FP16, AMX) and ARM (ARMv8.2 half precision, ARMv8.6 BF16).
# Without them torch's CPU kernels fall back to slow paths. Measured on this project's 2-core
# Xeon (avx512_fp16, amx_bf16; torch 2.14, batch 2, timing pass): fp16 took 1.1-1.4x the time of
# fp32 on resnet18, mobilenetv3_small_050, vit_tiny_patch16_224 and convnext_atto, bf16 0.6-1.2x.
# With oneDNN held below those instructions (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16, as on a CPU
# without AVX-512 FP16) fp16 took 4-39x fp32; at AVX2, fp16 1.5-54x and bf16 1.8-28x; a user
# measured 280x. Too machine-dependent for a factor in the note: "often far slower" it says.
REDUCED_PRECISION_FLAGS = {"fp16": ("avx512_fp16", "amx_fp16", "asimdhp"),
                           "bf16": ("avx512_bf16", "amx_bf16", "bf16")}


def _device_notes(kind: str, precision: str, flags: frozenset[str] | None = None) -> list[str]:
    """Options that change nothing on this device, or cost far more there, said once in the
    result. ``flags``: the CPU's (cpu_flags() when None)."""
    if kind != "cpu":
        return []
    if precision == "tf32":
        return ["precision tf32 on the CPU: TF32 is an NVIDIA GPU math mode, so the CPU ran plain fp32"]
    if precision not in REDUCED_PRECISION_FLAGS:
        return []
    flags = cpu_flags() if flags is None else flags
    found = {p: [f for f in names if f in flags] if flags is not None else None
             for p, names in REDUCED_PRECISION_FLAGS.items()}
    slow = "convolutions and matmuls run slow fallback kernels, slower than fp32 and often far slower"
    if precision == "bf16":
        if found["bf16"] is None or found["bf16"]:
            return []  # fast here, or nothing known against it
        return [f"precision bf16 on the CPU: this CPU has no bf16 arithmetic (avx512_bf16, amx_bf16), so bf16 {slow}; "
                "use fp32"]
    if found["fp16"] is None:
        return ["precision fp16 on the CPU: fp16 convolutions and matmuls have fast kernels only on CPUs with fp16 "
                "arithmetic (avx512_fp16, amx_fp16); without it they run slow fallback kernels, often far slower "
                "than fp32 or bf16; use bf16 or fp32"]
    if found["fp16"]:
        return [f"precision fp16 on the CPU: this CPU has fp16 arithmetic ({', '.join(found['fp16'])}), yet fp16 ran "
                "no faster than fp32 for the timm models measured on a Xeon that has it (and often far slower on a "
                "CPU without it); use " + ("bf16 or fp32" if found["bf16"] else "fp32")]
    instead = (f"fp32, or bf16 (this CPU has {', '.join(found['bf16'])})" if found["bf16"]
               else "fp32 (without avx512_bf16 or amx_bf16, bf16 is slow here too)")
    return [f"precision fp16 on the CPU: this CPU has no fp16 arithmetic (avx512_fp16, amx_fp16), so fp16 {slow}; "
            f"use {instead}"]


def is_oom(exc: BaseException, cuda: bool) -> bool:
    return is_out_of_memory(exc) if cuda else is_host_out_of_memory(exc)


def raised_in_a_forward(exc: BaseException) -> bool:
    """Whether `exc` propagated out of a forward (ModelRunner.__call__). Only then can the
    model be blamed; an error anywhere else in the passes is visprof's."""
    frame = exc.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code is ModelRunner.__call__.__code__:
            return True
        frame = frame.tb_next
    return False


def make_runner(spec: ModelSpec, config: RunConfig, search_batch: bool = True) -> ModelRunner:
    """Builds the runner and proves one forward works; an OOM becomes a clear message with
    the largest batch that fits."""
    if not config.is_cuda:
        check_host_memory(spec, config, suggest=search_batch)  # before a run that could swap or be killed
    runner = None
    try:
        runner = ModelRunner(spec, config)
        with runner.session():
            runner()
            runner.sync()
        return runner
    except BaseException as exc:
        if runner is not None:
            runner.close()  # restores the TF32 switches it changed, however the forward ended (Ctrl-C too)
            runner = None  # and frees its input before a batch search
        if not isinstance(exc, Exception):
            raise
        if not is_oom(exc, config.is_cuda):
            if isinstance(exc, (VisprofError, Tf32SwitchError)):
                raise  # a refusal, or the TF32 switches' set-up: no forward to blame
            raise spec.forward_error(config.batch_size, exc) from exc
    # Out of memory, handled after the except block: inside it, the exception's traceback keeps
    # the failed forward's frames, and so its input and activations, alive through the search.
    if not search_batch:
        raise OutOfMemoryError(config.batch_size, None, config.device)
    raise _oom_with_search(spec, config) if config.is_cuda else host_oom_error(spec, config)


def _oom_with_search(spec: ModelSpec, config: RunConfig) -> OutOfMemoryError:
    release_cached_memory()

    def try_batch(batch: int) -> None:
        probe = ModelRunner(spec, RunConfig(**{**config.__dict__, "batch_size": batch}))
        try:
            with probe.session():
                probe()
                probe.sync()
        finally:
            probe.close()
            del probe
            release_cached_memory()

    best = largest_fitting_batch(try_batch, max(config.batch_size - 1, 1)) if config.batch_size > 1 else None
    return OutOfMemoryError(config.batch_size, best, config.device, searched=True)
