"""visprof.profile, visprof.trace and the CLI end to end on the CPU path (what CI runs)."""
import json

import pytest
import torch

import visprof
from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.base.errors import BadInputError, ModelForwardError, UnknownModelError
from visprof.native import native
from visprof.native.records import CapturedTrace
from visprof.report.table import render

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path; the GPU path is tests/gpu")


@pytest.fixture(scope="module")
def vit_result():
    return visprof.profile("vit_tiny_patch16_224", batch_size=2, img_size=64, iterations=3, progress=False)


def test_cpu_profile_is_labelled_and_complete(vit_result):
    r = vit_result
    assert r.measurement == "cpu" and r.gpu is None and r.memory is None
    assert r.config.precision == "fp32" and r.config.passes == ["timing", "attributed"]
    assert r.timing.latency_ms.median > 0 and r.timing.iterations == 3
    assert sum(row.share for row in r.categories) == pytest.approx(1.0)
    assert not r.failed_checks
    assert r.attribution.coverage == 1.0
    text = render(r)
    assert "host clock" in text and "op time sum" in text and "device -1" not in text


def test_cpu_profile_splits_a_vit_into_attention_and_mlp(vit_result):
    rows = {(row.category, row.subcategory): row for row in vit_result.categories}
    assert rows[("attention", "core")].time_ms > 0
    assert rows[("attention", "projections")].time_ms > 0
    assert rows[("linear", None)].time_ms > 0
    assert ("convolution", "dense") in rows  # the patch embedding


def test_flops_match_the_architecture(vit_result):
    # ViT-Ti/16 at 64x64: 16 patches + cls = 17 tokens, dim 192, 12 blocks, MLP ratio 4.
    tokens, dim, blocks = 17, 192, 12
    per_block = 2 * tokens * dim * (3 * dim + dim + 4 * dim + 4 * dim)  # qkv, proj, fc1, fc2
    attention = 2 * 2 * tokens * tokens * dim  # QK^T and AV
    patch = 2 * 16 * dim * 3 * 16 * 16
    head = 2 * dim * 1000
    expected = 2 * (blocks * (per_block + attention) + patch + head)  # batch 2
    total = sum(row.flops for row in vit_result.categories)
    assert total == pytest.approx(expected, rel=1e-6)


def test_result_round_trips_through_json(vit_result, tmp_path):
    path = tmp_path / "r.json"
    vit_result.to_json(path)
    again = visprof.ProfileResult.load(path)
    assert again.to_dict() == json.loads(path.read_text())
    assert again.categories == vit_result.categories


def _not_plain(value, path="result"):
    if isinstance(value, dict):
        return [bad for key, item in value.items() for bad in _not_plain(item, f"{path}.{key}")]
    if isinstance(value, (list, tuple)):
        return [bad for i, item in enumerate(value) for bad in _not_plain(item, f"{path}[{i}]")]
    return [] if value is None or type(value) in (bool, int, float, str) else [(path, type(value).__name__)]


def test_to_dict_of_a_fresh_result_is_plain_json_types(vit_result):
    """docs/result-schema.md promises plain JSON types. A fresh result had torch's version as a
    TorchVersion and op-type numbers as numpy.float64, which YAML's safe writer refuses."""
    assert _not_plain(vit_result.to_dict()) == []
    assert "np." not in repr(vit_result.op_types[0])


def test_a_model_that_runs_no_op_fails_no_check_and_says_why_there_is_no_breakdown():
    """An identity forward got "1 of 1 SELF-CHECKS FAILED (unattributed time: 1 share)" and "(no attributed
    pass)", though the pass ran: there was nothing to attribute. A trace of an empty block said the same."""
    class Identity(torch.nn.Module):
        def forward(self, x):
            return x

    result = visprof.profile(Identity(), img_size=8, batch_size=1, iterations=2, progress=False)
    assert result.attribution is not None and not [c for c in result.checks if not c.passed]
    report = visprof.text_report(result)
    assert "recorded no op that takes time" in report and "FAILED" not in report
    with visprof.trace(torch.nn.Identity()) as session:
        pass
    assert session.table().startswith("(no op that takes time ran inside the block, on this thread")


def test_a_model_that_runs_no_op_has_nothing_to_attribute_not_a_zero_coverage():
    """An identity forward printed "coverage 0.0%" (and wrote coverage 0.0), which reads as every op
    missed, and "none recorded: these numbers were not cross-checked", though nothing ran to check."""
    result = visprof.profile(torch.nn.Identity(), img_size=32, batch_size=2, iterations=2, progress=False)
    assert result.attribution.coverage is None
    assert json.loads(json.dumps(result.to_dict()))["attribution"]["coverage"] is None
    report = visprof.text_report(result)
    assert "coverage: nothing to attribute (no op took time)" in report and "coverage 0.0%" not in report
    assert "none: the attributed pass recorded no op that takes time, so there was nothing to cross-check" in report
    assert "not cross-checked" not in report


def test_a_trace_counts_the_flops_of_what_ran():
    """visprof.trace counted none: every convolution and GEMM row said 0 FLOPs."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, 10))
    with torch.inference_mode(), visprof.trace(model) as session:
        model(torch.randn(2, 3, 16, 16))
    flops = {row.category: row.flops for row in session.attribution.category_rows()}
    assert flops["convolution"] == 2 * (2 * 8 * 14 * 14) * (3 * 3 * 3)  # 2 x MACs: batch x out pixels x kernel
    assert flops["linear"] == 2 * 2 * (8 * 14 * 14) * 10


def test_a_traced_training_step_files_backward_ops_with_their_forward_ops():
    """A training step's backward ops landed in "other" (convolution_backward was two thirds of
    resnet18's step); a depthwise convolution's backward is a depthwise convolution too."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 8, 3, groups=8))
    with visprof.trace(model) as session:
        model(torch.randn(2, 3, 16, 16)).sum().backward()
    ops = {(row.category, row.subcategory): row.kernel_count for row in session.category_rows()}
    assert ops[("convolution", "dense")] == ops[("convolution", "depthwise")] == 2  # forward and backward
    assert ops[("normalization", "batch")] >= 2 and ops[("activation", None)] >= 2
    assert ("other", None) not in ops


def test_a_hand_written_losss_mean_is_elementwise_and_a_global_average_pool_is_pooling():
    """((y - t) ** 2).mean(), aten.mean.default, a full reduction to a scalar, was filed as pooling;
    a loss is elementwise. The model's mean over the spatial dims (aten.mean.dim) is a pool."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    x, target = torch.randn(2, 3, 16, 16), torch.randn(2, 8)
    with visprof.trace(model) as session:
        y = model(x).mean((2, 3))  # global average pool
        ((y - target) ** 2).mean().backward()
    attribution = session.attribution
    categories = {(op.name, attribution.op_classification(i).category) for i, op in enumerate(session.trace.ops)
                  if op.name.startswith("aten.mean.")}
    assert categories == {("aten.mean.dim", "pooling"), ("aten.mean.default", "elementwise")}


@pytest.mark.parametrize("grad_mode", [torch.inference_mode, torch.no_grad])
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")  # the encoder's own
def test_a_padding_masked_transformer_encoder_is_traced_and_profiled(grad_mode):
    """nn.TransformerEncoder given a src_key_padding_mask (eval, autograd off) packs the batch into a
    nested tensor for its fused layers: trace() and profile() failed on it ("NestedTensorImpl doesn't
    support sizes", from the byte counter). The layers stay attention; packing and unpacking are layout."""
    from small_modules import PaddedEncoder

    model = PaddedEncoder().eval()
    images = torch.randn(2, 3, 4, 4)
    with grad_mode():
        expected = model(images)
    with grad_mode(), visprof.trace(model) as session:
        got = model(images)
    assert torch.equal(got, expected)
    classified = {op.name: session.attribution.op_classification(i) for i, op in enumerate(session.trace.ops)}
    layer = classified["aten._transformer_encoder_layer_fwd.default"]
    assert (layer.category, layer.subcategory) == ("attention", "core")
    for conversion in ("aten._nested_tensor_from_mask.default", "aten.to_padded_tensor.default"):
        assert (classified[conversion].category, classified[conversion].subcategory) == ("memory", "layout")
    assert "other" not in {c.category for c in classified.values()}
    rows = {(row.category, row.subcategory): row for row in session.category_rows()}
    assert rows[("attention", "core")].flops > 0

    result = visprof.profile(model, batch_size=2, img_size=8, iterations=2, warmup=0, attributed_iterations=1,
                             grad_mode=grad_mode.__name__, progress=False, search_batch=False)
    rows = {(row.category, row.subcategory): row for row in result.categories}
    assert rows[("attention", "core")].flops > 0 and not result.failed_checks
    assert not result.attribution.other_ops


def test_a_trace_session_entered_again_records_the_new_block_only():
    """A session kept (a notebook cell run twice) added the first block's ops to the second's,
    still called one iteration: two convolutions for one forward."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    session = visprof.trace(model)
    with torch.inference_mode(), session:
        model(torch.randn(2, 3, 16, 16))
    first = {row.category: row.kernel_count for row in session.category_rows()}
    ops = len(session.trace.ops)
    with torch.inference_mode(), session:
        assert repr(session) == "<TraceSession: recording until its `with` block ends>"  # the old table is gone
        model(torch.randn(2, 3, 16, 16))
        with pytest.raises(BadInputError, match="recording already: one `with` block at a time"):
            session.__enter__()
    assert {row.category: row.kernel_count for row in session.category_rows()} == first
    assert first["convolution"] == first["activation"] == 1 and session.trace.iterations == 1
    assert len(session.trace.ops) == ops


def test_a_users_compiled_module_is_profiled_as_a_compiled_run_of_the_module_inside():
    """torch.compile(model) given to profile(): reported as an eager run named OptimizedModule,
    its modules `_orig_mod.*`, though the timing pass ran the compiled wrapper."""
    inner = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    inner.train()
    result = visprof.profile(torch.compile(inner), img_size=16, iterations=2, warmup=0, attributed_iterations=1,
                             progress=False)
    assert result.model.name == "Sequential" and result.config.compile is True
    assert [(m.path, m.cls) for m in result.modules] == [("0", "Conv2d"), ("1", "ReLU")]
    assert any(w.startswith("Sequential came compiled (torch.compile)") for w in result.warnings)
    assert " · compiled · " in visprof.text_report(result).splitlines()[0]
    assert inner.training  # the user's module back in its mode


@pytest.mark.parametrize("wrap", ["DataParallel", "DistributedDataParallel", "compiled DataParallel"])
def test_a_module_in_a_parallel_wrapper_is_profiled_as_the_module_inside_on_one_device(wrap, tmp_path):
    """DataParallel(model) was headed "DataParallel", its modules "module", "module.0", ..., and nothing
    said that visprof ran one device's worth (the whole batch on one device, no replicas)."""
    import torch.distributed as dist

    inner = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    if wrap == "DistributedDataParallel":  # a process group of one, on the CPU
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        model = (torch.nn.parallel.DistributedDataParallel(inner) if wrap == "DistributedDataParallel"
                 else torch.nn.DataParallel(inner))
        model = torch.compile(model) if wrap.startswith("compiled") else model
        result = visprof.profile(model, img_size=16, iterations=2, warmup=0, attributed_iterations=1, progress=False)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    wrapper = wrap.removeprefix("compiled ")
    assert result.model.name == "Sequential" and result.config.compile is wrap.startswith("compiled")
    assert [(m.path, m.cls) for m in result.modules] == [("0", "Conv2d"), ("1", "ReLU")]
    assert visprof.text_report(result).startswith("visprof profile: Sequential (module)")
    assert any(w.startswith(f"Sequential came wrapped in {wrapper}, which runs replicas of it on several devices: "
                            "visprof profiles the Sequential inside, on one device with the whole batch") for w in result.warnings)


def test_capture_template_reuses_modules_and_flops_by_position():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, groups=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, groups=8))
    x = torch.randn(1, 3, 16, 16)
    tracker = ModuleTracker(model)
    with torch.inference_mode():
        with tracker, OpCapture(tracker, flops=True) as template:
            model(x)
        capture = OpCapture(tracker, template=template)
        with capture:  # no module hooks: modules come from the template
            for it in range(2):
                capture.start_iteration(it)
                model(x)
    ops = capture.to_records()
    assert capture.misaligned == 0
    assert [op.module for op in ops] == [op.module for op in template.to_records()] * 2
    assert [tracker.modules[op.module].path for op in ops[:3]] == ["0", "1", "2"]
    assert ops[0].flops == 2 * 8 * 3 * 9 * 14 * 14 and ops[2].flops == 2 * 8 * 9 * 12 * 12
    assert ops[2].attrs == {"groups": 8, "in_channels": 8, "kernel_size": [3, 3]}


def test_trace_context_on_cpu_attributes_user_code(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64))
    with torch.inference_mode(), visprof.trace(model) as session:
        assert repr(session) == "<TraceSession: recording until its `with` block ends>"
        model(torch.randn(4, 32))
    assert repr(session) == (f"<TraceSession <CapturedTrace cpu: {len(session.trace.kernels)} kernels, {len(session.trace.ops)} ops, "
                             f"{len(session.trace.modules)} modules, 1 iteration(s)>: session.table() prints the time by category>")
    keys = {(r.category, r.subcategory) for r in session.category_rows()}
    assert {("linear", None), ("activation", None), ("normalization", "layer")} <= keys
    session.save(tmp_path / "rec.json.gz")
    replay = CapturedTrace.load(tmp_path / "rec.json.gz")
    assert replay.measurement == "cpu" and len(replay.ops) == len(session.trace.ops)
    session.chrome_trace(tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


def test_a_cpu_model_is_traced_with_the_host_clock_on_a_machine_with_a_gpu(monkeypatch):
    """Found by running the notebook test on a GPU host: CUPTI was chosen because a GPU was there,
    the CPU model launched no kernel, and the table was empty. The model's weights decide."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.LazyLinear(4))
    model(torch.randn(1, 3, 8, 8))
    with torch.inference_mode(), visprof.trace(model) as session:
        model(torch.randn(2, 3, 8, 8))
    assert session.trace.measurement == "cpu"
    table = session.table()
    assert "convolution" in table and "linear" in table


class ExplodesOnCall(torch.nn.Module):
    """Raises from its `fail_on`-th forward on: the first call, or inside the attributed pass."""

    def __init__(self, fail_on: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.fail_on = fail_on
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = self.conv(x)
        if self.calls >= self.fail_on:
            raise RuntimeError(f"boom on call {self.calls}")
        return x


@pytest.mark.parametrize("fail_on, passes", [(1, "timing,attributed"), (3, "attributed")])
def test_a_model_raising_leaves_no_range_hook_or_mode_behind(fail_on, passes):
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    c = native()
    with pytest.raises(ModelForwardError, match="boom"):
        visprof.profile(ExplodesOnCall(fail_on), batch_size=1, img_size=8, passes=passes, progress=False)
    with pytest.raises(RuntimeError, match="boom"):
        with visprof.trace():
            ExplodesOnCall(1)(torch.randn(1, 3, 8, 8))
    assert c.nvtx.depth() == 0 and c.op_depth() == 0

    assert _get_current_dispatch_mode() is None
    assert not torch.nn.modules.module._global_forward_hooks and not torch.nn.modules.module._global_forward_pre_hooks


def test_the_memory_pass_needs_a_gpu_and_the_default_passes_leave_it_out_on_the_cpu():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))
    for passes in ("memory", ["timing", "memory"]):
        with pytest.raises(BadInputError, match="the memory pass needs a GPU"):
            visprof.profile(model, batch_size=1, img_size=8, passes=passes, progress=False)
    result = visprof.profile(model, batch_size=1, img_size=8, iterations=1, progress=False)
    assert result.config.passes == ["timing", "attributed"] and result.memory is None
    assert "Memory: not measured (the memory pass needs a GPU" in render(result)


class CountsCalls(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.conv(x)


def test_trace_and_recording_paths_are_checked_before_the_run_and_written_whole(tmp_path):
    model = CountsCalls()
    for bad in ({"trace_path": tmp_path / "missing" / "t.json"}, {"recording_path": tmp_path},
                {"trace_path": tmp_path / "x.json", "recording_path": tmp_path / "x.json"}):
        with pytest.raises(BadInputError):
            visprof.profile(model, batch_size=1, img_size=8, progress=False, **bad)
    assert model.calls == 0  # refused before the model ran
    trace, recording = tmp_path / "t.json", tmp_path / "rec.json.gz"
    trace.write_text("old")  # not JSON: refused before the run, not after it
    with pytest.raises(BadInputError, match="t.json holds something other than a Chrome trace"):
        visprof.profile(model, batch_size=1, img_size=8, progress=False, trace_path=trace)
    assert model.calls == 0 and trace.read_text() == "old"
    trace.write_text('{"traceEvents": []}')
    visprof.profile(model, batch_size=1, img_size=8, passes="attributed", progress=False, trace_path=trace,
                    recording_path=recording)
    assert json.loads(trace.read_text())["traceEvents"]
    assert CapturedTrace.load(recording).measurement == "cpu"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.json.gz", "t.json"]


def test_a_trace_asked_of_a_run_without_the_attributed_pass_is_refused_as_the_cli_refuses_it(tmp_path):
    """profile(passes="timing", trace_path=...) returned with no file and no word why."""
    model = CountsCalls()
    for wanted in ({"trace_path": tmp_path / "t.json"}, {"recording_path": tmp_path / "r.json.gz"},
                   {"on_trace": lambda trace, attribution: None}):
        (name,) = wanted
        with pytest.raises(BadInputError, match=rf"^{name} needs the attributed pass.*passes=\['timing', 'attributed'\]"):
            visprof.profile(model, batch_size=1, img_size=8, passes="timing", progress=False, **wanted)
    assert model.calls == 0 and not list(tmp_path.iterdir())
    with pytest.raises(BadInputError, match="^no pass named"):
        visprof.profile(model, batch_size=1, img_size=8, passes=[], progress=False)


@pytest.mark.parametrize("bad, message", [
    ({"on_trace": "trace.json"}, r"^on_trace takes a function, called as on_trace\(trace, attribution\), got str"),
    ({"progress": "no"}, r"^progress must be True or False, got 'no'$"),
    ({"search_batch": "off"}, r"^search_batch must be True or False, got 'off'$"),
])
def test_an_on_trace_that_is_no_function_and_flags_that_are_no_bools_are_refused_before_the_run(bad, message):
    """on_trace="trace.json" ran the whole profile, then raised "TypeError: 'str' object is not callable";
    progress="no" is truthy and printed progress."""
    model = CountsCalls()
    with pytest.raises(BadInputError, match=message):
        visprof.profile(model, batch_size=1, img_size=8, **{"progress": False, **bad})
    assert model.calls == 0


def test_a_trace_over_the_rules_file_is_refused_before_the_run(tmp_path):
    rules = tmp_path / "rules.toml"
    rules.write_text("")  # no extra rules
    model = CountsCalls()
    for output in ("trace_path", "recording_path"):
        with pytest.raises(BadInputError, match=rf"^{output} .*it is the category_file.*overwrite that input"):
            visprof.profile(model, batch_size=1, img_size=8, progress=False, category_file=rules, **{output: rules})
    assert model.calls == 0 and rules.read_text() == ""


def test_bad_input_is_reported_not_raised_as_a_traceback():
    with pytest.raises(UnknownModelError) as info:
        visprof.profile("resnet5O", progress=False)
    assert "resnet50" in str(info.value)
    for kwargs in ({"batch_size": 0}, {"precision": "int3"}, {"passes": "timing,bogus"}, {"iterations": 0},
                   {"device": "tpu"}):
        with pytest.raises(BadInputError):
            visprof.profile("resnet18", progress=False, **kwargs)


def test_cli_profile_end_to_end(tmp_path, capsys):
    from visprof.cli.app import main

    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    code = main(["profile", "resnet18", "--batch-size", "2", "--img-size", "64", "--iterations", "3",
                 "--quiet", "--json", str(out), "--trace", str(trace)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "convolution" in printed and "HOST CLOCK" in printed.upper()
    result = json.loads(out.read_text())
    assert result["schema"] == "visprof.profile/1" and result["measurement"] == "cpu"
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)


def test_cli_unknown_model_exits_2_with_suggestions(capsys):
    from visprof.cli.app import main

    assert main(["profile", "vit_base_patch16_244"]) == 2
    err = capsys.readouterr().err
    assert "vit_base_patch16_224" in err and "Traceback" not in err


def test_a_failed_memory_pass_keeps_the_other_results(monkeypatch):
    from visprof import profiler

    def crash(*args):
        raise RuntimeError("tracker failed")

    monkeypatch.setattr(profiler, "run_memory_pass", crash)
    notes: list[str] = []
    with pytest.warns(UserWarning, match="memory pass failed"):
        assert profiler._memory_or_warn(None, None, notes) is None
    assert "tracker failed" in notes[0]


def test_compiled_models_are_attributed_with_a_clear_caveat(caplog):
    import logging
    import warnings

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1))
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        result = visprof.profile(model, batch_size=1, img_size=8, iterations=2, compile=True,
                                 passes="attributed", progress=False)
    # torch's complaints about visprof's own hooks, or about CUDA on a CPU-only torch, do not leak
    assert [str(w.message) for w in caught] == []
    assert not [r for r in caplog.records if r.name.startswith("torch")], caplog.records
    assert result.config.compile
    assert any("torch.compile" in w and "eager" in w for w in result.warnings)
    assert {row.category for row in result.categories} >= {"convolution", "activation", "pooling"}


def test_a_visprof_bug_outside_the_forward_is_not_blamed_on_the_model(monkeypatch):
    from visprof.passes import attributed

    def broken(*args, **kwargs):
        raise KeyError("a bug in visprof, not in the model")

    monkeypatch.setattr(attributed, "build_trace", broken)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))
    with pytest.raises(KeyError, match="a bug in visprof"):
        visprof.profile(model, batch_size=1, img_size=8, passes="attributed", progress=False)


def test_trace_with_gpu_true_and_no_gpu_names_the_python_remedy(monkeypatch):
    """It advised "--device cpu", a CLI option, to a Python caller of trace(gpu=True)."""
    from visprof.base.errors import NoGPUError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(NoGPUError, match=r"or trace with gpu=False for the host clock$"):
        visprof.trace(torch.nn.Identity(), gpu=True)


FAST = dict(iterations=1, warmup=0, attributed_iterations=1, progress=False)


def test_a_module_model_cast_cannot_copy_is_refused_as_such_not_as_a_failed_forward():
    import threading

    class HoldsALock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.lock = threading.Lock()

        def forward(self, x):
            return self.conv(x)

    with pytest.raises(BadInputError, match=r"autocast='model-cast' runs a copy of HoldsALock cast to bf16 .* could "
                                            r"not be copied: TypeError: .*'per-forward' or 'whole-loop'"):
        visprof.profile(HoldsALock(), precision="bf16", autocast="model-cast", img_size=16, **FAST)
    result = visprof.profile(HoldsALock(), precision="bf16", img_size=16, **FAST)  # per-forward copies nothing
    assert result.timing is not None


def test_weights_on_the_meta_device_are_refused_before_the_run():
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))
    with pytest.raises(BadInputError, match="Sequential's weights are on the meta device, which holds no data"):
        visprof.profile(model, img_size=16, **FAST)


def test_a_timm_model_is_built_under_torchs_defaults_whatever_the_callers():
    """A caller's default dtype float64 built float64 weights the float32 input failed on, named a
    size problem; under `with torch.device("meta")` the weights had no data."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        result = visprof.profile("resnet10t", batch_size=1, img_size=32, **FAST)
        assert torch.get_default_dtype() == torch.float64  # the caller's default back
    finally:
        torch.set_default_dtype(before)
    assert result.timing.latency_ms.median > 0
    with torch.device("meta"):
        result = visprof.profile("resnet10t", batch_size=1, img_size=32, **FAST)
        assert torch.empty(1).is_meta  # the caller's default device back
    assert result.timing.latency_ms.median > 0


def test_a_pass_that_falls_back_warns_as_visprof_at_the_callers_line(monkeypatch):
    """CUPTI held by another profiler skips kernel tracing: said as a plain UserWarning pointing into
    visprof's own code, which a notebook's filter on VisprofWarning did not catch."""
    import warnings

    from visprof import profiler
    from visprof.base.errors import CuptiUnavailableError, VisprofWarning

    def held(*args, **kwargs):
        raise CuptiUnavailableError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")

    monkeypatch.setattr(profiler, "run_attributed_pass", held)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = visprof.profile(torch.nn.Conv2d(3, 4, 3), batch_size=1, img_size=16, iterations=2, warmup=0,
                                 progress=False)
    [warning] = [w for w in caught if "kernel tracing skipped" in str(w.message)]
    assert warning.category is VisprofWarning and warning.filename == __file__
    assert any("kernel tracing skipped" in line for line in result.warnings)


def test_warmup_is_the_timing_passes_and_said_to_do_nothing_without_it():
    """--passes attributed --warmup 7 recorded config.warmup 7, though no warm-up ran."""
    model = torch.nn.Conv2d(3, 4, 3)
    alone = visprof.profile(model, batch_size=1, img_size=16, passes=["attributed"], warmup=7, progress=False)
    assert alone.config.warmup == 0
    assert any(w.startswith("warmup=7 did nothing: it is the timing pass's warm-up, and that pass did not run")
               for w in alone.warnings)
    timed = visprof.profile(model, batch_size=1, img_size=16, iterations=2, warmup=3, progress=False)
    assert timed.config.warmup == 3 and not any("warmup" in line for line in timed.warnings)
    assert not any("iterations=" in line for line in timed.warnings)


def test_iterations_are_the_timing_passes_and_said_to_do_nothing_without_it():
    """passes=["attributed"], iterations=50 ran the attributed pass's 5 iterations, and the result's
    config said 50 with no word (warmup had one)."""
    alone = visprof.profile(torch.nn.Conv2d(3, 4, 3), batch_size=1, img_size=16, passes=["attributed"],
                            iterations=50, attributed_iterations=3, progress=False)
    assert alone.passes["attributed"].iterations == 3
    assert ("iterations=50 did nothing: it is the timing pass's count, and that pass did not run (the attributed "
            "pass records attributed_iterations=3)") in alone.warnings


@pytest.mark.parametrize("how", ["wrapper", "in place"])
def test_a_trace_of_a_compiled_model_on_the_cpu_says_its_fused_work_is_not_in_it(how):
    """Inductor's C++ kernels have no op: a traced compiled block left its fused work (30% of its time in
    a review) out, with coverage 1.0 and no word. The eager model traced says nothing of the kind."""
    import warnings

    from visprof.base.errors import VisprofWarning

    eager = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.GELU()).eval()
    x = torch.randn(2, 3, 16, 16)
    for model, compiled in ((eager, False), (torch.compile(eager, backend="eager") if how == "wrapper" else eager, True)):
        if compiled and how == "in place":
            model.compile(backend="eager")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.no_grad(), visprof.trace(model):
                model(x)
        said = [w for w in caught if issubclass(w.category, VisprofWarning) and "torch.compile'd" in str(w.message)]
        assert len(said) == compiled, [str(w.message) for w in caught]


@pytest.mark.parametrize("given", ["the eager module", "no model"])
def test_a_trace_in_which_compiled_code_runs_says_so_whatever_it_was_given(given):
    """model = Net(); cmodel = torch.compile(model); `with visprof.trace(model): train(cmodel)`, or
    trace() with no model: the compiled wrapper ran in the block, its fused work (a whole BatchNorm) was
    missing from the table, and only trace(cmodel) had warned."""
    import warnings

    from visprof.base.errors import VisprofWarning

    eager = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.GELU()).eval()
    compiled = torch.compile(eager, backend="eager")
    x = torch.randn(2, 3, 16, 16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad(), visprof.trace(eager if given == "the eager module" else None):
            compiled(x)
    said = [w for w in caught if issubclass(w.category, VisprofWarning) and "torch.compile'd" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]


def test_a_weight_standardized_convolution_is_convolution_not_batch_norm():
    """BiT's and NFNet's StdConv2d standardize their weights with F.batch_norm every forward: that had
    read as normalization/batch (62% of BiT-R50x1 at 64 px), in models whose norms are GroupNorm."""
    from timm.layers import ScaledStdConv2d, StdConv2d

    model = torch.nn.Sequential(StdConv2d(3, 16, 3), torch.nn.GroupNorm(4, 16), torch.nn.ReLU(),
                                ScaledStdConv2d(16, 16, 3)).eval()
    result = visprof.profile(model, device="cpu", batch_size=1, img_size=16, iterations=2, warmup=0, progress=False)
    rows = {(row.category, row.subcategory) for row in result.categories if row.time_ms > 0}
    assert ("convolution", "weight-std") in rows and ("normalization", "group") in rows, rows
    assert ("normalization", "batch") not in rows, rows


def test_ops_that_took_longer_than_the_clean_iteration_are_said_to_be_from_a_busy_host():
    """A review saw 387 ms of attributed ops per iteration against a 3 ms latency on a loaded CPU, every
    share distorted, coverage 100% and no word. Ops summing to less than the latency are normal there
    (Python runs between them), so only the other way is said."""
    import dataclasses
    from pathlib import Path

    from visprof.profiler import _busy_host_warning
    from visprof.result import LatencyStats, ProfileResult

    result = ProfileResult.load(Path(__file__).resolve().parents[1] / "data" / "h100-result-vit_base_patch16_224.json")
    result.measurement = "cpu"

    def warned(ops_ms: float, latency_ms: float) -> list[str]:
        result.attribution = dataclasses.replace(result.attribution, kernel_ms=ops_ms)
        result.timing = dataclasses.replace(result.timing, latency_ms=LatencyStats.from_samples([latency_ms]))
        return _busy_host_warning(result)

    (said,) = warned(387.0, 3.0)
    assert said.startswith("the attributed pass's ops took 387.000 ms per iteration, 129.0x the clean pass's whole "
                           "iteration (3.000 ms): the host was busier")
    assert warned(4.1, 6.7) == [] and warned(43.0, 44.6) == [] and warned(14.0, 10.0) == []
    result.measurement = "gpu"  # a GPU's kernel times are checked against the tracer's and events' own
    assert warned(387.0, 3.0) == []


def test_a_torch_compile_failure_is_said_to_be_compiles_not_the_models():
    """A C++ compiler missing or broken (CXX) made Inductor fail, and the error read "model 'resnet18'
    failed on an input", as if its forward were wrong. An error of torch's compiler stack (its class in
    torch._inductor or torch._dynamo, as Inductor's InvalidCxxCompiler is) says it is compile's; the
    model's own errors do not."""
    from visprof.base.errors import ModelForwardError

    class InductorError(RuntimeError):  # as torch._inductor.exc defines it
        pass

    InductorError.__module__ = "torch._inductor.exc"

    class Compiled(torch.nn.Module):
        def forward(self, x):
            raise InductorError("InvalidCxxCompiler: No working C++ compiler found")

    class Broken(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("shapes cannot be multiplied")

    with pytest.raises(ModelForwardError) as failed:
        visprof.profile(Compiled(), img_size=16, batch_size=1, passes="timing", iterations=2, progress=False)
    assert "InvalidCxxCompiler" in str(failed.value)
    assert str(failed.value).endswith("(torch.compile failed to build the compiled program, not the model's own "
                                      "forward (a C++ compiler missing or broken, CXX): profile it without compile, "
                                      "or fix what the message names)")
    with pytest.raises(ModelForwardError) as failed:
        visprof.profile(Broken(), img_size=16, batch_size=1, passes="timing", iterations=2, progress=False)
    assert "torch.compile" not in str(failed.value)


def test_latency_samples_spread_by_a_busy_host_are_warned_of():
    """A loaded machine gave a median of 59.9 ms beside a p10 of 0.83 ms, with no word, and a diff read
    the load as what a layer changed. Two of three forwards held up here: the median is that wait."""
    import time

    class Held(torch.nn.Module):
        calls = 0

        def forward(self, x):
            Held.calls += 1
            if Held.calls % 3:
                time.sleep(0.01)
            return x * 2

    held = visprof.profile(Held(), img_size=8, batch_size=1, passes="timing", warmup=0, iterations=30, progress=False)
    latency = held.timing.latency_ms
    assert latency.median > 5 * latency.p10
    assert [w for w in held.warnings if w.startswith("the timed iterations spread widely")] == [
        f"the timed iterations spread widely (p10 {latency.p10:.3f} ms, median {latency.median:.3f} ms, "
        f"x{latency.median / latency.p10:.1f}): the host was busy for most of them (other processes, threads "
        "contending), so the latency is the machine's load as much as the model's; profile again on a quieter "
        "machine, or with fewer threads (OMP_NUM_THREADS)"]

    class Steady(torch.nn.Module):  # every forward waits alike: a spread of a few percent, no warning
        def forward(self, x):
            time.sleep(0.01)
            return x * 2

    steady = visprof.profile(Steady(), img_size=8, batch_size=1, passes="timing", warmup=0, iterations=30,
                             progress=False)
    assert not any("spread widely" in w for w in steady.warnings), steady.timing.latency_ms
