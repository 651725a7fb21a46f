"""What ran: every aten op, the module it ran in, and (on request) its FLOPs and host time.

``OpCapture`` is a ``TorchDispatchMode``. For each op it makes one native call in and one
out (``visprof._C.op_enter/op_exit``) that together push the op's id as CUPTI external
correlation id (so every kernel the op launches carries it), the op's NVTX ranges (its
category around the op, in the "visprof" domain; the module ranges around them follow the
op's module: visprof/capture/nvtx_scheme.py) and, in the memory pass, the category as
allocation tag. Module paths come from global forward hooks that keep a stack of the
active modules.

Per-op Python work is what this pass costs (docs/architecture.md, section 4), so the hot path does a
dict lookup for the op's category and appends a tuple; everything else happens after the
run, in ``to_records()``.
"""
from __future__ import annotations

import threading
import time
import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from visprof.attribution.categories import CategoryTable, default_table
from visprof.attribution.attribute import module_chains
from visprof.attribution.named_attention import attention_by_name_only
from visprof.capture import higher_order, live
from visprof.capture.autograd_link import AutogradLink
from visprof.capture.dispatch import call_as_unmoded
from visprof.native import native
from visprof.capture.nvtx_scheme import LiveModuleRanges, ModulePlan, ModuleRanges, op_handle, op_range_name
from visprof.capture.op_costs import NO_COST, OpCostCounter, is_frozen_script, script_constants
from visprof.native.records import ModuleRecord, OpRecord
from visprof.capture.structure import EXTERNAL, PARAM, SOFTMAX, Dataflow, Roles, find_roles, op_kind

_aten = torch.ops.aten
# Where each convolution overload keeps its input, weight and `groups` among its positional
# arguments. The backward's are recorded too: it takes its forward's sub-kind (depthwise, ...).
# op -> (input's index, weight's index, groups' index); the ``.padding`` overloads are
# ``padding="same"``/``"valid"`` (convmixer's depthwise convolutions), with groups where the
# default's is. A torch.jit.trace'd module calls ``_convolution`` (its graph records the op below
# ``convolution``), groups where ``convolution``'s are. A transposed convolution (nn.ConvTranspose2d:
# lowformer's upsampling, decoders) keeps groups at 6 too; its weight is (in, out / groups, *kernel).
_CONV_ARGS = {_aten.convolution.default: (0, 1, 8), _aten.convolution_backward.default: (1, 2, 9),
              _aten._convolution.default: (0, 1, 8), _aten._convolution.deprecated: (0, 1, 8),
              **{overload: (0, 1, 6) for packet in (_aten.conv1d, _aten.conv2d, _aten.conv3d)
                 for overload in (packet.default, packet.padding)},
              **{overload: (0, 1, 6) for overload in (_aten.conv_transpose1d.default, _aten.conv_transpose2d.input,
                                                      _aten.conv_transpose3d.input)}}
# The op autocast casts a tensor with: a cast of a parameter is autocast re-casting a weight.
# What autocast calls to cast a weight: _to_copy under no_grad, to.dtype under inference_mode
# (which skips the ADInplaceOrView key that decomposes aten.to into _to_copy).
_CASTS = (_aten._to_copy.default, _aten.to.dtype)  # by name: analysis/roofline.py's CAST_OPS


def _annotation_ops() -> frozenset:
    """record_function's ops (an optimizer's step is wrapped in one): annotations, no work. Left
    out of the recording: every training step had listed them under "other"."""
    ops = []
    for name in ("_record_function_enter", "_record_function_enter_new", "_record_function_exit"):
        packet = getattr(torch.ops.profiler, name, None)
        ops.extend(getattr(packet, overload) for overload in (packet.overloads() if packet is not None else ()))
    return frozenset(ops)


_ANNOTATIONS = _annotation_ops()


def _fake_tensor_type() -> type | None:
    try:
        from torch._subclasses.fake_tensor import FakeTensor  # private, long stable; without it no check
    except ImportError:  # pragma: no cover - depends on the installed torch
        return None
    return FakeTensor


_FAKE_TENSOR = _fake_tensor_type()


def _traces(args: tuple) -> bool:
    """An op on FakeTensors is torch tracing a function, not work a device runs: flex_attention's
    backward traces its score_mod's joint graph so (on a GPU, inside a training step's trace). Such
    ops have no storage to read (reading a FakeTensor's data pointer warns, and will raise) and launch
    nothing; recorded, one (prim.device) was filed under "other"."""
    return _FAKE_TENSOR is not None and any(isinstance(a, _FAKE_TENSOR) for a in args)


def has_frozen_script(root: torch.nn.Module | None) -> bool:
    return root is not None and any(is_frozen_script(module) for module in root.modules())


class ModuleTracker:
    """Keeps the stack of nn.Modules whose forward is running, by index into ``modules``.

    Modules are named from ``root.named_modules()``. A module outside the root (or any module,
    without a root: a teacher model, an EMA copy) is named by its class under the module that
    called it, numbered where that name is taken (``VisionTransformer#2``), and its own children
    by their attribute names under it: named by class alone, a second ViT's qkv and proj and
    every block had shared one path. The hooks are global, so they also see
    modules called through functional wrappers, and ``always_call`` pops a module whose
    forward raised. Each thread has its own stack: the hooks also see modules that other
    threads run meanwhile (a metrics or EMA thread), which had lent their module to the
    recording thread's ops.
    """

    def __init__(self, root: torch.nn.Module | None = None):
        self.root = root
        self.modules: list[ModuleRecord] = []
        self._index: dict[int, int] = {}
        self._paths: set[str] = set()
        self._classes: list[tuple[str, ...]] = []  # per module: its class and its ancestors'
        self._stacks = threading.local()
        self._handles: list[Any] = []
        # a torch.compile'd module (its wrapper, or one compiled in place) among those named: given, or called
        # in the block (trace(model) of the module another name for which is compiled and runs)
        self.has_compiled = False
        if root is not None:
            self._add_tree(root)

    def _add_tree(self, root: torch.nn.Module, base: str = "", parent: int = -1) -> int:
        """Adds ``root`` as ``base`` under ``parent`` and its children by attribute path; a module
        seen already keeps its index. Returns the root's."""
        indices: dict[str, int] = {}
        for path, module in root.named_modules():
            known = self._index.get(id(module))
            if known is not None:
                indices[path] = known
                continue
            above = indices.get(path.rpartition(".")[0], parent) if path else parent
            full = ".".join(part for part in (base, path) if part)
            indices[path] = self._add(module, full, above)
        return indices[""]

    def _add(self, module: torch.nn.Module, path: str, parent: int) -> int:
        self.has_compiled = self.has_compiled or is_compiled_module(module)
        index = len(self.modules)
        self._paths.add(path)
        self.modules.append(ModuleRecord(path=path, cls=type(module).__name__, parent=parent, attrs=_module_attrs(module)))
        inherited = self._classes[parent] if parent >= 0 else ()
        self._classes.append((type(module).__name__, *inherited))
        self._index[id(module)] = index
        return index

    @property
    def stack(self) -> list[int]:
        """The modules whose forward runs on this thread, outermost first."""
        try:
            return self._stacks.modules
        except AttributeError:
            self._stacks.modules = []
            return self._stacks.modules

    def classes(self, index: int) -> tuple[str, ...]:
        """Class names of module ``index`` and its ancestors, innermost first, as the category
        rules see them (``rename``)."""
        return self._classes[index] if index >= 0 else ()

    def rename(self, renamed: dict[int, str]) -> None:
        """Module index -> the name the category rules see for it instead of its class's
        (``visprof.attribution.named_attention``: an attention module by name that computes
        none); its descendants' chains change with it. Module records keep the class."""
        self._classes = module_chains(self.modules, renamed)

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        stack = self.stack
        index = self._index.get(id(module))
        if index is None:  # called outside the root's tree: hang it under the current module
            parent = stack[-1] if stack else -1
            prefix = self.modules[parent].path + "." if parent >= 0 and self.modules[parent].path else ""
            index = self._add_tree(module, self._unused(prefix + type(module).__name__), parent)
        stack.append(index)

    def _unused(self, path: str) -> str:
        """``path``, or ``path#2``, ``path#3``, ... where it is taken."""
        number = 1
        candidate = path
        while candidate in self._paths:
            number += 1
            candidate = f"{path}#{number}"
        return candidate

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        stack = self.stack
        if stack:
            stack.pop()

    def __enter__(self) -> "ModuleTracker":
        from torch.nn.modules import module as nn_module

        self._handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post, always_call=True),
        ]
        live.started(self)
        return self

    def __exit__(self, *exc) -> None:
        self.stand_down()
        self._stacks = threading.local()
        live.ended(self)

    def stand_down(self) -> None:
        """Removes the hooks (also what a forked child does: visprof.capture.live)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []


def is_compiled_module(module: torch.nn.Module) -> bool:
    """torch.compile's wrapper (OptimizedModule) or a module compiled in place (``module.compile()``)."""
    return type(module).__name__ == "OptimizedModule" or getattr(module, "_compiled_call_impl", None) is not None


def _module_attrs(module: torch.nn.Module) -> dict[str, Any]:
    if isinstance(module, torch.nn.modules.conv._ConvNd):
        return {"groups": module.groups, "in_channels": module.in_channels, "kernel_size": list(module.kernel_size)}
    return {}


def _op_attrs(func, args: tuple, kwargs: dict) -> dict[str, Any] | None:
    """What the taxonomy and the report need to know about an op beyond its name."""
    if func in _CONV_ARGS:
        return _conv_attrs(func, args, kwargs)
    if func in _CASTS and args and isinstance(args[0], torch.nn.Parameter):
        return {"weight_cast": True}
    return None


def _conv_attrs(func, args: tuple, kwargs: dict) -> dict[str, Any]:
    x, weight, groups_at = _CONV_ARGS[func]
    groups = args[groups_at] if len(args) > groups_at else kwargs.get("groups", 1)
    return {"groups": int(groups), "in_channels": int(args[x].shape[1]),
            "kernel_size": [int(k) for k in args[weight].shape[2:]]}


def _attrs_key(attrs: dict) -> tuple:
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in attrs.items())


class FlowRecorder:
    """The dataflow of one forward, for ``visprof.capture.structure``.

    Producers are found by tensor identity through weak references (id -> (weakref, op)), so
    no activation is kept alive and a dead tensor's reused id is never mistaken for it; a
    view is a new tensor object and an op of its own. Parameters, buffers and tensors that
    modules or their TorchScript graphs hold count as constants (``PARAM``); any other tensor that no recorded op
    produced is an activation from outside (``EXTERNAL``), e.g. the input. Given ``inputs`` (a model with a
    frozen graph, whose executor makes new constants of it, OpCostCounter's doc), only those are from outside."""

    def __init__(self, root: torch.nn.Module | None, inputs: tuple[torch.Tensor, ...] | None = None):
        self.producers: dict[int, tuple[Any, int]] = {}
        self.constants: set[int] = set()
        if root is not None:
            for module in root.modules():
                self.constants.update(id(t) for t in module.__dict__.get("_parameters", {}).values() if t is not None)
                self.constants.update(id(t) for t in module.__dict__.get("_buffers", {}).values() if t is not None)
                self.constants.update(id(v) for v in module.__dict__.values() if isinstance(v, torch.Tensor))
            self._script_constants = script_constants(root)  # held: ids stay theirs while they live
            self.constants.update(id(t) for t in self._script_constants)
        # given (a model with a frozen graph, OpCostCounter's ``inputs``): only these come from outside
        self._inputs = None if inputs is None else {id(t) for t in inputs}
        self.flow = Dataflow()
        self.index: list[int] = []  # raw index of each dataflow op
        self._kinds: dict[Any, str] = {}

    def _source(self, t: torch.Tensor) -> int:
        entry = self.producers.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        if id(t) in self.constants or isinstance(t, torch.nn.Parameter):
            return PARAM
        return EXTERNAL if self._inputs is None or id(t) in self._inputs else PARAM

    def _produced(self, t: torch.Tensor, position: int) -> None:
        self.producers[id(t)] = (weakref.ref(t), position)

    def record(self, raw_index: int, func, args: tuple, kwargs: dict, out: Any, attrs: dict | None) -> None:
        inputs = []
        for a in (*args, *kwargs.values()) if kwargs else args:
            if isinstance(a, torch.Tensor):
                inputs.append(self._source(a))
            elif isinstance(a, (list, tuple)):
                inputs.extend(self._source(t) for t in a if isinstance(t, torch.Tensor))
        kind = self._kinds.get(func)
        if kind is None:
            kind = self._kinds[func] = op_kind(str(func))
        info = None
        if kind in SOFTMAX and args:
            dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
            info = isinstance(dim, int) and dim in (-1, args[0].dim() - 1)
        elif kind == "permute" and len(args) > 1:
            info = len(args[1])
        elif kind == "pow" and len(args) > 1 and isinstance(args[1], (int, float)):
            info = args[1]
        elif attrs is not None and "groups" in attrs:  # a convolution: 1x1 with groups 1 (a projection candidate)
            info = attrs.get("groups") == 1 and all(k == 1 for k in attrs.get("kernel_size", (0,)))
        position = self.flow.add(kind, inputs, info)
        self.index.append(raw_index)
        if isinstance(out, torch.Tensor):
            self._produced(out, position)
        elif isinstance(out, (list, tuple)):
            for t in out:
                if isinstance(t, torch.Tensor):
                    self._produced(t, position)

    def roles(self) -> Roles:
        """Raw index -> role (and its facts)."""
        found = find_roles(self.flow)
        return Roles({self.index[i]: role for i, role in found.items()},
                     {self.index[i]: facts for i, facts in found.facts.items()})


class OpCapture(TorchDispatchMode):
    """Captures ops while active. Options:

    nvtx:     push NVTX ranges for Nsight tools: per op its category and the op (one
              registered handle), and the module ranges around them (model_name names the
              root's range); see visprof/capture/nvtx_scheme.py;
    tags:     push the op's category as allocation tag (memory pass);
    flops:    count FLOPs and bytes moved from the op's tensors (visprof.capture.op_costs.OpCost);
    template: a capture of one earlier iteration of the same forward (with module hooks).
              The op sequence of a forward repeats, so op k of every later iteration takes
              its module, category decision and FLOPs from op k of the template, and the
              module hooks can stay off while timing. An op that differs from the template
              at its position is decided on the spot and counted in `misaligned`.
    structure: record the dataflow of the forward (which op produced each tensor input,
              which inputs are parameters/buffers) and, when the capture exits, give ops
              a role found from it (``visprof.capture.structure``: attention core and projections,
              norms and activations written as ops), stored as ``attrs["role"]``. Meant for
              the template forward: the captures built from it reuse its decisions.
    backward: link each backward op to the forward op it differentiates
              (``visprof.capture.autograd_link``): it is recorded in that op's module and, once
              the capture exits, takes its role; it is marked ``attrs["backward"]``, stays out of
              the forward's dataflow and pushes no module ranges (NVTX: as on autograd's GPU
              threads, where no module range is open). For traced training steps.
    """

    def __init__(self, tracker: ModuleTracker, table: CategoryTable | None = None, *, nvtx: bool = True,
                 tags: bool = False, flops: bool = False, template: "OpCapture | None" = None,
                 structure: bool = False, backward: bool = False, model_name: str | None = None,
                 inputs: tuple[torch.Tensor, ...] = ()):
        super().__init__()
        self.tracker = tracker
        self.table = table or default_table()
        self._c = native()
        self._nvtx = nvtx
        self._tags = tags
        # With a frozen graph in the model, what no recorded op made and is not an input is its constant
        graph_inputs = inputs if inputs and has_frozen_script(tracker.root) else None
        self._cost = OpCostCounter(script_constants(tracker.root), graph_inputs) if flops else None
        self.iteration = 0
        self.next_id = 1
        # (external_id, op name, module index, iteration, start_ns, end_ns, OpCost, attrs)
        self.raw: list[tuple] = []
        self._decisions: dict[tuple, tuple[int, int, int]] = {}
        self._category_ids = {c: i + 1 for i, c in enumerate(self.table.report_order())}  # 0: untagged
        self._position = 0
        self.misaligned = 0
        # Dataflow of the template forward (structure=True): per raw entry, its inputs' producers.
        self._flow: FlowRecorder | None = FlowRecorder(tracker.root, graph_inputs) if structure else None
        self.roles: Roles = Roles()  # raw index -> role, once the capture has exited
        self._autograd = AutogradLink() if backward else None
        self._module_ranges = ModuleRanges(tracker.modules, model_name) if nvtx else None
        self._live_ranges = LiveModuleRanges(self._module_ranges) if nvtx else None
        if template is not None:
            self._learn_names(template)
        # Per position: (func, module, attrs, OpCost, (handle, colour, tag)).
        self._template = [
            (func, module, attrs, flops, self._decide(func, module, attrs))
            for _, func, module, _, _, _, flops, attrs in template.raw
        ] if template is not None else None

    def _learn_names(self, template: "OpCapture") -> None:
        """The category rules see what the template's forward ran: an attention module by name
        that computed no attention is read by its ops (visprof.attribution.named_attention). The
        template's module indices are its tracker's; this tracker (the memory pass has its own)
        takes a name where the module at that index has the same path."""
        known = template.tracker.modules
        renamed = attention_by_name_only(known, ((str(func), module) for _, func, module, *_ in template.raw),
                                         self.table)
        mine = self.tracker.modules
        self.tracker.rename({i: name for i, name in renamed.items() if i < len(mine) and mine[i].path == known[i].path})

    @property
    def backward_of_an_earlier_forward(self) -> int:
        """Backward ops whose forward op ran before the capture began (classified by name alone)."""
        return self._autograd.of_an_earlier_forward if self._autograd is not None else 0

    def template_ops(self) -> list[tuple]:
        """Per position of the template given at construction: (func, module index, attrs, OpCost)."""
        return [entry[:4] for entry in self._template or []]

    def template_decisions(self) -> list[tuple[int, int, int]]:
        """Per template position: (NVTX handle, ARGB colour, allocation tag), by this capture's options."""
        return [entry[4] for entry in self._template or []]

    def restrict_nvtx(self, positions) -> None:
        """Keeps the NVTX op ranges of these template positions only (the others run with
        their module ranges but no category or op range), so that Nsight Compute's filter
        selects a sample of a category's ops (visprof ncu)."""
        keep = set(positions)
        self._template = [entry if index in keep else (*entry[:4], (-1, *entry[4][1:]))
                          for index, entry in enumerate(self._template or [])]

    def nvtx_module_plan(self, skip=()) -> ModulePlan | None:
        """The module ranges to pop and push before each template op (for the C++ replay);
        None when this capture pushes no NVTX ranges. ``skip``: positions the replay does not
        range (kernel-less ops inside a wrapper's range), which move no module range."""
        if self._module_ranges is None:
            return None
        return self._module_ranges.plan([module for _, module, *_ in self.template_ops()], skip)

    def start_iteration(self, iteration: int) -> None:
        self.iteration = iteration
        self._position = 0
        if self._live_ranges is not None:
            self._live_ranges.close()

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """torch.compile'd code called inside a capture runs compiled, and the capture sees the
        ops its compiled code calls (Inductor's extern GEMMs, its fallbacks), not the eager ops
        (in torch >= 2.9, which asks; older torch runs it eagerly under any dispatch mode)."""
        return True

    def __enter__(self):
        if self._live_ranges is not None:
            self._live_ranges.claim_thread()
        entered = super().__enter__()
        live.started(self)
        return entered

    def __exit__(self, exc_type, exc, tb):
        live.ended(self)
        try:
            if self._live_ranges is not None:
                self._live_ranges.close()  # balanced however the forward ended
        finally:
            super().__exit__(exc_type, exc, tb)
        if self._flow is not None and exc_type is None:
            self.apply_structure()  # the template forward ended: roles from its dataflow
        return False

    def stand_down(self) -> None:
        """In a forked child the mode is off its stack already (visprof.capture.live): nothing
        to time or range there."""
        self._live_ranges = None

    def tag_names(self) -> dict[int, str]:
        """Allocation tag -> category id (tag 0: allocated outside any op)."""
        return {tag: category for category, tag in self._category_ids.items()}

    def _decide(self, func, module: int, attrs: dict | None) -> tuple[int, int, int]:
        """(NVTX handle, ARGB colour, allocation tag) of an op, cached per op, module and attrs."""
        key = (func, module, _attrs_key(attrs) if attrs else None)
        decision = self._decisions.get(key)
        if decision is None:
            found = self.table.classify_op(str(func), self.tracker.classes(module), attrs)
            category = self.table.category(found.category)
            handle = op_handle(found.category, op_range_name(found.category, found.subcategory, str(func))) \
                if self._nvtx else -1
            tag = self._category_ids.get(found.category, 0) if self._tags else -1
            decision = (handle, category.argb, tag)
            self._decisions[key] = decision
        return decision

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _ANNOTATIONS or _traces(args):
            return func(*args, **kwargs)
        position = self._position
        self._position = position + 1
        template = self._template
        in_backward = False
        if template is not None and position < len(template) and template[position][0] is func:
            _, module, attrs, flops, (handle, color, tag) = template[position]
        else:
            if template is not None:
                self.misaligned += 1
            stack = self.tracker.stack
            module = stack[-1] if stack else -1
            if self._autograd is not None:
                module, in_backward = self._autograd.op(len(self.raw), func, module)
            attrs = _op_attrs(func, args, kwargs)
            if in_backward:
                attrs = {**(attrs or {}), "backward": True}
            handle, color, tag = self._decide(func, module, attrs)
            flops = None
        if self._live_ranges is not None:  # backward ops run outside module ranges, as on autograd's GPU threads
            self._live_ranges.before_op(-1 if in_backward else module)
        external_id = self.next_id
        self.next_id += 1
        c = self._c
        start = time.perf_counter_ns()
        c.op_enter(external_id, handle, color, tag)
        try:
            out = call_as_unmoded(func, args, kwargs)
        finally:
            c.op_exit()
        end = time.perf_counter_ns()
        if template is not None and position == len(template) - 1 and self._live_ranges is not None:
            self._live_ranges.close()  # the forward's last op: its modules end with it, as in the replay
        if flops is None:  # decided on the spot: never a template-driven op
            flops = self._cost(func, args, kwargs, out) if self._cost else NO_COST
            if self._flow is not None and not in_backward:
                self._flow.record(len(self.raw), func, args, kwargs, out, attrs)
        self.raw.append((external_id, func, module, self.iteration, start, end, flops, attrs))
        return out

    def apply_structure(self) -> dict[int, str]:
        """Find op roles from the recorded dataflow and store them as ``attrs["role"]``."""
        flow, self._flow = self._flow, None
        if flow is None:
            return self.roles
        self.roles = flow.roles()
        facts = self.roles.facts
        if self._autograd is not None:  # a backward op plays its forward op's part
            backward = self._autograd.backward_of.items()
            self.roles.update({b: self.roles[f] for b, f in backward if f in self.roles})
            facts.update({b: facts[f] for b, f in backward if f in facts})
        for index, role in self.roles.items():
            entry = self.raw[index]
            self.raw[index] = (*entry[:7], {**(entry[7] or {}), "role": role, **facts.get(index, {})})
        return self.roles

    def to_records(self) -> list[OpRecord]:
        return [
            OpRecord(external_id=ext, name=str(func), module=module, iteration=it, cpu_start_ns=start,
                     cpu_end_ns=end, attrs=attrs or {}, **flops.record_fields())
            for ext, func, module, it, start, end, flops, attrs in self.raw
        ]


higher_order.register(OpCapture)  # flex_attention reaches __torch_dispatch__ as one op
