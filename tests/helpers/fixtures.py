"""Builders for small synthetic ``CapturedTrace`` objects.

``TraceBuilder`` lays ops out one after another on the host clock and their kernels one
after another on one GPU stream, so tests state durations and read back exact sums. Kernels
can also be placed explicitly (start, stream) to test overlap.

The canned traces (``mini_vit``, ``mini_cnn``, ``mini_swin``) mirror the module structure
and aten op names that capture records for timm models; tests derive their expectations from
the durations written here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from visprof.native.records import KERNEL_DTYPE, KIND_CPU_OP, KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, CapturedTrace, ModuleRecord, OpRecord

STREAM = 7
DEVICE = 0
GAP_NS = 10  # idle gap the builder leaves between consecutive kernels


@dataclass
class TraceBuilder:
    iterations: int = 1
    measurement: str = "gpu"
    modules: list[ModuleRecord] = field(default_factory=list)
    ops: list[OpRecord] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    gpu_clock: int = 1_000_000  # next free start on the default stream
    cpu_clock: int = 5_000_000_000
    iteration: int = 0

    def module(self, path: str, cls: str, parent: int = -1, **attrs: Any) -> int:
        self.modules.append(ModuleRecord(path, cls, parent, dict(attrs)))
        return len(self.modules) - 1

    def op(self, name: str, module: int = -1, kernels: list[tuple[str, int]] = (), flops: float = 0.0, cpu_ns: int = 100, **attrs: Any) -> int:
        """Record an op that launched ``kernels`` ([(name, duration_ns)]); returns its external id."""
        external_id = len(self.ops) + 1
        start = self.cpu_clock
        self.ops.append(OpRecord(external_id, name, module, self.iteration, start, start + cpu_ns, flops, dict(attrs)))
        self.cpu_clock += cpu_ns + 5
        for kernel_name, duration in kernels:
            self.kernel(kernel_name, duration, external_id=external_id)
        return external_id

    def kernel(self, name: str, duration: int, external_id: int = 0, kind: int = KIND_KERNEL, start: int | None = None, stream: int = STREAM, device: int = DEVICE, nbytes: int = 0) -> int:
        """Add one row; without ``start`` it follows the previous one on the default timeline."""
        if start is None:
            start = self.gpu_clock
            self.gpu_clock = start + duration + GAP_NS
        if name not in self.names:
            self.names.append(name)
        self.rows.append(
            dict(kind=kind, name_id=self.names.index(name), start_ns=start, end_ns=start + duration, device=device,
                 stream=stream, correlation_id=len(self.rows) + 1, external_id=external_id,
                 grid=(4, 2, 1), block=(128, 1, 1), bytes=nbytes)
        )
        return len(self.rows) - 1

    def build(self) -> CapturedTrace:
        kernels = np.zeros(len(self.rows), dtype=KERNEL_DTYPE)
        for i, row in enumerate(self.rows):
            for key, value in row.items():
                kernels[key][i] = value
        return CapturedTrace(kernels, list(self.names), list(self.ops), list(self.modules), self.measurement, self.iterations)


# --- canned traces -----------------------------------------------------------------------
def conv_attrs(in_channels: int, groups: int, kernel: int) -> dict[str, Any]:
    return {"in_channels": in_channels, "groups": groups, "kernel_size": [kernel, kernel]}


def mini_vit(iterations: int = 1) -> TraceBuilder:
    """One ViT block, ``iterations`` times: LN, Attention(qkv, sdpa, proj), residual, LN, Mlp."""
    b = TraceBuilder(iterations=iterations)
    root = b.module("", "VisionTransformer")
    block = b.module("blocks.0", "Block", root)
    norm1 = b.module("blocks.0.norm1", "LayerNorm", block)
    attn = b.module("blocks.0.attn", "Attention", block)
    qkv = b.module("blocks.0.attn.qkv", "Linear", attn)
    proj = b.module("blocks.0.attn.proj", "Linear", attn)
    norm2 = b.module("blocks.0.norm2", "LayerNorm", block)
    mlp = b.module("blocks.0.mlp", "Mlp", block)
    fc1 = b.module("blocks.0.mlp.fc1", "Linear", mlp)
    act = b.module("blocks.0.mlp.act", "GELU", mlp)
    fc2 = b.module("blocks.0.mlp.fc2", "Linear", mlp)
    head = b.module("head", "Linear", root)
    for it in range(iterations):
        b.iteration = it
        b.op("aten.native_layer_norm.default", norm1, [("vectorized_layer_norm_kernel", 20)], flops=0)
        b.op("aten.addmm.default", qkv, [("nvjet_tst_qkv", 300)], flops=3e9)
        b.op("aten._scaled_dot_product_flash_attention.default", attn, [("flash_fwd_kernel", 400)], flops=4e9)
        b.op("aten.transpose.int", attn)  # a view: no kernel
        b.op("aten.clone.default", attn, [("elementwise_kernel<direct_copy>", 30)])
        b.op("aten.addmm.default", proj, [("nvjet_tst_proj", 100)], flops=1e9)
        b.op("aten.add.Tensor", block, [("vectorized_elementwise_kernel<add>", 10)])
        b.op("aten.native_layer_norm.default", norm2, [("vectorized_layer_norm_kernel", 20)])
        b.op("aten.addmm.default", fc1, [("nvjet_tst_fc1", 400)], flops=4e9)
        b.op("aten.gelu.default", act, [("vectorized_elementwise_kernel<gelu>", 40)])
        b.op("aten.addmm.default", fc2, [("nvjet_tst_fc2", 400)], flops=4e9)
        b.op("aten.add.Tensor", block, [("vectorized_elementwise_kernel<add>", 10)])
        b.op("aten.mean.dim", root, [("reduce_kernel<mean>", 6)])
        b.op("aten.addmm.default", head, [("gemv_head", 14)], flops=2e6)
    return b


def mini_cnn() -> TraceBuilder:
    """Stem conv + BN + ReLU, a depthwise-separable block with residual, pool and head."""
    b = TraceBuilder()
    root = b.module("", "ResNet")
    conv1 = b.module("conv1", "Conv2d", root)
    bn1 = b.module("bn1", "BatchNorm2d", root)
    act1 = b.module("act1", "ReLU", root)
    block = b.module("layer1.0", "DepthwiseSeparableConv", root)
    dw = b.module("layer1.0.conv_dw", "Conv2d", block)
    pw = b.module("layer1.0.conv_pw", "Conv2d", block)
    se = b.module("layer1.0.se", "SqueezeExcite", block)
    se_reduce = b.module("layer1.0.se.conv_reduce", "Conv2d", se)
    se_gate = b.module("layer1.0.se.gate", "Sigmoid", se)
    pool = b.module("global_pool", "SelectAdaptivePool2d", root)
    fc = b.module("fc", "Linear", root)
    b.op("aten.convolution.default", conv1, [("sm90_xmma_fprop_implicit_gemm", 500)], flops=5e9, **conv_attrs(3, 1, 7))
    b.op("aten._native_batch_norm_legit_no_training.default", bn1, [("bn_fw_inf_kernel", 50)])
    b.op("aten.relu_.default", act1, [("vectorized_elementwise_kernel<relu>", 25)])
    b.op("aten.convolution.default", dw, [("conv_depthwise2d_forward_kernel", 200)], flops=2e8, **conv_attrs(64, 64, 3))
    b.op("aten.convolution.default", pw, [("sm90_xmma_fprop_1x1", 150)], flops=1e9, **conv_attrs(64, 1, 1))
    b.op("aten.mean.dim", se, [("reduce_kernel<mean>", 8)])
    b.op("aten.convolution.default", se_reduce, [("sm90_xmma_fprop_1x1_small", 12)], flops=1e6, **conv_attrs(64, 1, 1))
    b.op("aten.sigmoid.default", se_gate, [("vectorized_elementwise_kernel<sigmoid>", 4)])
    b.op("aten.mul.Tensor", se, [("vectorized_elementwise_kernel<mul>", 6)])
    b.op("aten.add_.Tensor", block, [("vectorized_elementwise_kernel<add>", 15)])
    b.op("aten.adaptive_avg_pool2d.default", pool, [("adaptive_avg_pool_kernel", 20)])
    b.op("aten.addmm.default", fc, [("nvjet_tst_fc", 30)], flops=2e6)
    return b


def mini_swin() -> TraceBuilder:
    """A shifted-window block: roll, pad, partition copy in the block; WindowAttention inside."""
    b = TraceBuilder()
    root = b.module("", "SwinTransformer")
    block = b.module("layers.0.blocks.1", "SwinTransformerBlock", root)
    attn = b.module("layers.0.blocks.1.attn", "WindowAttention", block)
    qkv = b.module("layers.0.blocks.1.attn.qkv", "Linear", attn)
    softmax = b.module("layers.0.blocks.1.attn.softmax", "Softmax", attn)
    proj = b.module("layers.0.blocks.1.attn.proj", "Linear", attn)
    mlp = b.module("layers.0.blocks.1.mlp", "Mlp", block)
    fc1 = b.module("layers.0.blocks.1.mlp.fc1", "Linear", mlp)
    b.op("aten.roll.default", block, [("roll_cuda_kernel", 40)])
    b.op("aten.constant_pad_nd.default", block, [("elementwise_kernel<fill>", 5), ("elementwise_kernel<copy>", 15)])
    b.op("aten.clone.default", block, [("elementwise_kernel<direct_copy>", 30)])  # window_partition
    b.op("aten.addmm.default", qkv, [("nvjet_tst_qkv", 200)], flops=2e9)
    b.op("aten.bmm.default", attn, [("nvjet_tst_bmm_qk", 60)], flops=5e8)
    b.op("aten.add.Tensor", attn, [("vectorized_elementwise_kernel<add>", 12)])  # bias + mask
    b.op("aten._softmax.default", softmax, [("softmax_warp_forward", 25)])
    b.op("aten.bmm.default", attn, [("nvjet_tst_bmm_av", 60)], flops=5e8)
    b.op("aten.addmm.default", proj, [("nvjet_tst_proj", 70)], flops=7e8)
    b.op("aten.add.Tensor", block, [("vectorized_elementwise_kernel<add>", 10)])  # residual
    b.op("aten.addmm.default", fc1, [("nvjet_tst_fc1", 300)], flops=3e9)
    return b


def odd_rows(b: TraceBuilder) -> TraceBuilder:
    """Rows without ops: a Triton kernel (name rule), a mystery kernel (unattributed), memcpy/memset."""
    b.kernel("triton_poi_fused_add_gelu_0", 50)
    b.kernel("mystery_kernel_v2", 70)
    b.kernel("Memcpy HtoD (Pageable -> Device)", 90, kind=KIND_MEMCPY, nbytes=1 << 20)
    b.kernel("Memset (Device)", 3, kind=KIND_MEMSET, nbytes=4096)
    return b


def cpu_trace() -> CapturedTrace:
    """The CPU path: one host-timed pseudo-kernel per op."""
    b = TraceBuilder(measurement="cpu")
    root = b.module("", "Tiny")
    fc = b.module("fc", "Linear", root)
    act = b.module("act", "ReLU", root)
    b.op("aten.addmm.default", fc, flops=1e6)
    b.op("aten.relu.default", act)
    for op in b.ops:
        b.kernel(op.name, op.cpu_end_ns - op.cpu_start_ns, external_id=op.external_id, kind=KIND_CPU_OP, start=op.cpu_start_ns, stream=0, device=-1)
    return b.build()
