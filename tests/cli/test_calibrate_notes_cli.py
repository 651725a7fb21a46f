"""`visprof calibrate` says compare's notes on its inputs before it fits them: a user's tables at fp32
against bf16 profiles, two disagreeing tables of one GPU, or tables at image sizes no profile has were
fitted (or refused with "0 model(s) have a profile") without the word compare gives for the same inputs."""
from __future__ import annotations

from recorded_results import MODELS, recorded_result, write_results
from visprof.cli import app as cli


def _table(path, size_shift=0, scale=1.0):
    """A user's table of the recorded models: their H200 throughput times ``scale``."""
    results = [recorded_result(m) for m in MODELS]
    rows = [f"{r.model.name},{r.model.img_size + size_shift},{r.timing.samples_per_s * scale:.2f},256" for r in results]
    path.write_text("model,img_size,samples_per_sec,batch_size\n" + "\n".join(rows) + "\n")
    return path


def _calibrate(tmp_path, capsys, tables, precision="bf16"):
    store = tmp_path / "refs.db"
    for gpu, table in tables:
        assert cli.main(["import-timm", str(table), "--gpu", gpu, "--precision", precision, "--store", str(store)]) == 0
    capsys.readouterr()
    write_results(tmp_path / "profiles")
    code = cli.main(["calibrate", "-q", str(store), str(tmp_path / "profiles"), "--base", "a100", "--target", "h100"])
    err = capsys.readouterr().err
    assert code == 2 and "calibration needs at least 20" in err  # 4 recorded models: the notes come before the fit
    return [line for line in err.splitlines() if line.startswith("[visprof] note: ")]


def test_tables_at_another_precision_than_the_profiles_are_said(tmp_path, capsys):
    notes = _calibrate(tmp_path, capsys, [("a100", _table(tmp_path / "a.csv", scale=0.3)),
                                          ("h100", _table(tmp_path / "h.csv", scale=0.5))], precision="fp32")
    assert any("4 model(s) are predicted from profiles at another precision than the published numbers (e.g. "
               "profiled at bf16, the A100 SXM4 80GB at fp32)" in note for note in notes), notes


def test_two_disagreeing_tables_of_one_gpu_are_said(tmp_path, capsys):
    notes = _calibrate(tmp_path, capsys, [("a100", _table(tmp_path / "a.csv", scale=0.3)),
                                          ("a100", _table(tmp_path / "a-rerun.csv", scale=0.36)),
                                          ("h100", _table(tmp_path / "h.csv", scale=0.5))])
    assert any("have published rows on one GPU that agree in precision, software, layout and batch but not in "
               "throughput" in note for note in notes), notes


def test_tables_at_sizes_no_profile_has_are_said(tmp_path, capsys):
    notes = _calibrate(tmp_path, capsys, [("a100", _table(tmp_path / "a.csv", size_shift=32, scale=0.3)),
                                          ("h100", _table(tmp_path / "h.csv", size_shift=32, scale=0.5))])
    assert ("[visprof] note: 4 compared model(s) have profiles only at other image sizes than the published rows "
            "(e.g. coatnet_0_rw_224: published at 256, profiled at 224): they have no predicted speed-up; profile "
            "them at the published sizes") in notes, notes


def test_the_fit_says_how_many_published_models_it_had_no_profile_of_under_quiet(tmp_path, capsys):
    """The count of joined models without a usable profile was in a progress line only, gone under -q."""
    import json

    profiles = tmp_path / "profiles"
    written = write_results(profiles)
    rows = []
    # 24 timm names of 6 families: the recorded profiles renamed
    names = ["resnet18", "resnet34", "resnet50", "resnet101", "convnext_atto", "convnext_femto", "convnext_pico",
             "convnext_nano", "deit_tiny_patch16_224", "deit_small_patch16_224", "deit_base_patch16_224",
             "deit_tiny_distilled_patch16_224", "efficientnet_b0", "efficientnet_b1", "efficientnet_b2",
             "efficientnet_b3", "regnetx_002", "regnetx_004", "regnetx_006", "regnetx_008", "mobilenetv3_small_050",
             "mobilenetv3_small_075", "mobilenetv3_small_100", "mobilenetv3_large_100"]
    for i, name in enumerate(names):
        doc = json.loads(written[i % len(written)].read_text())
        doc["model"]["name"] = name
        (profiles / f"m{i}.json").write_text(json.dumps(doc))
        rows.append((name, doc["model"]["img_size"], 1000.0 * (1 + i % 5), 1.4 + 0.01 * i))
    for path in written:
        path.unlink()
    rows += [(f"unprofiled_{i}", 224, 500.0, 1.5) for i in range(3)]
    store = tmp_path / "refs.db"
    for gpu, scale in (("a100", None), ("h100", True)):
        table = tmp_path / f"{gpu}.csv"
        table.write_text("model,img_size,samples_per_sec,batch_size\n" + "".join(
            f"{name},{size},{rate * (speedup if scale else 1):.2f},256\n" for name, size, rate, speedup in rows))
        assert cli.main(["import-timm", str(table), "--gpu", gpu, "--precision", "bf16", "--store", str(store)]) == 0
    capsys.readouterr()
    code = cli.main(["calibrate", "-q", str(store), str(profiles), "--base", "a100", "--target", "h100", "--folds", "6"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("a100-sxm4-80gb -> h100-sxm: 24 models with published numbers (3 more published on both "
                          "without a usable profile), "), out
