"""visprof's NVTX scheme: what its ranges are called, and how they nest (docs/nsight.md).

Domain ``visprof``; per forward, nested push/pop ranges on the thread that runs it:

    vit_base_patch16_224 (VisionTransformer)      model   (NVTX category 1, payload: module index 0)
      blocks (Sequential)                         module  (category 2, payload: module index)
        blocks.0 (Block)
          blocks.0.attn (Attention)
            attention                             category (3, payload: op id) \\ one handle,
              attention:projections aten.addmm.default   op (4, payload: op id) / pushed together

* Colour: the category's colour on the category and op ranges, greys on modules.
* Names: the category range is named exactly by the category id, so that Nsight Compute's
  filter ``--nvtx-include "visprof@attention/"`` selects every kernel of a category and
  nothing else (ncu matches whole range names, and '/' separates nesting levels, which is
  why no visprof name contains '/'). The op range says category, sub-category and the aten
  op: ``attention:core aten._scaled_dot_product_flash_attention.default``.
* Module ranges open lazily, before the first op that runs in the module, and close before
  the next op outside it (or after an iteration's last op): the C++ replay pushes them from
  a precomputed plan without Python module hooks, and the Python capture from the same
  rule, so both paths draw the same stacks.
* Every string is registered once in the domain; pushes are by handle.
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Iterable, Sequence

from visprof.native.records import ModuleRecord

DOMAIN = "visprof"
KIND_USER, KIND_MODEL, KIND_MODULE, KIND_CATEGORY, KIND_OP = 0, 1, 2, 3, 4
KIND_NAMES = {KIND_USER: "user", KIND_MODEL: "model", KIND_MODULE: "module", KIND_CATEGORY: "category", KIND_OP: "op"}
MODEL_COLOR = 0xFF76B900
MODULE_COLOR = 0xFF9E9E9E
# The NVTX mark that carries a run's settings (model, batch, precision) for importers.
RUN_MARK_PREFIX = "visprof run "


# --- names -------------------------------------------------------------------------------
def op_range_name(category: str, subcategory: str | None, op_name: str) -> str:
    """``attention:core aten.bmm.default``; ``linear aten.addmm.default`` without sub-category."""
    key = f"{category}:{subcategory}" if subcategory else category
    return f"{key} {op_name}"


def parse_op_range(name: str) -> tuple[str, str | None, str]:
    """(category, sub-category or None, op name) of an op range name."""
    key, _, op_name = name.partition(" ")
    category, _, subcategory = key.partition(":")
    return category, subcategory or None, op_name


def module_range_name(record: ModuleRecord, model_name: str | None = None) -> str:
    """``blocks.0.attn (Attention)``; the root is named by the model: ``resnet50 (ResNet)``."""
    label = record.path if record.parent >= 0 or record.path else (model_name or record.cls)
    return label if label == record.cls else f"{label} ({record.cls})"


def parse_module_range(name: str) -> tuple[str, str]:
    """(label, class) of a module range name; the label is the path, or the model for the root."""
    if name.endswith(")") and " (" in name:
        label, _, cls = name[:-1].rpartition(" (")
        return label, cls
    return name, name


def escape_filter_name(name: str) -> str:
    """A range name as ncu's NVTX filter reads it: '/' separates levels, so it is escaped."""
    return name.replace("\\", "\\\\").replace("/", "\\/")


def ncu_filter(category: str) -> str:
    """The ncu ``--nvtx-include`` expression for every kernel of ``category``."""
    return f"{DOMAIN}@{escape_filter_name(category)}/"


# --- registration --------------------------------------------------------------------------
def _nvtx():
    from visprof.native import native

    return native().nvtx


@functools.lru_cache(maxsize=None)
def op_handle(category: str, name: str) -> int:
    """Handle that pushes the category range ``category`` around the op range ``name``."""
    return _nvtx().register_op(category, name)


@functools.lru_cache(maxsize=None)
def _module_handle(name: str, kind: int) -> int:
    return _nvtx().register_message(name, kind)


@dataclass(frozen=True)
class ModulePlan:
    """Per template op: module ranges to pop, then to push (handle, colour, payload), before it.

    The layout is the ATen observer's ``replay_start`` arguments (flattened pushes with
    offsets, ``push_begin[j]..push_begin[j + 1]`` for op j)."""

    pops: list[int]
    push_begin: list[int]
    handles: list[int]
    colors: list[int]
    payloads: list[int]

    def observer_kwargs(self, capsule) -> dict:
        return dict(nvtx_api=capsule, module_pops=self.pops, module_push_begin=self.push_begin,
                    module_handles=self.handles, module_colors=self.colors, module_payloads=self.payloads)


class ModuleRanges:
    """The module ranges of one module tree (``ModuleTracker.modules``, which may grow while
    capturing): their registered handles, and the pops and pushes that lead from one op's
    module to the next one's."""

    def __init__(self, modules: list[ModuleRecord], model_name: str | None = None):
        self._modules = modules
        self._model_name = model_name
        self._chains: dict[int, tuple[int, ...]] = {-1: ()}
        self._handles: dict[int, tuple[int, int, int]] = {}

    def chain(self, module: int) -> tuple[int, ...]:
        """Module indices from the root down to ``module`` (empty for -1)."""
        found = self._chains.get(module)
        if found is None:
            found = self._chains[module] = (*self.chain(self._modules[module].parent), module)
        return found

    def push_args(self, module: int) -> tuple[int, int, int]:
        """(handle, colour, payload) of the range of ``module``."""
        found = self._handles.get(module)
        if found is None:
            record = self._modules[module]
            kind = KIND_MODEL if record.parent < 0 else KIND_MODULE
            handle = _module_handle(module_range_name(record, self._model_name), kind)
            found = self._handles[module] = (handle, MODEL_COLOR if kind == KIND_MODEL else MODULE_COLOR, module)
        return found

    def step(self, open_chain: tuple[int, ...], module: int) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """From the open module ranges to ``module``'s: (pops, modules to push, new open chain)."""
        target = self.chain(module)
        shared = 0
        for a, b in zip(open_chain, target):
            if a != b:
                break
            shared += 1
        return len(open_chain) - shared, target[shared:], target

    def plan(self, op_modules: Sequence[int], skip: Iterable[int] = ()) -> ModulePlan:
        """The plan for a sequence of ops (by their module), starting with no range open;
        the ranges still open after the last op are the replay's to close. Ops at positions
        in ``skip`` are never entered (the replay ranges them inside another op's range):
        they pop and push nothing, and the next op moves from the last one entered."""
        pops, begin, handles, colors, payloads = [], [0], [], [], []
        open_chain: tuple[int, ...] = ()
        skip = set(skip)
        for position, module in enumerate(op_modules):
            if position in skip:
                pops.append(0)
                begin.append(len(handles))
                continue
            n_pop, push, open_chain = self.step(open_chain, module)
            pops.append(n_pop)
            for m in push:
                handle, color, payload = self.push_args(m)
                handles.append(handle)
                colors.append(color)
                payloads.append(payload)
            begin.append(len(handles))
        return ModulePlan(pops, begin, handles, colors, payloads)


class LiveModuleRanges:
    """Module ranges pushed while capturing from Python, by the same rule as the plan.

    Only on the thread that entered the capture: NVTX stacks are per thread, and ops on
    other threads (autograd's backward workers) run outside any forward's modules; they get
    their category and op ranges only."""

    def __init__(self, ranges: ModuleRanges):
        self._ranges = ranges
        self._open: tuple[int, ...] = ()
        self._thread = threading.get_ident()
        self._nvtx = _nvtx()

    def claim_thread(self) -> None:
        self._thread = threading.get_ident()

    def before_op(self, module: int) -> None:
        if self._open and self._open[-1] == module or not self._open and module < 0:
            return
        if threading.get_ident() != self._thread:
            return
        n_pop, push, self._open = self._ranges.step(self._open, module)
        nvtx = self._nvtx
        for _ in range(n_pop):
            nvtx.pop()
        for m in push:
            nvtx.push_registered(*self._ranges.push_args(m))

    def close(self) -> None:
        """Pops every module range still open (end of an iteration or of the capture)."""
        if not self._open or threading.get_ident() != self._thread:
            return
        for _ in self._open:
            self._nvtx.pop()
        self._open = ()
