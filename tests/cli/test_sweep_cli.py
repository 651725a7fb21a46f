"""`visprof sweep` and `visprof export`: every user mistake is one line and an exit code,
found before any worker starts, and leaves no store behind."""
import sys
from pathlib import Path

import pytest

from cli_in_process import one_error_line, run_cli
from device_stores import mixed_store, reference_only_store
from visprof.sweep import open_store
from visprof.store.result_store import ResultStore

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")


@pytest.mark.parametrize("args, code, message", [
    (["resnet5O"], 2, "did you mean: resnet50"),
    (["nosuchfamily_*"], 2, "matches no timm model"),
    (["resnet18", "--exclude", "resnet*"], 2, "leaves none"),
    (["--model-list", "{tmp}/missing.txt"], 2, "--model-list: no such file"),
    (["--model-list", "/"], 2, "--model-list: / is a directory; give a file with one model name a line"),
    (["resnet18", "-O", "nonsense=1"], 2, "unknown profile option 'nonsense'"),
    # the refusal names the sweep's own option in the caller's terms (it said "use its own sweep option")
    (["resnet18", "-O", "batch_size=3"], 2, "profile option 'batch_size' is set by the sweep itself: use the sweep's "
                                            "own --batch-size"),
    (["resnet18", "-O", "channels_last=true"], 2, "use the sweep's own --memory-format"),
    (["resnet18", "-O", "trace_path=t.json"], 2, "profile option 'trace_path' is not for a sweep: a sweep writes no "
                                                 "file per cell"),
    # a profile option given by -O and by the sweep's flag for it with two values (the flag had won silently)
    (["resnet18", "-O", "iterations=3", "--iterations", "5"], 2, "-O iterations=3 and --iterations 5 contradict each "
                                                                 "other: give one of them"),
    (["resnet18", "--warmup", "2", "-O", "warmup=0"], 2, "-O warmup=0 and --warmup 2 contradict each other"),
    (["resnet18", "-O", "compile=false", "--compile"], 2, "-O compile=false and --compile contradict each other"),
    (["resnet18", "-O", "autocast=whole-loop", "-O", "autocast=model-cast"], 2,
     "-O autocast=whole-loop and -O autocast=model-cast contradict each other"),
    # values profile() refuses: before, each cell failed with them, stored as a failure, and the sweep exited 0
    (["resnet18", "-O", "grad_mode=bogus"], 2, "profile option grad_mode: unknown grad_mode 'bogus'; choose one of"),
    (["resnet18", "-O", "iterations=0"], 2, "profile option iterations: iterations must be a whole number >= 1, got 0"),
    (["resnet18", "-O", "warmup=1.5"], 2, "warmup must be a whole number >= 0"),
    (["resnet18", "-O", "autocast=always"], 2, "unknown autocast 'always'"),
    (["resnet18", "-O", "compile=yes"], 2, "compile must be True or False, got 'yes'"),
    (["resnet18", "-O", "on_trace=x"], 2, "profile option on_trace takes a Python function, which a sweep cannot"),
    (["resnet18", "--import", "no_such_module_for_visprof"], 2, "no module named"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, code, message):
    store = tmp_path / "r.db"
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    got, _, err = run_cli(capsys, "sweep", *args, "--store", str(store), "--device", "cpu")
    assert got == code
    assert message in one_error_line(err)
    assert not store.exists()  # a mistake leaves no empty store behind


@pytest.mark.parametrize("make_store, message", [
    (lambda p: p / "missing" / "r.db", "directory"),
    (lambda p: p, "is a directory"),
    (lambda p: _text(p / "notes.txt"), "not an SQLite file"),
])
def test_bad_store_paths(tmp_path, capsys, make_store, message):
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--device", "cpu", "--store", str(make_store(tmp_path)))
    assert code == 2 and message in one_error_line(err)


def _text(path):
    path.write_text("not a database\n" * 4)
    return path


def test_a_store_another_sweep_is_writing_is_refused(tmp_path, capsys):
    path = tmp_path / "busy.db"
    with ResultStore(path, write=True):
        code, _, err = run_cli(capsys, "sweep", "visprof_fake_tiny", "--import", FAKE_MODELS, "--device", "cpu",
                               "--store", str(path))
    assert code == 2 and "another sweep is writing" in one_error_line(err)


@pytest.mark.parametrize("args", [["--device", "cuda"], ["--gpus", "0"]])
def test_asking_for_a_gpu_without_one(tmp_path, capsys, args):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "r.db"), *args)
    assert code == 4 and "no CUDA GPU" in one_error_line(err)


@pytest.mark.parametrize("args", [["-b", "0"], ["-b", "x"], ["--img-size", "4"], ["--precision", "fp8"],
                                  ["--passes", "timing,nope"], ["--timeout", "0"], ["--gpus"], ["--workers", "0"]])
def test_bad_option_values_are_usage_errors(tmp_path, capsys, args):
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "r.db"), *args)
    assert code == 2 and "error:" in err and "Traceback" not in err


def test_export_errors(tmp_path, capsys):
    code, _, err = run_cli(capsys, "export", str(tmp_path / "absent.db"))
    assert code == 2 and "no such store" in one_error_line(err)
    ResultStore(tmp_path / "r.db", write=True).close()
    code, _, err = run_cli(capsys, "export", str(tmp_path / "r.db"), "--format", "parquet")
    assert code == 2 and "-o FILE" in one_error_line(err)
    code, out, err = run_cli(capsys, "export", str(tmp_path / "r.db"), "--format", "timm")
    assert code == 2 and out == "" and "r.db holds no profile results" in one_error_line(err)


def test_export_of_imported_timm_rows_only_is_one_line(tmp_path, capsys):
    store = reference_only_store(tmp_path / "refonly.db")
    code, out, err = run_cli(capsys, "export", str(store))
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert "refonly.db holds no profile results" in line and "1 reference rows come from visprof import-timm" in line


def test_export_takes_the_cpu_rows_by_the_name_it_offers(tmp_path, capsys):
    store = mixed_store(tmp_path / "mixed.db")
    code, _, err = run_cli(capsys, "export", str(store), "-f", "timm")
    assert code == 2 and "(NVIDIA H200, cpu); choose one with --gpu" in one_error_line(err)
    code, out, err = run_cli(capsys, "export", str(store), "-f", "timm", "--gpu", "cpu")
    assert code == 0 and err == "" and len(out.splitlines()) == 2
    code, _, err = run_cli(capsys, "export", str(store), "-f", "timm", "--gpu", "*")
    assert code == 2 and "(NVIDIA H200, cpu)" in one_error_line(err)
    code, out, err = run_cli(capsys, "export", str(store), "-f", "timm", "--gpu", "")
    assert code == 2 and out == "" and "--gpu is empty" in one_error_line(err)


@pytest.mark.parametrize("gpu", ["H200", "h200", "NVIDIA H200", "*H200*"])
def test_export_takes_a_gpu_by_the_names_the_other_commands_take(tmp_path, capsys, gpu):
    # only the pattern '*H200*' had matched: --gpu H200 (as --base h200 takes it) wrote a bare header, exit 0
    store = mixed_store(tmp_path / "mixed.db")
    code, out, err = run_cli(capsys, "export", str(store), "-f", "timm", "--gpu", gpu)
    assert code == 0 and err == "" and out.splitlines()[1].startswith("vit_base_patch16_224,")


def test_an_export_that_matches_nothing_is_a_warning_naming_the_stores_gpus(tmp_path, capsys):
    store = mixed_store(tmp_path / "mixed.db")
    code, out, err = run_cli(capsys, "export", str(store), "-f", "timm", "--gpu", "rtx4090")
    assert code == 0 and len(out.splitlines()) == 1
    assert err == f"visprof: warning: no row of {store} matches --gpu 'rtx4090' (its rows' devices: NVIDIA H200, cpu)\n"


def test_a_batch_list_item_that_is_no_integer_is_worded_as_profile_words_it(tmp_path, capsys):
    _, _, profile_err = run_cli(capsys, "profile", "resnet18", "-b", "abc")
    assert "argument --batch-size/-b: expected an integer, got 'abc'" in profile_err
    for value, item in (("1,abc", "abc"), ("1.5", "1.5")):
        code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "r.db"), "-b", value)
        assert code == 2 and f"argument --batch-size/-b: batch sizes: expected an integer, got {item!r}" in err
        assert "invalid literal" not in err
    assert not (tmp_path / "r.db").exists()


def test_no_models_named_sweeps_the_starter_list(tmp_path, capsys):
    from visprof.sweep.selection import STARTER_MODELS

    store = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "sweep", "--store", str(store), "--device", "cpu", "--limit", "1", "-b", "1",
                             "--img-size", "32", "--iterations", "2", "--warmup", "0", "--passes", "timing")
    assert code == 0, err
    assert f"[visprof] no models named: the starter list ({', '.join(STARTER_MODELS)})" in err
    assert "cells: 1 planned, 0 already in the store, 1 measured, 0 failed" in out
    with open_store(store) as opened:
        assert [r["model"] for r in opened.rows()] == [STARTER_MODELS[0]]


def test_cli_sweep_then_export(tmp_path, capsys):
    store = tmp_path / "r.db"
    summary_json = tmp_path / "summary.json"
    code, out, err = run_cli(capsys, "sweep", "visprof_fake_tiny", "visprof_fake_raises", "--import", FAKE_MODELS,
                             "--device", "cpu", "-b", "4,2", "--iterations", "2", "--warmup", "0",
                             "--store", str(store), "--json", str(summary_json))
    assert code == 0, err
    assert "cells: 4 planned, 0 already in the store, 2 measured, 2 failed" in out
    assert "failed by class: ModelForwardError 2" in out
    assert "[visprof] 1/4 visprof_fake_tiny" in err  # progress lines in a log (no terminal here)
    import json

    assert json.loads(summary_json.read_text())["done"] == 2
    csv_path = tmp_path / "rows.csv"
    code, _, err = run_cli(capsys, "export", str(store), "-o", str(csv_path))
    assert code == 0 and "wrote 2 rows" in err
    lines = csv_path.read_text().splitlines()
    assert len(lines) == 3 and lines[0].startswith("id,run_id,cell_key,model,")
    code, out, _ = run_cli(capsys, "export", str(store), "--failures", "--format", "json")
    assert code == 0 and len(json.loads(out)["failures"]) == 2
    code, out, err = run_cli(capsys, "export", str(store), "--model", "nosuch*")  # a filter that matches nothing
    assert code == 0 and f"visprof: warning: no row of {store} matches --model 'nosuch*'" in err


def test_a_sized_entry_sweeps_that_size_and_no_other(tmp_path, capsys):
    # a published table's rows: one model at two sizes, as MODEL@SIZE lines of a model list
    rows = tmp_path / "rows.txt"
    rows.write_text("visprof_fake_tiny@40\nvisprof_fake_tiny@48  # the other published size\n")
    store = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "sweep", "--model-list", str(rows), "--import", FAKE_MODELS, "--device", "cpu",
                             "-b", "2", "--img-size", "32", "--iterations", "2", "--warmup", "0", "--passes", "timing",
                             "--store", str(store))
    assert code == 0, err
    assert "cells: 2 planned, 0 already in the store, 2 measured, 0 failed" in out
    with open_store(store) as opened:
        assert sorted((r["model"], r["img_height"]) for r in opened.rows()) == [("visprof_fake_tiny", 40),
                                                                             ("visprof_fake_tiny", 48)]


def test_the_time_budget_counts_from_the_commands_start(monkeypatch, capsys, tmp_path):
    """Torch's and timm's imports took seconds before the sweep's clock started: a 14 s budget took
    16-20 s, which a job under a hard time limit pays for. The sweep counts from the command's start."""
    import time

    import visprof.cli.sweep as sweep_cli
    import visprof.sweep.run as run_module
    from visprof.sweep.summary import SweepSummary

    given = {}
    monkeypatch.setattr(run_module, "run_sweep", lambda models, **kwargs: given.update(kwargs) or SweepSummary())
    started = time.monotonic() - 5.0  # 5 s of imports before the command's own code
    monkeypatch.setattr(sweep_cli, "COMMAND_STARTED", started)
    code, _, _ = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "r.db"), "--time-budget", "14")
    assert code == 0 and (given["time_budget_s"], given["started_at"]) == (14.0, started)


def test_a_folder_as_the_model_list_is_said_to_be_one_beside_a_store_in_it(tmp_path, capsys, monkeypatch):
    """The folder was read as a folder of inputs first: "--store mystore.db: it is the --model-list file
    file mystore.db, read from the folder ." for a store the user was resuming."""
    monkeypatch.chdir(tmp_path)
    ResultStore("mystore.db", write=True).close()
    got, _, err = run_cli(capsys, "sweep", "--model-list", ".", "--store", "mystore.db", "--device", "cpu")
    assert got == 2
    assert one_error_line(err) == "visprof: error: --model-list: . is a directory; give a file with one model name a line"


def test_a_runs_recorded_command_is_shell_quoted(monkeypatch, capsys, tmp_path):
    """The store's runs table keeps the command that ran; joined with spaces, `--models "vit_*"` and a
    path with a space in it came back as `vit_*` and two words, which pasted into a shell is another sweep."""
    import visprof.sweep.run as run_module
    from visprof.sweep.summary import SweepSummary

    given = {}
    monkeypatch.setattr(run_module, "run_sweep", lambda models, **kwargs: given.update(kwargs) or SweepSummary())
    store = tmp_path / "my results.db"
    argv = ["sweep", "vit_*", "--store", str(store)]
    monkeypatch.setattr(sys, "argv", ["/usr/bin/visprof", *argv])
    assert run_cli(capsys, *argv)[0] == 0
    assert given["argv"] == f"visprof sweep 'vit_*' --store '{store}'"
    monkeypatch.setattr(sys, "argv", ["train.py", "--name", "a b"])
    assert run_module._default_argv() == "train.py --name 'a b'"
