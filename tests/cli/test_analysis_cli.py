"""The import-timm, compare, predict and report commands, run as a user runs them."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recorded_results import write_results
from visprof.base.child_env import child_env, module_command
from visprof.cli import app as cli

TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"
CSV_3090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
CSV_4090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def h200_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("h200")
    write_results(folder)
    return folder


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_import_timm_adds_rows_once(tmp_path, capsys):
    store = tmp_path / "store.db"
    code, out, err = run(capsys, "import-timm", CSV_3090, CSV_4090, "--store", store)
    assert code == 0, err
    assert "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv: 60 rows on NVIDIA GeForce RTX 3090 (amp-fp16), 60 new" in out
    assert "dropped 1 test_* rows" in out
    code, out, _ = run(capsys, "import-timm", CSV_3090, "--store", store, "--gpu", "rtx3090")
    assert code == 0 and "0 new, 60 already in" in out
    code, out, _ = run(capsys, "compare", store)
    assert code == 0 and "RTX 3090 -> RTX 4090: 60 models measured on both" in out


def test_a_corrected_table_imported_again_says_its_rows_were_kept_as_stored(tmp_path, capsys):
    """A typo fixed and the file imported again: "0 new, 1 already in" and the wrong number stayed,
    with no word that the file said otherwise."""
    store, table = tmp_path / "s.db", tmp_path / "mine.csv"
    table.write_text("model,img_size,samples_per_sec,batch_size\nresnet50,224,30000,256\nresnet18,224,5000,256\n")
    assert run(capsys, "import-timm", table, "--gpu", "l4", "--precision", "fp16", "--store", store)[0] == 0
    table.write_text("model,img_size,samples_per_sec,batch_size\nresnet50,224,3000,256\nresnet18,224,5000,256\n")
    code, out, err = run(capsys, "import-timm", table, "--gpu", "l4", "--precision", "fp16", "--store", store)
    assert code == 0 and "0 new, 2 already in" in out
    assert err.strip() == (f"visprof: warning: mine.csv: 1 row(s) already in {store} with other numbers were kept as "
                           "stored, e.g. resnet50 @224 batch 256: 30000 samples/s stored, 3000 in the file; to use "
                           "the file's, import it into a new store")
    table.write_text("model,img_size,samples_per_sec,batch_size\nresnet50,224,30000,256\nresnet18,224,5000,256\n")
    assert run(capsys, "import-timm", table, "--gpu", "l4", "--precision", "fp16", "--store", store)[2] == ""


@pytest.mark.parametrize("argv, message", [
    (["import-timm", "missing.csv", "--store", "{tmp}/s.db"], "no such file: missing.csv"),
    (["import-timm", str(CSV_3090), "--store", "{tmp}/s.db", "--gpu", "rtx9090"], "unknown GPU 'rtx9090'"),
    (["import-timm", str(CSV_3090), "--store", "{tmp}/nodir/s.db"], "does not exist"),
    # --gpu over several files stored the 4090's table as a second 3090 table, without a word
    (["import-timm", str(CSV_3090), str(CSV_4090), "--store", "{tmp}/s.db", "--gpu", "3090"],
     "rtx4090.csv: its name says NVIDIA GeForce RTX 4090, but '3090' was given for it"),
    (["compare", str(CSV_3090), f"{CSV_4090}@rtx5090"], "its name says NVIDIA GeForce RTX 4090, but 'rtx5090' was given"),
    (["compare", str(CSV_3090)], "measurements on two GPUs, and the inputs have measurements on one only (rtx3090)"),
    (["compare", str(CSV_3090), str(CSV_4090), "--base", "h200"], "no measurements on GPU 'h200'"),
    (["predict", "--from", str(CSV_3090), "--to", "rtx4090"], "no profile results in the inputs"),
    (["predict", "--from", "{tmp}", "--to", "rtx4090"], "no visprof profile results"),
    (["report", str(CSV_3090), "-o", "{tmp}"], "is a directory"),
    # a real H200 result written before results carried roofline groups
    (["predict", "--from", str(REPO / "bench/results/h200-final/visprof-profile-vit_base_patch16_224.json"), "--to", "4090"],
     "nothing could be predicted: vit_base_patch16_224: the result has no roofline groups"),
])
def test_user_mistakes_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    code, out, err = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("visprof: error:")]
    assert len(lines) == 1 and message in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "s.db").exists()  # nothing created by a failed command


@pytest.mark.parametrize("name, gpu, said", [
    # a name that names two GPUs had been read as one of them (l4-vs-t4: the T4), without a word
    ("l4-vs-t4.csv", None, "error: {path}: its file name names 2 GPUs (NVIDIA L4, NVIDIA T4); give --gpu NAME with the one"),
    ("l40s-vs-l40.csv", None, "error: {path}: its file name names 2 GPUs (NVIDIA L40S, NVIDIA L40); give --gpu NAME"),
    ("l4-vs-t4.csv", "t4", "60 rows on NVIDIA T4 (amp-fp16)"),
    # a name outside timm's pattern says a default GPU, which --gpu overrides (it had been refused)
    ("a100.csv", "a100 40gb", "60 rows on NVIDIA A100 SXM4 40GB (amp-fp16)"),
    ("a100.csv", None, "60 rows on NVIDIA A100 SXM4 80GB (amp-fp16)"),
    # a GPU the table lacks is not read as the one whose name it starts with
    ("rtx-3090-ti.csv", None, "error: {path}: its file name names no known GPU"),
])
def test_a_gpu_in_a_file_name_outside_timms_pattern(tmp_path, capsys, name, gpu, said):
    path = tmp_path / name
    path.write_text(CSV_3090.read_text())
    code, out, err = run(capsys, "import-timm", path, "--precision", "amp", "--store", tmp_path / "s.db",
                         *(["--gpu", gpu] if gpu else []))
    assert said.format(path=path) in (out + err).replace("visprof: ", ""), out + err
    assert code == (2 if said.startswith("error") else 0)


def test_a_gpu_without_a_spec_row_is_said_to_lack_one_not_to_lack_measurements(tmp_path, capsys):
    # "no measurements on GPU 'rtx9090'; the inputs have: rtx3090, NVIDIA GeForce RTX 9090"
    gpus = tmp_path / "gpus.toml"
    gpus.write_text('[[gpus]]\nid = "rtx9090"\nname = "NVIDIA GeForce RTX 9090"\nmatch = [\'RTX 9090$\']\nsms = 200\n'
                    'boost_clock_mhz = 3000\nmemory_gb = 48\nmemory_bandwidth_gbs = 3000\nl2_mb = 128\nfp32_tflops = 200\n'
                    'tensor_tflops = { fp16 = 800, bf16 = 800 }\n')
    mine = tmp_path / "mine.csv"
    mine.write_text(CSV_4090.read_text())
    store = tmp_path / "s.db"
    assert run(capsys, "import-timm", CSV_3090, "--store", store)[0] == 0
    assert run(capsys, "import-timm", mine, "--gpu", "rtx9090", "--precision", "amp", "--store", store, "--gpus", gpus)[0] == 0
    code, _, err = run(capsys, "compare", store, "--base", "rtx3090", "--target", "rtx9090")
    assert code == 2 and err.strip() == (
        "visprof: error: GPU 'rtx9090' is 'NVIDIA GeForce RTX 9090' in the inputs, which has no row in the GPU spec "
        "table: give its row with --gpus FILE (predictions and their sentences need it), or name it "
        "'NVIDIA GeForce RTX 9090'")
    # the row's last words, as an alias of the --gpus row would name it (it had been "no measurements on GPU
    # '9090'; the inputs have: ..., NVIDIA GeForce RTX 9090")
    for alias in ("9090", "RTX 9090"):
        code, _, err = run(capsys, "compare", store, "--base", "rtx3090", "--target", alias)
        assert code == 2 and err.startswith(f"visprof: error: GPU {alias!r} is 'NVIDIA GeForce RTX 9090' in the inputs, "
                                            "which has no row in the GPU spec table: give its row with --gpus FILE")
    code, _, err = run(capsys, "compare", store, "--base", "rtx3090", "--target", "090")
    assert code == 2 and err.startswith("visprof: error: no measurements on GPU '090'")
    code, out, _ = run(capsys, "compare", store, "--base", "rtx3090", "--target", "rtx9090", "--gpus", gpus)
    assert code == 0 and out.startswith("visprof compare: RTX 3090 -> RTX 9090: 60 models measured on both")


def test_a_csv_whose_name_has_no_precision_points_compare_to_import_timm(tmp_path, capsys):
    """compare said "give it with --precision P", an option compare does not have."""
    renamed = tmp_path / "rtx3090-numbers.csv"
    renamed.write_text(CSV_3090.read_text())
    code, out, err = run(capsys, "compare", f"{renamed}@rtx3090", str(CSV_4090))
    assert code == 2 and err.strip().splitlines() == [
        f"visprof: error: {renamed}: the file name does not say the precision (amp, fp32, ...): give it to visprof "
        "import-timm FILE --precision P --gpu GPU --store STORE; compare, predict and calibrate then read that store"]


def _sqlite_store(path: Path) -> None:
    from visprof.store.result_store import open_store

    open_store(path, write=True).close()


# Files that are no timm CSV, and the one line that must name each, whatever else is given.
NOT_TIMM_CSVS = {
    "pair.db": (_sqlite_store, "pair.db: an SQLite file (a results store?), expected a timm benchmark CSV"),
    "r18.json": (lambda p: p.write_text('{"schema": "visprof.result/1"}\n'),
                 "r18.json: a JSON file, not a timm inference benchmark CSV: missing column(s)"),
    "empty.csv": (lambda p: p.write_bytes(b""), "empty.csv: empty file, expected a timm benchmark CSV"),
    "noise.csv": (lambda p: p.write_bytes(bytes(range(256)) * 4), "noise.csv: not a text file, expected a timm"),
}


@pytest.mark.parametrize("name", NOT_TIMM_CSVS)
@pytest.mark.parametrize("given", [[], ["--gpu", "rtx3090"], ["--gpu", "rtx3090", "--precision", "amp"]])
def test_import_timm_says_a_file_is_no_timm_csv_before_reading_its_name(tmp_path, capsys, monkeypatch, name, given):
    """Not the GPU or the precision its file name does not say: neither would make it a CSV."""
    monkeypatch.chdir(tmp_path)
    make, message = NOT_TIMM_CSVS[name]
    make(tmp_path / name)
    code, out, err = run(capsys, "import-timm", name, *given, "--store", "s.db")
    assert code == 2 and out == ""
    assert err.startswith(f"visprof: error: {message}") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "s.db").exists()


def test_compare_on_one_gpu_says_a_second_gpu_is_needed(tmp_path, capsys):
    """The same CSV twice, a store of one imported CSV, one GPU's profiles: naming GPUs cannot help."""
    store = tmp_path / "refonly.db"
    assert run(capsys, "import-timm", CSV_3090, "--store", store)[0] == 0
    profile = REPO / "tests/data/h200-result-vit_base_patch16_224.json"
    for sources, held in (([CSV_3090, CSV_3090], "rtx3090"), ([store], "rtx3090"), ([profile], "h200")):
        for named in ([], ["--base", "rtx3090", "--target", "rtx4090"]):
            code, out, err = run(capsys, "compare", *sources, *named)
            (line,) = [line for line in err.splitlines() if line.startswith("visprof: error:")]
            assert code == 2 and line == (
                f"visprof: error: a comparison needs measurements on two GPUs, and the inputs have measurements on "
                f"one only ({held}): add the other GPU's, e.g. its timm benchmark CSV (as it is, or imported into a "
                f"store with visprof import-timm) or visprof profiles made on it")


def test_compare_writes_json_and_csv(tmp_path, capsys, h200_results):
    code, out, err = run(capsys, "compare", h200_results, CSV_3090, CSV_4090, "--base", "rtx3090", "--target", "rtx4090",
                         "--json", tmp_path / "c.json", "--csv", tmp_path / "c.csv", "--top", "3")
    assert code == 0, err
    assert "The 3 most and 3 least sensitive models" in out and "By family (timm module)" in out
    assert "Why (profiled models)" in out and "tensor-core bound (predicted from the H200 SXM 141GB profile)" in out
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["base"] == "rtx3090" and len(doc["models"]) == 60 and doc["base_spec"]["id"] == "rtx3090"
    deit = next(r for r in doc["models"] if r["model"] == "deit_small_patch16_224")
    assert deit["speedup"] == pytest.approx(1.676, rel=1e-3) and deit["share_tensor"] > 0.5
    header = (tmp_path / "c.csv").read_text().splitlines()[0]
    assert header.startswith("model,img_size,family,base_samples_per_s")
    # the same columns whatever the rows hold: without profiles the share columns had been left out
    code, _, err = run(capsys, "compare", CSV_3090, CSV_4090, "--base", "rtx3090", "--target", "rtx4090",
                       "--csv", tmp_path / "published.csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "published.csv").read_text())))
    assert (tmp_path / "published.csv").read_text().splitlines()[0] == header
    assert {r["share_launch"] for r in rows} == {""}
    shares = [f"share_{b}" for b in ("tensor", "memory", "compute", "unknown", "launch")]
    assert all(name in header.split(",") for name in shares)


def test_predict_csv_has_every_share_column_whatever_the_models_run(tmp_path, capsys, h200_results):
    headers = set()
    for model in ("resnet50", "deit_small_patch16_224", "*"):
        code, _, err = run(capsys, "predict", "--from", h200_results, "--to", "rtx4090", "--model", model,
                           "--csv", tmp_path / "p.csv")
        assert code == 0, err
        headers.add((tmp_path / "p.csv").read_text().splitlines()[0])
    (header,) = headers
    assert [c for c in header.split(",") if c.startswith("share_")] == [
        "share_tensor", "share_memory", "share_compute", "share_unknown", "share_launch"]


def test_predict_table_and_files(tmp_path, capsys, h200_results):
    code, out, err = run(capsys, "predict", "--from", h200_results, "--to", "RTX 4090", "-b", "1024", "--precision", "fp16",
                         "--json", tmp_path / "p.json", "--csv", tmp_path / "p.csv")
    assert code == 0, err
    assert "visprof predict: 4 model(s) on RTX 4090\n" in out
    assert "batch 64 -> 1024: FLOPs and activation bytes x16, weight bytes kept" in out
    # the profile each row is from, by GPU and precision: one model's bf16 and fp16 profiles were two like rows
    assert out.count(" h200 bf16 ") == 4
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["target"]["id"] == "rtx4090" and len(doc["predictions"]) == 4
    first = doc["predictions"][0]
    assert first["batch_size"] == 1024 and first["source_gpu"] == "h200" and first["groups"]
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 5
    code, out, _ = run(capsys, "predict", "--from", h200_results, "--to", "h100-sxm", "--model", "resnet*")
    assert code == 0 and "1 model(s)" in out
    # export's filter: a comma list, the option again (it had replaced the first), a name with a tag
    for models in (["--model", "resnet50,mobilevit_s"], ["--model", "resnet50", "--model", "mobilevit_s"]):
        code, out, _ = run(capsys, "predict", "--from", h200_results, "--to", "h100-sxm", *models)
        assert code == 0 and "2 model(s)" in out, out
    # timm's default tag stands for the untagged profile, which timm built with it (a published table's name
    # had matched nothing); another tag may differ in more than weights, and matches only itself
    code, out, _ = run(capsys, "predict", "--from", h200_results, "--to", "h100-sxm", "--model", "resnet50.a1_in1k")
    assert code == 0 and "1 model(s)" in out and "\nresnet50 " in out
    code, _, err = run(capsys, "predict", "--from", h200_results, "--to", "h100-sxm", "--model", "resnet50.tv_in1k")
    assert code == 2 and "no profile results in the inputs match 'resnet50.tv_in1k'" in err


def test_predict_onto_a_gpu_of_higher_peaks_says_once_what_the_default_cannot_show(h200_results, capsys):
    """H200 profiles onto a B200 (2.27x the bf16 tensor rate, 1.67x the bandwidth, another design) came out
    x0.99-1.01 for 98% of models with a 12% range, read as decided, and no word: the default scales the
    time above each roof by the clocks alone. Toward lower peaks (the checked direction), one design
    (SMs x clock), or another scaling, there is nothing to say."""
    code, out, err = run(capsys, "predict", "-q", "--from", h200_results, "--to", "b200")
    assert code == 0 and "on B200" in out
    [note] = [line for line in err.splitlines() if "peaks are above" in line]
    assert note.startswith("[visprof] note: the B200 180GB's peaks are above the H200 SXM 141GB's (bandwidth x1.67, "
                           "bf16 tensor rate x2.27), another design: by default (--excess clock)")
    assert "--excess fraction scales each group's roofline share by its resource" in note
    for argv in (["--to", "rtx4090"], ["--to", "h100-sxm"], ["--to", "b200", "--excess", "fraction"]):
        code, _, err = run(capsys, "predict", "-q", "--from", h200_results, *argv)
        assert code == 0 and "peaks are above" not in err, argv


def test_predict_uses_one_profile_per_model_unless_asked(tmp_path, capsys):
    """A folder with ResNet-50 profiled twice at batch 64 (the second newer) and once at 256:
    at -b 1024 the batch-256 one is used; at -b 64 the newer batch-64 one; --every-profile uses all."""
    import dataclasses

    from recorded_results import recorded_result

    folder = tmp_path / "runs"
    folder.mkdir()
    old, new, big = recorded_result("resnet50"), recorded_result("resnet50"), recorded_result("resnet50")
    new.created_at = "2026-12-01T00:00:00+00:00"
    new.timing = dataclasses.replace(new.timing, idle_ms=0.0)  # tells the two batch-64 profiles apart
    big.model = dataclasses.replace(big.model, batch_size=256, input_shape=[256, *big.model.input_shape[1:]])
    for name, result in (("old", old), ("new", new), ("big", big)):
        result.to_json(folder / f"{name}.json")
    code, out, err = run(capsys, "predict", "--from", folder, "--to", "rtx4090", "-b", "1024", "--json", tmp_path / "a.json")
    assert code == 0, err
    assert "1 model(s)" in out and out.startswith("(2 more profile(s) of the same models not used: per model, image "
                                                  "size, GPU and precision the one nearest --batch-size")
    assert [p["source_batch"] for p in json.loads((tmp_path / "a.json").read_text())["predictions"]] == [256]
    code, out, err = run(capsys, "predict", "--from", folder, "--to", "rtx4090", "-b", "64", "--json", tmp_path / "b.json")
    chosen = json.loads((tmp_path / "b.json").read_text())["predictions"]
    assert code == 0 and [(p["source_batch"], p["idle_ms"]) for p in chosen] == [(64, 0.0)]
    code, out, err = run(capsys, "predict", "--from", folder, "--to", "rtx4090", "--every-profile")
    assert code == 0 and "1 model(s) from 3 profiles" in out and "not used" not in out
    code, out, err = run(capsys, "predict", "--from", folder, "--to", "rtx4090")  # each at its own batch, once
    assert code == 0 and "1 model(s) from 2 profiles" in out and out.startswith("(1 more profile(s) of the same models not used: per "
                                                                "model, image size, GPU, precision and batch the newest;")


def test_report_writes_html_and_pngs(tmp_path, capsys, h200_results):
    code, out, err = run(capsys, "report", h200_results, CSV_3090, CSV_4090, "-o", tmp_path / "r.html",
                         "--png-dir", tmp_path / "png")
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert html.count("data:image/png;base64,") == 5
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert {p.name for p in (tmp_path / "png").iterdir()} == {"categories.png", "roofline.png", "pareto.png",
                                                               "speedup.png", "families.png"}


def test_help_answers_without_loading_torch():
    code = ("import sys; from visprof.cli import app as cli; "
            "rc = cli.main(['compare', '--help']); assert 'torch' not in sys.modules, 'torch loaded'; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=child_env({"PATH": "/usr/bin:/bin"}))
    assert proc.returncode == 0, proc.stderr
    assert "--base GPU" in proc.stdout


def test_report_without_matplotlib_says_so_before_loading_anything(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: its import raises
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    # the source does not exist: a check after loading would have said that instead
    assert cli.main(["report", str(tmp_path / "missing.db"), "-o", str(tmp_path / "r.html")]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["visprof: error: the report's figures need matplotlib: pip install 'visprof[report]'"]
    assert not (tmp_path / "r.html").exists()


def test_report_with_a_matplotlib_that_fails_to_import_says_so_in_one_line(tmp_path):
    """An installed matplotlib that cannot be imported (built for another NumPy) was a traceback."""
    fake = tmp_path / "site" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("numpy.core.multiarray failed to import\\nmore")\n')
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), env["PYTHONPATH"]])
    done = subprocess.run([*module_command("visprof"), "report", str(tmp_path / "missing.db"), "-o",
                           str(tmp_path / "r.html")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        "visprof: error: the report's figures need matplotlib, which cannot be imported here: "
        "numpy.core.multiarray failed to import"]
    assert not (tmp_path / "r.html").exists()


def test_predict_csv_gives_each_precision_of_a_model_its_own_calibrated_speed_up(tmp_path, capsys):
    """One model profiled at fp16 and at bf16: predict keyed its calibrated speed-ups without the precision,
    so both CSV rows had the last one's value, and the JSON kept one of the two."""
    import csv
    import dataclasses

    from recorded_results import recorded_result
    from saved_calibration import saved_calibration

    bf16 = recorded_result("deit_small_patch16_224")
    fp16 = recorded_result("deit_small_patch16_224")
    fp16.config = dataclasses.replace(fp16.config, precision="fp16")
    fp16.categories = [dataclasses.replace(r, time_ms=r.time_ms * (3.0 if r.category == "normalization" else 1.0))
                       for r in fp16.categories]  # another profile: another mix of work
    folder = tmp_path / "profiles"
    folder.mkdir()
    bf16.to_json(folder / "bf16.json")
    fp16.to_json(folder / "fp16.json")
    cal = tmp_path / "cal.json"
    saved_calibration(recorded_result("deit_small_patch16_224"), "rtx3090", "rtx4090").save(cal)
    code, out, err = run(capsys, "predict", "--from", folder, "--to", "rtx4090", "--calibration", cal,
                         "--csv", tmp_path / "p.csv", "--json", tmp_path / "p.json")
    assert code == 0, err
    with open(tmp_path / "p.csv") as f:
        rows = {r["precision"]: float(r["calibrated"]) for r in csv.DictReader(f)}
    from visprof.analysis import sources
    from visprof.analysis.calibration_file import SavedCalibration
    from visprof.analysis.gpus import gpu_table

    saved = SavedCalibration.load(cal)
    expected = {r.config.precision: saved.predict(sources.from_result(r, "h200", gpu_table()), gpu_table()).calibrated
                for r in (bf16, fp16)}
    assert expected["fp16"] != pytest.approx(expected["bf16"], rel=1e-4)
    assert rows == pytest.approx(expected, rel=1e-3)
    assert len(json.loads((tmp_path / "p.json").read_text())["calibration"]["models"]) == 2


def test_predict_and_compare_with_a_saved_calibration(tmp_path, capsys, h200_results):
    from recorded_results import recorded_result
    from saved_calibration import saved_calibration

    cal = tmp_path / "cal.json"
    saved_calibration(recorded_result("deit_small_patch16_224"), "rtx3090", "rtx4090").save(cal)
    code, out, err = run(capsys, "predict", "--from", h200_results, "--to", "rtx4090", "--calibration", cal,
                         "--json", tmp_path / "p.json", "--csv", tmp_path / "p.csv")
    assert code == 0, err
    section = out.split("Calibrated speed-up rtx3090 -> rtx4090 (calibration rtx3090 -> rtx4090, fitted on 1 ")[1]
    assert section.splitlines()[0].endswith("; at the published batch 1024 and the base table's precision, "
                                            "without a published base number (the fit's median)):")
    rows = [line for line in section.splitlines()[2:] if line.startswith("  ") and "x" in line]
    assert len(rows) == 4 and sum("(in the fit)" in r for r in rows) == 1  # deit, under its pretrained tag
    # which profile each row is of (one model's profiles at two precisions had looked alike)
    assert section.splitlines()[1].split()[:3] == ["model", "img", "profile"]
    assert all(" h200 bf16 b64 " in r for r in rows), rows
    # at the batch asked for: the spec speed-ups are made there, and the caption says so
    code, at_64, err = run(capsys, "predict", "--from", h200_results, "--to", "rtx4090", "-b", "64",
                           "--calibration", cal)
    assert code == 0, err
    section_64 = at_64.split("Calibrated speed-up rtx3090 -> rtx4090 (")[1]
    assert ("; at batch 64 (the band's coverage was measured at the published batch 1024 only) and the base table's "
            "precision, ") in section_64.splitlines()[0]
    assert section_64.splitlines()[2:6] != section.splitlines()[2:6]
    doc = json.loads((tmp_path / "p.json").read_text())["calibration"]
    assert doc["file"] == str(cal) and len(doc["models"]) == 4
    assert all(m["low"] < m["calibrated"] < m["high"] for m in doc["models"])
    import csv

    with open(tmp_path / "p.csv") as f:
        table = list(csv.DictReader(f))
    by_model = {m["model"]: m for m in doc["models"]}
    assert len(table) == 4 and all(float(r["calibrated"]) == pytest.approx(by_model[r["model"]]["calibrated"])
                                   for r in table)
    # compare reads the same file: each profiled model of the pair, at the published batch, with its published speed-up
    code, out, err = run(capsys, "compare", h200_results, CSV_3090, CSV_4090, "--calibration", cal,
                         "--csv", tmp_path / "c.csv")
    assert code == 0, err
    assert "  published inside the band, all (in sample where the fit saw the model): " in out
    assert "  published inside the band, not in the fit: " in out
    header = (tmp_path / "c.csv").read_text().splitlines()[0]
    assert "calibrated,calibrated_low,calibrated_high,calibration_fitted,calibration_family_seen" in header
    # compare gives the calibration each model's published base number, as log(published / predicted base time)
    import math

    from visprof.analysis import sources
    from visprof.analysis.gpus import gpu_table
    from visprof.analysis.calibration_file import SavedCalibration

    with open(tmp_path / "c.csv") as f:
        deit = next(r for r in csv.DictReader(f) if r["model"] == "deit_small_patch16_224" and r["calibrated"])
    over = math.log(float(deit["predicted_base_samples_per_s"]) / float(deit["base_samples_per_s"]))
    profile = sources.from_result(recorded_result("deit_small_patch16_224"), "h200", gpu_table())
    saved = SavedCalibration.load(cal)
    expected = saved.predict(profile, gpu_table(), spec=float(deit["predicted_speedup"]), base_over=over)
    assert float(deit["calibrated"]) == pytest.approx(expected.calibrated, rel=1e-3)  # the CSV's 4 digits
    alone = saved.predict(profile, gpu_table(), spec=float(deit["predicted_speedup"]))
    assert abs(alone.calibrated / expected.calibrated - 1) > 1e-2
    # with the band of families the fit saw: the models of those families are marked and counted apart
    import dataclasses

    kin = saved_calibration(recorded_result("deit_small_patch16_224"), "rtx3090", "rtx4090")
    kin.fit = dataclasses.replace(kin.fit, q_low_seen=-0.03, q_high_seen=0.02, families=frozenset({"deit", "resnet"}))
    kin.save(tmp_path / "kin.json")
    code, out, err = run(capsys, "compare", h200_results, CSV_3090, CSV_4090, "--calibration", tmp_path / "kin.json")
    assert code == 0, err
    assert sum(line.startswith("  resnet50 ") and line.endswith("(family in the fit)") for line in out.splitlines()) == 1
    assert "  published inside the band, not in the fit, family in it: " in out
    assert "  published inside the band, not in the fit, family not in it: " in out
    pytest.importorskip("matplotlib")
    code, out, err = run(capsys, "report", h200_results, "-o", tmp_path / "r.html", "--calibration", cal)
    assert code == 0, err
    assert "<h2>Calibrated speed-up rtx3090 → rtx4090</h2>" in (tmp_path / "r.html").read_text()


def test_a_calibration_of_another_pair_or_a_damaged_one_is_one_line(tmp_path, capsys, h200_results):
    from recorded_results import recorded_result
    from saved_calibration import saved_calibration

    cal = tmp_path / "cal.json"
    saved_calibration(recorded_result("deit_small_patch16_224"), "rtx4090", "rtx5090").save(cal)
    code, _, err = run(capsys, "compare", h200_results, CSV_3090, CSV_4090, "--calibration", cal, "--base", "rtx3090",
                       "--target", "rtx4090")
    assert code == 2 and f"visprof: error: calibration file {cal} is for rtx4090 -> rtx5090; this comparison is " \
                          f"rtx3090 -> rtx4090" in err and "Traceback" not in err
    code, _, err = run(capsys, "predict", "--from", h200_results, "--to", "rtx4090", "--calibration", cal)
    assert code == 2 and f"visprof: error: calibration file {cal} is for rtx4090 -> rtx5090; --to is rtx4090" in err
    # report too: a speed-up section of one pair had stood beside calibrated speed-ups of another
    code, _, err = run(capsys, "report", h200_results, CSV_3090, CSV_4090, "-o", tmp_path / "r.html", "--calibration",
                       cal, "--base", "rtx3090", "--target", "rtx4090")
    assert code == 2 and "this comparison is rtx3090 -> rtx4090 (--base/--target)" in err
    assert not (tmp_path / "r.html").exists()
    assert len(err.strip().splitlines()) == 1
    # the pair taken from the file, which the inputs do not hold: the error says where the GPUs came from
    code, _, err = run(capsys, "compare", h200_results, CSV_3090, CSV_4090, "--calibration", cal)
    assert code == 2 and f"(the GPUs of the calibration file {cal}: rtx4090 -> rtx5090)" in err
    cal.write_text('{"schema": "visprof.calibration/1"}')
    code, _, err = run(capsys, "predict", "--from", h200_results, "--to", "rtx4090", "--calibration", cal)
    assert code == 2 and f"calibration file {cal}: not a visprof calibration (no 'features')" in err
    code, _, err = run(capsys, "calibrate", h200_results, CSV_3090, CSV_4090, "--save", CSV_3090)
    assert code == 2 and f"--save {CSV_3090}: it is the input; writing it would overwrite that input" in err
    code, _, err = run(capsys, "report", h200_results, "-o", tmp_path / "r.html", "-b", "1024")
    assert code == 2 and "--batch-size sets the batch of the calibrated speed-ups: it needs --calibration FILE" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r.html").exists()


def test_a_file_of_an_input_folder_that_is_not_a_result_is_said(tmp_path, capsys):
    folder = tmp_path / "runs"
    folder.mkdir()
    write_results(folder)
    good = sorted(folder.glob("*.json"))[0]
    (folder / "cut.json").write_text(good.read_text()[:200])  # a copy cut short
    code, out, err = run(capsys, "compare", folder, CSV_3090, CSV_4090, "--base", "rtx3090", "--target", "rtx4090")
    assert code == 0, err
    assert f"[visprof] skipped 1 file(s) of the input folders: {folder / 'cut.json'} (not a profile result)" in err
    code, out, err = run(capsys, "predict", "--from", folder, "--to", "rtx4090")
    assert code == 0 and "skipped 1 file(s) of the input folders" in err


def test_report_refuses_a_named_gpu_it_cannot_compare(tmp_path, capsys, h200_results):
    pytest.importorskip("matplotlib")
    code, _, err = run(capsys, "report", h200_results, CSV_3090, CSV_4090, "-o", tmp_path / "r.html",
                       "--base", "nosuch")
    errors = [line for line in err.splitlines() if not line.startswith("[visprof]")]  # progress lines aside
    assert code == 2 and len(errors) == 1 and errors[0].startswith("visprof: error: ") and "nosuch" in errors[0]
    assert not (tmp_path / "r.html").exists()


def test_a_calibration_against_the_profiles_own_gpu_is_refused(capsys, h200_results):
    """--target h200 with H200 profiles and no H200 table: the 'published' side was the profiles
    themselves, and the held-out figures (Spearman 0.974) were leakage, said without a word."""
    code, out, err = run(capsys, "calibrate", h200_results, CSV_4090, "--base", "rtx4090", "--target", "h200")
    assert code == 2 and out == ""
    (line,) = [line for line in err.splitlines() if line.startswith("visprof: error:")]
    assert "the target GPU's numbers (h200) are visprof profiles for 4 of 4 models" in line
