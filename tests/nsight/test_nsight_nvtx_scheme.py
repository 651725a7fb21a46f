"""visprof's NVTX scheme (visprof/capture/nvtx_scheme.py) with the real native NVTX module: the
names, the nesting model -> module path -> category -> op, identical stacks from the Python
capture and the C++ replay, and balanced ranges however a forward ends.

The native module keeps a log of every push and pop (``nvtx._set_log``), so the scheme is
checked here without an Nsight tool; tests/test_nsight_nsys_import.py checks it as a real
Nsight Systems recorded it."""
from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import default_table
from visprof.passes.models import resolve_model
from visprof.native import aten_observer, native
from visprof.capture import nvtx_scheme as S
from visprof.native.records import ModuleRecord
from visprof.capture.replay import ReplayCapture

c = native()


@pytest.fixture
def nvtx_log():
    """Collects the ranges pushed and popped meanwhile; checks that everything was popped."""
    c.nvtx._set_log(True)
    entries: list[tuple] = []
    yield entries
    entries.extend(c.nvtx._take_log())
    c.nvtx._set_log(False)
    assert c.nvtx.depth() == 0 and c.op_depth() == 0


@pytest.fixture(scope="module")
def observer():
    module, why = aten_observer.load_observer()
    assert module is not None, why
    return module


def stacks(log: list[tuple]) -> list[tuple[tuple[str, int, int], ...]]:
    """The stack of (name, kind, payload) at every push; fails on a pop of an empty stack."""
    stack, out = [], []
    for entry in log:
        if entry[0] == "push":
            stack.append(entry[1:4])
            out.append(tuple(stack))
        else:
            assert stack, "a pop without a range"
            stack.pop()
    assert not stack, f"{len(stack)} ranges left open: {stack[-3:]}"
    return out


# --- names ------------------------------------------------------------------------------------

def test_op_range_names_carry_category_subcategory_and_op_and_parse_back():
    assert S.op_range_name("attention", "core", "aten.bmm.default") == "attention:core aten.bmm.default"
    assert S.op_range_name("linear", None, "aten.addmm.default") == "linear aten.addmm.default"
    assert S.parse_op_range("attention:core aten.bmm.default") == ("attention", "core", "aten.bmm.default")
    assert S.parse_op_range("linear aten.addmm.default") == ("linear", None, "aten.addmm.default")


def test_module_range_names_give_path_and_class_and_the_model_names_the_root():
    root, child = ModuleRecord("", "ResNet", -1), ModuleRecord("layer1.0.conv1", "Conv2d", 0)
    assert S.module_range_name(root, "resnet50") == "resnet50 (ResNet)"
    assert S.module_range_name(root) == "ResNet"  # no model name: the class alone
    assert S.module_range_name(child, "resnet50") == "layer1.0.conv1 (Conv2d)"
    assert S.parse_module_range("layer1.0.conv1 (Conv2d)") == ("layer1.0.conv1", "Conv2d")
    assert S.parse_module_range("ResNet") == ("ResNet", "ResNet")
    # a module called "attention" can never be mistaken for the category range "attention"
    assert S.module_range_name(ModuleRecord("attention", "Attention", 0)) == "attention (Attention)"


def test_ncu_filter_selects_a_category_range_and_escapes_the_level_separator():
    assert S.ncu_filter("attention") == "visprof@attention/"
    assert S.ncu_filter("my/cat") == "visprof@my\\/cat/"


# --- the module plan -------------------------------------------------------------------------

def _tree() -> list[ModuleRecord]:
    return [ModuleRecord("", "Net", -1), ModuleRecord("a", "A", 0), ModuleRecord("a.x", "X", 1),
            ModuleRecord("a.y", "Y", 1), ModuleRecord("b", "B", 0)]


def test_the_plan_pops_to_the_shared_ancestor_and_pushes_down_to_the_next_ops_module():
    ranges = S.ModuleRanges(_tree(), "net")
    assert ranges.step((), 2) == (0, (0, 1, 2), (0, 1, 2))
    assert ranges.step((0, 1, 2), 3) == (1, (3,), (0, 1, 3))
    assert ranges.step((0, 1, 3), 4) == (2, (4,), (0, 4))
    assert ranges.step((0, 4), 0) == (1, (), (0,))
    assert ranges.step((0,), -1) == (1, (), ())


def test_the_plan_flattens_pushes_with_offsets_for_the_observer():
    plan = S.ModuleRanges(_tree(), "net").plan([2, 2, 3, -1, 4])
    assert plan.pops == [0, 0, 1, 3, 0]
    assert plan.push_begin == [0, 3, 3, 4, 4, 6]
    assert plan.payloads == [0, 1, 2, 3, 0, 4]  # module indices
    assert [color == S.MODEL_COLOR for color in plan.colors] == [True, False, False, False, True, False]
    # the same module always gets the same registered handle
    assert plan.handles[0] == plan.handles[4]


def test_the_plan_skips_ops_ranged_inside_another_ops_range():
    # op 1 (module 3) is folded into op 2's range: it moves no range, op 2 moves from op 0's module
    plan = S.ModuleRanges(_tree(), "net").plan([2, 3, 4], skip=[1])
    assert plan.pops == [0, 0, 2]
    assert plan.push_begin == [0, 3, 3, 4]
    assert plan.payloads == [0, 1, 2, 4]


# --- the native pushes -----------------------------------------------------------------------

def test_an_op_handle_pushes_its_category_around_the_op_and_one_pop_closes_both(nvtx_log):
    handle = S.op_handle("attention", "attention:core aten.bmm.default")
    c.nvtx.push_registered(handle, 0xFFF44A3F, 42)
    assert c.nvtx.depth() == 1
    c.nvtx.pop()
    nvtx_log.extend(c.nvtx._take_log())
    assert nvtx_log == [("push", "attention", S.KIND_CATEGORY, 42, 0xFFF44A3F),
                        ("push", "attention:core aten.bmm.default", S.KIND_OP, 42, 0xFFF44A3F), ("pop",), ("pop",)]


# --- the scheme on a real model: Python capture and C++ replay ---------------------------------

def _forward(model, x):
    def forward():
        with torch.inference_mode():
            return model(x)
    return forward


def _template(model, forward, table=None):
    tracker = ModuleTracker(model)
    template = OpCapture(tracker, table or default_table(), nvtx=False)
    with tracker, template:
        forward()
    return tracker, template


def test_python_capture_and_cpp_replay_push_the_same_ranges(observer, nvtx_log):
    spec = resolve_model("vit_tiny_patch16_224", img_size=32)
    model, x = spec.module.eval(), spec.make_input(1, "cpu")
    forward = _forward(model, x)
    forward()
    tracker, template = _template(model, forward)

    def logged_iterations(capture) -> list[tuple]:
        c.nvtx._take_log()
        with capture:
            for iteration in range(2):
                capture.start_iteration(iteration)
                forward()
        return c.nvtx._take_log()

    python_log = logged_iterations(OpCapture(tracker, default_table(), nvtx=True, template=template,
                                             model_name="vit_tiny"))
    planned = OpCapture(tracker, default_table(), nvtx=True, template=template, model_name="vit_tiny")
    replay, why = ReplayCapture.prepare(observer, planned, forward, 2)
    assert replay is not None, why
    replay_log = logged_iterations(replay)
    assert replay.diverged_iterations == []

    ops = planned.template_ops()
    assert python_log == replay_log
    pushed = stacks(replay_log)
    op_stacks = [s for s in pushed if s[-1][1] == S.KIND_OP]
    assert len(op_stacks) == 2 * len(ops)
    table = default_table()
    for k, stack in enumerate(op_stacks):
        func, module, attrs, _ = ops[k % len(ops)]
        found = table.classify_op(str(func), tracker.classes(module), attrs)
        name, kind, payload = stack[-1]
        # op id as payload: op j of iteration i is 1 + i * ops + j, as the attributed pass numbers it
        assert payload == 1 + k and stack[-2] == (found.category, S.KIND_CATEGORY, payload)
        assert name == S.op_range_name(found.category, found.subcategory, str(func))
        modules = [entry for entry in stack[:-2]]
        expected_chain = S.ModuleRanges(tracker.modules, "vit_tiny").chain(module)
        assert [payload for _, _, payload in modules] == list(expected_chain)
        assert modules[0] == ("vit_tiny (VisionTransformer)", S.KIND_MODEL, 0)
        assert all(kind == S.KIND_MODULE for _, kind, _ in modules[1:])
    # the model range opens once per forward
    assert sum(1 for s in pushed if len(s) == 1) == 2


def test_a_replay_without_host_times_ranges_kernel_less_ops_inside_their_wrappers_range(observer, nvtx_log):
    # --nvtx-only's replay: each batch norm's aten::empty rides in the batch norm's range, so
    # aten::batch_norm is observed once instead of four calls; every other op keeps its ranges
    spec = resolve_model("resnet18", img_size=32)
    model, x = spec.module.eval(), spec.make_input(1, "cpu")

    def forward():  # as the runner does: under inference_mode the dispatch mode sees batch_norm whole
        with torch.no_grad():
            return model(x)

    forward()
    tracker, template = _template(model, forward)
    planned = OpCapture(tracker, default_table(), nvtx=True, template=template, model_name="resnet18")
    replay, why = ReplayCapture.prepare(observer, planned, forward, 2, timestamps=False)
    assert replay is not None, why
    ops = planned.template_ops()
    folded = set(replay.folded_ops)
    assert sorted(str(ops[j][0]) for j in folded) == ["aten.empty.memory_format"] * 20 + ["aten.t.default"]
    c.nvtx._take_log()
    with replay:
        for iteration in range(2):
            replay.start_iteration(iteration)
            forward()
    pushed = stacks(c.nvtx._take_log())  # balanced
    op_stacks = [s for s in pushed if s[-1][1] == S.KIND_OP]
    ranged = [j for j in range(len(ops)) if j not in folded]
    assert [s[-1][2] for s in op_stacks] == [1 + i * len(ops) + j for i in range(2) for j in ranged]
    chains = S.ModuleRanges(tracker.modules, "resnet18")
    for stack in op_stacks:
        module = ops[(stack[-1][2] - 1) % len(ops)][1]
        assert [payload for _, _, payload in stack[:-2]] == list(chains.chain(module))
    assert sum(1 for s in pushed if len(s) == 1) == 2 and replay.diverged_iterations == []


def test_ranges_are_balanced_when_a_forward_raises(observer, nvtx_log):
    class Fails(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
            self.armed = False

        def forward(self, x):
            x = self.head(torch.relu(self.conv(x)))
            if self.armed:
                raise RuntimeError("data-dependent failure")
            return x.softmax(-1)

    model, x = Fails().eval(), torch.randn(1, 3, 8, 8)
    forward = _forward(model, x)
    tracker, template = _template(model, forward)
    planned = OpCapture(tracker, default_table(), nvtx=True, template=template)
    replay, why = ReplayCapture.prepare(observer, planned, forward, 1)
    assert replay is not None, why
    model.armed = True
    for capture in (replay, OpCapture(tracker, default_table(), nvtx=True, template=template),
                    OpCapture(tracker, default_table(), nvtx=True)):
        with pytest.raises(RuntimeError, match="data-dependent"):
            with capture:
                capture.start_iteration(0)
                forward()
        assert c.nvtx.depth() == 0 and c.op_depth() == 0
    stacks(c.nvtx._take_log())  # every push was popped, in order


def test_ranges_are_balanced_when_the_op_itself_raises(observer, nvtx_log):
    class BadShape(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.x_shape = (2, 4)

        def forward(self, x):
            return self.proj(x).reshape(self.x_shape)

    model = BadShape().eval()
    forward = _forward(model, torch.randn(2, 4))
    tracker, template = _template(model, forward)
    model.x_shape = (3, 5)  # reshape raises inside the op, under its op and module ranges
    for capture in (OpCapture(tracker, default_table(), nvtx=True, template=template),):
        with pytest.raises(RuntimeError):
            with capture:
                forward()
    assert c.nvtx.depth() == 0
    stacks(c.nvtx._take_log())


def test_restricted_ops_keep_their_module_ranges_but_push_no_category_or_op_range(observer, nvtx_log):
    spec = resolve_model("resnet18", img_size=32)
    model, x = spec.module.eval(), spec.make_input(1, "cpu")
    forward = _forward(model, x)
    tracker, template = _template(model, forward)
    planned = OpCapture(tracker, default_table(), nvtx=True, template=template)
    keep = [0, 5, 6]
    planned.restrict_nvtx(keep)
    replay, why = ReplayCapture.prepare(observer, planned, forward, 1)
    assert replay is not None, why
    c.nvtx._take_log()
    with replay:
        replay.start_iteration(0)
        forward()
    pushed = stacks(c.nvtx._take_log())
    assert [s[-1][2] for s in pushed if s[-1][1] == S.KIND_OP] == [1 + k for k in keep]
    assert sum(1 for s in pushed if s[-1][1] == S.KIND_MODEL) == 1


def test_module_ranges_stay_on_the_thread_that_captures():
    ranges = S.ModuleRanges(_tree(), "net")
    live = S.LiveModuleRanges(ranges)
    c.nvtx._set_log(True)
    try:
        worker = threading.Thread(target=live.before_op, args=(2,))
        worker.start()
        worker.join()
        assert c.nvtx._take_log() == []  # an op on another thread: no module ranges there
        live.before_op(2)
        live.before_op(4)
        live.close()
        pushed = stacks(c.nvtx._take_log())
    finally:
        c.nvtx._set_log(False)
    assert [s[-1][0] for s in pushed] == ["net (Net)", "a (A)", "a.x (X)", "b (B)"]
    assert c.nvtx.depth() == 0
