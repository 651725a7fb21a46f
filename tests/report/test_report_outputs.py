"""build_report, the Python API: every target is checked before any work (none may be a file the
report was read from), and the HTML and its PNGs are written all together or not at all.
Real files and real failing targets (/proc, a folder where a PNG goes)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from visprof.analysis import sources
from visprof.base.errors import BadInputError
from visprof.report.html import FIGURES, build_report
from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

DATA = Path(__file__).resolve().parents[1] / "data"
VIT = DATA / "h200-result-vit_base_patch16_224.json"
CSV_4090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def work(tmp_path):
    shutil.copy(VIT, tmp_path / "vit.json")
    return tmp_path


def test_a_report_is_written_with_its_pngs(work):
    written = build_report(sources.load([work / "vit.json"]), work / "r.html", png_dir=work / "png" / "new")
    assert written and all(p.read_bytes().startswith(b"\x89PNG") for p in written)
    assert {p.stem for p in written} <= set(FIGURES)
    assert (work / "r.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_the_report_over_its_own_profile_is_refused(work, how):
    target = {"same": work / "vit.json", "symlink": work / "link.json", "hardlink": work / "hard.json"}[how]
    if how == "symlink":
        target.symlink_to(work / "vit.json")
    elif how == "hardlink":
        os.link(work / "vit.json", target)
    loaded = sources.load([work / "vit.json"])
    before = snapshot(work)
    with pytest.raises(BadInputError, match=r"^output .*overwrite that input"):
        build_report(loaded, target)
    assert snapshot(work) == before


def test_the_report_over_a_profile_in_an_input_folder_or_a_store_side_file_is_refused(work):
    (work / "results").mkdir()
    shutil.move(work / "vit.json", work / "results" / "vit.json")
    with open_store(work / "s.db", write=True) as store:
        store.add_result(SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0], json.loads(VIT.read_text()))
    loaded = sources.load([work / "results", work / "s.db"])
    before = snapshot(work)
    with pytest.raises(BadInputError, match=r"it is the input file .*vit\.json, read from the folder"):
        build_report(loaded, work / "results" / "vit.json")
    with pytest.raises(BadInputError, match=r"SQLite's -wal file of the input"):
        build_report(loaded, work / "s.db-wal")
    assert snapshot(work) == before


def test_a_png_over_an_input_is_refused_and_no_report_written(work):
    shutil.move(work / "vit.json", work / "categories.png")  # a profile, whatever its name
    loaded = sources.load([work / "categories.png"])
    before = snapshot(work)
    with pytest.raises(BadInputError, match=r"^png_dir categories .*overwrite that input"):
        build_report(loaded, work / "r.html", png_dir=work)
    assert snapshot(work) == before


def test_one_path_for_the_report_and_its_png_folder_is_refused_before_any_drawing(work):
    """report -o X --png-dir X drew every figure, made X a folder, then failed to write X (exit 5,
    'the previous file is unchanged' of a file that never was)."""
    loaded = sources.load([work / "vit.json"])
    with pytest.raises(BadInputError, match=r"^output and png_dir name the same path"):
        build_report(loaded, work / "r.html", png_dir=work / "." / "r.html")
    assert sorted(p.name for p in work.iterdir()) == ["vit.json"]


def test_a_png_folder_that_cannot_be_made_leaves_no_report(work):
    # Was: report.html written, then FileNotFoundError from the PNGs.
    loaded = sources.load([work / "vit.json"])
    with pytest.raises(BadInputError, match=r"^png_dir: cannot create /proc/visprof-x"):
        build_report(loaded, work / "r.html", png_dir="/proc/visprof-x")
    assert sorted(p.name for p in work.iterdir()) == ["vit.json"]


def test_a_png_target_that_is_a_folder_leaves_the_old_report_and_no_png(work):
    (work / "r.html").write_text("the previous report")
    (work / "png").mkdir()
    (work / "png" / "roofline.png").mkdir()  # where the roofline figure would go
    loaded = sources.load([work / "vit.json"])
    before = snapshot(work)
    with pytest.raises(BadInputError, match=r"^png_dir roofline: .*roofline\.png is a directory"):
        build_report(loaded, work / "r.html", png_dir=work / "png")
    assert snapshot(work) == before  # the old report, no PNG, no temporary file
    assert [p.name for p in (work / "png").iterdir()] == ["roofline.png"]


def test_a_report_and_pngs_over_one_file_are_refused(work):
    loaded = sources.load([work / "vit.json"])
    (work / "png").mkdir()
    with pytest.raises(BadInputError, match=r"name the same file"):
        build_report(loaded, work / "png" / "categories.png", png_dir=work / "png")
    assert list((work / "png").iterdir()) == []


def test_what_is_not_loaded_measurements_and_no_output_file_are_refused_in_one_line(work, monkeypatch):
    """A ProfileResult or a list of paths had raised an AttributeError; output=None drew every figure, then
    raised a TypeError from pathlib."""
    from visprof.report import html
    from visprof.result import ProfileResult

    said = r"^build_report takes what visprof\.analysis\.sources\.load\(paths\) returns, got a "
    for given, what in ((ProfileResult.load(work / "vit.json"), "ProfileResult"),
                        ([work / "vit.json"], r"list \(sources\.load\(paths\) reads the files\)"),
                        (str(work / "vit.json"), r"str \(sources\.load\(paths\) reads the files\)")):
        with pytest.raises(BadInputError, match=said + what + "$"):
            build_report(given, work / "r.html")
    monkeypatch.setattr(html, "render_figures", lambda *args: pytest.fail("drew figures for a report with no file"))
    with pytest.raises(BadInputError, match="^output: the report needs a file to be written to, got None$"):
        build_report(sources.load([work / "vit.json"]), None)
    assert sorted(p.name for p in work.iterdir()) == ["vit.json"]
