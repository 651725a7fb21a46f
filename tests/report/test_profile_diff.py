"""`visprof diff A B`: two saved profiles side by side (visprof.report.profile_diff)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from cli_in_process import run_cli
from visprof.report.profile_diff import diff_profiles, render_profile_diff
from visprof.result import ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"
H100 = DATA / "h100-result-vit_base_patch16_224.json"  # op-type and kernel-family tables
H200 = DATA / "h200-result-vit_base_patch16_224.json"  # older: neither table, normalization not split


def test_two_gpus_one_model_names_the_difference_and_compares_what_both_recorded():
    a, b = ProfileResult.load(H200), ProfileResult.load(H100)
    diff = diff_profiles(a, b)
    assert diff.per == "batch"
    assert diff.differences == ["GPU: NVIDIA H200 -> NVIDIA H100 80GB HBM3", "grad mode: no_grad -> inference_mode"]
    assert (diff.latency.a_ms, diff.latency.b_ms) == (a.timing.latency_ms.median, b.timing.latency_ms.median)
    assert diff.total.b_ms == b.attribution.activity_ms
    rows = {r.key: r for r in diff.categories}
    assert rows["memory/cast"].a_ms == next(r.time_ms for r in a.categories if (r.category, r.subcategory) == ("memory", "cast"))
    assert rows["normalization"].b_ms == pytest.approx(b.category_totals()["normalization"].time_ms)
    # the older result splits no normalization: its 0 for layer norm would read as "none ran"
    assert "normalization/layer" not in rows
    keys = [r.key for r in diff.categories]
    assert keys.index("memory") < keys.index("memory/cast") < keys.index("memory/memset")
    # the older result has no op-type tables: none compared, and a note says why
    assert diff.op_types == [] and diff.kernel_families == []
    assert any(note.startswith("A has no op-type or kernel-family tables") for note in diff.notes)
    text = render_profile_diff(diff, ("h200.json", "h100.json"))
    assert text.splitlines()[0] == "visprof diff: A = h200.json, B = h100.json"
    assert "Op types" not in text and "peak memory allocated (one forward): 695.5 MiB -> 695.9 MiB (x1.00)" in text


def _rebatched_with_slower_layer_norm(doc: dict) -> dict:
    """The same run at half the batch, every op type half the time but layer norm twice it."""
    other = copy.deepcopy(doc)
    other["model"]["batch_size"] = 32
    other["model"]["input_shape"][0] = 32
    for row in other["op_types"]:
        row["time_ms"] *= 2.0 if row["op_type"] == "aten.layer_norm.default" else 0.5
    return other


def test_batches_that_differ_compare_per_sample_and_the_op_type_that_moved_leads():
    doc = json.loads(H100.read_text())
    a, b = ProfileResult.from_dict(doc), ProfileResult.from_dict(_rebatched_with_slower_layer_norm(doc))
    diff = diff_profiles(a, b)
    assert diff.per == "sample" and diff.differences == ["batch: 64 -> 32"]
    first = diff.op_types[0]
    assert first.key == "aten.layer_norm.default" and first.ratio == pytest.approx(4.0)  # x2 the time for half the batch
    assert all(r.change_ms == 0 for r in diff.op_types[1:])  # half the time for half the batch: the same per sample
    assert diff.latency.a_ms == a.timing.latency_ms.median / 64
    text = render_profile_diff(diff, ("a", "b"), top=3)
    assert "times per sample: the batches differ (64 and 32)" in text and "A ms/sample" in text
    assert "Op types whose time changed most (top 1 of 9)" in text  # unchanged rows are not listed


def test_in_a_notebook_it_takes_paths_shows_one_line_and_prints_the_tables():
    import visprof
    from visprof.base.errors import BadInputError

    diff = visprof.diff(str(H200), H100)
    assert repr(diff) == ("<ProfileDiff vit_base_patch16_224 -> vit_base_patch16_224, per batch, latency x1.04, attributed "
                          "time x1.07; differs in: GPU: NVIDIA H200 -> NVIDIA H100 80GB HBM3; grad mode: no_grad -> "
                          "inference_mode>")
    assert str(diff).startswith("visprof diff: B against A\nA: vit_base_patch16_224 · batch 64 · bf16 · NVIDIA H200\n")
    with pytest.raises(BadInputError, match=r"^diff takes two results \(ProfileResult, or the path of a result file\), "
                                            r"got a dict$"):
        visprof.diff({}, H100)


def test_the_cli_prints_it_writes_json_and_refuses_a_file_that_is_not_a_result(tmp_path, capsys):
    code, out, err = run_cli(capsys, "diff", str(H200), str(H100), "--json", str(tmp_path / "d.json"))
    assert code == 0, err
    assert out.startswith(f"visprof diff: A = {H200}, B = {H100}\n")
    saved = json.loads((tmp_path / "d.json").read_text())
    assert saved["differences"][0] == "GPU: NVIDIA H200 -> NVIDIA H100 80GB HBM3" and saved["per"] == "batch"
    assert {r["key"] for r in saved["categories"]} >= {"attention", "attention/core", "memory/cast"}
    assert diff_profiles(H200, H100).to_dict() == saved  # "its to_dict() is the JSON": the schema had been missing
    copy_of_a = tmp_path / "a.json"
    copy_of_a.write_bytes(H200.read_bytes())
    code, out, err = run_cli(capsys, "diff", str(copy_of_a), str(H100), "--json", str(copy_of_a))
    assert code == 2 and "it is the result file A; writing it would overwrite that input" in err
    assert copy_of_a.read_bytes() == H200.read_bytes()
    (tmp_path / "notes.json").write_text('{"not": "a result"}')
    code, out, err = run_cli(capsys, "diff", str(tmp_path / "notes.json"), str(H100))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "notes.json" in err


def _timing_only(doc: dict) -> dict:
    """The same run with only its timing pass: no attribution, categories at 0 (as a profile with
    --passes timing writes them), no op-type tables."""
    other = copy.deepcopy(doc)
    other["config"]["passes"] = ["timing"]
    other["attribution"] = None
    other["op_types"], other["kernel_families"] = [], []
    for row in other["categories"]:
        row["time_ms"] = 0.0
    return other


@pytest.mark.parametrize("timing_only_is", ["A", "B"])
def test_a_pass_that_did_not_run_is_not_compared_as_zero(timing_only_is):
    # A result without the attributed pass has every category at 0: shown as "x0.00" (or "new")
    # for every category, and a note blamed an older visprof for its missing tables.
    doc = json.loads(H100.read_text())
    full, timing = ProfileResult.from_dict(doc), ProfileResult.from_dict(_timing_only(doc))
    a, b = (timing, full) if timing_only_is == "A" else (full, timing)
    diff = diff_profiles(a, b)
    assert diff.total is None and diff.categories == [] and diff.op_types == [] and diff.kernel_families == []
    assert diff.notes == [f"{timing_only_is} ran without the attributed pass (passes: timing), so time by category, "
                          "op type and kernel family is not compared"]
    assert diff.latency.ratio == pytest.approx(1.0)  # what both measured is still compared
    text = render_profile_diff(diff)
    assert "Time by category" not in text and "time (attributed)" not in text and "latency (median)" in text
    assert "attributed time" not in repr(diff) and diff.to_dict()["total"] is None


def test_an_op_type_that_only_a_ran_is_gone_not_x0():
    doc = json.loads(H100.read_text())
    other = copy.deepcopy(doc)
    gone = other["op_types"].pop(0)["op_type"]
    diff = diff_profiles(ProfileResult.from_dict(doc), ProfileResult.from_dict(other))
    row = next(r for r in diff.op_types if r.key == gone)
    assert row.b_ms == 0 and next(line for line in render_profile_diff(diff).splitlines()
                                  if line.startswith(gone)).split()[-1] == "gone"


def test_the_same_file_twice_is_named_as_such(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "diff", str(H100), str(H100.parent / ".." / "data" / H100.name))
    assert code == 0 and "\ndiffers in: nothing: A and B are the same file\n" in out and "rerun" not in out
    copy = tmp_path / "copy.json"  # a copy had read as "a rerun"
    copy.write_bytes(H100.read_bytes())
    code, out, _ = run_cli(capsys, "diff", str(H100), str(copy))
    made = ProfileResult.load(H100).created_at
    assert code == 0 and f"\ndiffers in: nothing: A and B are copies of one result (made {made})\n" in out


def test_cpu_runs_at_other_thread_counts_say_so_and_record_it():
    """Two CPU runs at 1 and 2 intra-op threads recorded the same settings: the headers were identical
    and diff said "nothing recorded (a rerun)"."""
    import torch

    import visprof
    from visprof.report.table import _header

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval()
    before = torch.get_num_threads()
    runs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            runs.append(visprof.profile(model, img_size=16, batch_size=1, progress=False, passes="attributed"))
    finally:
        torch.set_num_threads(before)
    assert [r.environment["cpu_threads"] for r in runs] == [1, 2]
    assert _header(runs[0])[0].endswith("· cpu, 1 thread") and _header(runs[1])[0].endswith("· cpu, 2 threads")
    assert diff_profiles(*runs).differences == ["CPU threads: 1 -> 2"]
    older = ProfileResult.from_dict({**runs[0].to_dict(), "environment": {"torch": runs[0].environment["torch"]}})
    assert "CPU threads" not in " ".join(diff_profiles(older, runs[1]).differences)  # unknown is no difference


def test_settings_that_move_the_time_are_named_not_read_as_a_rerun():
    """Per-forward against model-cast autocast moved all the cast time, and diff said "nothing recorded (a
    rerun)"; so it did for another parameter count (a changed module), other passes, another host CPU."""
    doc = json.loads(H100.read_text())
    other = copy.deepcopy(doc)
    other["config"]["autocast"] = "model-cast"
    other["model"]["param_count"] = doc["model"]["param_count"] + 272
    other["environment"]["cpu"] = {"name": "Apple M2", "logical_cpus": 8}
    before = {**doc, "environment": {**doc["environment"], "cpu": {"name": "AMD EPYC", "logical_cpus": 2}}}
    a, b = ProfileResult.from_dict(before), ProfileResult.from_dict(other)
    assert diff_profiles(a, b).differences == [
        f"parameters: {doc['model']['param_count']:,} -> {doc['model']['param_count'] + 272:,}",
        f"autocast: {doc['config']['autocast']} -> model-cast", "host CPU: AMD EPYC -> Apple M2"]
    timing = ProfileResult.from_dict(_timing_only(doc))
    assert "passes: timing -> timing+attributed+memory" in diff_profiles(timing, ProfileResult.from_dict(doc)).differences


def _cpu_runs(**settings):
    import torch

    import visprof

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU()).eval()
    return [visprof.profile(model, img_size=16, batch_size=1, progress=False, iterations=3, **kw)
            for kw in settings.values()]


def test_a_cpu_compiled_run_against_an_eager_one_compares_no_breakdown():
    """On the CPU the op capture runs a compiled model eagerly: both breakdowns are of the eager model,
    and diff had shown their noise (normalization x0.32) as torch.compile's change, a table compare-compile
    refuses to print."""
    eager, compiled = (ProfileResult.from_dict(r.to_dict()) for r in _cpu_runs(eager={}, compiled={}))
    compiled.config.compile = True  # a compiled run's record, without the minutes Inductor takes here
    diff = diff_profiles(eager, compiled)
    assert diff.categories == [] and diff.op_types == [] and diff.total is None and diff.latency is not None
    assert any(note.startswith("on the CPU the op capture runs a compiled model eagerly, so both breakdowns are of "
                               "the eager model") for note in diff.notes)
    assert diff_profiles(eager, eager).categories  # eager against eager: the breakdown as before


def test_results_with_nothing_in_common_are_refused_and_a_missing_timing_pass_is_said():
    """A timing-only result against an attributed-only one printed its header and exited 0, having
    compared nothing; and a result without the timing pass dropped the latency row without a word."""
    from visprof.base.errors import BadInputError

    timing, attributed, full = _cpu_runs(timing={"passes": "timing"}, attributed={"passes": "attributed"}, full={})
    with pytest.raises(BadInputError, match=r"^nothing to compare: A ran without the attributed pass .*; B ran "
                                            r"without the timing pass .*; profile both with the same passes$"):
        diff_profiles(timing, attributed)
    diff = diff_profiles(full, attributed)
    assert diff.latency is None and diff.categories
    assert "B ran without the timing pass (passes: attributed), so latency is not compared" in diff.notes
