"""visprof.profile and visprof.trace on a real GPU: self-checks, fallbacks and cleanup."""
import pytest
import torch

import visprof
from visprof.base.errors import BadInputError, ModelForwardError, OutOfMemoryError
from visprof.native import native

pytestmark = pytest.mark.gpu


def test_profile_resnet50_passes_its_self_checks():
    result = visprof.profile("resnet50", batch_size=32, progress=False)
    print({c.name: (c.value, c.reference, c.passed) for c in result.checks})
    assert result.measurement == "gpu"
    assert result.gpu["name"].startswith("NVIDIA")
    assert not result.failed_checks, result.failed_checks
    names = {c.name for c in result.checks}
    assert {"unattributed time", "kernels launched: attributed vs tracer-only", "kernel time: attributed vs tracer-only",
            "peak held by tensors: tracker vs torch.cuda.max_memory_allocated", "peak requested: tracker vs torch",
            "peak reserved: tracker vs torch.cuda.max_memory_reserved", "peak allocated: memory pass vs timing pass",
            "kernel span vs CUDA-event span"} <= names
    totals = result.category_totals()
    largest = max(totals.values(), key=lambda row: row.time_ms)
    assert largest.category == "convolution"
    assert "attention" not in totals or totals["attention"].share == 0


def test_vit_has_attention_and_convolves_only_in_its_patch_embedding(tmp_path):
    from visprof.attribution.attribute import attribute
    from visprof.native.records import CapturedTrace

    recording = tmp_path / "vit.json.gz"
    result = visprof.profile("vit_base_patch16_224", batch_size=32, passes="attributed", progress=False,
                             recording_path=recording)
    totals = result.category_totals()
    assert totals["attention"].share > 0.15
    subs = {(r.category, r.subcategory) for r in result.categories}
    assert ("attention", "core") in subs and ("attention", "projections") in subs
    # Convolution is not near zero on the H200 (cuDNN runs the 16x16/16 patch embedding with
    # a slow implicit-GEMM kernel in bf16 NCHW), but it must all be the patch embedding.
    trace = CapturedTrace.load(recording)
    attr = attribute(trace)
    conv_modules = {trace.modules[trace.ops[attr.op_index[row]].module].path
                    for row in range(len(trace.kernels)) if attr.classification(row).category == "convolution"}
    assert conv_modules == {"patch_embed.proj"}



@pytest.mark.parametrize("name", ["convmixer_768_32", "hrnet_w18_small"])
def test_composite_ops_run_under_the_op_capture_as_in_a_plain_forward(name):
    """Under inference_mode the op capture receives composite ops (convmixer's padding="same"
    convolution, hrnet's upsampling); their insides must be autocast as without visprof:
    convmixer failed on 2026-12-03 with bf16 activations against fp32 weights."""
    result = visprof.profile(name, batch_size=16, progress=False)
    assert result.config.grad_mode == "inference_mode" and result.config.precision == "bf16"
    assert not result.failed_checks, result.failed_checks


class Explodes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)

    def forward(self, x):
        x = self.conv(x)
        raise RuntimeError("boom in the middle of forward")


def test_model_raising_mid_forward_leaves_nothing_running():
    c = native()
    with pytest.raises(ModelForwardError):
        visprof.profile(Explodes(), batch_size=2, passes="timing,attributed", progress=False)
    with pytest.raises(RuntimeError, match="boom"):
        with visprof.trace():
            Explodes().cuda()(torch.randn(1, 3, 16, 16, device="cuda"))
    assert not c.tracer.active()
    assert c.nvtx.depth() == 0
    assert c.op_depth() == 0


class GigabytePerSample(torch.nn.Module):
    """Needs 1 GiB of activations per sample, so the batch that fits is known to ~1%."""

    def forward(self, x):
        return x.new_empty(x.shape[0], 1 << 28).fill_(1.0).sum(dim=1)


def test_oom_reports_largest_batch_that_fits():
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(GigabytePerSample(), batch_size=4096, img_size=8, passes="timing", progress=False)
    best = info.value.max_batch_size
    print(str(info.value), free / 2**30, total / 2**30)
    assert best is not None and 0.8 * free / 2**30 < best <= total / 2**30
    assert f"(batch_size={best})" in str(info.value)  # from Python; the CLI says --batch-size


def test_an_input_too_large_for_any_tensor_on_the_gpu_is_out_of_memory():
    """img_size 9999999999: torch refuses the input ("Storage size calculation overflowed"), which the host
    path answered as out of memory (exit 3) and the GPU path as the model failing (exit 1)."""
    with pytest.raises(OutOfMemoryError, match="not even batch size 1 fits"):
        visprof.profile(torch.nn.Conv2d(3, 4, 3), batch_size=2, img_size=9_999_999_999, passes="timing",
                        iterations=1, progress=False)


def test_cupti_taken_by_torch_profiler_falls_back_with_a_warning():
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]):
        with pytest.warns(UserWarning, match="CUPTI"):
            result = visprof.profile("resnet18", batch_size=8, passes="timing,attributed", progress=False)
    assert result.timing is not None and result.timing.latency_ms.median > 0
    assert any("CUPTI" in w for w in result.warnings)
    assert not native().tracer.active()


def test_trace_session_attributes_user_code():
    from visprof.passes.models import resolve_model

    model = resolve_model("deit_tiny_patch16_224").module.cuda().eval()
    x = torch.randn(8, 3, 224, 224, device="cuda")
    with torch.inference_mode():
        model(x)
        with visprof.trace(model) as session:
            model(x)
    summary = session.summary()
    assert summary.coverage > 0.995
    assert any(r.category == "attention" for r in session.category_rows())


def test_trace_picks_the_clock_by_where_the_model_is():
    """A CPU model on a GPU host: the host clock, with a breakdown. CUPTI asked for around CPU code:
    the table says no kernel ran, not that an attributed pass is missing."""
    cpu_model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 4))
    x = torch.randn(2, 3, 8, 8)
    with torch.inference_mode(), visprof.trace(cpu_model) as on_cpu:
        cpu_model(x)
    assert on_cpu.trace.measurement == "cpu" and "convolution" in on_cpu.table()
    with torch.inference_mode(), visprof.trace(cpu_model, gpu=True) as forced:
        cpu_model(x)
    assert forced.trace.measurement == "gpu"
    assert forced.table().startswith("(no GPU kernel ran inside the block"), forced.table()


def test_a_users_cpu_model_is_back_on_the_cpu_in_its_mode_after_a_gpu_profile():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(16 * 30 * 30, 10)).train()
    params = list(model.parameters())
    result = visprof.profile(model, batch_size=8, img_size=32, progress=False)
    assert result.measurement == "gpu" and not result.failed_checks
    assert all(p.device.type == "cpu" for p in model.parameters()) and list(model.parameters()) == params
    assert model.training
    on_gpu = model.cuda()  # a model the user keeps on the GPU stays there
    visprof.profile(on_gpu, batch_size=8, img_size=32, passes="timing", progress=False)
    assert all(p.is_cuda for p in on_gpu.parameters())


def test_a_torchscript_module_on_the_gpu_attributes_its_kernels_and_is_back_as_given():
    """TorchScript runs its ops without Python module hooks: the ops, kernels and their categories are
    what remains, and they must account for the kernel time as an eager module's do."""
    import warnings

    model = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10)).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated in torch >= 2.10
        scripted = torch.jit.script(model)
    result = visprof.profile(scripted, batch_size=8, img_size=32, passes="timing,attributed", progress=False)
    assert result.measurement == "gpu" and not result.failed_checks, [c.name for c in result.failed_checks]
    assert result.model.name == "Sequential" and result.model.input_shape == [8, 1, 32, 32]
    assert any("came in training mode" in w for w in result.warnings)
    by_category = {name: row.time_ms for name, row in result.category_totals().items() if row.time_ms > 0}
    assert {"convolution", "normalization", "linear"} <= set(by_category), by_category
    # (the rows of result.categories are per sub-category: keyed by category, memory's cast and layout had
    # been one row, and the sum 0.0180 ms against the op types' 0.0238 on an H100)
    assert sum(r.time_ms for r in result.op_types) == pytest.approx(sum(by_category.values()), rel=1e-6)
    assert scripted.training and all(p.device.type == "cpu" for p in scripted.parameters())


def test_a_frozen_torchscript_module_on_the_gpu_counts_its_graphs_weights_as_weights():
    """A frozen module keeps its weights as constants of its graph: the header says its parameter
    count is unknown, and the bytes count those constants as weights (0 had made every weight an
    activation that grows with the batch)."""
    import warnings

    import timm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated in torch >= 2.10
        on_cpu = torch.jit.freeze(torch.jit.script(timm.create_model("resnet18").eval()))
        frozen = torch.jit.freeze(torch.jit.script(timm.create_model("resnet18").cuda().eval()))
    # moving a module does not move its graph's constants: frozen on the CPU, it cannot run here
    with pytest.raises(BadInputError, match="frozen TorchScript graph whose constants .* are on cpu, .* so it cannot run on cuda:0"):
        visprof.profile(on_cpu, batch_size=8, img_size=64, passes="timing", progress=False)
    result = visprof.profile(frozen, batch_size=8, img_size=64, passes="timing,attributed", progress=False)
    assert result.measurement == "gpu" and not result.failed_checks, [c.name for c in result.failed_checks]
    assert result.model.param_count is None and any("frozen TorchScript" in w for w in result.warnings)
    conv = [r for r in result.op_types if "conv" in r.op_type]
    assert conv and sum(r.time_ms for r in conv) > 0
    # 11.7M weights, read at least once in bf16 by the convolutions and the classifier
    assert result.roofline is not None and sum(g.param_bytes * g.count for g in result.roofline.groups) > 20e6


def test_a_module_in_dataparallel_on_the_gpu_is_profiled_as_the_module_inside():
    model = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(),
                                                      torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                                      torch.nn.Linear(16, 10)).cuda(), device_ids=[0])
    result = visprof.profile(model, batch_size=8, img_size=32, passes="timing,attributed", progress=False)
    assert result.measurement == "gpu" and not result.failed_checks, [c.name for c in result.failed_checks]
    assert result.model.name == "Sequential" and any("came wrapped in DataParallel" in w for w in result.warnings)
    assert result.modules and not any(m.path.startswith("module") for m in result.modules)


def test_a_tensor_left_on_the_cpu_by_module_to_is_named_with_the_fix():
    class Masked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.mask = torch.ones(4, 32, 32)  # a plain attribute: .cuda() leaves it on the CPU

        def forward(self, x):
            return self.conv(x) * self.mask

    with pytest.raises(ModelForwardError, match=r"\(mask of Masked is a plain tensor attribute on cpu, which "
                                                r"module.to\(\) does not move: register it as a buffer"):
        visprof.profile(Masked(), batch_size=4, img_size=32, passes="timing", progress=False)


def test_a_module_traced_on_the_cpu_with_a_constant_is_named_when_its_forward_fails_on_the_gpu():
    import warnings

    class Masked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.mask = torch.ones(4, 32, 32)  # read in forward: the trace keeps it as a CPU constant

        def forward(self, x):
            return self.conv(x) * self.mask

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.trace's deprecation
        traced = torch.jit.trace(Masked(), torch.ones(2, 3, 32, 32))
    with pytest.raises(ModelForwardError, match=r"holds a TorchScript graph with tensor constants on cpu \(a traced "
                                                r"forward keeps"):
        visprof.profile(traced, batch_size=4, img_size=32, passes="timing", progress=False)


def test_device_index_is_honoured():
    result = visprof.profile("resnet18", batch_size=4, device=f"cuda:{torch.cuda.device_count() - 1}",
                             passes="timing", progress=False)
    assert result.config.device == f"cuda:{torch.cuda.device_count() - 1}"


class ExplodesOnThirdCall(torch.nn.Module):
    """Fails inside the attributed pass, after capture and tracing have started."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = self.conv(x)
        if self.calls >= 3:
            raise RuntimeError("boom on call 3")
        return x


def test_model_raising_inside_the_attributed_pass_is_cleaned_up():
    c = native()
    with pytest.raises(ModelForwardError, match="boom on call 3"):
        visprof.profile(ExplodesOnThirdCall(), batch_size=2, img_size=16, passes="attributed", progress=False)
    assert not c.tracer.active()
    assert c.nvtx.depth() == 0
    assert c.op_depth() == 0


@pytest.mark.parametrize("name", ["resnet50", "swin_tiny_patch4_window7_224"])
def test_the_aten_observer_links_every_kernel_to_the_same_op_as_the_dispatch_mode(name, monkeypatch):
    """The C++ capture against the Python one on the same model instance: every kernel
    carries an id, and kernel k of both runs carries the same op id (both number ops
    1 + iteration * ops + position)."""
    from visprof.attribution.categories import default_table
    from visprof.passes.models import resolve_model
    from visprof.native import aten_observer
    from visprof.passes.attributed import run_attributed_pass
    from visprof.passes.runner import ModelRunner, RunConfig

    runner = ModelRunner(resolve_model(name), RunConfig(batch_size=32, precision="bf16", device="cuda:0"))
    runs = {}
    try:
        for observer in ("1", "0"):
            monkeypatch.setenv("VISPROF_ATEN_OBSERVER", observer)
            aten_observer.load_observer.cache_clear()
            result = run_attributed_pass(runner, default_table(), iterations=3)
            kernels = result.trace.kernels
            runs[result.trace.meta["op_capture"]] = {
                "ids": kernels["external_id"].tolist(),
                "names": [result.trace.kernel_name(row) for row in range(len(kernels))],
                "wall_ms": sorted(result.wall_ns_per_iteration)[1] / 1e6,
            }
    finally:
        aten_observer.load_observer.cache_clear()
        runner.close()
    replayed = runs.pop("aten observer")
    (method, python), = runs.items()
    print({"model": name, "kernels": len(replayed["ids"]), "observer wall ms": replayed["wall_ms"],
           "dispatch-mode wall ms": python["wall_ms"]})
    assert method.startswith("python dispatch mode")
    assert 0 not in replayed["ids"] and 0 not in python["ids"]
    assert replayed["names"] == python["names"]
    assert replayed["ids"] == python["ids"]


def test_op_types_and_kernel_families_account_for_the_attributed_kernels():
    result = visprof.profile("resnet50", batch_size=32, passes="timing,attributed", progress=False)
    kernel_ms = sum(r.time_ms for r in result.categories)
    for rows in (result.op_types, result.kernel_families):
        assert rows and sum(r.time_ms for r in rows) == pytest.approx(kernel_ms, rel=1e-6)
    ops = {r.op_type: r for r in result.op_types}
    # ResNet-50: 53 convolutions a forward, 36 of them 1x1; 53 batch norms
    convs = {k: r.calls for k, r in ops.items() if "[dense]" in k or "[pointwise]" in k}
    assert sum(convs.values()) == 53 and sum(v for k, v in convs.items() if "[pointwise]" in k) == 36
    assert sum(r.calls for k, r in ops.items() if "batch_norm" in k) == 53
    families = [r.family for r in result.kernel_families]
    assert not any(f.startswith("_Z") or "<" in f for f in families), families  # demangled, templates stripped
    assert any(r.category == "normalization" and r.subcategory == "batch" for r in result.kernel_families)
    # every FLOP and byte of the ops that launched kernels is on a family; the FLOPs on math kernels
    launched = [r for r in result.op_types if r.kernels]
    assert sum(r.gflop for r in result.kernel_families) == pytest.approx(sum(r.gflop for r in launched), rel=1e-6)
    assert sum(r.mb for r in result.kernel_families) == pytest.approx(sum(r.mb for r in launched), rel=1e-6)
    conv_gflop = sum(r.gflop for r in result.kernel_families if r.category == "convolution")
    assert conv_gflop > 0.9 * sum(r.gflop for r in launched if r.category == "convolution") > 0
    assert not any(r.gflop for r in result.kernel_families if "nchwToNhwc" in r.family or "elementwise" in r.family)
    kernels = [r for r in result.kernel_families if not r.family.startswith("[")]
    assert kernels and all(r.blocks >= 1 and 32 <= r.threads <= 1024 for r in kernels)
    # launch sizes: every kernel launch in one power-of-two bin, all the kernel time
    assert sum(r.share for r in result.launch_sizes) == pytest.approx(1.0, rel=1e-9)
    assert sum(r.kernels for r in result.launch_sizes) == pytest.approx(sum(r.calls for r in kernels), rel=1e-9)
    sms = result.gpu["sm_count"]
    assert all(r.blocks_min == r.blocks_max == sms for r in result.launch_sizes if r.one_per_sm)
    launched = next(c for c in result.checks if c.name == "kernels launched: attributed vs tracer-only")
    assert launched.passed and launched.value == 0
    # each family's time by the category of its kernels adds up to the family's, and per key to the
    # category table's: ATen's elementwise kernel serves more than one category in ResNet-50
    by_key: dict[str, float] = {}
    for row in result.kernel_families:
        assert sum(row.by_category.values()) == pytest.approx(row.time_ms, rel=1e-9)
        for key, ms in row.by_category.items():
            by_key[key] = by_key.get(key, 0.0) + ms
    table = {f"{r.category}/{r.subcategory}" if r.subcategory else r.category: r.time_ms for r in result.categories}
    assert by_key == pytest.approx({k: v for k, v in table.items() if v > 0}, rel=1e-6)
    assert any(len(r.by_category) > 1 for r in result.kernel_families if "elementwise" in r.family)

