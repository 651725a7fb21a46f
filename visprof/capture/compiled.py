"""torch.compile'd models attributed like eager ones: each Inductor kernel mapped back to the
aten ops and modules it came from.

A dispatch mode would make torch.compile run the model eagerly, so a compiled model is not
op-captured. Instead visprof compiles it through ``CompileRecorder``, a torch.compile backend
that is Inductor with its kernel provenance switched on
(``torch._inductor.config.trace.provenance_tracking_level``, in torch >= 2.9). For every
kernel Inductor generates or calls (Triton/C++ kernels, extern GEMM/conv calls, fallback ops
such as SDPA) that gives the post-grad FX nodes it came from; each node carries its aten op,
its ``original_aten`` and its ``nn_module_stack``. ``CompiledProgram`` keeps, per graph and
in launch order, one ``KernelCall`` per kernel: its anchor op, module, FLOPs and the ops fused
into it.

After the traced iterations, ``attribute_rows`` links the trace's rows to those calls:
Inductor's own kernels by name (their names are unique per call site, or repeated in the same
order), library kernels (cuBLAS, cuDNN, flash) by their place between them and the kind of
extern call there. Each linked call becomes an ``OpRecord`` with the anchor op's name, module
and attributes, so attribution, modules, FLOPs and reports work as for an eager model.

A fused kernel is attributed to its anchor: the GEMM/conv/SDPA of an extern call or a template
kernel, else its most specific op (norm > softmax/activation > pooling > elementwise > layout);
the other ops' categories are kept in ``attrs["fused"]`` so reports can explain the fused
remainder. Where provenance is missing (older torch, a kernel no call names) rows keep their
kernel-name classification, and ``CompileRecorder.warnings`` says so.
"""
from __future__ import annotations

import operator
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from visprof.attribution.named_attention import attention_by_name_only
from visprof.capture.structure import EXTERNAL, PARAM, SOFTMAX, Dataflow, find_roles, op_kind
from visprof.native.records import ModuleRecord

__all__ = ["CompileRecorder", "CompiledProgram", "KernelCall", "attribute_rows", "compile_model",
           "provenance_supported"]

# Which category a kernel's anchor comes from first, most specific first. Library work (a
# GEMM, conv or attention kernel) dominates whatever Inductor fused into its epilogue.
ANCHOR_ORDER = ("attention", "convolution", "linear", "normalization", "activation", "pooling", "elementwise",
                "memory", "other")
# Library categories: only an extern call or a template kernel does their work. Their ops
# also appear among the origins of Inductor's own kernels (layout copies made for a conv,
# nodes a pattern rewrite created), where they must not be the anchor.
LIBRARY = {"attention", "convolution", "linear"}
# Ops that only relabel a tensor: never "fused work".
_VIEWS = {"view", "_unsafe_view", "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze", "expand",
          "getitem", "slice", "select", "alias", "as_strided", "unbind", "split", "split_with_sizes"}


def provenance_supported() -> tuple[bool, str]:
    """(whether this torch's Inductor can report kernel provenance, why not)."""
    try:
        import torch._inductor.config as inductor_config
        import torch._inductor.debug as inductor_debug
    except Exception as exc:  # noqa: BLE001 - any import failure means: no provenance
        return False, f"torch._inductor unavailable ({type(exc).__name__})"
    if not hasattr(inductor_config.trace, "provenance_tracking_level"):
        return False, "this torch's Inductor has no trace.provenance_tracking_level"
    if not hasattr(inductor_debug, "_inductor_triton_kernel_to_post_grad_node_info"):
        return False, "this torch's Inductor keeps no kernel-to-node provenance map"
    return True, ""


@dataclass
class KernelCall:
    """One kernel launch site of a compiled graph, in launch order."""

    name: str  # as Inductor names it: triton_poi_fused_add_0, extern_kernels.mm, torch.ops.aten.x.default
    graph: int
    handle: int  # Inductor's provenance handle: increases in launch order within a graph
    extern: bool  # a library call (extern kernel or fallback op), not a kernel Inductor generated
    op: str = "other"  # anchor aten op, e.g. aten.convolution.default
    module: str = ""  # module path of the anchor op ("" for the root)
    attrs: dict[str, Any] = field(default_factory=dict)  # conv shape, role, fused
    flops: float = 0.0
    ops: list[str] = field(default_factory=list)  # aten ops of all its nodes
    category: str = "other"  # anchor's category (with its module), for reports and matching
    family: str = "other"  # category of the anchor op alone (gemm -> linear): matches library kernel names


@dataclass
class CompiledProgram:
    calls: list[KernelCall] = field(default_factory=list)

    @property
    def generated_names(self) -> set[str]:
        return {c.name for c in self.calls if not c.extern}

    def conv_layout(self) -> str | None:
        """The memory format Inductor gave its convolutions' inputs: "channels_last" (its layout
        optimisation), "contiguous", "mixed", or None without convolutions. An eager NCHW run
        does other work in its convolutions (cuDNN's NCHW<->NHWC conversions, other kernels),
        so the same work is compared against an eager run in this layout."""
        layouts = {c.attrs["channels_last"] for c in self.calls if "channels_last" in c.attrs}
        if not layouts:
            return None
        return "mixed" if len(layouts) > 1 else ("channels_last" if layouts.pop() else "contiguous")


def compile_model(model, recorder: "CompileRecorder | None" = None):
    """``torch.compile(model)`` through visprof's provenance-keeping Inductor backend.

    Returns (compiled module, recorder). Where this torch cannot report provenance, the model
    is compiled with plain Inductor and the recorder says why in ``warnings``."""
    import torch

    recorder = recorder or CompileRecorder(model)
    if not recorder.supported:
        return torch.compile(model), recorder
    return torch.compile(model, backend=recorder), recorder


class CompileRecorder:
    """A torch.compile backend: Inductor, with each graph's kernel provenance recorded."""

    def __init__(self, root=None, table=None):
        # Weakly: torch's compile cache keeps its backend (this recorder) for the process's life,
        # and a strong reference here kept every model a compile=True profile had built.
        self._root = weakref.ref(root) if root is not None else None
        self._table = table
        self.graphs: list[list[KernelCall]] = []
        self.warnings: list[str] = []
        self.supported, why = provenance_supported()
        if not self.supported:
            self.warnings.append(f"torch.compile: {why}; kernels are attributed by their names only")

    @property
    def table(self):
        if self._table is None:
            from visprof.attribution.categories import default_table

            self._table = default_table()
        return self._table

    @property
    def root(self):
        """The compiled model, while it lives (it does throughout its compiles)."""
        return self._root() if self._root is not None else None

    @property
    def program(self) -> CompiledProgram:
        return CompiledProgram([call for graph in self.graphs for call in graph])

    def __call__(self, gm, example_inputs):
        import torch
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config
        from torch._inductor.compile_fx import compile_fx, compile_fx_inner

        constants = _constant_ids(self.root)
        param_flags = [isinstance(t, torch.nn.Parameter) or id(t) in constants for t in example_inputs]
        graph_index = len(self.graphs)

        def inner_compile(post_grad_gm, inputs, **kwargs):
            import torch._inductor.debug as inductor_debug

            before = set(inductor_debug._inductor_triton_kernel_to_post_grad_node_info)
            compiled = compile_fx_inner(post_grad_gm, inputs, **kwargs)
            info = inductor_debug._inductor_triton_kernel_to_post_grad_node_info
            provenance = {k: list(v) for k, v in info.items() if k not in before}
            try:
                self.graphs.append(read_provenance(post_grad_gm, provenance, param_flags, graph_index, self.table,
                                                   self.root))
            except Exception as exc:  # noqa: BLE001 - provenance is for reports; never break the compile
                self.warnings.append(f"torch.compile: graph {graph_index}'s kernel provenance could not be read "
                                     f"({type(exc).__name__}: {exc}); its kernels are attributed by name")
            return compiled

        # Fresh compiles: a cache hit skips code generation, and with it the provenance.
        with inductor_config.patch({"trace.provenance_tracking_level": 1, "fx_graph_cache": False}), \
                functorch_config.patch(enable_autograd_cache=False):
            return compile_fx(gm, example_inputs, inner_compile=inner_compile)


def _constant_ids(root) -> set[int]:
    if root is None:
        return set()
    ids: set[int] = set()
    for module in root.modules():
        ids.update(id(t) for t in module._parameters.values() if t is not None)
        ids.update(id(t) for t in module._buffers.values() if t is not None)
    return ids


# --- reading one graph's provenance -------------------------------------------------------
_PATH_TOKEN = re.compile(r"\['([^']*)'\]|\[(\d+)\]|\.(\w+)")


def module_path(fqn: str) -> str:
    """``L['self'].layer1[0].conv1`` (Dynamo's nn_module_stack) -> ``layer1.0.conv1``."""
    fqn = fqn.strip()
    while True:  # getattr(L['self'].blocks, '0') -> L['self'].blocks.0
        unwrapped = re.sub(r"getattr\(([^()]*), '([^']*)'\)", r"\1.\2", fqn)
        if unwrapped == fqn:
            break
        fqn = unwrapped
    rest = re.sub(r"^(L|G)\['[^']*'\]", "", fqn)
    parts = [a or b or c for a, b, c in _PATH_TOKEN.findall(rest)]
    return ".".join(p for p in parts if p not in ("_modules", "_parameters", "_buffers"))


def _node_stack(node) -> list[tuple[str, str]]:
    """(module path, class name) of each module of an FX node's nn_module_stack, outermost first."""
    stack = []
    for entry in (node.meta.get("nn_module_stack") or {}).values():
        cls = entry[1] if isinstance(entry, (tuple, list)) and len(entry) > 1 else None
        name = cls if isinstance(cls, str) else getattr(cls, "__name__", str(cls))
        stack.append((module_path(entry[0]), name.rsplit(".", 1)[-1]))
    return stack


def _node_module(node, renamed: dict[str, str] | None = None) -> tuple[str, tuple[str, ...]]:
    """(module path, class names innermost first) of an FX node, from its nn_module_stack;
    ``renamed``: module path -> the name the category rules see instead of its class's."""
    stack = _node_stack(node)
    renamed = renamed or {}
    return (stack[-1][0] if stack else ""), tuple(renamed.get(path, cls) for path, cls in reversed(stack))


def _names_the_rules_see(gm, table) -> dict[str, str]:
    """Module path -> name for the category rules, for each attention module by name whose nodes
    in this graph compute no attention (visprof.attribution.named_attention)."""
    modules: list[ModuleRecord] = []
    index: dict[str, int] = {}
    ops = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        parent = -1
        for path, cls in _node_stack(node):
            if path not in index:
                index[path] = len(modules)
                modules.append(ModuleRecord(path=path, cls=cls, parent=parent))
            parent = index[path]
        ops.append((str(node.target), parent))
    return {modules[i].path: name for i, name in attention_by_name_only(modules, ops, table).items()}


def _val(arg):
    import torch.fx

    return torch.fx.node.map_arg(arg, lambda n: n.meta.get("val"))


def _conv_attrs(node) -> dict[str, Any] | None:
    args = node.args
    weight = args[1].meta.get("val") if len(args) > 1 and hasattr(args[1], "meta") else None
    x = args[0].meta.get("val") if args and hasattr(args[0], "meta") else None
    if weight is None or x is None:
        return None
    groups = args[8] if len(args) > 8 else node.kwargs.get("groups", 1)
    return {"groups": int(groups), "in_channels": int(x.shape[1]), "kernel_size": [int(k) for k in weight.shape[2:]]}


def _inductor_layout_opt(gm) -> bool:
    """Whether Inductor's lowering made this graph's convolutions channels-last (its layout
    optimisation). The lowering decides it from the post-grad graph with this same heuristic;
    the graph's meta values keep the traced layout, so they cannot tell."""
    try:
        from torch._inductor.graph import GraphLowering

        return bool(GraphLowering.decide_layout_opt(gm, is_inference=True))
    except Exception:  # noqa: BLE001 - a torch without the heuristic: the meta values decide
        return False


def _is_channels_last(x) -> bool:
    """Whether a (fake) 4-d tensor is laid out NHWC and not also NCHW (1x1 maps are both)."""
    import torch

    if x.dim() != 4:
        return False
    return x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()


def graph_dataflow(gm, param_flags: Sequence[bool]) -> tuple[Dataflow, dict[Any, int]]:
    """The post-grad graph as a ``Dataflow`` for ``visprof.capture.structure``; node -> op index.

    A softmax that Inductor decomposed (amax, sub, exp, sum, div, all with ``original_aten``
    softmax) becomes one softmax op again."""
    flow = Dataflow()
    index: dict[Any, int] = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    is_param = {n: bool(param_flags[i]) for i, n in enumerate(placeholders)} if len(placeholders) == len(param_flags) else {}
    softmax_of: dict[Any, int] = {}  # node -> its softmax group's op
    inputs: list[list[int]] = []

    def source(n) -> int | None:
        if n in index:
            return index[n]
        if n.op == "placeholder":
            return PARAM if is_param.get(n) else EXTERNAL
        if n.op == "get_attr":
            return PARAM
        return None

    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        args = [a for a in node.all_input_nodes]
        ins = [s for s in (source(a) for a in args) if s is not None]
        target = node.target
        kind = "getitem" if target is operator.getitem else op_kind(str(target))
        original = node.meta.get("original_aten")
        original_kind = op_kind(str(original)) if original is not None else ""
        if original_kind in SOFTMAX and kind not in SOFTMAX:
            group = next((softmax_of[a] for a in args if a in softmax_of), None)
            if group is None:
                group = flow.add("_softmax", [], None)
                inputs.append([])
            softmax_of[node] = group
            index[node] = group
            inputs[group].extend(s for a, s in zip(args, (source(a) for a in args)) if s is not None and a not in softmax_of)
            if kind in ("amax", "sum") and len(node.args) > 1:
                dims = node.args[1] if isinstance(node.args[1], (list, tuple)) else [node.args[1]]
                val = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
                rank = val.dim() if val is not None else None
                flow.info[group] = rank is not None and list(dims) in ([-1], [rank - 1])
            continue
        info = None
        if kind in SOFTMAX and len(node.args) > 1:
            val = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
            info = val is not None and node.args[1] in (-1, val.dim() - 1)
        elif kind == "permute" and len(node.args) > 1:
            info = len(node.args[1])
        elif kind == "pow" and len(node.args) > 1 and isinstance(node.args[1], (int, float)):
            info = node.args[1]
        elif kind == "convolution":
            attrs = _conv_attrs(node)
            info = bool(attrs) and attrs["groups"] == 1 and all(k == 1 for k in attrs["kernel_size"])
        index[node] = flow.add(kind, [], info)
        inputs.append(ins)
    flow.inputs = [tuple(i) for i in inputs]
    return flow, index


def read_provenance(gm, provenance: dict[str, list[str]], param_flags: Sequence[bool], graph: int, table,
                    root=None) -> list[KernelCall]:
    """The kernel calls of one compiled graph, in launch order, from Inductor's provenance map
    (``"kernel_name:handle" -> [post-grad node names]``) and the post-grad graph."""
    from visprof.capture.op_costs import op_flops

    nodes = {n.name: n for n in gm.graph.nodes}
    flow, index = graph_dataflow(gm, param_flags)
    roles = find_roles(flow)
    renamed = _names_the_rules_see(gm, table)
    layout_opt = _inductor_layout_opt(gm)
    root_class = (type(root).__name__,) if root is not None else ()
    parsed = []
    for key, names in provenance.items():
        name, _, handle = key.rpartition(":")
        parsed.append((int(handle) if handle.isdigit() else 0, name, [nodes[n] for n in names if n in nodes]))
    parsed.sort(key=lambda p: p[0])

    described: dict[Any, tuple] = {}

    def describe(node):
        if node not in described:
            op = str(node.target)
            path, classes = _node_module(node, renamed)
            attrs = _conv_attrs(node) if op_kind(op) == "convolution" else None
            if attrs:  # the layout Inductor's lowering gives it, which conv_layout() reports
                attrs["channels_last"] = layout_opt or _is_channels_last(node.args[0].meta["val"])
            attrs = dict(attrs or {})
            position = index.get(node, -1)
            if role := roles.get(position):
                attrs.update(role=role, **roles.facts.get(position, {}))
            found = table.classify_op(op, (*classes, *root_class), attrs)
            described[node] = (op, path, attrs, found, table.classify_op(op, (), {}).category)
        return described[node]

    flops_taken: set[Any] = set()
    calls = []
    for handle, name, origin in parsed:
        extern = not (name.startswith("triton_") or name.startswith("cpp_"))
        template = "_tem_" in name or "template" in name or "flex" in name
        work = [n for n in origin if n.op == "call_function" and n.target is not operator.getitem]
        call = KernelCall(name=name, graph=graph, handle=handle, extern=extern)
        if not work:
            calls.append(call)
            continue
        described_nodes = [(n, *describe(n)) for n in work]
        rank = {c: i for i, c in enumerate(ANCHOR_ORDER)}

        def priority(item):
            node, op, path, attrs, found, family = item
            # A GEMM/conv/SDPA among the origins of a kernel Inductor generated (not a template)
            # is a layout copy made for it or a node a rewrite created: not the kernel's work.
            demoted = family in LIBRARY and not (extern or template) and any(d[5] not in LIBRARY for d in described_nodes)
            return (demoted, op_kind(op) in _VIEWS, rank.get(found.category, len(rank)))

        anchor = min(described_nodes, key=priority)
        node, op, path, attrs, found, family = anchor
        call.op, call.module, call.category, call.family = op, path, found.key, family
        call.attrs = dict(attrs)
        call.ops = sorted({d[1] for d in described_nodes})
        # Fused work: the other nodes' categories; not views, and not a GEMM/conv/SDPA that
        # only left its layout copy in a kernel Inductor generated.
        fused = sorted({d[4].key for d in described_nodes
                        if d[0] is not node and d[4].key != found.key and op_kind(d[1]) not in _VIEWS
                        and (extern or template or d[5] not in LIBRARY)})
        if fused:
            call.attrs["fused"] = fused
        call.attrs["kernel"] = name
        if extern or template:  # library FLOPs, counted once per node
            for d in described_nodes:
                if d[0] not in flops_taken and d[5] in LIBRARY:
                    flops_taken.add(d[0])
                    call.flops += _node_flops(d[0], op_flops)
        calls.append(call)
    return calls


def _node_flops(node, op_flops) -> float:
    """FLOPs of a GEMM/conv/SDPA node from its fake-tensor shapes (as eager capture counts them)."""
    import torch

    try:
        args, kwargs, out = _val(node.args), _val(node.kwargs), node.meta.get("val")
        flops = op_flops(node.target, args, kwargs, out)
        if not flops and "attention" in op_kind(str(node.target)):  # a backend torch has no formula for
            sdpa = torch.ops.aten.scaled_dot_product_attention.default
            flops = op_flops(sdpa, tuple(args[:3]), {}, out[0] if isinstance(out, (tuple, list)) else out)
        return float(flops)
    except Exception:  # noqa: BLE001 - a formula that cannot read these shapes counts nothing
        return 0.0


# --- linking a trace's rows to the calls ---------------------------------------------------
def _kernel_key(name: str) -> str:
    return re.split(r"[\s(<]", name.strip(), maxsplit=1)[0]


def attribute_rows(kernels: np.ndarray, kernel_names: Sequence[str], program: CompiledProgram, modules,
                   bounds: Sequence[tuple[int, int]], table, first_id: int = 1):
    """Link the rows of a traced compiled run to the program's kernel calls.

    ``kernels``: the trace's rows (KERNEL_DTYPE; their external ids are replaced in place);
    ``bounds``: host-clock (begin, end) of each iteration; ``modules``: the ModuleRecords the
    ops point into. One OpRecord per linked call and iteration, with ids from ``first_id``.
    Returns (OpRecords, {"rows", "linked_rows", "ns", "linked_ns"} over the kernel rows).
    """
    from visprof.native.records import KIND_KERNEL, OpRecord

    calls = program.calls
    path_index = {m.path: i for i, m in enumerate(modules)}
    generated: dict[str, list[int]] = {}
    for i, c in enumerate(calls):
        if not c.extern:
            generated.setdefault(c.name, []).append(i)
    family_cache: dict[str, str] = {}

    def family(name: str) -> str:
        if name not in family_cache:
            found = table.classify_kernel(name, KIND_KERNEL)
            family_cache[name] = found.category if found is not None else "other"
        return family_cache[name]

    ops: list[OpRecord] = []
    next_id = first_id
    stats = {"rows": 0, "linked_rows": 0, "ns": 0, "linked_ns": 0}
    durations = np.maximum(kernels["end_ns"].astype(np.int64) - kernels["start_ns"].astype(np.int64), 0)
    positions = np.arange(len(kernels))
    is_kernel = kernels["kind"] == KIND_KERNEL
    for iteration, (begin, end) in enumerate(bounds):
        in_iteration = positions[(kernels["start_ns"] >= begin) & (kernels["start_ns"] < end) & is_kernel]
        order = in_iteration[np.lexsort((kernels["start_ns"][in_iteration], kernels["correlation_id"][in_iteration]))]
        assignment = _align([_kernel_key(kernel_names[int(kernels["name_id"][r])]) for r in order], calls, generated,
                            family)
        call_ids: dict[int, int] = {}
        stats["rows"] += len(order)
        stats["ns"] += int(durations[order].sum())
        for row, call_index in zip(order, assignment):
            if call_index is None:
                continue
            if call_index not in call_ids:
                c = calls[call_index]
                call_ids[call_index] = next_id
                ops.append(OpRecord(external_id=next_id, name=c.op, module=path_index.get(c.module, 0 if modules else -1),
                                    iteration=iteration, flops=c.flops, attrs=dict(c.attrs)))
                next_id += 1
            kernels["external_id"][row] = call_ids[call_index]
            stats["linked_rows"] += 1
            stats["linked_ns"] += int(durations[row])
    # No host clock ran around a compiled call: its span is that of its kernels (the tracer's
    # clock is the host's), which keeps trace viewers' op lanes in order.
    spans: dict[int, list[int]] = {}
    for row in np.flatnonzero(kernels["external_id"] >= first_id):
        span = spans.setdefault(int(kernels["external_id"][row]), [int(kernels["start_ns"][row]), int(kernels["end_ns"][row])])
        span[0], span[1] = min(span[0], int(kernels["start_ns"][row])), max(span[1], int(kernels["end_ns"][row]))
    for op in ops:
        op.cpu_start_ns, op.cpu_end_ns = spans.get(op.external_id, (0, 0))
    return ops, stats


def _align(names: list[str], calls: list[KernelCall], generated: dict[str, list[int]], family) -> list[int | None]:
    """Call index for each kernel name of one iteration, in launch order (None: not linked).

    Inductor's kernels are anchors, found by name at or after the current call; the library
    kernels between two anchors belong to the extern calls between them."""
    out: list[int | None] = [None] * len(names)
    pointer = 0
    pending: list[int] = []  # rows of library kernels since the last anchor
    for k, name in enumerate(names):
        sites = generated.get(name)
        if sites is None:
            pending.append(k)
            continue
        site = next((s for s in sites if s >= pointer), None)
        if site is None:  # a new round of the graph(s) (graph-break order): start over
            site = sites[0]
            _assign_gap(pending, names, range(pointer, len(calls)), calls, family, out)
            pending, pointer = [], 0
        _assign_gap(pending, names, range(pointer, site), calls, family, out)
        pending = []
        out[k] = site
        pointer = site + 1
    _assign_gap(pending, names, range(pointer, len(calls)), calls, family, out)
    return out


def _assign_gap(rows: list[int], names: list[str], span: range, calls: list[KernelCall], family,
                out: list[int | None]) -> None:
    """Library kernels between two anchors onto the extern calls there, in order: a monotone
    alignment that gives each kernel the call whose kind (gemm, conv, attention, ...) matches
    its name's, where it can; a kernel that matches nothing (a split-K reduction, a layout
    transform) stays with the call before it."""
    externs = [i for i in span if calls[i].extern]
    if not rows or not externs:
        return
    n, m = len(rows), len(externs)
    if m == 1 or n * m * m > 1_000_000:
        for i, k in enumerate(rows):
            out[k] = externs[min(i * m // n, m - 1)] if m > 1 else externs[0]
        return
    match = [[1.0 if calls[e].family == family(names[k]) else 0.0 for e in externs] for k in rows]
    score = [[match[0][j] - 0.001 * j for j in range(m)]]
    back = [[0] * m]
    for i in range(1, n):
        row, links = [], []
        for j in range(m):
            best, arg = score[i - 1][j], j  # same call as the kernel before
            for p in range(j):  # a later call: a small bonus where the kernel's kind matches it
                candidate = score[i - 1][p] + 0.01 * match[i][j]
                if candidate > best:
                    best, arg = candidate, p
            row.append(best + match[i][j])
            links.append(arg)
        score.append(row)
        back.append(links)
    j = max(range(m), key=lambda c: score[n - 1][c])
    for i in range(n - 1, -1, -1):
        out[rows[i]] = externs[j]
        j = back[i][j]
