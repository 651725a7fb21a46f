"""Small ProfileResults built from fabricated traces, shared by the report, roofline and predict tests."""
from __future__ import annotations

from fixtures import TraceBuilder
from visprof.analysis import roofline
from visprof.analysis.gpus import GpuSpec, GpuTable
from visprof.attribution.attribute import attribute
from visprof.native.records import KIND_MEMCPY, CapturedTrace
from visprof.result import Check, LatencyStats, MemorySummary, ModelInfo, PassInfo, ProfileResult, RunConfig, Timing

# Round numbers: 100 tensor TFLOP/s (= 100 FLOP/ps), 10 FP32 TFLOP/s, 1000 GB/s (= 1 byte/ps).
def make_result(trace: CapturedTrace, checks: list[Check] | None = None, memory: MemorySummary | None = None) -> ProfileResult:
    attr = attribute(trace)
    gpu = trace.measurement == "gpu"
    return ProfileResult(
        model=ModelInfo("vit_tiny_patch16_224", "timm", 5_717_416, [64, 3, 224, 224], 64, 224),
        config=RunConfig("bf16", True, False, "cuda:0" if gpu else "cpu", 10, "auto", ["timing", "attributed", "memory"]),
        measurement=trace.measurement,
        timing=Timing(LatencyStats.from_samples([8.25, 8.5, 8.0, 9.0]), 7757.6, 4, 6.125, 2.125, 561_000_000),
        categories=attr.category_rows(memory),
        modules=attr.module_rows(top=5),
        attribution=attr.summary(),
        memory=memory,
        checks=checks if checks is not None else [Check.within("coverage", 0.9995, 1.0, 0.001, detail="attributed share")],
        passes={"timing": PassInfo(1.5, 200), "attributed": PassInfo(0.75, 5)},
        environment={"torch": "2.11.0", "timm": "1.0.29", "native_backend": "cuda"},
        gpu={"name": "NVIDIA H200", "sm_clock_mhz": {"min": 1980, "median": 1980, "max": 1980}} if gpu else None,
        warnings=["SM clock varied during the timing pass"],
    )


SPEC = GpuSpec(id="toy", name="Toy GPU", sms=10, boost_clock_mhz=1000, memory_gb=8, memory_bandwidth_gbs=1000,
               l2_mb=1, fp32_tflops=10, tensor_tflops={"bf16": 100, "fp16": 100}, match=("^Toy GPU$",))


def costed(b: TraceBuilder, *args, bytes=0, param_bytes=0, tensor_core=None, **kwargs):
    b.op(*args, **kwargs)
    op = b.ops[-1]
    op.bytes, op.param_bytes, op.tensor_core = bytes, param_bytes, tensor_core
    return op


def toy_trace(iterations: int = 1) -> CapturedTrace:
    """Known roofline times on SPEC (per op):
    qkv/fc GEMM: 1e9 FLOP on tensor cores = 10 us, 1 MB = 1 us      -> tensor-bound, ran 20 us (eff 0.5)
    add:         no FLOPs, 4 MB = 4 us                               -> memory-bound, ran 8 us (eff 0.5)
    conv fp32:   1e8 FLOP at FP32 = 10 us, 1 MB = 1 us               -> compute-bound, ran 10 us (eff 1)
    conv bf16:   1e9 FLOP = 10 us; ran 10 us plus a 5 us nchwToNhwc  -> tensor 10 us + memory 5 us
    and a 3 us memcpy with no op (memory)."""
    b = TraceBuilder(iterations=iterations)
    root = b.module("", "Net")
    fc = b.module("fc", "Linear", root)
    conv = b.module("conv", "Conv2d", root)
    for it in range(iterations):
        b.iteration = it
        for _ in range(2):  # two identical GEMMs: one group with count 2
            costed(b, "aten.addmm.default", fc, [("gemm", 20_000)], flops=1e9, bytes=1_000_000, param_bytes=600_000, tensor_core="bf16")
        costed(b, "aten.add.Tensor", root, [("add_kernel", 8_000)], bytes=4_000_000)
        costed(b, "aten.convolution.default", conv, [("conv_fp32", 10_000)], flops=1e8, bytes=1_000_000,
               groups=1, in_channels=8, kernel_size=[3, 3])
        costed(b, "aten.convolution.default", conv, [("cudnn::nchwToNhwcKernel", 5_000), ("conv_bf16", 10_000)], flops=1e9,
               bytes=2_000_000, tensor_core="bf16", groups=1, in_channels=16, kernel_size=[3, 3])
        costed(b, "aten.view.default", root)  # no kernel: no group
        b.kernel("Memcpy DtoD", 3_000, kind=KIND_MEMCPY, nbytes=3_000_000)
    return b.build()


def toy_result(trace: CapturedTrace, timing: Timing | None = None, gpu: str = "Toy GPU") -> ProfileResult:
    attr = attribute(trace)
    result = ProfileResult(ModelInfo("toy", "module", 1000, [8, 3, 32, 32], 8, 32), RunConfig("bf16", device="cuda:0"),
                           "gpu", timing=timing, gpu={"name": gpu})
    result.categories = attr.category_rows()
    result.attribution = attr.summary()
    roofline.attach(result, attr, GpuTable([SPEC]))
    return result
