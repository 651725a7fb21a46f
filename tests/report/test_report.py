"""Result schema round trips, the terminal table, CSV and the Chrome trace export."""
from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from toy_results import make_result
from fixtures import cpu_trace, mini_cnn, mini_swin, mini_vit, odd_rows
from visprof.attribution.attribute import attribute
from visprof.attribution.op_types import kernel_family_rows, launch_size_rows
from visprof.native.records import CapturedTrace
from visprof.report import render, to_chrome_trace, write_categories_csv, write_modules_csv
from visprof.report.chrome_trace import RESERVED_CNAMES
from visprof.result import (
    SCHEMA,
    Check,
    LatencyStats,
    MemorySummary,
    ModelInfo,
    PassInfo,
    ProfileResult,
    RunConfig,
)

DATA = Path(__file__).resolve().parents[1] / "data"





MEMORY = MemorySummary(
    peak_bytes=600 << 20,
    by_category_at_peak={"attention": 200 << 20, "attention/core": 150 << 20, "linear": 100 << 20},
    transient_peak_by_category={"linear": 64 << 20},
    alloc_count=321,
)


# --- schema ---------------------------------------------------------------------------------
def test_result_round_trip_through_dict_and_json(tmp_path):
    result = make_result(odd_rows(mini_vit(iterations=2)).build(), memory=MEMORY)
    data = result.to_dict()
    assert data["schema"] == SCHEMA == "visprof.profile/1"
    again = ProfileResult.from_dict(json.loads(json.dumps(data)))
    assert again == result
    assert isinstance(again.categories[0], type(result.categories[0]))
    assert isinstance(again.timing.latency_ms, LatencyStats)
    assert isinstance(again.passes["timing"], PassInfo)
    path = tmp_path / "result.json"
    text = result.to_json(path)
    assert json.loads(path.read_text()) == json.loads(text) == data
    assert ProfileResult.load(path) == result


def test_an_fp32_result_written_before_the_regime_was_recorded_says_no_autocast():
    """A result without config.autocast takes its default, "per-forward", which at fp32 (no autocast
    ever) had the report say "fp32 autocast per forward"."""
    import json

    document = json.loads((DATA / "h200-result-vit_base_patch16_224.json").read_text())
    assert "autocast" not in document["config"]  # written before the regime was
    assert ProfileResult.from_dict(document).config.autocast == "per-forward"  # bf16: as it ran
    document["config"]["precision"] = "fp32"
    loaded = ProfileResult.from_dict(document)
    assert loaded.config.autocast == "off" and "fp32, no_grad" in render(loaded).splitlines()[0]


@pytest.mark.parametrize("count, said", [(86_567_656, "86.6M params"), (100_000, "0.1M params"),
                                          (42_123, "42.1K params"), (1_000, "1.0K params"), (330, "330 params")])
def test_the_header_gives_a_parameter_count_in_a_unit_that_shows_it(count, said):
    """A toy module's 330 parameters read "0.0M params", as if it had none."""
    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    small = dataclasses.replace(result, model=dataclasses.replace(result.model, param_count=count))
    assert f" · {said} · " in render(small).splitlines()[0]


def test_repr_is_a_short_summary_and_text_report_is_the_cli_report():
    """A notebook shows a result by its repr: a few lines of the numbers that matter, not the
    dataclass's every field; visprof.text_report gives the whole report the CLI prints."""
    import visprof

    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    assert len(result.to_json(indent=None)) > 10_000  # what a repr of every field would show
    text = repr(result)
    assert len(text) < 600 and text.count("\n") <= 5
    assert text.startswith("<ProfileResult vit_base_patch16_224 on cuda:0 (NVIDIA H200): batch 64, 224 px, bf16")
    assert f"latency {result.timing.latency_ms.median:.3f} ms a batch (median, GPU)" in text
    top = max(result.category_totals().values(), key=lambda row: row.share)
    assert f"time: {top.category} {top.share:.0%}" in text
    assert f"peak memory {result.memory.peak_bytes / 2**20:,.1f} MiB" in text
    assert "self-checks: 5, all pass" in text
    failed = dataclasses.replace(result, checks=[dataclasses.replace(result.checks[0], passed=False), *result.checks[1:]])
    assert "self-checks: 5, 1 FAILED" in repr(failed)
    bare = ProfileResult(ModelInfo("resnet18"), RunConfig(), "cpu")
    assert repr(bare) == "<ProfileResult resnet18 on cpu: fp32>"
    wide = dataclasses.replace(result, model=dataclasses.replace(result.model, input_shape=[64, 3, 224, 160]))
    assert repr(wide).startswith("<ProfileResult vit_base_patch16_224 on cuda:0 (NVIDIA H200): batch 64, 224x160 px,")
    assert visprof.text_report(result) == render(result)
    # a batch slower than its size in seconds read "0 samples/s" beside the report's 0.5
    slow = dataclasses.replace(result, timing=dataclasses.replace(result.timing, samples_per_s=0.45))
    assert "0.5 samples/s" in repr(slow) and "Throughput: 0.5 samples/s" in render(slow)


def test_result_with_missing_parts_round_trips():
    result = ProfileResult(ModelInfo("resnet18"), RunConfig(), "cpu")
    assert result.timing is None and result.memory is None and result.gpu is None
    assert ProfileResult.from_dict(json.loads(result.to_json())) == result


def test_created_at_is_iso8601_utc():
    created = ProfileResult(ModelInfo("m"), RunConfig(), "cpu").created_at
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", created)


def test_readers_ignore_unknown_keys_and_reject_other_schemas():
    data = make_result(mini_cnn().build()).to_dict()
    data["future_field"] = 1
    data["categories"][0]["future_column"] = 2
    assert ProfileResult.from_dict(data).categories[0].time_ms == data["categories"][0]["time_ms"]
    with pytest.raises(ValueError, match="unsupported"):
        ProfileResult.from_dict({**data, "schema": "visprof.profile/2"})
    with pytest.raises(ValueError, match="not a visprof"):
        ProfileResult.from_dict({**data, "schema": "visprof.trace/1"})


def test_json_rejects_nan():
    result = make_result(mini_cnn().build())
    result.timing.busy_ms = float("nan")
    with pytest.raises(ValueError):
        result.to_json()


def test_latency_stats_match_numpy():
    samples = [8.3, 7.9, 8.1, 9.4, 8.0, 8.2, 8.8]
    stats = LatencyStats.from_samples(samples)
    assert stats.median == pytest.approx(np.median(samples))
    assert stats.p10 == pytest.approx(np.percentile(samples, 10))
    assert stats.p90 == pytest.approx(np.percentile(samples, 90))
    assert stats.mean == pytest.approx(np.mean(samples))
    assert stats.std == pytest.approx(np.std(samples))
    assert (stats.min, stats.max) == (7.9, 9.4)
    with pytest.raises(ValueError):
        LatencyStats.from_samples([])


@pytest.mark.parametrize(
    "value, reference, tolerance, passed",
    [(1.02, 1.0, 0.03, True), (0.98, 1.0, 0.03, True), (1.04, 1.0, 0.03, False), (-5.0, -4.0, 0.3, True),
     (None, 1.0, 0.5, False), (1.0, None, 0.5, False)],
)
def test_check_within_relative_tolerance(value, reference, tolerance, passed):
    assert Check.within("x", value, reference, tolerance).passed is passed


def test_category_totals_merge_subcategories():
    result = make_result(mini_swin().build(), memory=MEMORY)
    totals = result.category_totals()
    attn = totals["attention"]
    subs = [r for r in result.categories if r.category == "attention"]
    assert len(subs) == 2
    assert attn.time_ms == pytest.approx(sum(r.time_ms for r in subs))
    assert attn.flops == pytest.approx(sum(r.flops for r in subs))
    assert attn.tflops == pytest.approx(attn.flops / (attn.time_ms * 1e-3) / 1e12)
    assert attn.live_bytes_at_peak == 200 << 20  # the memory pass's category figure
    measured = list(dict.fromkeys(r.category for r in result.categories))
    assert [c for c in totals if c in measured] == measured  # row order kept


def test_category_totals_list_every_category_with_zeros_where_nothing_ran():
    from visprof.attribution.categories import CATEGORIES

    result = make_result(mini_cnn().build())  # a CNN: no attention
    totals = result.category_totals()
    assert list(totals)[: len(CATEGORIES)] == list(CATEGORIES)
    attention = totals["attention"]
    assert (attention.time_ms, attention.share, attention.kernel_count, attention.flops) == (0.0, 0.0, 0.0, 0.0)
    assert attention.tflops is None and attention.live_bytes_at_peak is None
    assert totals["convolution"].time_ms > 0
    assert sum(t.share for t in totals.values()) == pytest.approx(1.0)
    # the report still shows only what ran
    text = render(result)
    assert not re.search(r"^attention\s", text, re.M) and re.search(r"^convolution\s", text, re.M)
    # no attributed pass: nothing measured, so no totals (not zeros)
    assert ProfileResult(ModelInfo("m"), RunConfig(), "cpu").category_totals() == {}


# --- terminal table -------------------------------------------------------------------------
def scaled_vit() -> CapturedTrace:
    """mini_vit with durations scaled to milliseconds, so the table shows non-zero times."""
    trace = odd_rows(mini_vit()).build()
    trace.kernels["start_ns"] *= 10_000
    trace.kernels["end_ns"] *= 10_000
    return trace


def test_table_shows_categories_numbers_modules_timing():
    result = make_result(scaled_vit(), memory=MEMORY)
    text = render(result)
    core = next(r for r in result.categories if (r.category, r.subcategory) == ("attention", "core"))
    line = next(l for l in text.splitlines() if l.strip().startswith("core"))
    assert f"{core.time_ms:.3f}" in line and f"{core.share * 100:.1f}%" in line
    assert f"{core.flops / 1e9:.2f}" in line and f"{core.tflops:.1f}" in line
    assert "150.0" in line  # live MiB at peak of attention/core
    attention_line = next(l for l in text.splitlines() if l.startswith("attention"))
    assert "200.0" in attention_line  # category-level figure on the total line
    for cat in ("linear", "normalization", "activation", "pooling", "elementwise", "memory", "unattributed", "total"):
        assert re.search(rf"^{cat}\s", text, re.M), cat
    assert "blocks.0.attn" in text and "Attention" in text
    assert "median 8.375 ms" in text and "7,757.6 samples/s" in text
    assert "idle (host/launch-bound) 2.125 ms" in text
    assert "mystery_kernel_v2" in text  # unattributed kernels are listed
    assert "NVIDIA H200" in text and "GPU ms" in text
    assert "HOST CLOCK" not in text
    assert "SM clock varied" in text


def test_table_lists_other_ops_for_extending_the_taxonomy():
    b = mini_vit()
    b.op("aten.frobnicate.default", 1, [("frob", 30_000)])
    text = render(make_result(b.build()))
    assert "Ops in 'other'" in text and "aten.frobnicate.default: 0.030 ms" in text


def test_passing_checks_print_pass_and_no_alarm():
    text = render(make_result(scaled_vit()))
    assert re.search(r"PASS\s+coverage: 0.9995 vs reference 1 \(tolerance ±0.1%\)", text)
    assert "FAIL" not in text and "FAILED" not in text


def test_failed_check_is_loud_and_never_hidden():
    checks = [
        Check.within("coverage", 0.9995, 1.0, 0.001),
        Check.within("kernel-sum", 7.5, 6.74, 0.03, "ms", "attributed vs tracer-only pass"),
        Check.within("peak", 500.0, 536.6, 0.02, "MB"),
    ]
    text = render(make_result(scaled_vit(), checks=checks), width=60)
    assert re.search(r"FAIL\s+kernel-sum: 7.5 ms vs reference 6.74 ms", text)
    assert re.search(r"FAIL\s+peak: 500 MB", text)
    assert "PASS" in text
    assert "2 of 3 SELF-CHECKS FAILED" in text and "kernel-sum, peak" in text


def test_top_modules_limits_the_module_table():
    result = make_result(scaled_vit())
    assert len(result.modules) == 5
    text = render(result, top_modules=2)
    assert "Top 2 modules" in text and "blocks.0.mlp " in text and "blocks.0.attn" not in text


def test_category_table_alone_from_rows():
    from visprof.report.table import format_categories

    rows = attribute(scaled_vit()).category_rows()
    text = format_categories(rows, cpu=True)
    assert text.splitlines()[0].startswith("category") and "host ms" in text
    total = next(l for l in text.splitlines() if l.startswith("total"))
    assert f"{sum(r.time_ms for r in rows):.3f}" in total and "100.0%" in total
    assert format_categories([]).startswith("(no attributed pass")


def test_missing_checks_are_called_out():
    assert "none recorded" in render(make_result(scaled_vit(), checks=[]))


def test_cpu_results_are_labelled_host_clock():
    text = render(make_result(cpu_trace()))
    assert "HOST CLOCK (CPU) MEASUREMENT" in text
    assert "host ms" in text and "GPU ms" not in text
    assert "(host clock)" in text


def test_width_limits_every_line():
    text = render(make_result(scaled_vit(), memory=MEMORY), width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "blocks.0.mlp.fc1" in text  # names are only cut when they must be


def test_narrow_width_shortens_names_but_keeps_numbers():
    result = make_result(scaled_vit(), memory=MEMORY)
    lines = render(result, width=60).splitlines()
    table = lines[lines.index("Time by category, per iteration") + 1:]
    table = table[: table.index("")]
    # eight numeric columns cannot fit in 60: the names shrink to their minimum, numbers stay
    assert any(line.startswith("attenti…") for line in table)
    assert any(f"{result.categories[0].time_ms:.3f}" in line for line in table)
    prose = [line for line in lines if line not in table]
    assert max(len(line) for line in prose) <= 60


def test_empty_columns_are_dropped():
    header = next(l for l in render(make_result(scaled_vit())).splitlines() if l.startswith("category"))
    assert "MiB" not in header and "GFLOP" in header
    header = next(l for l in render(make_result(scaled_vit(), memory=MEMORY)).splitlines() if l.startswith("category"))
    assert "live MiB@peak" in header


def test_colour_only_on_request():
    result = make_result(scaled_vit(), checks=[Check.within("kernel-sum", 9.0, 6.74, 0.03, "ms")])
    assert "\x1b[" not in render(result)
    assert "\x1b[1;31m" in render(result, color=True)


# --- CSV ------------------------------------------------------------------------------------
def test_csv_rows_match_the_result(tmp_path):
    result = make_result(scaled_vit(), memory=MEMORY)
    write_categories_csv(result, tmp_path / "c.csv")
    write_modules_csv(result, tmp_path / "m.csv")
    with open(tmp_path / "c.csv", newline="") as fh:
        cats = list(csv.DictReader(fh))
    assert len(cats) == len(result.categories)
    assert float(cats[0]["time_ms"]) == pytest.approx(result.categories[0].time_ms)
    assert cats[0]["model"] == "vit_tiny_patch16_224" and cats[0]["measurement"] == "gpu"
    with open(tmp_path / "m.csv", newline="") as fh:
        mods = list(csv.DictReader(fh))
    assert [m["path"] for m in mods] == [m.path for m in result.modules]


# --- Chrome trace ---------------------------------------------------------------------------
def validate_trace_events(data: dict) -> None:
    """The Trace Event Format rules visprof relies on; raises AssertionError when broken."""
    assert set(data) >= {"traceEvents", "displayTimeUnit"} and data["displayTimeUnit"] in ("ns", "ms")
    named_pids, named_threads = set(), set()
    for e in data["traceEvents"]:
        assert e["ph"] in ("X", "M"), e
        if e["ph"] == "M":
            assert set(e) >= {"name", "pid", "tid", "args"} and e["name"] in ("process_name", "thread_name")
            assert isinstance(e["args"]["name"], str)
            (named_pids if e["name"] == "process_name" else named_threads).add((e["pid"], e["tid"]) if e["name"] == "thread_name" else e["pid"])
            continue
        assert set(e) >= {"name", "ph", "ts", "dur", "pid", "tid"}, e
        for key in ("ts", "dur"):
            assert isinstance(e[key], (int, float)) and not isinstance(e[key], bool) and e[key] >= 0, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e.get("cname", "generic_work") in RESERVED_CNAMES, e
    used = {(e["pid"], e["tid"]) for e in data["traceEvents"] if e["ph"] == "X"}
    assert {pid for pid, _ in used} <= named_pids
    assert used <= named_threads


def assert_properly_nested(events: list[dict], eps: float = 1e-6) -> None:
    """On each thread, X events either nest (child inside parent) or do not overlap."""
    by_thread: dict[tuple, list] = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for thread, evs in by_thread.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + eps:
                stack.pop()
            if stack:
                parent = stack[-1]
                assert e["ts"] + e["dur"] <= parent["ts"] + parent["dur"] + eps, (thread, parent["name"], e["name"])
            stack.append(e)


def x_events(data: dict, **match) -> list[dict]:
    return [e for e in data["traceEvents"] if e["ph"] == "X" and all(e.get(k) == v for k, v in match.items())]


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_chrome_trace_file_is_valid_trace_event_json(tmp_path, suffix):
    trace = odd_rows(mini_vit(iterations=2)).build()
    path = tmp_path / f"trace{suffix}"
    returned = to_chrome_trace(trace, attribute(trace), path)
    opener = gzip.open if suffix.endswith(".gz") else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    assert data == returned
    validate_trace_events(data)
    assert_properly_nested(data["traceEvents"])


def test_chrome_trace_has_one_event_per_kernel_with_attribution_args():
    trace = odd_rows(mini_vit()).build()
    attr = attribute(trace)
    data = to_chrome_trace(trace, attr)
    gpu = x_events(data, pid=1)
    assert len(gpu) == len(trace.kernels)
    assert {e["tid"] for e in gpu} == {7}
    names = {m["args"]["name"] for m in data["traceEvents"] if m["ph"] == "M"}
    assert {"GPU 0", "stream 7"} <= names
    sdpa = next(e for e in gpu if e["name"] == "flash_fwd_kernel")
    assert sdpa["args"]["category"] == "attention" and sdpa["args"]["subcategory"] == "core"
    assert sdpa["args"]["op"] == "aten._scaled_dot_product_flash_attention.default"
    assert sdpa["args"]["module"] == "blocks.0.attn"
    assert sdpa["args"]["grid"] == [4, 2, 1] and sdpa["args"]["block"] == [128, 1, 1]
    assert sdpa["dur"] == pytest.approx(0.4)  # 400 ns in microseconds
    assert sdpa["cname"] == attr.table.category("attention").cname
    mystery = next(e for e in gpu if e["name"] == "mystery_kernel_v2")
    assert mystery["args"]["category"] == "unattributed" and mystery["args"]["op"] is None
    assert mystery["args"]["attributed_by"] == "none"
    memcpy = next(e for e in gpu if e["name"].startswith("Memcpy"))
    assert memcpy["args"]["bytes"] == 1 << 20
    assert min(e["ts"] for e in gpu) == 0


def test_chrome_trace_module_ranges_enclose_their_ops():
    trace = mini_vit(iterations=2).build()
    data = to_chrome_trace(trace, attribute(trace))
    host = x_events(data, pid=0, tid=0)
    modules = [e for e in host if e["cat"] == "module"]
    ops = [e for e in host if e["cat"] != "module"]
    assert len(ops) == len(trace.ops)
    # one range per module invocation: the block ran once per iteration
    blocks = [e for e in modules if e["args"]["path"] == "blocks.0"]
    assert len(blocks) == 2
    attn = next(e for e in modules if e["args"]["path"] == "blocks.0.attn")
    inside = [e["name"] for e in ops if attn["ts"] <= e["ts"] and e["ts"] + e["dur"] <= attn["ts"] + attn["dur"]]
    assert inside[:5] == ["aten.addmm.default", "aten._scaled_dot_product_flash_attention.default", "aten.transpose.int",
                          "aten.clone.default", "aten.addmm.default"]
    assert attn["args"]["dominant_category"] == "attention"
    assert_properly_nested(data["traceEvents"])


def test_chrome_trace_clamps_overlapping_host_ops_to_keep_nesting():
    b = mini_vit()
    b.ops[2].cpu_end_ns = b.ops[4].cpu_end_ns + 50  # a late end reaching past two later ops
    trace = b.build()
    data = to_chrome_trace(trace, attribute(trace))
    validate_trace_events(data)
    assert_properly_nested(data["traceEvents"])


def test_chrome_trace_shares_a_time_base_when_the_clock_offset_is_known():
    trace = mini_cnn().build()
    first_op = min(op.cpu_start_ns for op in trace.ops)
    first_kernel = int(trace.kernels["start_ns"].min())
    trace.meta["host_to_gpu_offset_ns"] = first_kernel - first_op - 300  # host runs 300 ns ahead
    data = to_chrome_trace(trace, attribute(trace))
    validate_trace_events(data)
    assert min(e["ts"] for e in x_events(data, pid=0)) == 0
    assert min(e["ts"] for e in x_events(data, pid=1)) == pytest.approx(0.3)


def test_chrome_trace_cpu_path_puts_pseudo_kernels_on_the_host():
    trace = cpu_trace()
    data = to_chrome_trace(trace, attribute(trace))
    validate_trace_events(data)
    assert_properly_nested(data["traceEvents"])
    pseudo = x_events(data, pid=0, tid=1)
    assert [e["name"] for e in pseudo] == ["aten.addmm.default", "aten.relu.default"]
    assert not any(e["pid"] != 0 for e in data["traceEvents"])


def test_nesting_checker_catches_improper_nesting():
    bad = [
        {"ph": "X", "name": "parent", "ts": 0.0, "dur": 10.0, "pid": 0, "tid": 0},
        {"ph": "X", "name": "child", "ts": 5.0, "dur": 10.0, "pid": 0, "tid": 0},
    ]
    with pytest.raises(AssertionError):
        assert_properly_nested(bad)
    with pytest.raises(AssertionError):
        validate_trace_events({"traceEvents": [{**bad[0], "ts": -1.0}], "displayTimeUnit": "ns"})


def test_chrome_trace_handles_a_swin_block_with_dataclass_records():
    trace = odd_rows(mini_swin()).build()
    data = to_chrome_trace(trace, attribute(trace))
    roll = next(e for e in x_events(data, pid=1) if e["name"] == "roll_cuda_kernel")
    assert roll["args"]["module"] == "layers.0.blocks.1" and roll["args"]["subcategory"] == "core"
    assert dataclasses.is_dataclass(trace.ops[0])


def test_report_gives_kernel_families_their_work_and_launch_shape_and_the_time_in_small_launches():
    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    attr = attribute(CapturedTrace.load(DATA / "deit_small_patch16_224.trace.json.gz"))
    result.kernel_families, result.launch_sizes = kernel_family_rows(attr), launch_size_rows(attr, 132)
    text = render(result)
    header = next(line for line in text.splitlines() if line.startswith("kernel family"))
    assert header.split()[-4:] == ["GFLOP", "MB", "blocks", "threads"]
    gemm = next(line for line in text.splitlines() if line.startswith("nvjet_sm90_tst"))
    assert gemm.split()[-4:] == ["535.48", "-", "132", "384"]  # the recorded trace has no bytes
    small = sum(r.share for r in result.launch_sizes if r.blocks_max < 132)
    (per_sm,) = [r for r in result.launch_sizes if r.one_per_sm]
    assert 0 < small < 0.1 and per_sm.share > 0.3  # the GEMMs and flash attention: persistent, 132 blocks
    assert (f"Launch sizes: {small * 100:.1f}% of kernel time in launches of at most 127 thread blocks, fewer than "
            f"this GPU's 132 SMs; {per_sm.share * 100:.1f}% in launches of exactly 132 (persistent kernels") in text
    result.gpu = None  # without the GPU's SM count there is nothing to compare the launches with
    assert "Launch sizes" not in render(result)


def test_a_rate_below_one_tflop_s_keeps_its_digits():
    """On the CPU every category runs below 1 TFLOP/s: one decimal read 0.0 for all of them."""
    from visprof.report.table import _category_cells
    from visprof.result import CategoryRow

    slow = CategoryRow("convolution", None, 465.0, 0.675, 20, 11.99e9, 0.0258)
    fast = CategoryRow("linear", None, 1.0, 0.3, 4, 250e9, 250.04)
    assert _category_cells("convolution", slow)[5] == "0.026"
    assert _category_cells("linear", fast)[5] == "250.0"


def test_a_kernel_family_of_several_categories_shows_the_share_of_its_own():
    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    attr = attribute(CapturedTrace.load(DATA / "coatnet_0_rw_224.trace.json.gz"))
    result.kernel_families = kernel_family_rows(attr)
    for width in (None, 100):
        lines = render(result, width=width).splitlines()
        for row in result.kernel_families[:10]:
            (line,) = [x for x in lines if x.startswith(row.family[:20]) and f" {row.time_ms:.3f} " in x]
            key = f"{row.category}/{row.subcategory}" if row.subcategory else row.category
            if len(row.by_category) > 1:
                assert f" {key} {round(100 * row.by_category[key] / row.time_ms)}% " in line
            else:
                assert f" {key} " in line and f" {key} {row.calls:g} " in " ".join(line.split())
            assert width is None or len(line) <= width
    assert sum(len(r.by_category) > 1 for r in result.kernel_families[:10]) >= 3  # ATen's elementwise kernels, GEMMs


def test_a_family_category_cell_never_reads_all_of_a_shared_kernel():
    from visprof.report.table import _family_category
    from visprof.result import KernelFamilyRow

    def cell(by_category, subcategory=None):
        return _family_category(KernelFamilyRow("k", "activation", subcategory, 1, 1.0, 0.1, by_category=by_category))

    assert cell({"activation": 0.72, "memory/cast": 0.28}) == "activation 72%"
    assert cell({"activation": 0.999, "elementwise": 0.001}) == "activation 99%"  # not 100%: the other has time
    assert cell({"normalization/group": 0.6, "activation/gelu": 0.4}, "gelu") == "activation/gelu 40%"
    assert cell({"activation": 1.0}) == cell(None) == "activation"  # one category, or a result made before it
