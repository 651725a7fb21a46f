"""compare --time gpu: speed-ups of GPU busy time between two visprof profiles, and the note that an
end-to-end comparison of host-bound profiles carries the hosts (visprof.analysis.time_basis)."""
from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from cli_in_process import one_error_line, run_cli
from recorded_results import recorded_result
from visprof.analysis import sources
from visprof.analysis.compare import compare, on_base_and_target
from visprof.analysis.gpus import gpu_table
from visprof.analysis.sources import Measurement
from visprof.analysis.time_basis import gpu_samples_per_s, on_gpu_time
from visprof.result import LatencyStats

MODEL = "deit_small_patch16_224"


def on_h100(result, busy_factor: float, idle_ms: float):
    """The recorded H200 profile as if run on an H100 whose GPU took ``busy_factor`` times as long and
    whose host left the GPU idle ``idle_ms`` per iteration."""
    other = copy.deepcopy(result)
    other.gpu = {**other.gpu, "name": "NVIDIA H100 80GB HBM3"}
    busy = result.timing.busy_ms * busy_factor
    latency = busy + idle_ms
    other.timing = replace(result.timing, busy_ms=busy, idle_ms=idle_ms,
                           latency_ms=LatencyStats(latency, latency, latency, latency, latency, latency, 0.0),
                           samples_per_s=result.model.batch_size / latency * 1e3)
    return other


def reference(model, gpu, samples) -> Measurement:
    return Measurement(model=model, img_size=224, gpu_name=gpu, gpu_id=gpu, batch_size=256, precision="bf16",
                       samples_per_s=samples, source="table", kind="reference")


@pytest.fixture
def fleet():
    table = gpu_table()
    h200 = recorded_result(MODEL)
    h100 = on_h100(h200, busy_factor=1.07, idle_ms=3 * h200.timing.busy_ms)  # a slow host: 3x the GPU's time idle
    return table, [sources.from_result(h200, "h200.json", table), sources.from_result(h100, "h100.json", table),
                   reference("resnet50", "h200", 3000.0), reference("resnet50", "h100-sxm", 2900.0)]


def test_gpu_time_divides_busy_time_and_leaves_published_rows_out(fleet):
    table, measurements = fleet
    h200, h100 = measurements[0].result, measurements[1].result
    c = compare(measurements, "h200", "h100-sxm", table, time="gpu")
    assert [m.model for m in c.models] == [MODEL]
    assert c.models[0].speedup == pytest.approx(h200.timing.busy_ms / h100.timing.busy_ms) == pytest.approx(1 / 1.07)
    assert c.time == "gpu" and c.to_dict()["time"] == "gpu"
    assert c.notes[0] == ("speed-ups of GPU busy time per sample (each profile's timing pass; the GPU's idle time "
                          "left out); 2 measurement(s) without one left out (published rows have no GPU time)")
    # end to end, the host's idle time is in the speed-up, and a note says so
    e2e = compare(measurements, "h200", "h100-sxm", table)
    deit = next(m for m in e2e.models if m.model == MODEL)
    assert deit.speedup == pytest.approx(h100.timing.samples_per_s / h200.timing.samples_per_s)
    assert deit.speedup < 0.5 < c.models[0].speedup
    assert e2e.host.startswith("1 of the 1 model(s) profiled on both GPUs left the GPU idle more than 10%")
    assert f"(e.g. {MODEL})" in e2e.host and "; time='gpu' compares GPU busy time" in e2e.host and e2e.host in e2e.notes
    assert c.host is None


def test_no_host_note_where_neither_profile_waited_on_its_host():
    table = gpu_table()
    h200 = recorded_result(MODEL)
    h200.timing = replace(h200.timing, idle_ms=0.0)
    h100 = on_h100(h200, busy_factor=1.07, idle_ms=0.0)
    c = compare([sources.from_result(h200, "a", table), sources.from_result(h100, "b", table)], "h200", "h100-sxm", table)
    assert c.host is None and not any("idle" in n for n in c.notes), c.notes


def test_the_predicted_speed_up_of_gpu_time_is_the_ratio_of_predicted_busy_times(fleet):
    from visprof.analysis.predict import predict_result

    table, measurements = fleet
    profile, base = measurements[0], measurements[0]
    on = on_base_and_target(profile, base, table.get("h200"), table.get("h100-sxm"), table, gpu_time=True)
    options = {"batch_size": base.batch_size, "table": table, "precision": "bf16"}
    a = predict_result(profile.result, table.get("h200"), **options)
    b = predict_result(profile.result, table.get("h100-sxm"), **options)
    assert on.speedup == pytest.approx(a.busy_ms / b.busy_ms)
    assert on.base_samples_per_s == pytest.approx(a.batch_size / a.busy_ms * 1e3)  # the base rate in GPU time too
    end_to_end = on_base_and_target(profile, base, table.get("h200"), table.get("h100-sxm"), table)
    assert end_to_end.speedup == pytest.approx(b.samples_per_s / a.samples_per_s)
    low, high = on.band
    assert low <= on.speedup * 1.000001 and on.speedup <= high * 1.000001


def test_only_timed_profiles_have_a_gpu_rate(fleet):
    _, measurements = fleet
    profile, published = measurements[0], measurements[2]
    assert gpu_samples_per_s(profile) == pytest.approx(profile.batch_size / profile.result.timing.busy_ms * 1e3)
    assert gpu_samples_per_s(published) is None
    kept, left = on_gpu_time(measurements)
    assert [m.gpu for m in kept] == ["h200", "h100-sxm"] and left == 2
    assert kept[0].samples_per_s == pytest.approx(gpu_samples_per_s(profile))
    assert profile.samples_per_s == profile.result.timing.samples_per_s  # the input is not changed


def test_cli_refusals_are_one_line(tmp_path, capsys):
    csv = tmp_path / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
    csv.write_text("model,infer_samples_per_sec,infer_step_time,infer_batch_size,infer_img_size,param_count\n"
                   "resnet50,3000,85.3,256,224,25.56\n")
    code, _, err = run_cli(capsys, "compare", csv, "--time", "gpu")  # after the loading's progress line
    assert code == 2 and "Traceback" not in err and err.strip().splitlines()[-1] == (
        "visprof: error: --time gpu compares visprof profiles' GPU busy time, and none of the inputs is such a "
        "profile (1 published or untimed measurement(s) have no GPU time)")
    code, _, err = run_cli(capsys, "compare", csv, "--time", "gpu", "--calibration", tmp_path / "cal.json")
    assert code == 2 and one_error_line(err) == (
        "visprof: error: --time gpu compares visprof's GPU busy time; a calibration is fitted to end-to-end "
        "published numbers: leave out one of --time gpu and --calibration")


def test_the_html_report_carries_the_host_note(fleet):
    from types import SimpleNamespace

    from visprof.report.html import _comparison

    table, measurements = fleet
    notes: list[str] = []
    c = _comparison(SimpleNamespace(measurements=measurements), "h200", "h100-sxm", table, notes)
    assert c.host is not None and c.host in notes
