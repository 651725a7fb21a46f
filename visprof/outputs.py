"""Output files: checked before any work starts, then written whole or not at all.

Every file visprof writes (results, traces, exports, reports) goes through here, so that

* a path that cannot be written (a folder, a missing or read-only folder, a device, two
  options naming the same file) is refused with one line *before* minutes of profiling;
* an interrupted or failed write (Ctrl-C, a full disk, a crash) leaves the previous file, or
  none, never a truncated one: the data goes to a temporary file in the same folder, which
  is renamed over the target only once it is complete and flushed to disk.

    check_output_paths({"--json": args.json, "--trace": args.trace})
    with atomic_output(path) as fh:       # text; atomic_output(path, "wb") for bytes
        fh.write(text)
"""
from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import secrets
import stat
from pathlib import Path
from typing import IO, Iterator, Mapping

from visprof.errors import BadInputError, OutputWriteError

__all__ = ["atomic_output", "atomic_write_text", "check_output_path", "check_output_paths", "describe_os_error",
           "check_not_an_input"]

# What to do about the failures a user can fix; strerror alone ("Read-only file system")
# says what happened but not what to do.
_HINTS = {
    errno.EROFS: "the file system is mounted read-only; write to another folder",
    errno.ENOSPC: "the disk is full; free some space or write to another disk",
    errno.EDQUOT: "your disk quota is used up; free some space or write elsewhere",
    errno.EACCES: "you have no permission to create files there; write to another folder",
    errno.EPERM: "the operating system does not allow creating files there; write to another folder",
    errno.EFBIG: "the file would exceed the file size limit (ulimit -f) or the file system's limit",
}


def describe_os_error(exc: OSError) -> str:
    """``strerror`` plus what to do about it, e.g. "No space left on device (the disk is full; ...)"."""
    reason = exc.strerror or str(exc)
    hint = _HINTS.get(exc.errno)
    return f"{reason} ({hint})" if hint else reason


def check_output_path(path: str | Path, what: str = "output") -> Path:
    """``path`` as a Path if a regular file can be created or replaced there, else BadInputError.

    ``what`` names the path in the message (an option such as ``--json``). A symbolic link
    is checked (and later written) as the file it points to."""
    path = _through_links(Path(path))
    if path.is_dir():
        raise BadInputError(f"{what}: {path} is a directory; give a file name")
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise BadInputError(f"{what}: {path} is not a regular file (a device, a pipe or a socket)")
    parent = path.parent
    if not parent.exists():
        raise BadInputError(f"{what}: directory {parent} does not exist")
    if not parent.is_dir():
        raise BadInputError(f"{what}: {parent} is not a directory")
    # The temporary file is created in the same folder, so the folder must be writable even
    # when the file itself already exists and is.
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BadInputError(f"{what}: directory {parent} is not writable")
    _probe(parent, path.name, what)
    return path


def _through_links(path: Path) -> Path:
    """The file a symbolic link names (the link stays, its target is replaced), else ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _probe(parent: Path, name: str, what: str) -> None:
    """Creates and removes a file where the temporary file will go. os.access cannot see
    everything: for root every folder is "writable", yet /sys refuses new files (EACCES),
    /proc has none to create (ENOENT), and a read-only mount shows only on creation (EROFS)."""
    probe = _sibling_name(parent, name, ".probe")
    ours = True  # until the name turns out to be taken: then the file there is not ours to remove
    try:
        os.close(_create_new(probe))
    except FileExistsError:
        ours = False
    except OSError as exc:
        # ENOENT for a folder that exists: a virtual file system (/proc) that takes no new files.
        reason = "it takes no new files" if exc.errno == errno.ENOENT else describe_os_error(exc)
        raise BadInputError(f"{what}: cannot create files in directory {parent}: {reason}") from None
    finally:
        if ours:
            with contextlib.suppress(OSError):
                os.unlink(probe)


# Temporary files are named *before* they are created, and removed by that name whatever
# happens next. With tempfile.mkstemp, a Ctrl-C that lands after the file exists but before
# mkstemp returns its name (seen in tests/test_bad_input_cli.py) would leave it behind.
def _sibling_name(parent: Path, name: str, suffix: str) -> Path:
    return parent / f".{name}.{secrets.token_hex(6)}{suffix}"


def _create_new(path: Path) -> int:
    """Creates ``path`` (it must not exist) for writing, readable by the owner only until it
    is complete; returns the descriptor."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)


def check_output_paths(paths: Mapping[str, str | Path | None]) -> dict[str, Path]:
    """Checks each given path (None: option not used) and that no two name the same file."""
    checked = {what: check_output_path(p, what) for what, p in paths.items() if p is not None}
    seen: dict[Path, str] = {}
    for what, path in checked.items():
        key = path.resolve()
        if key in seen:
            raise BadInputError(f"{seen[key]} and {what} name the same file ({path}); give each its own")
        seen[key] = what
    return checked


def check_not_an_input(outputs: Mapping[str, Path], inputs: Mapping[str, str | Path | None]) -> None:
    """Refuses an output path that names one of the run's input files (it would be overwritten)."""
    for what_in, source in inputs.items():
        if source is None or not Path(source).exists():
            continue
        for what, path in outputs.items():
            if path.exists() and os.path.samefile(path, source):
                raise BadInputError(f"{what} {path} is the {what_in} file; writing it would overwrite "
                                    f"that input; give another file name")


def _creation_mode() -> int:
    """The mode a plain open() would give a new file (0666 less the umask): _create_new makes 0600."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_output(path: str | Path, mode: str = "w", *, compress: bool | None = None,
                  encoding: str = "utf-8") -> Iterator[IO]:
    """Opens a temporary file beside ``path`` for writing; renames it to ``path`` when the
    block ends normally, deletes it when the block raises (KeyboardInterrupt included).

    ``mode`` is "w" (text) or "wb". ``compress`` gzips the data (default: when the name ends
    in .gz). A failure of the file system (full disk, permissions changed meanwhile) becomes
    ``OutputWriteError`` naming the file and the reason."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = _through_links(Path(path))
    compress = path.suffix == ".gz" if compress is None else compress
    tmp_name = None
    try:
        while True:
            tmp_name = _sibling_name(path.parent, path.name, ".partial")
            try:
                fd = _create_new(tmp_name)
                break
            except FileExistsError:  # that random name is taken (not ours): draw another
                tmp_name = None
        with os.fdopen(fd, "wb") as raw:
            # GzipFile given a fileobj does not close it; the text wrapper is detached, not
            # closed, for the same reason: `raw` must stay open to be flushed and synced.
            zipped = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if compress else None  # mtime 0: same bytes for same data
            binary = zipped or raw
            text = io.TextIOWrapper(binary, encoding=encoding, newline="") if mode == "w" else None
            yield text or binary
            if text is not None:
                text.flush()
                text.detach()
            if zipped is not None:
                zipped.close()
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp_name, _creation_mode())
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        raise OutputWriteError(path, describe_os_error(exc), previous_kept=os.path.exists(path)) from exc
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def atomic_write_text(path: str | Path, text: str, *, compress: bool | None = None) -> None:
    """Writes ``text`` (UTF-8) to ``path`` atomically; see ``atomic_output``."""
    with atomic_output(path, "w", compress=compress) as fh:
        fh.write(text)
