"""Op capture for the timed iterations of the attributed pass, from C++ instead of Python.

The attributed pass first runs one forward under ``OpCapture`` (the template): a Python
dispatch mode with module hooks, which learns each op's module, category and FLOPs. Running
the timed iterations under the same dispatch mode costs ~5-10 µs of Python per op, which on
the H200 made the attributed pass slower than torch.profiler. ``ReplayCapture`` runs them
under visprof's C++ RecordFunction observer instead (csrc/aten_observer):

1. one more forward with the observer recording every aten call and its nesting depth;
2. ``align()`` finds the template's ops among those calls (the dispatch mode sees only some
   of them: composite ops such as ``aten::linear`` are decomposed before it, and the calls
   an op makes inside itself are hidden from it);
3. the timed iterations replay the recording: the observer pushes op ids (and NVTX ranges:
   the op's category and op ranges, and the module ranges between ops from the template's
   ``nvtx_module_plan()``) around the calls that are template ops and checks every other call
   against the recording. The calls nested inside a template op are its own work: the
   observer is off while the op runs, so torch's RecordFunction skips them. An op that a
   composite wraps alone (``aten::conv2d`` around ``aten::convolution``) is ranged at the
   wrapper (``lift_to_wrappers``), which holds the same kernels and saves observing the op.

Attribution then reads the same op records as with ``OpCapture``. An iteration that departs
from the recording (data-dependent control flow) is reported in ``diverged_iterations``, and
the attributed pass re-runs with ``OpCapture``, which handles that case op by op.
"""
from __future__ import annotations

from visprof.capture.higher_order import is_higher_order
from visprof.capture.op_capture import OpCapture
from visprof.native import native
from visprof.native.records import OpRecord

# External id of op 0 of iteration 0; op j of iteration i is FIRST_ID + i * ops + j, in the
# observer that pushes it and in to_records() that reads it back (0 means "no op" to CUPTI).
FIRST_ID = 1
NEVER_SWITCH = 2**31 - 1  # a nested_limit no op exceeds: the observer sees every call


# Pairs (template op, recorded call) that are the same op dispatched differently. A Python
# dispatch mode (the template's) makes torch treat every tensor as a subclass
# (at::isTensorSubclassLike), and composite ops branch on that: ``reshape`` of a tensor it can
# view calls ``aten::view`` under the mode but ``aten::_reshape_alias`` without it (in
# ``matmul`` of a non-contiguous operand under no_grad, e.g. Swin's attention). Both are views:
# no kernel, the same result.
SAME_OP = frozenset({("aten::view", "aten::_reshape_alias")})


def align(template_names: list[str], calls: list[tuple[str, int]]) -> list[int] | None:
    """For each recorded call (name, depth), the index of the template op it is, or -1.
    None when the calls do not hold the template's ops in order; see ``align_or_why``."""
    return align_or_why(template_names, calls)[0]


def align_or_why(template_names: list[str], calls: list[tuple[str, int]]) -> tuple[list[int] | None, str]:
    """(plan, "") or (None, why): the plan maps each recorded call to its template op, or -1.

    Greedy, in call order: a call whose name is the next template op's (or its SAME_OP
    counterpart) is that op, and the calls nested inside it are its own work. A wrapper that
    shares the op's name (an overload that forwards to another) is taken for the op; it
    encloses the same kernels. Calls the dispatch mode never sees are skipped: composites it
    sees decomposed (``aten::linear``, their nested calls are matched in turn) and composites
    that make no call (``aten::dropout`` in eval). A leaf call that is neither, an op the mode
    sees (its name is among the template's), refuses the alignment: skipping it would match
    the template's op to a later call of the same name and shift every op after it."""
    plan = [-1] * len(calls)
    matched = 0
    inside: int | None = None  # depth of the matched call we are in
    seen = set(template_names) | {call for op, call in SAME_OP if op in template_names}
    for k, (name, depth) in enumerate(calls):
        if inside is not None and depth > inside:
            continue
        inside = None
        want = template_names[matched] if matched < len(template_names) else None
        if want is not None and (name == want or (want, name) in SAME_OP):
            plan[k] = matched
            matched += 1
            inside = depth
        elif name in seen and (k + 1 == len(calls) or calls[k + 1][1] <= depth):
            expected = f"template op {matched} ({want})" if want is not None else "the end of the template"
            return None, (f"recorded aten call {k} ({name}) is an op the dispatch mode sees, where the template "
                          f"has {expected}: the replayed forward dispatches differently from the template's")
    if matched < len(template_names):
        return None, (f"the recorded aten calls did not contain the template's ops in order (template op "
                      f"{matched} of {len(template_names)}, {template_names[matched]}, not found)")
    return plan, ""


# Ops that launch no kernel: an allocation or a view. ``lift_to_wrappers(kernel_less=...)``
# lets a wrapper's range hold them besides its one op with kernels (--nvtx-only only: they
# get no host times and no range of their own). ``torch.empty`` launches a kernel only when
# deterministic algorithms fill uninitialized memory; ``kernel_less_ops()`` leaves it out then.
KERNEL_LESS = frozenset({"aten::empty", "aten::empty_strided", "aten::view", "aten::_reshape_alias",
                         "aten::as_strided", "aten::t", "aten::transpose", "aten::permute", "aten::expand",
                         "aten::unsqueeze", "aten::squeeze", "aten::detach", "aten::alias", "aten::slice",
                         "aten::select"})
ALLOCATIONS = frozenset({"aten::empty", "aten::empty_strided"})


def kernel_less_ops() -> frozenset[str]:
    """``KERNEL_LESS``, without the allocations while torch fills uninitialized memory."""
    import torch

    fills = torch.are_deterministic_algorithms_enabled() and torch.utils.deterministic.fill_uninitialized_memory
    return KERNEL_LESS - ALLOCATIONS if fills else KERNEL_LESS


def lift_to_wrappers(plan: list[int], depths: list[int], kernel_less: frozenset[int] = frozenset()) -> list[int]:
    """The plan with each template op moved up to the outermost call that encloses it and no
    other template op: under autocast, ``aten::to`` around ``aten::_to_copy`` (a cast) and the
    ``aten::conv2d`` that autocast calls again around ``aten::convolution`` (ResNet-50 on the CPU: 109
    of its 285 ops).

    Such a wrapper is a composite the dispatch mode never sees: every kernel under it comes
    from the op it encloses, so its range holds the same kernels. The replay observes the
    wrapper and not the calls inside it (the observer is off inside a ranged call), so each
    wrapper level lifted is one RecordFunction fewer per op (bench/nvtx_overhead.py).

    ``kernel_less``: template ops (by index) that launch nothing. A wrapper may then enclose
    any number of them besides its one op with kernels, and is ranged as that op:
    ``aten::batch_norm`` around ``aten::empty`` and ``aten::native_batch_norm`` saves three
    observed calls per batch norm. The kernel-less ops so enclosed drop out of the plan."""
    n = len(plan)
    lifted = list(plan)
    # Per call's subtree: its template ops with kernels and without, one call of each kind
    # (the only one, where there is one), and the subtree's end.
    heavy, light = [0] * n, [0] * n
    heavy_call, light_call = [-1] * n, [-1] * n
    ends = [n] * n
    stack: list[int] = []
    for k in range(n + 1):
        while stack and (k == n or depths[stack[-1]] >= depths[k]):
            closed = stack.pop()
            ends[closed] = k
            if plan[closed] >= 0:
                if plan[closed] in kernel_less:
                    light[closed], light_call[closed] = 1, closed
                else:
                    heavy[closed], heavy_call[closed] = 1, closed
            if stack:
                parent = stack[-1]
                heavy[parent] += heavy[closed]
                light[parent] += light[closed]
                if heavy[closed]:
                    heavy_call[parent] = heavy_call[closed]
                if light[closed]:
                    light_call[parent] = light_call[closed]
        if k < n:
            stack.append(k)
    k = 0
    while k < n:
        if plan[k] >= 0 and heavy[k] + light[k] == 1:
            k = ends[k]
        elif heavy[k] == 1 or (heavy[k] == 0 and light[k] == 1):
            inner = heavy_call[k] if heavy[k] else light_call[k]
            for j in range(k, ends[k]):
                lifted[j] = -1
            lifted[k] = plan[inner]
            k = ends[k]
        else:
            k += 1
    return lifted


def op_name(func) -> str:
    """The name RecordFunction gives an aten op (``aten::addmm``), from a dispatch-mode func."""
    return func._schema.name


class ReplayCapture:
    """Stands in for ``OpCapture(template=...)`` in the attributed pass; see the module doc.

    Build it with ``ReplayCapture.prepare()``, which records one forward and aligns it."""

    def __init__(self, observer, planned: OpCapture, plan: list[int], iterations: int, *,
                 timestamps: bool = True, nested_limit: int = 0):
        self._observer = observer
        # The observer is off inside an op whose recording has more nested calls than this
        # (csrc/aten_observer); NEVER_SWITCH sees every call, as before 2026-12-01.
        self._nested_limit = nested_limit
        self._timestamps = timestamps  # host times around each op, for to_records()
        self._planned = planned
        self._plan = plan
        self.observed_calls = 0  # aten calls the observer saw in the replayed iterations
        self.recorded_depths: list[int] = []  # nesting depth of each recorded call (prepare())
        self._iterations = iterations
        self._starts: list[int] = []
        self._ends: list[int] = []
        self.diverged_iterations: list[int] = []
        self.misaligned = 0  # OpCapture's counter; a replay never attributes a differing op

    @property
    def folded_ops(self) -> list[int]:
        """Template positions ranged inside a wrapper's range, not on their own (kernel-less
        ops, ``lift_to_wrappers``); they get no op id pushed and no host times."""
        ranged = {op for op in self._plan if op >= 0}
        return [j for j in range(len(self._planned.template_ops())) if j not in ranged]

    @property
    def recorded_calls(self) -> int:
        """The aten calls of one recorded forward (the observer sees each of them)."""
        return len(self._plan)

    @classmethod
    def prepare(cls, observer, planned: OpCapture, forward, iterations: int,
                timestamps: bool = True) -> tuple["ReplayCapture | None", str]:
        """Records one forward (`forward()` runs and synchronizes it) and aligns it with the
        template of `planned` (an OpCapture made with template=). (capture, "") or (None, why).
        Without `timestamps` (--nvtx-only, which only pushes ranges) the ops get no host times
        and to_records() is refused."""
        # RecordFunction sees no call for a higher-order op, only the aten calls inside it: no
        # recorded call could take its place (and recording a forward to find so would be wasted).
        hop = next((func for func, *_ in planned.template_ops() if is_higher_order(func)), None)
        if hop is not None:
            return None, f"{hop} is a higher-order op, which the ATen observer sees as its inner calls only"
        observer.record_start()
        try:
            forward()
        finally:
            names, depths = observer.record_stop()
        template_names = [op_name(func) for func, *_ in planned.template_ops()]
        plan, why = align_or_why(template_names, list(zip(names, depths)))
        if plan is None:
            return None, why
        # Without host times an op needs no call of its own; kernel-less ones may share a wrapper's range.
        launch_nothing = frozenset() if timestamps else kernel_less_ops()
        kernel_less = frozenset(j for j, name in enumerate(template_names) if name in launch_nothing)
        capture = cls(observer, planned, lift_to_wrappers(plan, list(depths), kernel_less), iterations,
                      timestamps=timestamps)
        capture.recorded_depths = list(depths)
        return capture, ""

    def __enter__(self) -> "ReplayCapture":
        decisions = self._planned.template_decisions()
        handles = [handle for handle, _, _ in decisions]
        colors = [color for _, color, _ in decisions]
        tags = [tag for _, _, tag in decisions]  # -1 each, unless the planned capture tags (memory pass)
        module_plan = self._planned.nvtx_module_plan(skip=self.folded_ops)
        c = native()
        modules = module_plan.observer_kwargs(c.nvtx._capsule()) if module_plan is not None else {}
        # Without host times this is --nvtx-only's replay, which runs without CUPTI: no op ids
        # to hand to the tracer, so the observer pushes the op ranges itself.
        direct = None if self._timestamps else c.nvtx._capsule()
        self._observer.replay_start(c._op_scope_capsule(), self._plan, handles, colors,
                                    first_id=FIRST_ID, iterations=self._iterations,
                                    nested_limit=self._nested_limit, timestamps=self._timestamps,
                                    nvtx_direct=direct, tags=tags, **modules)
        return self

    def start_iteration(self, iteration: int) -> None:
        self._observer.begin_iteration(iteration)

    def __exit__(self, *exc) -> None:
        self._starts, self._ends, self.diverged_iterations, self.observed_calls = self._observer.replay_stop()

    def to_records(self) -> list[OpRecord]:
        """One record per template op and iteration, with the external id the observer pushed."""
        if not self._timestamps:
            raise RuntimeError("this replay took no host times (timestamps=False): it has no op records")
        template = self._planned.template_ops()
        count = len(template)
        records = []
        for iteration in range(self._iterations):
            for index, (func, module, attrs, cost) in enumerate(template):
                slot = iteration * count + index
                records.append(OpRecord(external_id=FIRST_ID + slot, name=str(func), module=module, iteration=iteration,
                                        cpu_start_ns=self._starts[slot], cpu_end_ns=self._ends[slot],
                                        attrs=attrs or {}, **cost.record_fields()))
        return records
