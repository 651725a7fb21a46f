"""export on a store whose rows are of several devices, and on one with no results to export.

A store can hold GPU rows and CPU rows (a sweep on each; CPU rows have no GPU name). The
name an error offers for the CPU's rows ("cpu") must select them, a pattern matching every
device keeps them, and a filter given empty, or a store holding no results (only imported
timm rows), is one error, not a header with nothing under it. Real stores, through the store
API as a sweep writes them."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from device_stores import mixed_store, reference_only_store
from visprof.base.errors import BadInputError, VisprofWarning
from visprof.store.export import export_store
from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

VIT = Path(__file__).resolve().parents[1] / "data" / "h200-result-vit_base_patch16_224.json"


@pytest.fixture
def mixed(tmp_path):
    return mixed_store(tmp_path / "mixed.db")


@pytest.fixture
def reference_only(tmp_path):
    return reference_only_store(tmp_path / "refonly.db")


def exported(store, fmt="csv", **filters) -> list[dict]:
    out = io.StringIO()
    export_store(store, None, fmt, stdout=out, **filters)
    return list(csv.DictReader(io.StringIO(out.getvalue())))


def test_the_cpu_rows_go_by_the_name_the_error_offers(mixed):
    with pytest.raises(BadInputError, match=r"holds several \(NVIDIA H200, cpu\); choose one with gpu$") as info:
        exported(mixed, "timm")
    offered = str(info.value).split("(")[1].split(")")[0].split(", ")
    rows = {name: exported(mixed, "timm", gpu=name) for name in offered}
    assert [len(r) for r in rows.values()] == [1, 1]
    assert float(rows["cpu"][0]["infer_samples_per_sec"]) == float(rows["NVIDIA H200"][0]["infer_samples_per_sec"])
    (cpu_row,) = exported(mixed, "csv", gpu="cpu")
    assert cpu_row["device_kind"] == "cpu" and cpu_row["gpu_name"] == ""
    (failure,) = exported(mixed, "csv", gpu="cpu", failures=True)
    assert failure["error_class"] == "ModelForwardError"


def test_a_pattern_of_every_device_keeps_the_cpu_rows(mixed):
    assert {r["device_kind"] for r in exported(mixed, "csv", gpu="*")} == {"gpu", "cpu"}
    with pytest.raises(BadInputError, match=r"holds several \(NVIDIA H200, cpu\)"):
        exported(mixed, "timm", gpu="*")  # one device's rows only: refused, not the GPU's rows alone
    with open_store(mixed) as store:
        assert len(list(store.results(gpu="*"))) == 2


def test_a_negated_set_in_a_pattern_means_what_the_shell_means(mixed):
    """SQLite's GLOB negates with [^...]; read as GLOB, '[!c]*' meant 'starts with ! or c': the rows
    the user meant to leave out (the CPU's, here), where failures and sweeps match it as the shell does."""
    assert {r["device_kind"] for r in exported(mixed, "csv", gpu="[!c]*")} == {"gpu"}
    assert {r["device_kind"] for r in exported(mixed, "csv", gpu="[!N]*")} == {"cpu"}
    with open_store(mixed) as store:
        assert len(list(store.results(gpu="[!c]*"))) == 1


@pytest.mark.parametrize("option, value", [("gpu", ""), ("gpu", " "), ("model", "")])
def test_an_empty_filter_is_refused(mixed, tmp_path, option, value):
    with pytest.raises(BadInputError, match=rf"^{option} is empty: give .*, or leave {option} out") as info:
        export_store(mixed, tmp_path / "out.csv", "timm", **{option: value})
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("fmt", ["csv", "timm", "parquet"])
def test_a_store_of_imported_timm_rows_has_no_results_to_export(reference_only, tmp_path, fmt):
    with pytest.raises(BadInputError) as info:
        export_store(reference_only, tmp_path / "out", fmt)
    assert str(info.value) == (f"{reference_only} holds no profile results (run_sweep(..., store={str(reference_only)!r}) "
                               "adds them); its 1 reference rows come from visprof import-timm and are read by "
                               "compare and calibrate (fmt='json' exports them)")
    assert not (tmp_path / "out").exists()
    # the json export holds the references, and counts them (it had said "wrote 0 rows")
    assert export_store(reference_only, tmp_path / "all.json", "json") == 1
    assert len(json.loads((tmp_path / "all.json").read_text())["references"]) == 1


def test_an_empty_store_has_no_results_to_export(tmp_path):
    open_store(tmp_path / "empty.db", write=True).close()
    with pytest.raises(BadInputError, match=r"empty\.db holds no profile results \(run_sweep\(\.\.\., store=.*\) adds them\)$"):
        exported(tmp_path / "empty.db", "timm")


def test_timm_format_has_one_row_per_model_and_size_and_says_how_to_choose(tmp_path):
    """A store swept at -b 64,256 wrote two rows for one (model, infer_img_size), the key timm's CSVs
    join on, with nothing in timm's columns to tell them apart."""
    path = tmp_path / "two.db"
    doc = json.loads(VIT.read_text())
    with open_store(path, write=True) as store:
        for cell, batch in zip(SweepPlan(["vit_base_patch16_224"], "cuda", batch_sizes=[64, 256]).cells(), (64, 256)):
            store.add_result(cell, {**doc, "model": {**doc["model"], "batch_size": batch}})
    with pytest.raises(BadInputError, match=r"has 2 for vit_base_patch16_224 at 224 \(batch_size 256, 64\); choose "
                                            r"with batch_size or precision, or export fmt='csv'"):
        exported(path, "timm")
    (row,) = exported(path, "timm", batch_size=256)
    assert row["infer_batch_size"] == "256"
    assert len(exported(path, "csv")) == 2
    with pytest.raises(BadInputError, match=r"^batch_size and precision choose the rows of fmt='timm'"):
        exported(path, "csv", batch_size=256)


def test_what_no_option_chooses_is_said_apart_from_what_the_options_choose(tmp_path):
    # the grad mode had been listed among what to "choose with batch_size or precision"
    path = tmp_path / "two.db"
    doc = json.loads(VIT.read_text())
    with open_store(path, write=True) as store:
        for cell, batch, mode in zip(SweepPlan(["vit_base_patch16_224"], "cuda", batch_sizes=[64, 256]).cells(), (64, 256),
                                     ("inference_mode", "no_grad")):
            store.add_result(cell, {**doc, "model": {**doc["model"], "batch_size": batch},
                                    "config": {**doc["config"], "grad_mode": mode}})
    with pytest.raises(BadInputError, match=r"at 224 \(batch_size 256, 64; they also differ in grad_mode inference_mode, "
                                            r"no_grad\); choose with batch_size or precision"):
        exported(path, "timm")


def test_timm_format_writes_the_newest_of_rows_no_option_can_choose_between(tmp_path):
    """Rows of one model, size, batch and precision under two grad modes (a sweep run again with
    -O grad_mode=...) were refused, and the message offered --batch-size, --precision and --model,
    none of which could tell them apart: no such store could be exported."""
    path = tmp_path / "again.db"
    doc = json.loads(VIT.read_text())
    with open_store(path, write=True) as store:
        for options, latency in (({"grad_mode": "no_grad"}, 9.0), ({}, 8.0)):
            [cell] = SweepPlan(["vit_base_patch16_224"], "cuda", options=options).cells()
            timing = {**doc["timing"], "samples_per_s": 64 / latency * 1e3}
            store.add_result(cell, {**doc, "timing": timing})
    with pytest.warns(VisprofWarning, match=r"1 model\(s\) have several rows at one size .* the newest of each is "
                                            r"written; fmt='csv' keeps every row"):
        (row,) = exported(path, "timm")
    assert float(row["infer_samples_per_sec"]) == pytest.approx(8000.0)  # the newest, grad mode inference_mode


def test_timm_format_batch_size_matches_the_batch_asked_for_too(tmp_path):
    """-b 256 of a cell asked at 256 that ran at 64 (out of memory) wrote an empty file."""
    path = tmp_path / "decayed.db"
    doc = json.loads(VIT.read_text())
    with open_store(path, write=True) as store:
        [cell] = SweepPlan(["vit_base_patch16_224"], "cuda", batch_sizes=[256]).cells()
        store.add_result(cell, {**doc, "model": {**doc["model"], "batch_size": 64}})
    (row,) = exported(path, "timm", batch_size=256)
    assert row["infer_batch_size"] == "64"  # the batch that ran, as timm's CSVs say it
    assert exported(path, "timm", batch_size=64) == [row]


def tagged_store(path: Path) -> Path:
    """ViT-B/16 stored under its tagged name, as a sweep of vit_base_patch16_224.augreg2_in21k_ft_in1k
    stores it, and a ResNet-50 under its bare name."""
    doc = json.loads(VIT.read_text())
    with open_store(path, write=True) as store:
        store.add_result(SweepPlan(["vit_base_patch16_224.augreg2_in21k_ft_in1k"], "cuda").cells()[0], doc)
        store.add_result(SweepPlan(["resnet50"], "cuda").cells()[0], {**doc, "model": {**doc["model"], "name": "resnet50"}})
    return path


def test_a_model_filter_takes_a_name_without_its_tag_a_comma_list_and_several_patterns(tmp_path):
    """export --model vit_base_patch16_224 found no row of the tagged name that a sweep takes for the
    same model; a comma list matched nothing, and a second --model replaced the first."""
    store = tagged_store(tmp_path / "tagged.db")
    models = lambda **f: sorted(r["model"] for r in exported(store, "csv", **f))  # noqa: E731
    vit = "vit_base_patch16_224.augreg2_in21k_ft_in1k"
    assert models(model="vit_base_patch16_224") == [vit]
    assert models(model="vit_base_patch16_224.augreg2_in21k_ft_in1k") == [vit]
    assert models(model="vit_base_patch16_224.other_tag") == []
    assert models(model="resnet50, vit_base_patch16_224") == ["resnet50", vit]
    assert models(model=["resnet5*", "vit_base_patch16_224"]) == ["resnet50", vit]
    assert models(model="resnet") == []  # a name is no prefix
    with open_store(store) as reader:
        assert [r["model"] for r in reader.rows(model="vit_base_patch16_224")] == [vit]
        # whatever the case, as sweep and profile take a name (RESNET50 had matched none)
        assert [r["model"] for r in reader.rows(model="RESNET5*")] == ["resnet50"]
    assert models(model="ResNet50") == ["resnet50"] and models(model="VIT_BASE_PATCH16_224") == [vit]


def test_export_cli_takes_cpu_in_any_case_and_names_the_cpu_rows_when_nothing_matches(mixed, capsys):
    from visprof.cli.app import main

    assert main(["export", str(mixed), "--format", "timm", "--gpu", "CPU"]) == 0
    assert capsys.readouterr().out.count("vit_base_patch16_224") == 1
    assert main(["export", str(mixed), "--format", "csv", "--gpu", "rtx4090"]) == 0
    err = capsys.readouterr().err
    assert "no row of" in err and "(its rows' devices: NVIDIA H200, cpu)" in err
    assert main(["export", str(mixed), "--format", "csv", "--model", "nothing", "--model", "vit_*"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["model"] for r in rows] == ["vit_base_patch16_224"] * 2  # the H200's row and the CPU's


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_filter_matching_nothing_leaves_an_earlier_export_as_it_was(mixed, tmp_path, capsys, fmt):
    """export --model TYPO -o a.csv warned and replaced a 74-row export with its header."""
    from visprof.cli.app import main

    out = tmp_path / f"a.{fmt}"
    assert main(["export", str(mixed), "--format", fmt, "-o", str(out)]) == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert main(["export", str(mixed), "--format", fmt, "--model", "vit_bsae*", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert out.read_bytes() == before
    assert f"matches --model 'vit_bsae*'; {out} was left as it was" in err and "wrote" not in err
    fresh = tmp_path / f"new.{fmt}"  # no earlier file: the empty export is written, as asked
    assert main(["export", str(mixed), "--format", fmt, "--model", "vit_bsae*", "-o", str(fresh)]) == 0
    assert fresh.exists() and "wrote 0 rows" in capsys.readouterr().err
