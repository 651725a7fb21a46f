"""visprof.base.outputs.atomic_write_all: a set of files that belong together (a report and its
figures) is written whole or not at all, whichever target fails and when. Real files, real
failing targets: a folder of /proc, which takes no new files (the temporary files fail), and a
target that is a folder (its rename fails after the other files were renamed)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from visprof.base.errors import OutputWriteError
from visprof.base.outputs import atomic_write_all


def listing(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (temporary and kept-aside files included) and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_all_files_are_written_text_and_bytes_and_folders_made(tmp_path):
    atomic_write_all({tmp_path / "r.html": "<html>é</html>\n", tmp_path / "png" / "a" / "x.png": b"\x89PNG"},
                     make_folders=True)
    assert listing(tmp_path) == {"r.html": "<html>é</html>\n".encode(), "png/a/x.png": b"\x89PNG"}
    assert (os.stat(tmp_path / "r.html").st_mode & 0o777) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_a_target_that_cannot_be_created_leaves_every_file_as_it_was(tmp_path):
    (tmp_path / "r.html").write_text("old report")
    with pytest.raises(OutputWriteError, match=r"could not write /proc/.*x\.png"):
        atomic_write_all({tmp_path / "r.html": "new report", tmp_path / "new.png": b"new",
                          Path("/proc/self/x.png"): b"never"})
    assert listing(tmp_path) == {"r.html": b"old report"}  # no new file, no temporary file left


def test_a_rename_that_fails_puts_back_the_files_already_renamed(tmp_path):
    (tmp_path / "r.html").write_text("old report")
    blocker = tmp_path / "z.png"  # renaming a file over a folder that holds a file fails
    blocker.mkdir()
    (blocker / "keep").write_text("kept")
    with pytest.raises(OutputWriteError, match=r"z\.png: .*the files written with it were put back"):
        atomic_write_all({tmp_path / "r.html": "new report", tmp_path / "a.png": b"new", blocker: b"png"})
    assert listing(tmp_path) == {"r.html": b"old report", "z.png/keep": b"kept"}


def test_folders_it_made_are_removed_again_on_failure(tmp_path):
    with pytest.raises(OutputWriteError):
        atomic_write_all({tmp_path / "png" / "deep" / "a.png": b"a", Path("/proc/self/x.png"): b"never"},
                         make_folders=True)
    assert list(tmp_path.iterdir()) == []
