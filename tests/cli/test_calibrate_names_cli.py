"""`visprof calibrate --explain NAME` checks NAME against the pair's published models before the
fit: a typo once ran the whole fit (46 s on 1,579 models) and then said the name was not among the
calibrated models, without a suggestion."""
from __future__ import annotations

from pathlib import Path

from recorded_results import write_results
from visprof.cli import app as cli

TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"
CSV_3090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
CSV_4090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"


def test_an_unknown_explain_name_is_refused_before_the_fit_with_close_names(tmp_path, capsys, monkeypatch):
    import visprof.analysis.calibrate as calibrate_module
    import visprof.analysis.compare as compare_module

    write_results(tmp_path)
    calls = []
    for module, name in ((compare_module, "compare"), (calibrate_module, "fit_calibration")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    argv = ["calibrate", str(tmp_path), str(CSV_3090), str(CSV_4090), "--base", "rtx3090", "--target", "rtx4090"]
    code = cli.main([*argv, "--explain", "resnet50", "--explain", "resnet5O"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines()[-1] == ("visprof: error: --explain resnet5O: no published row on both rtx3090 and "
                                            "rtx4090, and no profile, under this name; did you mean: resnet50, resnet34, "
                                            "resnetrs152?")
    assert calls == ["compare"]  # joined, then stopped before the fit
    # a name in another case: the one it is, first (difflib alone suggested nothing)
    assert cli.main([*argv, "--explain", "RESNET50"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("under this name; did you mean: resnet50?")
    # a known name passes the check, with or without a pretrained tag: the run goes on to the fit
    # (which these 4 recordings are too few for)
    code = cli.main([*argv, "--explain", "resnet50.a1_in1k"])
    err = capsys.readouterr().err
    assert "--explain" not in err and "calibration needs at least 20" in err
    # so does a model profiled but not published, which calibrate predicts (it had been refused)
    import json

    doc = json.loads((tmp_path / "resnet50.json").read_text())
    doc["model"]["name"] = "resnet50_mine"
    (tmp_path / "resnet50_mine.json").write_text(json.dumps(doc))
    code = cli.main([*argv, "--explain", "resnet50_mine"])
    err = capsys.readouterr().err
    assert "--explain" not in err and "calibration needs at least 20" in err


def test_a_calibration_of_cpu_profiles_says_they_were_left_out(tmp_path, capsys):
    """With only CPU profiles, calibrate said "0 model(s) have a profile ..." and not why: a CPU result's
    times are host-clock, and compare leaves them out (its note), which the refusal now carries."""
    import visprof

    result = visprof.profile("resnet18", device="cpu", batch_size=1, img_size=64, iterations=1, warmup=0,
                             passes="timing,attributed", progress=False)
    result.to_json(tmp_path / "resnet18-cpu.json")
    code = cli.main(["calibrate", str(tmp_path / "resnet18-cpu.json"), str(CSV_3090), str(CSV_4090),
                     "--base", "rtx3090", "--target", "rtx4090"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "visprof: error: 0 model(s) have a profile, a spec prediction and both published numbers for rtx3090 -> "
        "rtx4090; calibration needs at least 20 (1 CPU result(s) left out: their times are host-clock, not a GPU's)")
