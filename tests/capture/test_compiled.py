"""torch.compile'd models attributed like eager ones (visprof/capture/compiled.py), on the CPU.

Inductor's provenance machinery is the same Python side on the CPU (it generates C++
kernels named cpp_fused_*), so one real compile gives the program; the rows a GPU trace
would hold are then synthesised from it (library kernel names for the extern calls) and
linked back, which is what the attributed pass does with CUPTI's rows on a GPU."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

from visprof.attribution.attribute import attribute
from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import default_table
from visprof.capture.compiled import CompiledProgram, KernelCall, _align, attribute_rows, compile_model, module_path
from visprof.native.records import KERNEL_DTYPE, KIND_KERNEL, KIND_MEMSET, CapturedTrace


class TinyHybrid(nn.Module):
    """Conv stem (3x3 conv, BN, ReLU, 1x1 conv) + inline self-attention + MLP head."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, dim, 1))
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.fc = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        return self.fc(self.proj(x).mean(1))


LIBRARY_KERNELS = {  # what cuBLAS/cuDNN/flash would launch for an extern call, by its family
    "convolution": ["sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", "nchwToNhwcKernel"],
    "linear": ["nvjet_tst_128x64_64x4_1x2_h_bz_TNT"],
    "attention": ["pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>"],
}


@pytest.fixture(scope="module")
def compiled():
    model = TinyHybrid().eval()
    x = torch.randn(2, 3, 16, 16)
    compiled_model, recorder = compile_model(model)
    with warnings.catch_warnings(record=True) as caught, torch.inference_mode():
        warnings.simplefilter("always")
        out = compiled_model(x)
    with torch.inference_mode():
        reference = model(x)
    return model, x, recorder, out, reference, caught


def test_a_compiled_model_is_not_kept_once_its_user_drops_it():
    """torch's compile cache keeps the backend for the process's life, and the backend kept its
    model: every compile=True profile in a notebook held another model (256 MiB each in one test)."""
    import gc
    import weakref

    model = TinyHybrid().eval()
    compiled_model, recorder = compile_model(model)
    with torch.inference_mode():
        compiled_model(torch.randn(2, 3, 16, 16))
    assert recorder.graphs and recorder.root is model  # alive, it is there for the compiles
    dropped = weakref.ref(model)
    del model, compiled_model
    gc.collect()
    assert dropped() is None and recorder.root is None


def test_module_path_from_dynamo_names():
    assert module_path("L['self'].layer1[0].conv1") == "layer1.0.conv1"
    assert module_path("L['s'].a.0") == "a.0"
    assert module_path("L['self']._modules['blocks']._modules['3'].attn") == "blocks.3.attn"
    assert module_path("L['self']") == ""
    assert module_path("getattr(getattr(L['self'].stages, '1').blocks, '0').attn") == "stages.1.blocks.0.attn"


def test_compile_records_every_kernel_with_its_ops_and_module(compiled):
    model, x, recorder, out, reference, caught = compiled
    torch.testing.assert_close(out, reference)  # the recording backend compiles the same program
    assert recorder.warnings == [] and recorder.supported
    assert not [w for w in caught if "hook" in str(w.message)]
    calls = recorder.program.calls
    assert [c.handle for c in calls] == sorted(c.handle for c in calls)
    externs = {(c.op.split(".")[1], c.module, c.category) for c in calls if c.extern}
    assert ("convolution", "stem.0", "convolution/dense") in externs
    assert ("convolution", "stem.3", "convolution/pointwise") in externs  # a 1x1 conv stays a conv
    assert ("mm", "qkv", "attention/projections") in externs or ("addmm", "qkv", "attention/projections") in externs
    assert ("addmm", "proj", "attention/projections") in externs
    assert ("addmm", "fc", "linear") in externs
    assert any(c.category == "attention/core" for c in calls if c.extern)  # Inductor made the core an SDPA
    # BN and ReLU fuse into one kernel: anchored on the norm, the activation is its fused remainder
    fused_bn = [c for c in calls if not c.extern and c.category == "normalization/batch"]
    assert fused_bn and "activation" in fused_bn[0].attrs.get("fused", [])


def test_compiled_flops_match_eager(compiled):
    model, x, recorder, *_ = compiled
    tracker = ModuleTracker(model)
    capture = OpCapture(tracker, default_table(), nvtx=False, flops=True)
    with tracker, capture, torch.inference_mode():
        model(x)
    eager = sum(op.flops for op in capture.to_records())
    compiled_flops = sum(c.flops for c in recorder.program.calls)
    assert eager > 0
    assert compiled_flops == pytest.approx(eager, rel=0.01)


def synthetic_rows(program: CompiledProgram, iterations: int, extra: str | None = None):
    """Kernel rows as CUPTI would record a compiled run (external ids 0), and iteration bounds."""
    names: list[str] = []
    rows = []
    t = 1_000
    bounds = []
    for _ in range(iterations):
        begin = t
        if extra:  # eager work before the graph (an input copy): no call launched it
            rows.append((extra, t, t + 50))
            t += 100
        for call in program.calls:
            launched = LIBRARY_KERNELS.get(call.family, ["at::native::some_fallback_kernel"]) if call.extern else [call.name]
            for name in launched:
                rows.append((name, t, t + 100))
                t += 200
        rows.append(("memset", t, t + 10))
        t += 100
        bounds.append((begin, t))
        t += 1_000
    kernels = np.zeros(len(rows), dtype=KERNEL_DTYPE)
    for i, (name, start, end) in enumerate(rows):
        if name not in names:
            names.append(name)
        kernels[i]["kind"] = KIND_MEMSET if name == "memset" else KIND_KERNEL
        kernels[i]["name_id"] = names.index(name)
        kernels[i]["start_ns"], kernels[i]["end_ns"] = start, end
        kernels[i]["correlation_id"] = i + 1
    return kernels, names, bounds


def test_gpu_rows_of_a_compiled_run_get_the_eager_categories_and_modules(compiled):
    model, x, recorder, *_ = compiled
    program = recorder.program
    tracker = ModuleTracker(model)
    table = default_table()
    kernels, names, bounds = synthetic_rows(program, iterations=2, extra="void mystery_eager_kernel<float>()")
    ops, stats = attribute_rows(kernels, names, program, tracker.modules, bounds, table)
    assert stats["rows"] - stats["linked_rows"] == 2  # the kernel no call launched, once per iteration
    trace = CapturedTrace(kernels, names, ops, tracker.modules, "gpu", iterations=2)
    attr = attribute(trace, table)
    by_name: dict[str, set[str]] = {}
    modules: dict[str, set[str]] = {}
    for row in range(len(kernels)):
        name = trace.kernel_name(row)
        by_name.setdefault(name, set()).add(attr.classification(row).key)
        if attr.module_index[row] >= 0:
            modules.setdefault(name, set()).add(trace.modules[attr.module_index[row]].path)
    assert by_name[LIBRARY_KERNELS["convolution"][0]] == {"convolution/dense", "convolution/pointwise"}
    assert by_name[LIBRARY_KERNELS["convolution"][1]] == {"convolution/dense", "convolution/pointwise"}
    assert by_name[LIBRARY_KERNELS["linear"][0]] == {"attention/projections", "linear"}
    assert by_name[LIBRARY_KERNELS["attention"][0]] == {"attention/core"}
    assert modules[LIBRARY_KERNELS["convolution"][0]] == {"stem.0", "stem.3"}
    assert modules[LIBRARY_KERNELS["linear"][0]] == {"qkv", "proj", "fc"}
    assert by_name["void mystery_eager_kernel<float>()"] == {"unattributed"}  # kept for the names-only rules
    totals = {r.key if hasattr(r, "key") else f"{r.category}/{r.subcategory}": r for r in attr.category_rows()}
    flops = sum(r.flops for r in attr.category_rows())
    assert flops == pytest.approx(sum(c.flops for c in program.calls))
    assert any(k.startswith("attention/projections") for k in totals) and any(k.startswith("attention/core") for k in totals)


def call(name, family, extern=True):
    return KernelCall(name=name, graph=0, handle=0, extern=extern, family=family)


def test_library_kernels_between_anchors_go_to_the_extern_call_of_their_kind():
    calls = [call("triton_a", "normalization", False), call("extern_kernels.mm", "linear"),
             call("aten._scaled_dot_product_flash_attention.default", "attention"), call("extern_kernels.mm", "linear"),
             call("triton_b", "elementwise", False)]
    generated = {"triton_a": [0], "triton_b": [4]}
    family = {"nvjet_a": "linear", "flash_fwd": "attention", "splitKreduce": "elementwise", "nvjet_b": "linear"}.get
    names = ["triton_a", "nvjet_a", "splitKreduce", "flash_fwd", "nvjet_b", "triton_b"]
    assert _align(names, calls, generated, family) == [0, 1, 1, 2, 3, 4]
    # a repeated kernel name (Inductor reuses identical kernels) is matched in order
    calls2 = [call("triton_ln", "normalization", False), call("extern_kernels.mm", "linear")] * 2
    assert _align(["triton_ln", "gemm", "triton_ln", "gemm"], calls2, {"triton_ln": [0, 2]}, lambda n: "linear") == [0, 1, 2, 3]
    # kernels before the first anchor and kernels of a graph the recorder never saw stay unlinked
    assert _align(["gemm", "triton_a"], calls[:1], {"triton_a": [0]}, lambda n: "linear") == [None, 0]


def test_cpu_profile_of_a_compiled_model_runs_the_eager_model_without_hook_warnings():
    import visprof

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = visprof.profile(model, batch_size=1, img_size=8, iterations=2, compile=True,
                                 passes="timing,attributed", progress=False)
    assert not [w for w in caught if "global hooks" in str(w.message)], [str(w.message) for w in caught]
    assert any("torch.compile on the CPU" in w for w in result.warnings)
    assert {row.category for row in result.categories} >= {"convolution", "activation", "pooling"}


def test_attributed_pass_links_a_compiled_trace_and_says_how_much(compiled):
    """The attributed pass's glue (_link_compiled) on a traced compiled run's records."""
    from types import SimpleNamespace

    from visprof.native.tracer import TraceRecords
    from visprof.passes.attributed import _link_compiled, build_trace
    from visprof.native.records import API_DTYPE

    model, x, recorder, *_ = compiled
    kernels, names, bounds = synthetic_rows(recorder.program, iterations=3, extra="void eager_copy_kernel()")
    kernels.flags.writeable = False  # as the native tracer may hand them over
    records = TraceRecords(kernels, np.zeros(0, dtype=API_DTYPE), names)
    tracker = ModuleTracker(model)
    runner = SimpleNamespace(compile_recorder=recorder)
    warnings_: list[str] = []
    ops, method = _link_compiled(runner, records, tracker, bounds, default_table(), warnings_)
    assert method.startswith("inductor provenance")
    assert len(ops) == 3 * len({c.handle for c in recorder.program.calls})
    assert any("linked to the ops and modules" in w and "(3 kernels)" in w for w in warnings_), warnings_
    trace = build_trace(records, OpCapture(tracker, default_table(), nvtx=False), tracker, 3, ops=ops)
    assert trace.ops is ops and (trace.kernels["external_id"] > 0).sum() == len(trace.kernels) - 3 - 3  # + memsets
    assert all(op.cpu_end_ns >= op.cpu_start_ns > 0 for op in ops)
    # a recorder that saw no compile (a cache hit before visprof): names only, and it says so
    empty = SimpleNamespace(compile_recorder=SimpleNamespace(program=CompiledProgram(), warnings=[], supported=True))
    warnings_ = []
    assert _link_compiled(empty, records, tracker, bounds, default_table(), warnings_) == (None, "none (kernel names)")
    assert "no kernel provenance was recorded" in warnings_[0]


class TokenMixerFp32Softmax(nn.Module):
    """Hand-written attention whose softmax runs in fp32, as CUDA autocast runs it (no class
    name says attention, so only the dataflow can)."""

    def __init__(self, dim=64, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ k.transpose(-2, -1)) * 0.125
        attn = attn.float().softmax(dim=-1).to(q.dtype)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


def test_compiled_attention_is_found_through_the_casts_of_a_mixed_precision_graph():
    """On the H200 (bf16 autocast) a compiled hand-written attention had no attention at all:
    Inductor's post-grad graph casts with prims.convert_element_type around the fp32 softmax,
    which the dataflow walk did not pass through. Inductor's SDPA rewrite is switched off so
    the bmm/softmax/bmm graph stays as written (it does not fire on every shape)."""
    import torch._inductor.config as inductor_config

    with inductor_config.patch(pattern_matcher=False):
        compiled_model, recorder = compile_model(TokenMixerFp32Softmax().eval())
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            compiled_model(torch.randn(2, 49, 64))
    calls = recorder.program.calls
    assert not any("scaled_dot_product" in c.op for c in calls)  # the rewrite really was off
    by_category = {c.category for c in calls}
    assert {"attention/core", "attention/projections"} <= by_category, by_category
    assert any(c.category == "attention/core" and "bmm" in c.op for c in calls if c.extern)
    assert "linear" not in by_category


def test_the_convolution_layout_inductor_chose_is_read_from_its_calls():
    from visprof.capture.compiled import _is_channels_last

    x = torch.randn(2, 8, 5, 5)
    assert not _is_channels_last(x) and _is_channels_last(x.to(memory_format=torch.channels_last))
    assert not _is_channels_last(torch.randn(2, 8, 1, 1).to(memory_format=torch.channels_last))  # both layouts
    conv = lambda cl: KernelCall("extern_kernels.convolution", 0, 0, True, attrs={"channels_last": cl})  # noqa: E731
    assert CompiledProgram([conv(True), conv(True), KernelCall("triton_poi_0", 0, 1, False)]).conv_layout() == "channels_last"
    assert CompiledProgram([conv(True), conv(False)]).conv_layout() == "mixed"
    assert CompiledProgram([conv(False)]).conv_layout() == "contiguous"
    assert CompiledProgram([KernelCall("extern_kernels.mm", 0, 0, True)]).conv_layout() is None


def test_a_cpu_compile_records_the_layout_of_its_convolutions(compiled):
    """Inductor's lowering lays convolutions out channels-last (on the CPU, always where
    mkldnn runs them); the post-grad graph's meta values still say NCHW."""
    model, x, recorder, *_ = compiled
    expected = "channels_last" if torch.backends.mkldnn.is_available() else "contiguous"
    assert recorder.program.conv_layout() == expected
