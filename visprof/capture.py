"""What ran: every aten op, the module it ran in, and (on request) its FLOPs and host time.

``OpCapture`` is a ``TorchDispatchMode``. For each op it makes one native call in and one
out (``visprof._C.op_enter/op_exit``) that together push the op's id as CUPTI external
correlation id (so every kernel the op launches carries it), an NVTX range named after the
op's category in the "visprof" domain, and, in the memory pass, the category as allocation
tag. Module paths come from global forward hooks that keep a stack of the active modules.

Per-op Python work is what this pass costs (DESIGN.md section 3), so the hot path does a
dict lookup for the op's category and appends a tuple; everything else happens after the
run, in ``to_records()``.
"""
from __future__ import annotations

import time
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from visprof.categories import CategoryTable, default_table
from visprof.native import native
from visprof.op_flops import NO_COST, OpCostCounter
from visprof.records import ModuleRecord, OpRecord

_aten = torch.ops.aten
# Where each convolution overload keeps `groups` among its positional arguments.
_GROUPS_ARG = {_aten.convolution.default: 8, _aten.conv1d.default: 6, _aten.conv2d.default: 6,
               _aten.conv3d.default: 6}


class ModuleTracker:
    """Keeps the stack of nn.Modules whose forward is running, by index into ``modules``.

    Modules are named from ``root.named_modules()``; a module outside the root (or any
    module, without a root) is named by its class. The hooks are global, so they also see
    modules called through functional wrappers, and ``always_call`` pops a module whose
    forward raised.
    """

    def __init__(self, root: torch.nn.Module | None = None):
        self.modules: list[ModuleRecord] = []
        self._index: dict[int, int] = {}
        self._classes: list[tuple[str, ...]] = []  # per module: its class and its ancestors'
        self.stack: list[int] = []
        self._handles: list[Any] = []
        if root is not None:
            self._add_tree(root)

    def _add_tree(self, root: torch.nn.Module) -> None:
        parents: dict[str, int] = {}
        for path, module in root.named_modules():
            parent = parents.get(path.rpartition(".")[0], -1) if path else -1
            parents[path] = self._add(module, path, parent)

    def _add(self, module: torch.nn.Module, path: str, parent: int) -> int:
        index = len(self.modules)
        self.modules.append(ModuleRecord(path=path, cls=type(module).__name__, parent=parent, attrs=_module_attrs(module)))
        inherited = self._classes[parent] if parent >= 0 else ()
        self._classes.append((type(module).__name__, *inherited))
        self._index[id(module)] = index
        return index

    def classes(self, index: int) -> tuple[str, ...]:
        """Class names of module ``index`` and its ancestors, innermost first."""
        return self._classes[index] if index >= 0 else ()

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        index = self._index.get(id(module))
        if index is None:  # called outside the root's tree: hang it under the current module
            parent = self.stack[-1] if self.stack else -1
            prefix = self.modules[parent].path + "." if parent >= 0 and self.modules[parent].path else ""
            index = self._add(module, prefix + type(module).__name__, parent)
        self.stack.append(index)

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self.stack:
            self.stack.pop()

    def __enter__(self) -> "ModuleTracker":
        from torch.nn.modules import module as nn_module

        self._handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post, always_call=True),
        ]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.stack.clear()


def _module_attrs(module: torch.nn.Module) -> dict[str, Any]:
    if isinstance(module, torch.nn.modules.conv._ConvNd):
        return {"groups": module.groups, "in_channels": module.in_channels, "kernel_size": list(module.kernel_size)}
    return {}


def _conv_attrs(func, args: tuple, kwargs: dict) -> dict[str, Any]:
    position = _GROUPS_ARG[func]
    groups = args[position] if len(args) > position else kwargs.get("groups", 1)
    weight = args[1]
    return {"groups": int(groups), "in_channels": int(args[0].shape[1]), "kernel_size": [int(k) for k in weight.shape[2:]]}


class OpCapture(TorchDispatchMode):
    """Captures ops while active. Options:

    nvtx:     push an NVTX range per op, named by its category (for Nsight tools);
    tags:     push the op's category as allocation tag (memory pass);
    flops:    count FLOPs and bytes moved from the op's tensors (visprof.op_flops.OpCost);
    template: a capture of one earlier iteration of the same forward (with module hooks).
              The op sequence of a forward repeats, so op k of every later iteration takes
              its module, category decision and FLOPs from op k of the template, and the
              module hooks can stay off while timing. An op that differs from the template
              at its position is decided on the spot and counted in `misaligned`.
    """

    def __init__(self, tracker: ModuleTracker, table: CategoryTable | None = None, *, nvtx: bool = True,
                 tags: bool = False, flops: bool = False, template: "OpCapture | None" = None):
        super().__init__()
        self.tracker = tracker
        self.table = table or default_table()
        self._c = native()
        self._nvtx = nvtx
        self._tags = tags
        self._cost = OpCostCounter() if flops else None
        self.iteration = 0
        self.next_id = 1
        # (external_id, op name, module index, iteration, start_ns, end_ns, OpCost, attrs)
        self.raw: list[tuple] = []
        self._decisions: dict[tuple, tuple[int, int, int]] = {}
        self._category_ids = {c: i + 1 for i, c in enumerate(self.table.report_order())}  # 0: untagged
        self._position = 0
        self.misaligned = 0
        # Per position: (func, module, attrs, OpCost, (handle, colour, tag)).
        self._template = [
            (func, module, attrs, flops, self._decide(func, module, attrs))
            for _, func, module, _, _, _, flops, attrs in template.raw
        ] if template is not None else None

    def template_ops(self) -> list[tuple]:
        """Per position of the template given at construction: (func, module index, attrs, OpCost)."""
        return [entry[:4] for entry in self._template or []]

    def template_decisions(self) -> list[tuple[int, int, int]]:
        """Per template position: (NVTX handle, ARGB colour, allocation tag), by this capture's options."""
        return [entry[4] for entry in self._template or []]

    def start_iteration(self, iteration: int) -> None:
        self.iteration = iteration
        self._position = 0

    def tag_names(self) -> dict[int, str]:
        """Allocation tag -> category id (tag 0: allocated outside any op)."""
        return {tag: category for category, tag in self._category_ids.items()}

    def _decide(self, func, module: int, attrs: dict | None) -> tuple[int, int, int]:
        """(NVTX handle, ARGB colour, allocation tag) of an op, cached per op and module."""
        key = (func, module, tuple(attrs["kernel_size"]) if attrs else None, attrs["groups"] if attrs else None)
        decision = self._decisions.get(key)
        if decision is None:
            found = self.table.classify_op(str(func), self.tracker.classes(module), attrs)
            category = self.table.category(found.category)
            handle = self._c.nvtx.register_message(found.category) if self._nvtx else -1
            tag = self._category_ids.get(found.category, 0) if self._tags else -1
            decision = (handle, category.argb, tag)
            self._decisions[key] = decision
        return decision

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        position = self._position
        self._position = position + 1
        template = self._template
        if template is not None and position < len(template) and template[position][0] is func:
            _, module, attrs, flops, (handle, color, tag) = template[position]
        else:
            if template is not None:
                self.misaligned += 1
            stack = self.tracker.stack
            module = stack[-1] if stack else -1
            attrs = _conv_attrs(func, args, kwargs) if func in _GROUPS_ARG else None
            handle, color, tag = self._decide(func, module, attrs)
            flops = None
        external_id = self.next_id
        self.next_id += 1
        c = self._c
        start = time.perf_counter_ns()
        c.op_enter(external_id, handle, color, tag)
        try:
            out = func(*args, **kwargs)
        finally:
            c.op_exit()
        end = time.perf_counter_ns()
        if flops is None:
            flops = self._cost(func, args, kwargs, out) if self._cost else NO_COST
        self.raw.append((external_id, func, module, self.iteration, start, end, flops, attrs))
        return out

    def to_records(self) -> list[OpRecord]:
        return [
            OpRecord(external_id=ext, name=str(func), module=module, iteration=it, cpu_start_ns=start,
                     cpu_end_ns=end, attrs=attrs or {}, **flops.record_fields())
            for ext, func, module, it, start, end, flops, attrs in self.raw
        ]
