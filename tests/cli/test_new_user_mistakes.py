"""Mistakes a new user made on the CPU that ended in a traceback, or were taken without a word
and written into a store. Real files, real ``python -m visprof`` processes: each asserts the
exit code, the one error line, and what is on disk afterwards."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from cli_process import refused, visprof
from recorded_results import recorded_result
from visprof.base.errors import BadInputError
from visprof.sweep.run import run_sweep

CSV_4090 = Path(__file__).resolve().parents[1] / "data" / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"
CSV_3090 = CSV_4090.with_name(CSV_4090.name.replace("rtx4090", "rtx3090"))





def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def work(tmp_path):
    for csv in (CSV_3090, CSV_4090):
        shutil.copy(csv, tmp_path / csv.name)
    return tmp_path


@pytest.mark.parametrize("content, words", [
    (bytes(range(256)) * 8, ("GPU spec file", "gpus.toml", "binary file")),  # was: UnicodeDecodeError traceback
    (b"\x8f\x9a[[gpus]]\n", ("GPU spec file", "not UTF-8 text")),
])
def test_a_gpu_spec_file_of_random_bytes_is_refused(work, content, words):
    (work / "gpus.toml").write_bytes(content)
    before = snapshot(work)
    proc = visprof(work, "compare", CSV_3090.name, CSV_4090.name, "--gpus", "gpus.toml", "--json", "out.json")
    refused(proc, *words)
    assert snapshot(work) == before  # no out.json


def test_an_unknown_precision_is_refused_before_the_store_is_made_or_changed(work):
    # Was: exit 0, and 60 reference rows stored with precision "bogus".
    refused(visprof(work, "import-timm", CSV_4090.name, "--store", "new.db", "--precision", "bogus"),
             "unknown precision 'bogus'", "choose from")
    assert not (work / "new.db").exists()
    assert visprof(work, "import-timm", CSV_3090.name, "--store", "s.db").returncode == 0
    before = snapshot(work)
    refused(visprof(work, "import-timm", CSV_4090.name, "--store", "s.db", "--precision", "fp-16"),
             "unknown precision 'fp-16'")
    assert snapshot(work) == before


def test_a_csv_whose_name_names_no_gpu_is_said_to_name_none(work):
    """my.csv was refused as "GPU 'my' (from the file name) is not in the GPU spec table", a GPU
    the user never named, and sent to FILE@GPU, which then failed on the precision (the name says
    none either); a name of timm's pattern without the GPU said "no GPU in its name is not in ..."."""
    shutil.copy(CSV_4090, work / "my.csv")
    line = refused(visprof(work, "compare", "my.csv", CSV_3090.name),
                   "my.csv: its file name names no known GPU and no precision (visprof reads both from a timm "
                   "benchmark CSV's name, e.g. benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv): rename it so, or add "
                   "it to a store with visprof import-timm my.csv --gpu GPU --precision P --store STORE", "rtx4090, ")
    assert "'my'" not in line
    (work / CSV_4090.name).rename(work / "benchmark-infer-amp-nchw-pt240-cu124.csv")
    refused(visprof(work, "compare", "benchmark-infer-amp-nchw-pt240-cu124.csv", CSV_3090.name),
            "benchmark-infer-amp-nchw-pt240-cu124.csv: its file name names no known GPU (visprof reads it from the end "
            "of a timm benchmark CSV's name", "; name it as FILE@GPU with a known GPU (h200, ")
    # with --precision given, only the GPU is missing: the message had asked for --precision too
    line = refused(visprof(work, "import-timm", "my.csv", "--precision", "amp", "--store", "s.db"),
                   "my.csv: its file name names no known GPU (visprof reads it from the end", "give --gpu NAME with a known GPU")
    assert "--precision P" not in line
    assert visprof(work, "import-timm", "my.csv", "--gpu", "rtx4090", "--precision", "amp", "--store",
                   "s.db").returncode == 0  # the way the message gives


@pytest.mark.parametrize("command", [("predict", "--from", "my.csv", "--to", "rtx4090"),
                                     ("calibrate", "--base", "rtx3090", "--target", "rtx4090", "my.csv")])
def test_a_command_that_needs_profiles_says_a_csv_holds_none_before_its_name_is_read(work, command):
    """predict --from my.csv said the file name named no GPU it knew: no GPU name would give it a profile."""
    shutil.copy(CSV_4090, work / "my.csv")
    refused(visprof(work, *command), f"no profile results in the inputs ({command[0]} ",
            "; my.csv is a timm benchmark CSV: published throughputs, not profiles")
    (work / "other.csv").write_text("model,top1\nresnet50,80.1\n")  # a CSV of another kind is said to be one
    refused(visprof(work, *[("other.csv" if a == "my.csv" else a) for a in command]), "other.csv", "timm")


def test_predict_passes_over_a_csv_beside_profiles_and_says_so(work):
    """predict --from my.csv vit.json refused my.csv for its file name, though predict reads no CSV."""
    shutil.copy(CSV_4090, work / "my.csv")
    recorded_result("deit_small_patch16_224").to_json(work / "deit.json")  # recorded H200 kernels, with roofline groups
    proc = visprof(work, "predict", "--from", "my.csv", "deit.json", "--to", "rtx4090", "--json", "p.json")
    assert proc.returncode == 0, proc.stderr
    assert "note: my.csv not read: predict reads profiles, and a CSV holds none" in proc.stderr
    assert "no known GPU" not in proc.stderr
    assert [p["model"] for p in json.loads((work / "p.json").read_text())["predictions"]] == ["deit_small_patch16_224"]


def test_a_csv_visprof_export_wrote_is_named_for_what_it_is(work):
    """A store's rows exported as CSV, given where a timm CSV is read, were "not a timm inference
    benchmark CSV" with a header cut mid-word; the message now says what the file is and what to give."""
    (work / "mine.csv").write_text("id,run_id,cell_key,model,batch_size_requested,visprof_version\n1,1,k,resnet50,64,0.1\n")
    for command in (("predict", "--from", "mine.csv", "--to", "rtx4090"), ("compare", "mine.csv", CSV_3090.name),
                    ("import-timm", "mine.csv", "--store", "s.db")):
        refused(visprof(work, *command), "mine.csv: a results store's rows from visprof export --format csv, not a "
                "timm benchmark CSV; compare, predict and calibrate read the store itself")
    assert not (work / "s.db").exists()


@pytest.mark.parametrize("option", ["--timeout", "--time-budget"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_sweep_time_that_is_not_a_finite_number_is_refused(work, option, value):
    # Was, for --timeout nan: a store made, a worker started, then "ValueError: cannot convert float NaN to
    # integer" from the wait loop; --time-budget nan ran with no budget at all.
    proc = visprof(work, "sweep", "mobilenetv3_small_050", "--device", "cpu", "--store", "s.db", f"{option}={value}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"argument {option}: must be a positive, finite number of seconds, got {value}" in proc.stderr
    assert not (work / "s.db").exists()


@pytest.mark.parametrize("keyword", ["timeout_s", "time_budget_s"])
def test_the_sweep_api_refuses_a_time_that_is_not_finite(tmp_path, keyword):
    for value in (float("nan"), float("inf")):
        with pytest.raises(BadInputError, match="must be a positive, finite number of seconds"):
            run_sweep(["mobilenetv3_small_050"], store=tmp_path / "s.db", device="cpu", progress=False,
                      **{keyword: value})
    assert list(tmp_path.iterdir()) == []


def test_contradicting_places_to_run_are_refused_before_the_store_is_made(work):
    # Was: `--gpus 0 --device cpu` ran on the CPU without a word.
    refused(visprof(work, "sweep", "mobilenetv3_small_050", "--device", "cpu", "--gpus", "0", "--store", "s.db"),
            "--gpus 0", "--device cpu")
    assert not (work / "s.db").exists()
    # run_sweep names its own keywords (the command line's flags are for the command line)
    for options, word in ((dict(ray="local", workers=2), "workers"), (dict(ray="local", gpus="0,1"), "gpus")):
        with pytest.raises(BadInputError, match=f"^ray places each cell on the cluster itself: leave out {word}$"):
            run_sweep(["mobilenetv3_small_050"], store=work / "r.db", progress=False, **options)
    assert not (work / "r.db").exists()


def test_a_gzipped_result_visprof_wrote_is_read_by_the_analysis_commands(work):
    # `visprof profile --json r.json.gz` (and ProfileResult.to_json) gzip by the name; predict, compare and
    # report read it as text and said "not a visprof profile result (UnicodeDecodeError ...)".
    from recorded_results import recorded_result

    recorded_result("deit_small_patch16_224").to_json(work / "g.json.gz")
    assert (work / "g.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    before = snapshot(work)
    proc = visprof(work, "predict", "--from", "g.json.gz", "--to", "rtx4090", "--json", "p.json")
    assert proc.returncode == 0, proc.stderr
    assert "deit_small_patch16_224" in proc.stdout and (work / "p.json").is_file()
    proc = visprof(work, "report", "g.json.gz", CSV_4090.name, "-o", "r.html")
    assert proc.returncode == 0, proc.stderr
    assert "deit_small_patch16_224" in (work / "r.html").read_text()
    assert {k: v for k, v in snapshot(work).items() if k in before} == before


def test_a_result_file_of_random_bytes_is_named_as_such(work):
    (work / "r.json").write_bytes(bytes(range(256)) * 4)
    line = refused(visprof(work, "compare", "r.json", CSV_4090.name), "r.json", "not a visprof profile result",
                    "binary file")
    assert "UnicodeDecodeError" not in line
