"""Host memory on the CPU path: is a batch going to fit, and which one would.

On a GPU, visprof finds the largest batch that fits by trying batches (batch_search.py):
a try that does not fit fails at once, and one that fits costs a forward of milliseconds.
On the CPU neither holds. A forward at a batch that fits can take minutes, and one that
does not fit may not fail at all: Linux overcommits memory, so the allocations succeed and
the process is killed by the kernel's OOM killer once the pages are touched, with no
message. So on the CPU visprof does not try batches. It *estimates* instead:

* it runs batch 1 and batch 2 under a dispatch mode that adds up the bytes of every tensor
  the forward creates while they are alive, so the peak of live bytes at batch 1 and 2
  gives the bytes per sample and the batch-independent rest;
* those two forwards run on fake tensors (torch's FakeTensorMode: shapes, dtypes and
  strides, no memory and no arithmetic), so they cost the same at any image size: at
  --img-size 22400 a real batch-1 forward of resnet18 needs 65 GiB and minutes, the fake one
  a fraction of a second. The count is the same either way: equal to the byte for one model of
  each of 92 timm families, fp32 and bf16 channels-last (bench/host_estimate_check.py,
  bench/results/cpu-host-estimate-2026-12-07); tests/passes/test_host_memory.py checks four of
  them. A forward that fake tensors cannot
  run (one that reads a value, ``.item()``, or an op with no shape rule) is run for real;
* it compares ``fixed + batch * per_sample`` with the memory available to this process
  (MemAvailable, lowered by a cgroup limit inside a container).

The estimate counts tensor bytes, not the allocator's overhead or a library's scratch
buffers, so it is about a lower bound of what a batch needs: a batch it says cannot fit
cannot, and the batch it suggests leaves 1 - ``SAFETY`` of the available memory unused.
Against the peak RSS growth of a real forward plus its input (224x224, fp32): resnet18 at
batch 64, 429 MiB estimated and 429 MiB measured, at batch 512, 3430 and 3430 MiB (that
forward took 140 s on a loaded 2-core machine); vit_base_patch16_224 at 128, 960 vs 963 MiB;
vit_tiny_patch16_224 at 64, 148 vs 193 MiB; convnext_tiny at 32, 423 vs 422 MiB.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import gc
import math
import os
import weakref
from dataclasses import dataclass
from pathlib import Path

from visprof.base.errors import OutOfMemoryError
from visprof.passes.batch_search import OVERFLOW_MARKER

__all__ = ["HostEstimate", "available_bytes", "check_host_memory", "estimate_host_memory", "host_oom_error",
           "is_host_out_of_memory"]

# The texts of a failed host allocation as torch reports it (Linux/macOS, Windows).
HOST_OOM_MARKERS = ("DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory",
                    "can't allocate memory", OVERFLOW_MARKER)
# The suggested batch leaves this share of the available memory unused (allocator overhead,
# oneDNN scratch buffers, other processes).
SAFETY = 0.8
# A batch whose input is smaller than 1/ACTIVATIONS_PER_INPUT of the available memory is not
# estimated. Peak live bytes per sample over input bytes per sample, as estimated here at
# 224x224 in fp32: vit_tiny 4x, resnet18 12x, vit_base 13x, mobilenetv3_large 14x, resnet50
# 18x, efficientnet_b0 21x, convnext_tiny 23x, swin_tiny 26x. 256 leaves a wide margin (also
# for attention scores, which grow with the square of the tokens), so only batches that could
# come near the limit pay for the estimate.
ACTIVATIONS_PER_INPUT = 256


def is_host_out_of_memory(error: BaseException) -> bool:
    """True for a failed host allocation: MemoryError, or torch's CPU allocator error."""
    if isinstance(error, MemoryError):
        return True
    return isinstance(error, RuntimeError) and any(marker in str(error) for marker in HOST_OOM_MARKERS)


# --- how much memory this process may still use -----------------------------------------------

def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_available() -> int | None:
    """What the memory limit of this process's cgroup (v2, else v1) leaves, page cache counted
    as free (the kernel reclaims it before it kills)."""
    root = Path("/sys/fs/cgroup")
    try:
        own = next((line.split("::", 1)[1] for line in Path("/proc/self/cgroup").read_text().splitlines()
                    if line.startswith("0::")), None)
    except OSError:
        own = None
    for folder in ([root / own.lstrip("/")] if own else []) + [root]:
        limit = _read_int(folder / "memory.max")
        if limit is not None:
            used = _read_int(folder / "memory.current") or 0
            return max(limit - used + _stat_field(folder / "memory.stat", "inactive_file"), 0)
    v1 = root / "memory"
    limit = _read_int(v1 / "memory.limit_in_bytes")
    if limit is not None and limit < 1 << 60:  # "no limit" reads as a huge number
        used = _read_int(v1 / "memory.usage_in_bytes") or 0
        return max(limit - used + _stat_field(v1 / "memory.stat", "total_inactive_file"), 0)
    return None


def _stat_field(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def available_bytes() -> int | None:
    """Memory this process can still allocate without swapping, or None where unknown."""
    found = [x for x in (_meminfo_available(), _cgroup_available()) if x is not None]
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return None
    return min(found)


# --- live tensor bytes of one forward -----------------------------------------------------------

def _peak_live_bytes(runner, existing, fake: bool = False) -> int:
    """Peak of the bytes held by tensors that one forward of ``runner`` creates; the storages
    of ``existing`` (parameters, buffers, the input: there before the forward) are not counted.
    ``fake``: the forward runs under a FakeTensorMode, entered by the caller."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    from torch.utils.weak import WeakIdKeyDictionary

    from visprof.capture.dispatch import call_as_unmoded

    class LiveBytes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live = self.peak = 0
            # storage -> weakref whose callback books the storage's release
            self.refs = WeakIdKeyDictionary()
            for tensor in existing:
                self.refs[tensor.untyped_storage()] = None

        def freed(self, nbytes, _ref):
            self.live -= nbytes

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            # Under fake tensors a composite op is decomposed here, under the caller's autocast:
            # the fake mode would decompose it with autocast off (tresnet's bf16 reflection pad,
            # fp32 in a real forward, was bf16 and its bytes 8% short; mvitv2's failed).
            out = call_as_unmoded(func, args, kwargs or {}, decompose=fake)
            for leaf in tree_leaves(out):
                if isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu":
                    storage = leaf.untyped_storage()
                    if storage not in self.refs:
                        nbytes = storage.nbytes()
                        self.refs[storage] = weakref.ref(storage, functools.partial(self.freed, nbytes))
                        self.live += nbytes
                        self.peak = max(self.peak, self.live)
            return out

    with LiveBytes() as counter:
        output = runner()
        del output
    return counter.peak


def _forward_bytes(spec, config, fake: bool) -> int:
    """Peak live bytes of one forward at ``config.batch_size``, the input included, on fake
    tensors or real ones."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from visprof.passes.runner import ModelRunner

    mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else None
    runner = ModelRunner(spec, config, input_mode=mode)
    try:
        # The runner's own model: under autocast="model-cast", a cast copy of the spec's module.
        model = runner.eager_model
        weights = [*model.parameters(), *model.buffers()]
        if mode is not None:
            # The fake forward runs a copy whose weights are fakes of the real ones (the copy's
            # memo maps each weight to its fake, so only the modules' Python objects are
            # copied): whatever a forward keeps on its module (levit's and tiny_vit's attention
            # bias caches) stays on the copy, and the real model never holds a fake tensor.
            fakes = {id(weight): mode.from_tensor(weight) for weight in weights}
            runner.model = copy.deepcopy(model, dict(fakes))
            weights = list(fakes.values())
        with mode or contextlib.nullcontext():
            peak = _peak_live_bytes(runner, [*weights, runner.input], fake=mode is not None)
        # The input is there before the forward, so it is not in the peak: add it.
        return peak + runner.input.untyped_storage().nbytes()
    finally:
        runner.close()


@dataclass(frozen=True)
class HostEstimate:
    """Bytes a forward at batch ``b`` needs beyond the model: ``fixed + b * per_sample``.
    ``fits_one`` is False when batch 1 itself ran out of memory."""

    per_sample: int
    fixed: int
    fits_one: bool = True

    def bytes_for(self, batch: int) -> int:
        return self.fixed + batch * self.per_sample

    def largest_batch(self, available: int) -> int:
        """The largest batch whose estimate fits ``SAFETY`` of ``available``; 1 if only batch
        1 fits, and that without the reserve; 0 if none does."""
        if not self.fits_one or self.per_sample <= 0:
            return 0
        best = int((SAFETY * available - self.fixed) // self.per_sample)
        return max(best, 1 if self.bytes_for(1) <= available else 0)


def estimate_host_memory(spec, config) -> HostEstimate | None:
    """The memory estimate from forwards at batch 1 and 2 (on fake tensors where they run);
    None if those fail too (out of memory, or a model that cannot run them)."""
    from visprof.passes.runner import RunConfig

    peaks = []
    for batch in (1, 2):
        # Eager even under --compile: compiling here would cost more than the whole estimate.
        at_batch = RunConfig(**{**config.__dict__, "batch_size": batch, "compile": False})
        try:
            try:
                peaks.append(_forward_bytes(spec, at_batch, fake=True))
            except Exception:  # noqa: BLE001 - a forward fake tensors cannot run: run it for real
                gc.collect()
                peaks.append(_forward_bytes(spec, at_batch, fake=False))
        except Exception as exc:  # noqa: BLE001 - any other failure means: no estimate
            if batch == 1 and is_host_out_of_memory(exc):
                return HostEstimate(per_sample=0, fixed=0, fits_one=False)
            return None
        finally:
            gc.collect()
    per_sample = max(peaks[1] - peaks[0], 1)
    return HostEstimate(per_sample=per_sample, fixed=max(peaks[0] - per_sample, 0))


def _gib(nbytes: float) -> str:
    """Bytes in GiB, or TiB/PiB where an absurd batch needs that much."""
    for unit, scale in (("PiB", 2**50), ("TiB", 2**40)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes / 2**30:.1f} GiB"


def host_oom_error(spec, config, estimate: HostEstimate | None = None, available: int | None = None,
                   suggest: bool = True) -> OutOfMemoryError:
    """The OutOfMemoryError for ``config.batch_size`` on the CPU, naming a batch that should
    fit when ``suggest`` (a sweep that decays the batch itself turns it off)."""
    batch = config.batch_size
    if not suggest:
        return OutOfMemoryError(batch, None, config.device)
    gc.collect()  # the failed try's tensors, kept alive by its traceback until now
    available = available_bytes() if available is None else available
    estimate = estimate or estimate_host_memory(spec, config)
    if estimate is not None and not estimate.fits_one:
        return OutOfMemoryError(batch, None, config.device, searched=True)
    if available is None or estimate is None:
        return OutOfMemoryError(batch, None, config.device)
    needed = estimate.bytes_for(batch)
    best = min(estimate.largest_batch(available), batch - 1)
    if needed <= available and best < 1:
        # It failed although the estimate (about a lower bound) fits: no number to offer.
        return OutOfMemoryError(batch, None, config.device)
    detail = f"it needs at least {_gib(needed)}, {_gib(available)} is available" if needed > available else ""
    return OutOfMemoryError(batch, best if best >= 1 else None, config.device, searched=True,
                            estimated=best >= 1, detail=detail)


def check_host_memory(spec, config, suggest: bool = True) -> None:
    """Raises OutOfMemoryError before a CPU run whose batch cannot fit in host memory,
    instead of letting the run swap for minutes or be killed by the OOM killer.

    Batches far from the limit (the common case) cost one file read: only a batch whose
    input times ACTIVATIONS_PER_INPUT exceeds the available memory is estimated."""
    available = available_bytes()
    if available is None:
        return
    input_bytes = math.prod(spec.input_size) * 4 * config.batch_size  # fp32, the runner's input
    if input_bytes * ACTIVATIONS_PER_INPUT <= available:
        return
    estimate = estimate_host_memory(spec, config)
    if estimate is None:
        return  # the run itself will tell
    if not estimate.fits_one or estimate.bytes_for(config.batch_size) > available:
        raise host_oom_error(spec, config, estimate, available, suggest)
