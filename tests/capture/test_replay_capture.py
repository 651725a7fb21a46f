"""The C++ op capture (ReplayCapture + the ATen observer) on the CPU: its alignment of
recorded aten calls with the dispatch mode's ops, and that it yields the same op records as
the Python capture on real timm models, under autocast and without."""
import pytest
import torch

import visprof
from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import default_table
from visprof.base.errors import ModelForwardError
from visprof.passes.models import resolve_model
from visprof.native import native
from visprof.native import aten_observer
from visprof.passes.attributed import run_attributed_pass
from visprof.passes.runner import ModelRunner, RunConfig
from visprof.capture.replay import KERNEL_LESS, NEVER_SWITCH, ReplayCapture, align, align_or_why, kernel_less_ops, lift_to_wrappers


@pytest.fixture(scope="module")
def observer():
    module, why = aten_observer.load_observer()
    assert module is not None, why  # CI has a C++ compiler: the observer must build there
    return module


# --- align(), on hand-written call logs ------------------------------------------------------

def test_align_skips_composite_wrappers_and_the_calls_inside_an_op():
    calls = [("aten::linear", 0), ("aten::t", 1), ("aten::transpose", 2), ("aten::addmm", 1),
             ("aten::relu", 0), ("aten::clamp_min", 1)]
    assert align(["aten::t", "aten::addmm", "aten::relu"], calls) == [-1, 0, -1, 1, 2, -1]


def test_align_takes_a_same_named_wrapper_for_the_op_it_encloses():
    calls = [("aten::add", 0), ("aten::add", 1), ("aten::mul", 0)]
    assert align(["aten::add", "aten::mul"], calls) == [0, -1, 1]


def test_align_refuses_when_a_template_op_is_missing():
    assert align(["aten::addmm", "aten::gelu"], [("aten::addmm", 0), ("aten::relu", 0)]) is None
    # an op hidden inside a matched op does not count as found
    assert align(["aten::conv2d", "aten::add"], [("aten::conv2d", 0), ("aten::add", 1)]) is None


def test_lift_ranges_an_op_at_the_outermost_composite_that_wraps_it_alone():
    calls = [("aten::conv2d", 0), ("aten::convolution", 1), ("aten::_convolution", 2),
             ("aten::batch_norm", 0), ("aten::_batch_norm_impl_index", 1), ("aten::cudnn_batch_norm", 2),
             ("aten::empty", 3), ("aten::linear", 0), ("aten::t", 1), ("aten::transpose", 2), ("aten::addmm", 1),
             ("aten::relu", 0)]
    plan = align(["aten::convolution", "aten::cudnn_batch_norm", "aten::t", "aten::addmm", "aten::relu"], calls)
    assert plan == [-1, 0, -1, -1, -1, 1, -1, -1, 2, -1, 3, 4]
    # linear wraps two ops: they stay where they are
    assert lift_to_wrappers(plan, [d for _, d in calls]) == [0, -1, -1, 1, -1, -1, -1, -1, 2, -1, 3, 4]


def test_lift_may_enclose_kernel_less_ops_besides_the_one_with_kernels():
    # batch norm on CUDA without cuDNN: the wrapper allocates (a template op) and runs the op
    calls = [("aten::batch_norm", 0), ("aten::_batch_norm_impl_index", 1), ("aten::empty", 2),
             ("aten::native_batch_norm", 2), ("aten::linear", 0), ("aten::t", 1), ("aten::transpose", 2),
             ("aten::addmm", 1), ("aten::flatten", 0), ("aten::view", 1), ("aten::view", 1)]
    names = ["aten::empty", "aten::native_batch_norm", "aten::t", "aten::addmm", "aten::view", "aten::view"]
    plan = align(names, calls)
    assert plan == [-1, -1, 0, 1, -1, 2, -1, 3, -1, 4, 5]
    depths = [d for _, d in calls]
    assert lift_to_wrappers(plan, depths) == plan  # without kernel-less ops nothing moves
    kernel_less = frozenset(j for j, name in enumerate(names) if name in KERNEL_LESS)
    # the batch norm and the linear are ranged at their wrappers; two views stay apart
    assert lift_to_wrappers(plan, depths, kernel_less) == [1, -1, -1, -1, 3, -1, -1, -1, -1, 4, 5]


def test_allocations_launch_a_kernel_when_torch_fills_uninitialized_memory():
    assert {"aten::empty", "aten::view"} <= kernel_less_ops()
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)  # fill_uninitialized_memory is on by default
    try:
        assert "aten::empty" not in kernel_less_ops() and "aten::view" in kernel_less_ops()
    finally:
        torch.use_deterministic_algorithms(was)


def test_align_takes_reshape_alias_for_the_view_the_dispatch_mode_saw():
    # reshape of a viewable tensor: aten::view under a Python dispatch mode, _reshape_alias without
    calls = [("aten::matmul", 0), ("aten::reshape", 1), ("aten::_reshape_alias", 2), ("aten::bmm", 1),
             ("aten::view", 0)]
    assert align(["aten::view", "aten::bmm", "aten::view"], calls) == [-1, -1, 0, 1, 2]


def test_align_refuses_to_skip_an_op_the_dispatch_mode_sees():
    # Skipping the first (leaf) mul would match the template's mul to the second one and shift
    # every op after it; composites that make no call (dropout in eval) are skipped.
    calls = [("aten::mul", 0), ("aten::dropout", 0), ("aten::add", 0), ("aten::mul", 0)]
    plan, why = align_or_why(["aten::add", "aten::mul"], calls)
    assert plan is None and "call 0 (aten::mul)" in why and "template op 0 (aten::add)" in why
    assert align(["aten::mul", "aten::add", "aten::mul"], calls) == [0, -1, 1, 2]


# --- the observer against the dispatch mode on real models ---------------------------------

def _forward(model, x, autocast=True, grad_mode=torch.inference_mode):
    def forward():
        with grad_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            return model(x)
    return forward


def _template_and_replay(observer, model, x, iterations=2, autocast=True, grad_mode=torch.inference_mode):
    forward = _forward(model, x, autocast, grad_mode)
    forward()
    tracker = ModuleTracker(model)
    template = OpCapture(tracker, default_table(), nvtx=False, flops=True)
    with tracker, template:
        forward()
    planned = OpCapture(tracker, default_table(), nvtx=True, template=template)
    replay, why = ReplayCapture.prepare(observer, planned, forward, iterations)
    assert replay is not None, why
    with replay:
        for iteration in range(iterations):
            replay.start_iteration(iteration)
            forward()
    return template, replay


@pytest.mark.parametrize("name, img_size", [
    ("resnet18", 64), ("vit_tiny_patch16_224", 224), ("swin_tiny_patch4_window7_224", 224),
    ("efficientnet_b0", 64), ("levit_128", 224), ("mobilevit_xs", 256), ("coatnet_nano_rw_224", 224),
    ("convnext_atto", 64),
])
@pytest.mark.parametrize("autocast", [True, False], ids=["bf16", "fp32"])
def test_replay_reproduces_the_dispatch_mode_ops(observer, name, img_size, autocast):
    spec = resolve_model(name, img_size=img_size)
    template, replay = _template_and_replay(observer, spec.module.eval(), spec.make_input(1, "cpu"), autocast=autocast)
    assert replay.diverged_iterations == []
    # Each call was checked by its schema's address, which the recording matched to its name
    # on every call; a torch whose RecordFunction changed would fall back to names.
    assert observer.checks_by_schema()
    expected = template.to_records()
    ops = replay.to_records()
    assert len(ops) == 2 * len(expected)
    for iteration in range(2):
        got = ops[iteration * len(expected):(iteration + 1) * len(expected)]
        assert [(o.name, o.module, o.flops, o.attrs) for o in got] == \
               [(o.name, o.module, o.flops, o.attrs) for o in expected]
        assert all(o.iteration == iteration for o in got)
    assert len({o.external_id for o in ops}) == len(ops)
    assert all(0 < o.cpu_start_ns <= o.cpu_end_ns for o in ops)
    starts = [o.cpu_start_ns for o in ops]
    assert starts == sorted(starts)  # ops run in template order, iteration after iteration
    assert native().nvtx.depth() == 0 and native().op_depth() == 0


def _calls_outside_ops(plan: list[int], depths: list[int]) -> int:
    """The recorded calls not nested inside a call the plan maps to a template op."""
    count, inside = 0, None
    for op, depth in zip(plan, depths):
        if inside is not None and depth > inside:
            continue
        inside = depth if op >= 0 else None
        count += 1
    return count


@pytest.mark.parametrize("name, img_size", [("resnet18", 64), ("vit_tiny_patch16_224", 224)])
def test_the_replay_does_not_observe_the_calls_inside_a_template_op(observer, name, img_size):
    # They are the op's own work; observing them cost torch's RecordFunction per call, about
    # 3 calls per op on ResNet-50 (bench/nvtx_overhead.py).
    spec = resolve_model(name, img_size=img_size)
    _, replay = _template_and_replay(observer, spec.module.eval(), spec.make_input(1, "cpu"), iterations=3)
    assert replay.diverged_iterations == []
    outside = _calls_outside_ops(replay._plan, replay.recorded_depths)
    assert outside < replay.recorded_calls
    assert replay.observed_calls == 3 * outside
    # The earlier way (kept for the bench) sees them all, and yields the same op records.
    forward = _forward(spec.module, spec.make_input(1, "cpu"))
    every = ReplayCapture(observer, replay._planned, replay._plan, 1, nested_limit=NEVER_SWITCH)
    with every:
        every.start_iteration(0)
        forward()
    assert every.observed_calls == replay.recorded_calls and every.diverged_iterations == []
    assert [(o.name, o.module) for o in every.to_records()] == [(o.name, o.module) for o in replay.to_records()][:len(every.to_records())]


def test_the_observer_stays_on_inside_ops_with_few_nested_calls(observer):
    # Switching the callback off and on costs torch a rebuild of its callback lists; inside an
    # op with at most nested_limit calls the replay observes them instead, and the records agree.
    spec = resolve_model("resnet18", img_size=64)
    template, replay = _template_and_replay(observer, spec.module.eval(), spec.make_input(1, "cpu"), iterations=1)
    plan, depths = replay._plan, replay.recorded_depths
    nested = []  # per ranged call: its nested calls in the recording
    for k, op in enumerate(plan):
        if op >= 0:
            end = next((j for j in range(k + 1, len(depths)) if depths[j] <= depths[k]), len(depths))
            nested.append(end - k - 1)
    assert 0 in nested and max(nested) > 2  # leaves and composites both
    forward = _forward(spec.module, spec.make_input(1, "cpu"))
    for limit in (-1, 2, 10**6):
        capture = ReplayCapture(observer, replay._planned, plan, 1, nested_limit=limit)
        with capture:
            capture.start_iteration(0)
            forward()
        seen = sum(n for n in nested if n <= limit)
        assert capture.observed_calls == _calls_outside_ops(plan, depths) + seen, limit
        assert capture.diverged_iterations == []
        assert [(o.name, o.module) for o in capture.to_records()] == [(o.name, o.module) for o in replay.to_records()]


class WindowAttention(torch.nn.Module):
    """Swin's attention core: q @ k^T and attn @ v on views of a permuted qkv (non-contiguous)."""

    def forward(self, qkv):
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ k.transpose(-2, -1)).softmax(-1)
        return (attn @ v).transpose(1, 2).reshape(qkv.shape[0], qkv.shape[1], -1)


@pytest.mark.parametrize("model, x", [
    (WindowAttention(), torch.randn(2, 7, 3, 4, 5)),
    (resolve_model("swin_tiny_patch4_window7_224").module, resolve_model("swin_tiny_patch4_window7_224").make_input(1, "cpu")),
], ids=["window-attention", "swin_tiny"])
def test_replay_under_no_grad_matches_a_matmul_that_reshapes_through_reshape_alias(observer, model, x):
    # Under no_grad (visprof's default grad mode) matmul reshapes a non-contiguous operand with
    # aten::_reshape_alias, which the template's dispatch mode sees as aten::view: the
    # alignment failed with "did not contain the template's ops in order" (Swin in the bench).
    template, replay = _template_and_replay(observer, model.eval(), x, autocast=False, grad_mode=torch.no_grad)
    assert replay.diverged_iterations == []
    expected = [(o.name, o.module) for o in template.to_records()]
    assert "aten.view.default" in {name for name, _ in expected}
    assert [(o.name, o.module) for o in replay.to_records()] == 2 * expected


class ChangesOnCall(torch.nn.Module):
    """A convolution, then `usual(x)`, except on forward call `call`, which runs `changed(x)`.
    In the attributed pass, call 1 is the template, 2 the recording, 3 on are replayed."""

    def __init__(self, call: int, usual, changed):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.calls = 0
        self.call, self.usual, self.changed = call, usual, changed

    def forward(self, x):
        self.calls += 1
        x = self.conv(x)
        return self.changed(x) if self.calls == self.call else self.usual(x)


def test_a_diverging_iteration_is_reported_and_the_pass_reruns_op_by_op(observer):
    model = ChangesOnCall(4, torch.relu, lambda x: x.sigmoid().tanh())
    runner = ModelRunner(resolve_model(model), RunConfig(batch_size=1, precision="fp32", device="cpu"))
    result = run_attributed_pass(runner, default_table(), iterations=3)
    assert any("different op sequence" in w for w in result.warnings)
    assert result.trace.meta["op_capture"].startswith("python dispatch mode")
    assert native().nvtx.depth() == 0 and native().op_depth() == 0


def test_the_cpu_profile_uses_the_observer_and_matches_the_python_capture(observer, monkeypatch):
    def shares(**env):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        aten_observer.load_observer.cache_clear()
        runner = ModelRunner(resolve_model("resnet18"), RunConfig(batch_size=1, precision="fp32", device="cpu"))
        result = run_attributed_pass(runner, default_table(), iterations=2)
        return result.trace.meta["op_capture"], [(op.name, op.module, op.flops) for op in result.trace.ops]

    try:
        replayed = shares()
        python = shares(VISPROF_ATEN_OBSERVER="0")
    finally:
        aten_observer.load_observer.cache_clear()
    assert replayed[0] == "aten observer"
    assert python[0] == "python dispatch mode (ATen observer unavailable: VISPROF_ATEN_OBSERVER=0)"
    assert replayed[1] == python[1]


def test_a_raise_inside_a_replayed_op_leaves_nothing_pushed_or_installed(observer):
    explodes = ChangesOnCall(3, lambda x: torch.ops.aten.cumsum(x, 1),
                             lambda x: torch.ops.aten.cumsum(x, 5))  # dim 5: raises inside the op
    with pytest.raises(ModelForwardError):
        visprof.profile(explodes, batch_size=1, img_size=8, passes="attributed", progress=False)
    assert native().nvtx.depth() == 0 and native().op_depth() == 0
    observer.record_start()  # refused if a replay were still installed
    observer.record_stop()


def test_a_missing_compiler_is_reported_as_the_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "visprof-no-such-compiler")
    monkeypatch.setenv("VISPROF_CACHE_DIR", str(tmp_path))
    aten_observer.load_observer.cache_clear()
    try:
        module, why = aten_observer.load_observer()
    finally:
        aten_observer.load_observer.cache_clear()
    assert module is None and "visprof-no-such-compiler" in why


def test_a_replay_without_timestamps_ranges_the_same_ops_and_refuses_op_records(observer):
    # --nvtx-only's replay: it only pushes ranges, so it skips the two clock reads per op.
    spec = resolve_model("resnet18", img_size=64)
    model, x = spec.module.eval(), spec.make_input(1, "cpu")
    _, timed = _template_and_replay(observer, model, x, iterations=1)
    untimed = ReplayCapture(observer, timed._planned, timed._plan, 1, timestamps=False)
    with untimed:
        untimed.start_iteration(0)
        _forward(model, x)()
    assert untimed.diverged_iterations == [] and untimed.observed_calls == timed.observed_calls
    with pytest.raises(RuntimeError, match="no host times"):
        untimed.to_records()
