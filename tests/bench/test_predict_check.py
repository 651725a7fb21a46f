"""bench/predict_check.py end to end on the H200 recordings and the timm CSV subsets."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from recorded_results import write_results

from visprof.base.child_env import child_env

REPO = Path(__file__).resolve().parents[2]
TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"


def test_predict_check_prints_the_table_and_writes_json(tmp_path):
    folder = tmp_path / "h200"
    write_results(folder)
    out = tmp_path / "check.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "predict_check.py"), "--from", str(folder),
                           "--csv-dir", str(TIMM), "--json", str(out)], capture_output=True, text=True, cwd=REPO,
                          env=child_env({"PATH": "/usr/bin:/bin", "VISPROF_COMMIT": "test"}), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "predict_check (measured profiles, time above the roof scaled by clock): 4 models, 0 skipped" in proc.stdout
    assert "predict_check (measured profiles, time above the roof scaled by bound): 4 models, 0 skipped" in proc.stdout
    assert "predict_check (measured profiles, time above the roof scaled by compute): 4 models" in proc.stdout
    assert "speed-up 3090->4090   Spearman" in proc.stdout and "models>=150 NOT MET" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["provenance"]["commit"] == "test" and doc["summary"]["models"] == 4
    rows = {r["model"]: r for r in doc["rows"]}
    deit = rows["deit_small_patch16_224"]
    assert deit["rtx3090_batch"] == 1024 and deit["speedup_published"] == deit["rtx4090_published"] / deit["rtx3090_published"]
    # the transformer gains most, as published (see tests/test_predict.py for the values)
    assert max(rows, key=lambda m: rows[m]["speedup_predicted"]) == "deit_small_patch16_224"
    assert doc["summary"]["speedup_error"]["median_abs"] < 0.15
    assert doc["other_modes"]["compute"]["models"] == 4
    # every row carries its band, and the summary splits the models by its width
    for r in doc["rows"]:
        lo, hi = r["speedup_band"]
        assert lo <= r["speedup_predicted"] <= hi and r["band_width"] == pytest.approx(hi / lo - 1)
    summary = doc["summary"]
    narrow = sum(r["band_width"] <= 0.2 for r in doc["rows"])
    assert summary["decided"]["models"] == narrow and summary["undecided"]["models"] == 4 - narrow
    assert [c["models"] for c in summary["by_band_width"]] == [sum(r["band_width"] <= c["band_width_max"] for r in doc["rows"])
                                                               for c in summary["by_band_width"]]
    assert "where the band <= 20% (>= 150 models) NOT MET" in proc.stdout


def test_band_split_counts_and_ranks_each_side():
    sys.path.insert(0, str(REPO / "bench"))
    from predict_check import by_band

    from visprof.analysis.comparison import DECIDED_BAND

    rows = [{"speedup_predicted": p, "speedup_published": q, "band_width": w}
            for p, q, w in [(1.1, 1.2, 0.05), (1.3, 1.4, 0.1), (1.5, 1.6, 0.2), (1.2, 1.9, 0.5), (1.9, 1.1, 0.6), (1.4, 1.3, 0.7)]]
    out = by_band(rows)
    assert DECIDED_BAND == pytest.approx(0.2)  # twice the 10% error target
    assert out["decided"]["models"] == 3 and out["decided"]["spearman"] == pytest.approx(1.0)
    assert out["undecided"]["models"] == 3 and out["undecided"]["spearman"] == pytest.approx(-1.0)
    assert {c["band_width_max"]: c["models"] for c in out["by_band_width"]} == {0.05: 1, 0.1: 2, 0.15: 2, 0.2: 3, 0.3: 3, 0.5: 4}
    assert by_band(rows[:2]) == {}  # too few to rank


def test_model_list_for_the_sweep(tmp_path):
    listing = tmp_path / "models.txt"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "predict_check.py"), "--write-model-list", str(listing),
                           "--count", "30", "--csv-dir", str(TIMM)], capture_output=True, text=True, cwd=REPO,
                          env=child_env({"PATH": "/usr/bin:/bin"}), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = listing.read_text().split()
    sizes = json.loads(listing.with_suffix(".sizes.json").read_text())
    assert len(names) == 30 == len(set(names)) and set(sizes) == set(names)
    assert sizes.get("mobilevit_s", 256) == 256


def test_uniform_sample_is_seeded_and_leaves_out_giants():
    sys.path.insert(0, str(REPO / "bench"))
    from predict_check import MAX_PARAMS_M, uniform

    rows = [(f"m{i:02d}", 224, {"param_count": str(5000 if i % 10 == 0 else i)}) for i in range(40)]
    first = uniform(rows, 12, seed=1)
    assert first == uniform(rows, 12, seed=1) and first != uniform(rows, 12, seed=2)
    assert len(first) == 12 == len({r[0] for r in first}) and first == sorted(first)
    assert all(float(r[2]["param_count"]) <= MAX_PARAMS_M for r in first)
    from visprof.base.errors import BadInputError

    with pytest.raises(BadInputError, match="more than the 36 models"):
        uniform(rows, 37, seed=1)


def test_check_of_the_models_in_a_list(tmp_path):
    folder = tmp_path / "h200"
    write_results(folder)
    listing = tmp_path / "two.txt"
    listing.write_text("# two of the four, and one without a profile\nresnet50\ndeit_small_patch16_224  # a comment\n\nvgg11\n")
    command = [sys.executable, str(REPO / "bench" / "predict_check.py"), "--from", str(folder), "--csv-dir", str(TIMM),
               "--excess", "clock", "--models"]
    env = child_env({"PATH": "/usr/bin:/bin"})
    proc = subprocess.run(command + [str(listing)], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "time above the roof scaled by clock): 2 models, 0 skipped" in proc.stdout
    assert "\nresnet50 " in proc.stdout and "\ndeit_small_patch16_224 " in proc.stdout
    assert f"1 of the 3 models in {listing} have no profile in the sources: vgg11" in proc.stderr
    missing = subprocess.run(command + [str(tmp_path / "none.txt")], capture_output=True, text=True, cwd=REPO, env=env,
                             timeout=600)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip().splitlines() == [f"predict_check.py: error: --model-list: no such file: {tmp_path / 'none.txt'}"]


def test_unwritable_outputs_are_one_line_before_any_work(tmp_path):
    env = child_env({"PATH": "/usr/bin:/bin"})
    script = str(REPO / "bench" / "predict_check.py")
    for args, message in ((["--write-model-list", str(tmp_path / "no" / "list.txt")], f"--write-model-list: directory {tmp_path / 'no'} does not exist"),
                          (["--from", str(tmp_path), "--json", str(tmp_path)], f"--json: {tmp_path} is a directory; give a file name")):
        proc = subprocess.run([sys.executable, script, "--csv-dir", str(TIMM), *args], capture_output=True, text=True, cwd=REPO,
                              env=env, timeout=600)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [f"predict_check.py: error: {message}"]


def test_worked_example_and_diagnosis_scripts_run_on_recorded_profiles(tmp_path):
    """bench/worked_example.py on the H200 recordings, and bench/predict_diagnose.py on a check's JSON."""
    out = tmp_path / "we.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "worked_example.py"), "--models",
                           "resnet50,coatnet_0_rw_224,no_such_net", "--csv-dir", str(TIMM), "--json", str(out)],
                          capture_output=True, text=True, cwd=REPO, env=child_env({"PATH": "/usr/bin:/bin"}), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    rows = {r["model"]: r for r in doc["rows"]}
    assert set(rows) == {"resnet50", "coatnet_0_rw_224"} and doc["missing"] == ["no_such_net"]
    r50 = rows["resnet50"]
    assert r50["published"]["speedup"] == pytest.approx(4217.6 / 3219.06)  # the CSV's own numbers
    assert r50["h200_batch"] == 64 and abs(sum(r50["h200_categories_pct"].values()) - 100) < 0.5
    for mode in ("bound", "compute"):
        p = r50[f"predicted_{mode}"]
        assert p["speedup"] == pytest.approx(p["rtx4090_samples_per_s"] / p["rtx3090_samples_per_s"])
    assert "resnet50 @224: H200 b64 bf16" in proc.stdout and "no profile of: no_such_net" in proc.stdout

    check = tmp_path / "check.json"
    folder = tmp_path / "h200"
    write_results(folder)
    subprocess.run([sys.executable, str(REPO / "bench" / "predict_check.py"), "--from", str(folder), "--csv-dir", str(TIMM),
                    "--json", str(check)], capture_output=True, text=True, cwd=REPO, check=True,
                   env=child_env({"PATH": "/usr/bin:/bin"}), timeout=600)
    diagnosis = tmp_path / "diagnosis.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "predict_diagnose.py"), str(check), "--csv-dir", str(TIMM),
                           "--json", str(diagnosis)], capture_output=True, text=True, cwd=REPO,
                          env=child_env({"PATH": "/usr/bin:/bin"}), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(diagnosis.read_text())
    assert doc["models"] == 4 and doc["datasheet_ratios"]["ratios"] == [2.33, 1.08]
    assert set(doc["error_vs_share_spearman"]) == {"tensor", "memory", "compute", "launch"}
    assert [half["models"] for half in doc["two_fold"]] == [2, 2]
    # the share model with the datasheet ratios, recomputed from the check's rows
    rows = json.loads(check.read_text())["rows"]
    by_hand = [1 / (r["rtx3090_shares"].get("tensor", 0) / 2.33 + (r["rtx3090_shares"].get("memory", 0)
                    + r["rtx3090_shares"].get("unknown", 0)) / 1.08 + r["rtx3090_shares"].get("compute", 0) / 2.32
                    + r["rtx3090_shares"].get("launch", 0)) for r in rows]
    errors = sorted(abs(p / r["speedup_published"] - 1) for p, r in zip(by_hand, rows))
    assert doc["datasheet_ratios"]["median_abs_error"] == pytest.approx((errors[1] + errors[2]) / 2)


def test_pick_profiles_compares_two_batches_on_the_same_models():
    from types import SimpleNamespace

    sys.path.insert(0, str(REPO / "bench"))
    try:
        from predict_check import pick_profiles
    finally:
        sys.path.remove(str(REPO / "bench"))

    def result(name, batch):
        return SimpleNamespace(model=SimpleNamespace(name=name, img_size=224, batch_size=batch))

    rows = {"rtx3090": {}, "rtx4090": {}}
    for gpu in rows:
        for name in ("resnet50", "vit_base_patch16_224", "deit_small_patch16_224"):
            rows[gpu][(name, 224)] = {"infer_batch_size": "1024"}
    results = [result("resnet50", 64), result("resnet50", 256), result("vit_base_patch16_224", 64),
               result("deit_small_patch16_224", 256), result("convnext_tiny", 64)]
    skipped: list[str] = []
    closest = pick_profiles(results, rows, None, skipped)
    assert sorted((r.model.name, r.model.batch_size) for r in closest) == [
        ("deit_small_patch16_224", 256), ("resnet50", 256), ("vit_base_patch16_224", 64)]
    assert skipped == ["convnext_tiny@224: not in both CSVs at this size"]
    same = pick_profiles(results, rows, 64, [], also_at=256)
    assert [(r.model.name, r.model.batch_size) for r in same] == [("resnet50", 64)]


def test_batch_check_predicts_the_other_batch_on_the_same_gpu(tmp_path):
    """bench/predict_batch_check.py: each model's profile at one batch against its measured
    latency at another, on the same GPU; models without both batches are left out."""
    import dataclasses

    from recorded_results import recorded_result
    from visprof.analysis.group_scaling import EXCESS_MODES
    from visprof.analysis.predict import predict_result
    from visprof.result import LatencyStats

    folder = tmp_path / "profiles"
    folder.mkdir()
    small = recorded_result("resnet50")
    small.to_json(folder / "resnet50-b64.json")
    recorded_result("deit_small_patch16_224").to_json(folder / "deit-b64.json")  # no batch-256 profile
    large = recorded_result("resnet50")
    large.model = dataclasses.replace(large.model, batch_size=256, input_shape=[256, *large.model.input_shape[1:]])
    large.timing = dataclasses.replace(large.timing, latency_ms=LatencyStats.from_samples([30.0]))
    large.to_json(folder / "resnet50-b256.json")
    out = tmp_path / "batch.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "predict_batch_check.py"), "--from", str(folder),
                           "--profile-batch", "64", "--measured-batch", "256", "--json", str(out)], capture_output=True,
                          text=True, cwd=REPO, env=child_env({"PATH": "/usr/bin:/bin", "VISPROF_COMMIT": "test"}), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["summary"]["models"] == 1 and [r["model"] for r in doc["rows"]] == ["resnet50"]
    row = doc["rows"][0]
    assert row["measured_large_ms"] == 30.0 and row["large"] == 256
    for mode in EXCESS_MODES:
        expected = predict_result(small, "h200", batch_size=256, excess=mode).latency_ms
        assert row[f"{mode}_ms"] == pytest.approx(expected)
        assert doc["summary"][mode]["median_signed"] == pytest.approx(expected / 30.0 - 1)
    # on its own GPU, the measured rates: clock and bound agree but for the groups that ran above
    # their DRAM roof (L2 hits), which clock keeps partly in L2 at the larger batch and bound
    # takes to DRAM; none (every group at its roof) is faster
    assert row["bound_ms"] * 0.99 < row["clock_ms"] <= row["bound_ms"] and row["none_ms"] < 0.8 * row["clock_ms"]
    assert "batch 64 -> 256 on the same GPU, 1 models" in proc.stdout
    nothing = subprocess.run([sys.executable, str(REPO / "bench" / "predict_batch_check.py"), "--from", str(folder),
                              "--profile-batch", "64", "--measured-batch", "32"], capture_output=True, text=True, cwd=REPO,
                             env=child_env({"PATH": "/usr/bin:/bin"}), timeout=600)
    assert nothing.returncode == 1 and "no model has GPU profiles at both batch 64 and batch 32" in nothing.stderr


def test_sm_check_predicts_the_green_context_from_the_all_sm_profiles(tmp_path):
    """Three models recorded on the H200, on all SMs and in a green context asked for 66
    (bench/results/h200-s22-sm/): one SM design, so the prediction takes SMs x clock."""
    out = tmp_path / "sm.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "predict_sm_check.py"), str(Path(__file__).resolve().parents[1] / "data" / "sm66"),
                           "--json", str(out)], capture_output=True, text=True, cwd=REPO,
                          env=child_env({"PATH": "/usr/bin:/bin", "VISPROF_COMMIT": "test"}), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert [p["sms"] for p in doc["by_sm_count"]][:2] == [66, 72]
    for part in doc["by_sm_count"]:
        assert part["models"] == 3
        rows = {r["model"]: r for r in part["rows"]}
        assert all(r["rate_scaling"] == "throughput" and r["predicted_ms"] > r["all_sms_ms"] for r in rows.values())
        # the clock alone predicts no slow-down for time above the roof; the measured slow-down is there
        assert all(r["measured_ms"] > 1.05 * r["all_sms_ms"] for r in rows.values())
        assert abs(part["median_signed_error"]["throughput"]) < abs(part["median_signed_error"]["clock"])
        # EfficientFormer-V2's upsampling does not care how many SMs it has: the throughput end over-shoots
        assert rows["efficientformerv2_s0"]["error"]["throughput"] > 0.4
    assert "measured within the range for" in proc.stdout
