"""visprof.base.outputs.atomic_write_all: a set of files that belong together (a report and its
figures) is written whole or not at all, whichever target fails and when. Real files, real
failing targets: a folder of /proc, which takes no new files (the temporary files fail), and a
target that is a folder (its rename fails after the other files were renamed)."""
from __future__ import annotations

import os
import re
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


def test_a_rename_that_fails_puts_back_the_first_of_two_files(tmp_path):
    """Two files (a report and its figure): when the second rename fails, the report already renamed
    must get its previous file back. Without it kept aside, the put-back would delete the report, and
    the user would lose the old one and the new one, told they "were put back as they were"."""
    (tmp_path / "r.html").write_text("old report")
    blocker = tmp_path / "z.png"  # renaming a file over a folder that holds a file fails
    blocker.mkdir()
    (blocker / "keep").write_text("kept")
    with pytest.raises(OutputWriteError) as error:
        atomic_write_all({tmp_path / "r.html": "new report", blocker: b"png"})
    assert listing(tmp_path) == {"r.html": b"old report", "z.png/keep": b"kept"}
    assert re.search(r"z\.png: .*the files written with it were put back", str(error.value))


def test_every_file_is_synced_to_disk_before_any_is_renamed(tmp_path, monkeypatch):
    """A file renamed over its target before its data reached the disk can be empty or truncated
    after a crash or power loss, while the run said it was written."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        real_fsync(fd)
        events.append(("fsync", os.fstat(fd).st_ino, os.fstat(fd).st_size))

    def replace(src, dst, *args, **kwargs):
        events.append(("replace", os.stat(src).st_ino, os.stat(src).st_size))
        real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write_all({tmp_path / "r.html": "report", tmp_path / "a.png": b"\x89PNG\r\n"})
    assert listing(tmp_path) == {"r.html": b"report", "a.png": b"\x89PNG\r\n"}
    synced = [(inode, size) for kind, inode, size in events if kind == "fsync"]
    renamed = [(inode, size) for kind, inode, size in events if kind == "replace"]
    # each renamed file was synced whole (6 and 6 bytes), and both before the first rename
    assert renamed == [(os.stat(tmp_path / "r.html").st_ino, 6), (os.stat(tmp_path / "a.png").st_ino, 6)]
    assert synced == renamed
    assert [kind for kind, _, _ in events] == ["fsync", "fsync", "replace", "replace"]


def test_folders_it_made_are_removed_again_on_failure(tmp_path):
    with pytest.raises(OutputWriteError):
        atomic_write_all({tmp_path / "png" / "deep" / "a.png": b"a", Path("/proc/self/x.png"): b"never"},
                         make_folders=True)
    assert list(tmp_path.iterdir()) == []
