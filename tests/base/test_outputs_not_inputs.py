"""visprof.base.outputs: an output never names an input (check_not_an_input, check_output_paths'
``inputs``), and output folders are checked before any work (check_output_dir). Real files."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from visprof.base.errors import BadInputError
from visprof.base.output_paths import check_not_an_input, check_output_dir, check_output_paths, sqlite_side_files


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.db").write_bytes(b"SQLite format 3\x00" + bytes(84))
    (tmp_path / "r.json").write_text("{}")
    return tmp_path


@pytest.mark.parametrize("name", ["r.json", "./r.json", "sub/../r.json", "{abs}/r.json", "link.json", "hard.json"])
def test_every_name_of_an_input_file_is_refused(here, name):
    (here / "sub").mkdir()
    (here / "link.json").symlink_to("r.json")
    os.link(here / "r.json", here / "hard.json")
    with pytest.raises(BadInputError, match=r"--json .*: it .*the input.*overwrite that input"):
        check_output_paths({"--json": name.replace("{abs}", str(here))}, inputs={"input": ["r.json"]})
    assert (here / "r.json").read_text() == "{}"


def test_a_link_is_named_as_given(here):
    (here / "link.json").symlink_to("r.json")
    with pytest.raises(BadInputError, match=r"^--json link\.json: it is the input r\.json;"):
        check_output_paths({"--json": "link.json"}, inputs={"input": "r.json"})


@pytest.mark.parametrize("side", ["-wal", "-shm", "-journal"])
def test_the_side_files_of_a_store_are_the_store(here, side):
    with pytest.raises(BadInputError, match=rf"SQLite's {side} file of the store s\.db"):
        check_not_an_input({"--csv": Path(f"s.db{side}")}, {"store": "s.db"})
    # present, and reached through a hard link
    (here / f"s.db{side}").write_bytes(b"x")
    os.link(here / f"s.db{side}", here / "other")
    with pytest.raises(BadInputError, match=side):
        check_not_an_input({"--csv": Path("other")}, {"store": "s.db"})
    # the other way round: an input that is a side file of the store written
    with pytest.raises(BadInputError, match=rf"s\.db{side} is SQLite's {side} file of it"):
        check_not_an_input({"--store": Path("s.db")}, {"CSV": [f"s.db{side}"]})


def test_side_file_names_of_a_file_that_is_no_store_are_free(here):
    check_not_an_input({"--csv": Path("r.json-wal")}, {"input": "r.json"})
    assert [p.name for p in sqlite_side_files("x/s.db")] == ["s.db-wal", "s.db-shm", "s.db-journal"]


def test_two_outputs_one_the_side_file_or_a_hard_link_of_the_other(here):
    with pytest.raises(BadInputError, match=r"--json s\.db-wal is SQLite's -wal file of --store s\.db"):
        check_output_paths({"--store": "s.db", "--json": "s.db-wal"}, sqlite=("--store",))
    os.link(here / "r.json", here / "hard.json")
    with pytest.raises(BadInputError, match="are the same file"):
        check_output_paths({"--json": "r.json", "--csv": "hard.json"})


def test_a_folder_holds_its_matching_files_as_inputs(here):
    results = here / "results"
    (results / "deep").mkdir(parents=True)
    (results / "deep" / "a.json").write_text("{}")
    (results / "old-report.html").write_text("<html>")
    with pytest.raises(BadInputError, match=r"input file results/deep/a\.json, read from the folder results"):
        check_output_paths({"--json": "results/deep/a.json"}, inputs={"input": ["results"]}, folder_files="*.json")
    # files the command does not read from the folder, and new files, may be written there
    check_output_paths({"-o": "results/old-report.html", "--json": "results/new.json"}, inputs={"input": ["results"]},
                       folder_files="*.json")
    # without a pattern a folder holds every file
    with pytest.raises(BadInputError, match="old-report.html"):
        check_not_an_input({"-o": Path("results/old-report.html")}, {"input": "results"})


def test_inputs_not_given_or_missing_are_no_trouble(here):
    assert set(check_output_paths({"--json": "out.json", "--csv": None},
                                  inputs={"--categories file": None, "input": ["missing.json", None]})) == {"--json"}


def test_an_output_folder_is_checked_and_nothing_is_left_behind(here):
    assert check_output_dir("figs/png", "--png-dir") == Path("figs/png")
    assert not (here / "figs").exists()  # only checked: the report creates it
    (here / "figs").mkdir()
    check_output_dir("figs")
    assert list((here / "figs").iterdir()) == []
    with pytest.raises(BadInputError, match="--png-dir: r.json is not a directory"):
        check_output_dir("r.json", "--png-dir")
    with pytest.raises(BadInputError, match="--png-dir: cannot create r.json/figs: r.json is not a directory"):
        check_output_dir("r.json/figs", "--png-dir")
    with pytest.raises(BadInputError, match="cannot create /proc/visprof-figs in directory /proc"):
        check_output_dir("/proc/visprof-figs", "--png-dir")
    assert sorted(p.name for p in here.iterdir()) == ["figs", "r.json", "s.db"]


def test_an_output_over_an_sqlite_file_is_refused_unless_it_is_a_store_path(tmp_path):
    """export -o other.db (or --json) replaced another results store, weeks of sweeps, with a CSV
    without a word. Only a path meant to be SQLite (a sweep's --store) may name one."""
    import sqlite3

    store = tmp_path / "other.db"
    sqlite3.connect(store).execute("CREATE TABLE t (x)").connection.close()
    before = store.read_bytes()
    with pytest.raises(BadInputError, match=r"^--output .*other.db is an SQLite file \(a results store\?\), which this "
                                            r"output would replace"):
        check_output_paths({"--output": store})
    assert check_output_paths({"--store": store}, sqlite=("--store",))["--store"] == store
    assert store.read_bytes() == before
    text = tmp_path / "old.csv"
    text.write_text("a,b\n")
    assert check_output_paths({"--output": text})["--output"] == text  # any other file is replaced as before
