"""File names near and past the file system's limit (255 bytes a name): a legal name works, output
and input alike, and one too long is one line, before any work, never a traceback."""
from __future__ import annotations

import errno
from pathlib import Path

import pytest

from cli_in_process import run_cli
from visprof.result import ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"
RESULT = DATA / "h100-result-vit_base_patch16_224.json"


def long_name(tmp_path: Path, size: int, suffix: str) -> Path:
    return tmp_path / ("n" * (size - len(suffix)) + suffix)


@pytest.mark.parametrize("size", [236, 255])
def test_a_legal_name_of_up_to_255_bytes_is_written(tmp_path, capsys, size):
    # Its temporary files (.NAME.<hex>.probe, .NAME.<hex>.partial) took 20-22 bytes more: names of
    # 236-255 bytes were refused as "cannot create files in directory", 234-235 failed after the run.
    out = long_name(tmp_path, size, ".json")
    code, _, err = run_cli(capsys, "diff", str(RESULT), str(RESULT), "--json", str(out))
    assert (code, err) == (0, "") and out.is_file() and [p.name for p in tmp_path.iterdir()] == [out.name]
    saved = long_name(tmp_path, size, ".result.json")
    for _ in range(2):  # the Python API writes, then replaces, it the same way
        ProfileResult.load(RESULT).to_json(saved)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, saved.name])


def test_a_name_past_255_bytes_is_one_line_as_output_and_as_input(tmp_path, capsys):
    too_long = long_name(tmp_path, 300, ".json")
    code, _, err = run_cli(capsys, "diff", str(RESULT), str(RESULT), "--json", str(too_long))
    assert code == 2 and err == ("visprof: error: --json: the name nnnnnnnnnnnnnnnnnnnnnnnn...nnnnnnn.json is 300 "
                                 "bytes long; a file system takes at most 255\n")
    code, _, err = run_cli(capsys, "diff", str(too_long), str(RESULT))
    assert code == 2 and err.startswith("visprof: error: result file: the name nnnn") and err.count("\n") == 1


def test_a_too_long_path_met_first_by_a_library_is_one_line(tmp_path, capsys):
    # an input SQLite opens itself (the export, a store): ENAMETOOLONG from deep inside is the user's path
    too_long = long_name(tmp_path, 300, ".sqlite")
    code, _, err = run_cli(capsys, "nsys", "import", str(too_long))
    assert code == 2 and err.startswith("visprof: error: a path is too long for the file system: ")
    assert err.count("\n") == 1 and len(err) < 200


def test_a_store_name_leaves_room_for_sqlites_side_files(tmp_path, capsys):
    """A store named with 238-247 bytes failed to be made (its temporary file took 18 bytes more);
    one of 248-255 bytes, a legal name, has a -journal of 256-263, and writing to it failed as
    "unable to open database file"; reading one that exists raised a traceback from Python."""
    from visprof.sweep import open_store

    csv = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
    fits = long_name(tmp_path, 247, ".db")
    code, out, err = run_cli(capsys, "import-timm", str(csv), "--store", str(fits))
    assert code == 0 and err == "" and " new, 0 already in " in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [fits.name]  # no temporary file left beside it

    too_long = long_name(tmp_path, 248, ".db")
    code, _, err = run_cli(capsys, "import-timm", str(csv), "--store", str(too_long))
    assert code == 2 and err == ("visprof: error: --store: the name nnnnnnnnnnnnnnnnnnnnnnnn...nnnnnnnnn.db is 248 "
                                 "bytes long; files named after it have up to 8 bytes more, and a file system takes "
                                 "at most 255: give a name of at most 247 bytes\n")
    assert not too_long.exists()

    longest = long_name(tmp_path, 255, ".db")  # made elsewhere under a shorter name, then renamed
    fits.rename(longest)
    with open_store(longest) as store:
        assert len(store.references()) > 0
    code, _, err = run_cli(capsys, "export", str(longest), "--format", "json")
    assert code == 0, err


def test_other_os_errors_are_still_bugs_with_their_traceback(monkeypatch):
    from visprof.cli import app

    def broken(args):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(app, "build_parser", lambda: _parser_with(broken))
    with pytest.raises(OSError):
        app.main(["x"])


def _parser_with(handler):
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    parser.set_defaults(handler=handler)
    return parser
