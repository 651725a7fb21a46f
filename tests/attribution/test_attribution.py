"""Attribution over synthetic traces (exact sums) and over recorded traces in tests/data/."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from fixtures import TraceBuilder, cpu_trace, mini_cnn, mini_swin, mini_vit, odd_rows
from visprof.attribution.attribute import (
    HOW_KERNEL_NAME,
    HOW_NONE,
    HOW_OP,
    attribute,
    busy_time_ns,
    coverage,
    durations_ns,
    kernel_time_ns,
    module_category_ns,
    module_chains,
    span_ns,
)
from visprof.attribution.categories import CategoryTable, Rule
from visprof.native.records import KIND_CPU_OP, KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, CapturedTrace
from visprof.result import MemorySummary

DATA = Path(__file__).resolve().parents[1] / "data"


def rows_by_key(attr) -> dict:
    return {(r.category, r.subcategory): r for r in attr.category_rows()}


# --- exact category sums -------------------------------------------------------------------
# Per-iteration kernel ns, kernel counts and FLOPs of mini_vit, bucket by bucket.
VIT_EXPECTED = {
    ("normalization", "layer"): (20 + 20, 2, 0.0),
    ("attention", "projections"): (300 + 100, 2, 3e9 + 1e9),
    ("attention", "core"): (400 + 30, 2, 4e9),  # sdpa + the head-merge copy
    ("elementwise", None): (10 + 10, 2, 0.0),
    ("linear", None): (400 + 400 + 14, 3, 4e9 + 4e9 + 2e6),
    ("activation", None): (40, 1, 0.0),
    ("pooling", None): (6, 1, 0.0),
}


@pytest.mark.parametrize("iterations", [1, 3])
def test_vit_category_times_counts_flops_per_iteration(iterations):
    attr = attribute(mini_vit(iterations).build())
    rows = rows_by_key(attr)
    assert set(rows) == set(VIT_EXPECTED)
    total_ns = sum(ns for ns, _, _ in VIT_EXPECTED.values())
    for key, (ns, count, flops) in VIT_EXPECTED.items():
        row = rows[key]
        assert row.time_ms == pytest.approx(ns / 1e6), key
        assert row.kernel_count == count, key
        assert row.flops == pytest.approx(flops), key
        assert row.share == pytest.approx(ns / total_ns), key
        assert row.tflops == (pytest.approx(flops / (ns * 1e-9) / 1e12) if flops else None), key
    assert sum(r.share for r in rows.values()) == pytest.approx(1.0)


def test_flop_time_is_the_time_of_the_kernels_of_ops_with_flops():
    """The library work of a category (compile comparisons compare it): the SDPA without the
    head-merge copy that is also attention core."""
    rows = rows_by_key(attribute(mini_vit(2).build()))
    expected_ns = {("attention", "core"): 400, ("attention", "projections"): 300 + 100, ("linear", None): 814}
    for key, row in rows.items():
        assert row.flop_time_ms == pytest.approx(expected_ns.get(key, 0) / 1e6), key


def test_a_categorys_bandwidth_is_its_bytes_over_its_kernel_time_in_gb_per_s():
    """CategoryRow.gbps goes into the result JSON and the category CSV: a unit slip (ns vs s) would
    put every category's GB/s 1000x off."""
    b = TraceBuilder(iterations=2)
    fc = b.module("fc", "Linear")
    for iteration in range(2):
        b.iteration = iteration
        b.op("aten.linear.default", fc, [("gemm", 400)], flops=1e6)
        b.ops[-1] = dataclasses.replace(b.ops[-1], bytes=2_000_000)
    row = rows_by_key(attribute(b.build()))[("linear", None)]
    # per iteration: 2e6 bytes in 400 ns = 2e6 / 400e-9 s = 5e12 byte/s = 5000 GB/s
    assert row.bytes == 2_000_000
    assert row.gbps == pytest.approx(5000.0)


def test_rows_come_in_table_order():
    keys = [(r.category, r.subcategory) for r in attribute(mini_vit().build()).category_rows()]
    assert keys == [("attention", "core"), ("attention", "projections"), ("linear", None), ("normalization", "layer"),
                    ("activation", None), ("pooling", None), ("elementwise", None)]


def test_cnn_conv_sub_kinds_and_squeeze_excite():
    rows = rows_by_key(attribute(mini_cnn().build()))
    assert rows[("convolution", "dense")].time_ms == pytest.approx(500e-6)
    assert rows[("convolution", "depthwise")].time_ms == pytest.approx(200e-6)
    assert rows[("convolution", "pointwise")].time_ms == pytest.approx((150 + 12) * 1e-6)  # SE conv is a 1x1 conv
    assert rows[("convolution", "pointwise")].flops == pytest.approx(1e9 + 1e6)
    assert rows[("pooling", None)].time_ms == pytest.approx((8 + 20) * 1e-6)  # SE squeeze + global pool
    assert rows[("activation", None)].kernel_count == 2  # ReLU + SE gate
    assert rows[("elementwise", None)].time_ms == pytest.approx((6 + 15) * 1e-6)  # SE scale + residual
    assert rows[("normalization", "batch")].time_ms == pytest.approx(50e-6)
    assert rows[("linear", None)].time_ms == pytest.approx(30e-6)
    assert not any(cat == "attention" for cat, _ in rows)


def test_swin_window_shift_is_attention_core_and_mlp_is_linear():
    rows = rows_by_key(attribute(mini_swin().build()))
    # roll + pad (fill, copy) + partition copy + bmm + mask add + softmax + bmm
    assert rows[("attention", "core")].time_ms == pytest.approx((40 + 5 + 15 + 30 + 60 + 12 + 25 + 60) * 1e-6)
    assert rows[("attention", "core")].flops == pytest.approx(1e9)
    assert rows[("attention", "projections")].time_ms == pytest.approx((200 + 70) * 1e-6)
    assert rows[("linear", None)].time_ms == pytest.approx(300e-6)
    assert rows[("elementwise", None)].time_ms == pytest.approx(10e-6)  # the residual add


# --- rows without ops, coverage -------------------------------------------------------------
def test_rows_without_op_use_kernel_rules_or_stay_unattributed():
    trace = odd_rows(mini_vit()).build()
    attr = attribute(trace)
    names = {trace.kernel_name(i): i for i in range(len(trace.kernels))}
    triton, mystery = names["triton_poi_fused_add_gelu_0"], names["mystery_kernel_v2"]
    memcpy, memset = names["Memcpy HtoD (Pageable -> Device)"], names["Memset (Device)"]
    assert attr.classification(triton).key == "activation" and attr.how[triton] == HOW_KERNEL_NAME
    assert attr.classification(mystery).category == "unattributed" and attr.how[mystery] == HOW_NONE
    assert attr.classification(memcpy).key == "memory/memcpy" and attr.how[memcpy] == HOW_KERNEL_NAME
    assert attr.classification(memset).key == "memory/memset"
    assert attr.op_index[mystery] == -1 and attr.module_index[mystery] == -1
    assert (attr.how == HOW_OP).sum() == len(trace.kernels) - 4

    total = sum(ns for ns, _, _ in VIT_EXPECTED.values()) + 50 + 70 + 90 + 3
    assert coverage(attr) == pytest.approx(1 - 70 / total)
    summary = attr.summary()
    assert summary.coverage == pytest.approx(1 - 70 / total)
    assert summary.unattributed_ms == pytest.approx(70e-6)
    assert [(k.name, k.count) for k in summary.unattributed_kernels] == [("mystery_kernel_v2", 1)]
    rows = rows_by_key(attr)
    assert rows[("unattributed", None)].share == pytest.approx(70 / total)
    assert rows[("memory", "memcpy")].share == pytest.approx(90 / total)
    assert sum(r.share for r in rows.values()) == pytest.approx(1.0)


def test_unknown_external_id_counts_as_no_op():
    b = mini_vit()
    b.kernel("mystery_kernel_v2", 25, external_id=9999)
    b.kernel("void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>", 5, external_id=9998)
    attr = attribute(b.build())
    assert list(attr.how[-2:]) == [HOW_NONE, HOW_KERNEL_NAME]
    assert list(attr.op_index[-2:]) == [-1, -1]
    assert attr.summary().unattributed_ms == pytest.approx(25e-6)


def test_transfer_rows_use_row_rules_first_and_fall_back_to_their_op():
    b = TraceBuilder()
    conv = b.module("conv", "Conv2d")
    ext = b.op("aten.convolution.default", conv, [("sm90_xmma_fprop", 100)], groups=1, in_channels=3, kernel_size=[3, 3])
    b.kernel("Memset (Device)", 7, external_id=ext, kind=KIND_MEMSET)
    trace = b.build()
    assert attribute(trace).classification(1).key == "memory/memset"
    # a table without transfer rules keeps the op's category (and its module)
    default = CategoryTable.default()
    table = CategoryTable(default.categories.values(), [r for r in default.rules if r.kind is None])
    attr = attribute(trace, table)
    assert attr.classification(1).key == "convolution/dense"
    assert attr.how[1] == HOW_OP and attr.module_index[1] == conv


def test_other_ops_are_listed_by_name_and_count_as_attributed():
    b = mini_vit()
    block = 1
    b.op("aten.frobnicate.default", block, [("frob_kernel", 33), ("frob_kernel_2", 11)])
    b.op("aten.twiddle.default", -1, [("twiddle_kernel", 60)])
    attr = attribute(b.build())
    assert rows_by_key(attr)[("other", None)].time_ms == pytest.approx(104e-6)
    others = attr.summary().other_ops
    assert [(o.name, o.count) for o in others] == [("aten.twiddle.default", 1), ("aten.frobnicate.default", 2)]
    assert others[1].time_ms == pytest.approx(44e-6)
    assert coverage(attr) == 1.0


def test_user_table_changes_attribution():
    table = CategoryTable.default()
    table.add_rule(Rule("gelu-as-elementwise", "elementwise", op=r"^aten\.gelu\."))
    rows = rows_by_key(attribute(mini_vit().build(), table))
    assert ("activation", None) not in rows
    assert rows[("elementwise", None)].time_ms == pytest.approx((10 + 10 + 40) * 1e-6)


def test_classification_costs_once_per_distinct_op():
    b = mini_vit(iterations=50)
    table = CategoryTable.default()
    attr = attribute(b.build(), table)
    chains = module_chains(b.modules)
    # qkv/proj and fc1/fc2 share a class chain, so they share an entry too
    distinct = {(op.name, chains[op.module] if op.module >= 0 else ()) for op in b.ops}
    assert len(distinct) < len({(op.name, op.module) for op in b.ops})
    assert table.cache_info()["op_entries"] == len(distinct)
    assert len(attr.kernel_class) == 50 * 13


# --- kernel sum, busy time, span ------------------------------------------------------------
def overlap_trace(iterations: int = 1) -> CapturedTrace:
    b = TraceBuilder(iterations=iterations)
    b.kernel("k1", 100, start=0, stream=1)
    b.kernel("k2", 100, start=50, stream=2)  # overlaps k1 on another stream
    b.kernel("k3", 10, start=60, stream=3)  # inside both
    b.kernel("k4", 50, start=200, stream=1)
    b.kernel("copy", 40, start=300, stream=1, kind=KIND_MEMCPY)
    b.kernel("set", 5, start=400, stream=1, kind=KIND_MEMSET)
    b.kernel("k5", 10, start=0, stream=1, device=1)
    return b.build()


@pytest.mark.parametrize("iterations", [1, 2])
def test_kernel_sum_busy_time_and_span(iterations):
    trace = overlap_trace(iterations)
    assert kernel_time_ns(trace) == pytest.approx((100 + 100 + 10 + 50 + 10) / iterations)
    assert kernel_time_ns(trace, per_iteration=False) == 270
    assert kernel_time_ns(trace, (KIND_MEMCPY,)) == pytest.approx(40 / iterations)
    busy = busy_time_ns(trace)
    assert busy == {0: pytest.approx((150 + 50) / iterations), 1: pytest.approx(10 / iterations)}
    assert busy_time_ns(trace, (KIND_KERNEL, KIND_MEMCPY), per_iteration=False)[0] == 150 + 50 + 40
    assert span_ns(trace) == 250
    summary = attribute(trace).summary()
    assert summary.kernel_ms == pytest.approx(270 / iterations / 1e6)
    assert summary.memcpy_ms == pytest.approx(40 / iterations / 1e6)
    assert summary.memset_ms == pytest.approx(5 / iterations / 1e6)
    assert summary.activity_ms == pytest.approx(315 / iterations / 1e6)
    assert summary.busy_ms == {"0": pytest.approx(200 / iterations / 1e6), "1": pytest.approx(10 / iterations / 1e6)}


@pytest.mark.parametrize(
    "intervals, expected",
    [
        ([], 0),
        ([(0, 10)], 10),
        ([(0, 10), (10, 20)], 20),  # touching
        ([(0, 100), (10, 20)], 100),  # nested
        ([(50, 60), (0, 10), (5, 55)], 60),  # unsorted, chained
        ([(0, 10), (20, 30), (25, 40)], 30),
    ],
)
def test_busy_time_is_the_union_of_intervals(intervals, expected):
    b = TraceBuilder()
    for n, (start, end) in enumerate(intervals):
        b.kernel(f"k{n}", end - start, start=start, stream=n)
    assert busy_time_ns(b.build()).get(0, 0) == expected


def test_cpu_path_counts_host_timed_ops():
    trace = cpu_trace()
    attr = attribute(trace)
    assert set(trace.kernels["kind"]) == {KIND_CPU_OP}
    assert kernel_time_ns(trace) == pytest.approx(200)
    assert list(busy_time_ns(trace)) == [-1]
    rows = rows_by_key(attr)
    assert rows[("linear", None)].time_ms == pytest.approx(100e-6)
    assert rows[("activation", None)].time_ms == pytest.approx(100e-6)
    assert coverage(attr) == 1.0


def test_negative_durations_count_zero():
    b = TraceBuilder()
    i = b.kernel("k", 10, start=100)
    b.rows[i]["end_ns"] = 50
    assert list(durations_ns(b.build())) == [0]


def test_empty_trace():
    attr = attribute(TraceBuilder().build())
    assert attr.category_rows() == [] and attr.module_rows() == []
    assert coverage(attr) is None  # nothing to attribute, not none of it attributed
    assert attr.summary().busy_ms == {}


# --- modules --------------------------------------------------------------------------------
def test_module_inclusive_and_self_time():
    attr = attribute(mini_vit(iterations=2).build())
    rows = {r.path: r for r in attr.module_rows(top=None)}
    assert "" not in rows  # the root is the total, left out by default
    attn = rows["blocks.0.attn"]
    assert (attn.cls, attn.kernel_count) == ("Attention", 4)
    assert attn.time_ms == pytest.approx((300 + 400 + 30 + 100) * 1e-6)
    assert attn.self_time_ms == pytest.approx((400 + 30) * 1e-6)
    block = rows["blocks.0"]
    assert block.self_time_ms == pytest.approx(20e-6)  # the two residual adds
    assert block.time_ms == pytest.approx((20 + 830 + 20 + 400 + 40 + 400 + 20) * 1e-6)
    total_ns = sum(ns for ns, _, _ in VIT_EXPECTED.values())
    assert block.share == pytest.approx(1730 / total_ns)
    root = attr.module_rows(top=None, include_root=True)[0]
    assert (root.path, root.time_ms, root.self_time_ms) == ("", pytest.approx(total_ns * 1e-6), pytest.approx(6e-6))


def test_module_rows_top_n_sorted_by_inclusive_time():
    top = attribute(mini_vit().build()).module_rows(top=3)
    assert [r.path for r in top] == ["blocks.0", "blocks.0.mlp", "blocks.0.attn"]
    assert top[0].time_ms >= top[1].time_ms >= top[2].time_ms


def test_module_category_matrix_adds_up_to_inclusive_times():
    attr = attribute(mini_vit().build())
    pairs, matrix = module_category_ns(attr)
    paths = [m.path for m in attr.trace.modules]
    attn = matrix[paths.index("blocks.0.attn")]
    assert attn[pairs.index(("attention", "core"))] == 430
    assert attn[pairs.index(("attention", "projections"))] == 400
    assert matrix[paths.index("")].sum() == durations_ns(attr.trace).sum()


def test_module_chains_are_innermost_first_in_any_record_order():
    from visprof.native.records import ModuleRecord

    modules = [ModuleRecord("a.b", "Leaf", 2), ModuleRecord("", "Root", -1), ModuleRecord("a", "Mid", 1)]
    assert module_chains(modules) == [("Leaf", "Mid", "Root"), ("Root",), ("Mid", "Root")]


# --- memory columns -------------------------------------------------------------------------
def test_memory_fields_by_category_and_subcategory():
    memory = MemorySummary(
        peak_bytes=1000,
        by_category_at_peak={"attention/core": 300, "attention": 450, "linear": 200, "other": 50},
        transient_peak_by_category={"linear": 120},
        alloc_count=9,
    )
    rows = {(r.category, r.subcategory): r for r in attribute(mini_vit().build()).category_rows(memory)}
    assert rows[("attention", "core")].live_bytes_at_peak == 300
    assert rows[("attention", "projections")].live_bytes_at_peak is None
    assert ("attention", None) not in rows  # a category figure belongs to the category total
    assert (rows[("linear", None)].live_bytes_at_peak, rows[("linear", None)].transient_peak_bytes) == (200, 120)
    other = rows[("other", None)]  # memory without time still gets a row
    assert (other.time_ms, other.kernel_count, other.live_bytes_at_peak) == (0.0, 0.0, 50)
    assert rows[("normalization", "layer")].live_bytes_at_peak is None


# --- recordings -----------------------------------------------------------------------------
def test_recording_round_trip_gives_the_same_attribution(tmp_path):
    trace = odd_rows(mini_swin()).build()
    path = tmp_path / "swin.json.gz"
    trace.save(path)
    again = attribute(CapturedTrace.load(path))
    assert again.category_rows() == attribute(trace).category_rows()


@dataclass(frozen=True)
class Recorded:
    """A GPU recording under tests/data/ and what its attribution must show."""

    file: str
    min_coverage: float = 0.999
    top_category: str | None = None  # the category with the most time
    categories: tuple[str, ...] = ()  # categories that must have time


# One line per recording, e.g.
#   Recorded("vit_base_patch16_224-h200-bf16.json.gz", top_category="attention"),
# Recordings from the H200 (batch 64, bf16 autocast, 5 iterations; bench/profile_validation.py).
RECORDED: list[Recorded] = [
    Recorded("resnet50.trace.json.gz", top_category="convolution",
             categories=("convolution", "normalization", "activation", "pooling", "elementwise")),
    Recorded("deit_small_patch16_224.trace.json.gz", categories=("attention", "linear", "normalization", "activation")),
    Recorded("coatnet_0_rw_224.trace.json.gz", top_category="convolution", categories=("attention", "convolution")),
    Recorded("mobilevit_s.trace.json.gz", top_category="convolution", categories=("attention", "convolution")),
]


def _check_invariants(trace: CapturedTrace) -> None:
    attr = attribute(trace)
    rows = attr.category_rows()
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    assert sum(r.time_ms for r in rows) == pytest.approx(attr.summary().activity_ms)
    root = [m for m in attr.module_rows(top=None, include_root=True) if m.path == ""]
    if root:
        assert root[0].time_ms <= attr.summary().activity_ms * (1 + 1e-9)
    for d, busy in busy_time_ns(trace).items():
        on = trace.kernels["device"] == d
        assert busy <= durations_ns(trace)[on & np.isin(trace.kernels["kind"], (KIND_KERNEL, KIND_CPU_OP))].sum() / trace.iterations + 1e-6


@pytest.mark.parametrize("case", RECORDED, ids=[c.file for c in RECORDED])
def test_recorded_trace(case: Recorded):
    trace = CapturedTrace.load(DATA / case.file)
    _check_invariants(trace)
    attr = attribute(trace)
    summary = attr.summary()
    assert summary.coverage >= case.min_coverage, summary.unattributed_kernels
    totals: dict[str, float] = {}
    for r in attr.category_rows():
        totals[r.category] = totals.get(r.category, 0.0) + r.time_ms
    if case.top_category:
        assert max(totals, key=totals.get) == case.top_category, totals
    for cat in case.categories:
        assert totals.get(cat, 0) > 0, (cat, totals)


ALL_RECORDINGS = sorted(DATA.glob("*.json.gz")) if DATA.is_dir() else []


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=[p.name for p in ALL_RECORDINGS])
def test_every_recording_satisfies_invariants(path):
    _check_invariants(CapturedTrace.load(path))


def test_flop_time_leaves_out_the_pointwise_kernels_and_memsets_of_a_library_op():
    """An eager convolution with a bias: cuDNN's kernel, then ATen's add (real H200 names, as
    in tests/data/coatnet_0_rw_224.trace.json.gz), and a workspace memset. ATen's own
    depthwise convolution kernel is library work."""
    b = TraceBuilder()
    conv = b.module("stem", "Conv2d")
    dw = b.module("dw", "Conv2d")
    b.op("aten.convolution.default", conv, [("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", 400),
                                            ("_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocast", 30)],
         flops=1e9, **{"groups": 1, "in_channels": 3, "kernel_size": [3, 3]})
    b.kernel("[memset]", 5, external_id=b.ops[-1].external_id, kind=KIND_MEMSET)
    b.op("aten.convolution.default", dw, [("_ZN2at6native51_GLOBAL__N__18_DepthwiseConv2d_cu_conv_depthwise2d_forward", 200),
                                          ("_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_15CUDAFunctor_add", 20)],
         flops=1e8, **{"groups": 64, "in_channels": 64, "kernel_size": [3, 3]})
    rows = rows_by_key(attribute(b.build()))
    assert rows[("convolution", "dense")].time_ms == pytest.approx(430e-6)  # the category keeps the add
    assert rows[("convolution", "dense")].flop_time_ms == pytest.approx(400e-6)
    assert rows[("memory", "memset")].time_ms == pytest.approx(5e-6) and rows[("memory", "memset")].flop_time_ms == 0
    assert rows[("convolution", "depthwise")].flop_time_ms == pytest.approx(200e-6)
