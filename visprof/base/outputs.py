"""Output files: checked before any work starts, then written whole or not at all.

Every file visprof writes (results, traces, exports, reports) goes through here, so that

* a path that cannot be written (a folder, a missing or read-only folder, a device, two
  options naming the same file) is refused with one line *before* minutes of profiling;
* a path that names one of the command's inputs is refused the same way, however it is
  named: the same path, ``./x``, a symbolic link, a hard link, a file a folder given as an
  input holds, or a results store's SQLite side file (``s.db-wal``, ``-shm``, ``-journal``);
* an interrupted or failed write (Ctrl-C, a full disk, a crash) leaves the previous file, or
  none, never a truncated one: the data goes to a temporary file in the same folder, which
  is renamed over the target only once it is complete and flushed to disk;
* files that belong together (a report and its figures) are written all or none
  (``atomic_write_all``).

    check_output_paths({"--json": args.json, "--trace": args.trace}, inputs={"--categories file": args.categories})
    with atomic_output(path) as fh:       # text; atomic_output(path, "wb") for bytes
        fh.write(text)
"""
from __future__ import annotations

import contextlib
import csv
import errno
import gzip
import io
import os
import secrets
import stat
from pathlib import Path
from typing import IO, Iterable, Iterator, Mapping, Sequence, Union

from visprof.base.errors import BadInputError, OutputWriteError

__all__ = ["OUTPUT_KINDS", "atomic_output", "atomic_write_all", "atomic_write_json", "atomic_write_text", "check_output_path",
           "check_output_paths", "describe_os_error", "check_not_an_input", "check_output_dir", "files_in", "is_sqlite_file",
           "refuse_another_kind", "sqlite_side_files"]

# SQLite keeps part of a database beside it, in files named after it: a results store is
# these files as well as its own (writing over one of them corrupts the store).
SQLITE_SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_SQLITE_HEADER = b"SQLite format 3\x00"

# What a command reads: a path (a file, or a folder of files), several, or None (not given).
InputPaths = Union[str, Path, Iterable[Union[str, Path]], None]

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
    path = _through_links(_named(path, what))
    _refuse_a_link_loop(path, what)
    if path.is_dir():
        raise BadInputError(f"{what}: {path} is a directory; give a file name")
    _refuse_a_special_file(path, what)
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


def _named(path: str | Path, what: str = "output") -> Path:
    """``path`` as a Path; an empty one refused (Path("") is ".", the folder, and writing to it
    said "could not write .: Device or resource busy")."""
    if not isinstance(path, (str, os.PathLike)):  # Path(3) is a TypeError from deep in pathlib
        raise BadInputError(f"{what}: a file path is a str or a pathlib.Path, got {type(path).__name__} {path!r}")
    if isinstance(path, str) and not path.strip():
        raise BadInputError(f"{what}: the path is empty; give a file name")
    _refuse_a_dash(path, what)
    return Path(path)


def _refuse_a_dash(path: str | Path, what: str) -> None:
    """``-`` means standard output to most tools; here it made a file named ``-`` in the working
    folder without a word (``--csv - | head`` printed nothing). Path("./-") is Path("-") too, so
    a file of that name is given by its full path."""
    if str(path) == "-":
        raise BadInputError(f"{what}: '-' would be a path named '-' here, not standard output; give another "
                            "(for one named '-', its full path)")


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


def check_output_paths(paths: Mapping[str, str | Path | None], inputs: Mapping[str, InputPaths] | None = None, *,
                       folder_files: str | tuple[str, ...] = "*", sqlite: Sequence[str] = (),
                       kinds: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Checks each given path (None: option not used), that no two name the same file (nor
    one a store's side file of the other), that none but the ``sqlite`` ones (a sweep's --store)
    would replace an SQLite file, that none of those ``kinds`` names (option -> "json", "html",
    "csv", "parquet", "png": what it writes) would replace a file of something else, and, given
    the command's ``inputs``, that none of them is an input (``check_not_an_input``). Returns
    the checked paths."""
    checked = {what: check_output_path(p, what) for what, p in paths.items() if p is not None}
    seen: dict[Path, str] = {}
    for what, path in checked.items():
        key = path.resolve()
        if key in seen:
            raise BadInputError(f"{seen[key]} and {what} name the same file ({path}); give each its own")
        seen[key] = what
    named = list(checked.items())
    for i, (what, path) in enumerate(named):
        for other, other_path in named[i + 1:]:
            if _exists(path) and _exists(other_path) and os.path.samefile(path, other_path):
                raise BadInputError(f"{what} {path} and {other} {other_path} are the same file (hard links); "
                                    "give each its own")
            for a, a_path, b, b_path in ((what, path, other, other_path), (other, other_path, what, path)):
                side = _side_file_of(a_path, b_path)
                if side:
                    raise BadInputError(f"{a} {a_path} is SQLite's {side} file of {b} {b_path} (part of that store); "
                                        "give another file name")
    if inputs:  # named as given (a link as the link), compared as the files they are
        check_not_an_input({what: Path(paths[what]) for what in checked}, inputs, folder_files=folder_files)
    # after the input check, which names the case better where the SQLite file is the command's own store
    for what, path in checked.items():
        if what not in sqlite:
            _refuse_a_store(path, what)
        if kinds and what in kinds:  # before the run: the writer would refuse it after
            refuse_another_kind(path, what, kinds[what])
    return checked


def _refuse_a_link_loop(path: Path, what: str) -> None:
    """Links that lead back to themselves name no file (pathlib's resolve raised RuntimeError)."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadInputError(f"{what}: {path} is a symbolic link that leads back to itself (a loop); "
                                "give a file name") from None


def _refuse_a_special_file(path: Path, what: str) -> None:
    """A device, a pipe or a socket is no file to replace: renamed over, /dev/null became a file."""
    if path.exists() and not (path.is_dir() or stat.S_ISREG(path.stat().st_mode)):  # a folder: refused apart
        raise BadInputError(f"{what}: {path} is not a regular file (a device, a pipe or a socket)")


def _refuse_a_store(path: Path, what: str) -> None:
    """A results store (someone's weeks of sweeps) replaced by a CSV or JSON: never silently."""
    if path.is_file() and is_sqlite_file(path):
        raise BadInputError(f"{what} {path} is an SQLite file (a results store?), which this output would "
                            "replace; give another file name, or remove it first if it is to go")


def check_not_an_input(outputs: Mapping[str, str | Path | None], inputs: Mapping[str, InputPaths], *,
                       folder_files: str | tuple[str, ...] = "*") -> None:
    """Refuses an output path that names one of the run's inputs: writing it would destroy it.

    ``inputs`` maps a label ("--categories file", "input", "store") to a path, several paths,
    or None. The same file is: the same path, the same real path (``./x``, symbolic links),
    the same inode (a hard link), and, for an SQLite file (a results store), its side files
    (``-wal``, ``-shm``, ``-journal``). A folder given as an input holds as inputs the files
    under it that match ``folder_files`` (globs, searched recursively), and only those: a
    new report written into a folder of results is no input."""
    given = [(what, Path(path)) for what, path in outputs.items() if path is not None]
    if not given:
        return
    for label, source in _input_files(inputs, folder_files):
        folder, source = source if isinstance(source, tuple) else (None, source)
        for what, path in given:
            why = _names_input(path, source, label, folder)
            if why:
                raise BadInputError(f"{what} {path}: {why}; writing it would overwrite that input; "
                                    "give another file name")


def _input_files(inputs: Mapping[str, InputPaths], folder_files: str | tuple[str, ...]) -> Iterator[tuple[str, object]]:
    """(label, path) per input file; a folder's files as (label, (folder, file))."""
    for label, value in inputs.items():
        if value is None:
            continue
        for item in [value] if isinstance(value, (str, os.PathLike)) else value:
            if item is None:
                continue
            path = Path(item)
            if path.is_dir():
                for file in files_in(path, folder_files):
                    yield label, (path, file)
            else:
                yield label, path


def files_in(folder: Path, patterns: str | tuple[str, ...]) -> list[Path]:
    """The files under ``folder`` (recursively) that match any of ``patterns``, sorted."""
    patterns = (patterns,) if isinstance(patterns, str) else patterns
    return sorted({file for pattern in patterns for file in folder.rglob(pattern) if file.is_file()})


def _names_input(output: Path, source: Path, label: str, folder: Path | None) -> str | None:
    """Why writing ``output`` would overwrite the input ``source``, or None when it would not."""
    same = os.path.realpath(output) == os.path.realpath(source)
    if not same and _exists(output) and _exists(source):
        same = os.path.samefile(output, source)
        if same:
            return f"it is a hard link to the {label} {source}"
    if same:
        if folder is not None:
            return f"it is the {label} file {source}, read from the folder {folder}"
        return f"it is the {label}" + ("" if str(output) == str(source) else f" {source}")
    side = _side_file_of(output, source)
    if side:
        return f"it is SQLite's {side} file of the {label} {source} (part of that store)"
    side = _side_file_of(source, output)
    if side:
        return f"the {label} {source} is SQLite's {side} file of it (part of that store)"
    return None


def sqlite_side_files(path: str | Path) -> list[Path]:
    """The side files SQLite may keep beside the database ``path`` (present or not)."""
    path = Path(path)
    return [path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_SUFFIXES]


def _side_file_of(path: Path, store: Path) -> str | None:
    """The suffix ("-wal", ...) when ``path`` is one of SQLite's side files of ``store`` and
    ``store`` is (or is named as) an SQLite file; else None."""
    if not _sqlite_like(store):
        return None
    real = os.path.realpath(path)
    for suffix, side in zip(SQLITE_SIDE_SUFFIXES, sqlite_side_files(os.path.realpath(store))):
        if real == str(side) or (_exists(path) and _exists(side) and os.path.samefile(path, side)):
            return suffix
    return None


def is_sqlite_file(path: str | Path) -> bool:
    """Whether ``path`` starts as every SQLite database does (False where it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False


def _sqlite_like(path: Path) -> bool:
    if path.suffix.lower() in _SQLITE_SUFFIXES:
        return True
    if not path.is_file():  # a pipe with no writer would block the open
        return False
    return is_sqlite_file(path)


def _exists(path: str | Path) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def check_output_dir(path: str | Path, what: str = "output folder") -> Path:
    """``path`` as a Path if files can be written in that folder, or it can be created (with
    its missing parents); else BadInputError. Creates nothing that is left behind."""
    _refuse_a_dash(path, what)
    path = _through_links(Path(path))
    if path.exists():
        if not path.is_dir():
            raise BadInputError(f"{what}: {path} is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise BadInputError(f"{what}: directory {path} is not writable")
        _probe(path, "visprof", what)
        return path
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise BadInputError(f"{what}: cannot create {path}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise BadInputError(f"{what}: cannot create {path}: directory {ancestor} is not writable")
    probe = _sibling_name(ancestor, "visprof", ".probe")
    try:
        os.mkdir(probe)
    except OSError as exc:
        reason = "it takes no new folders" if exc.errno == errno.ENOENT else describe_os_error(exc)
        raise BadInputError(f"{what}: cannot create {path} in directory {ancestor}: {reason}") from None
    with contextlib.suppress(OSError):
        os.rmdir(probe)
    return path


def _replaced_mode(path: Path) -> int:
    """The mode the written file gets: a file it replaces keeps its own (a private 0600 or 0640
    file stayed private when written in place, and must when replaced), a new one a plain open()'s."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return _creation_mode()


def _creation_mode() -> int:
    """The mode a plain open() would give a new file (0666 less the umask): _create_new makes 0600."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_output(path: str | Path, mode: str = "w", *, compress: bool | None = None,
                  encoding: str = "utf-8", kind: str | None = None) -> Iterator[IO]:
    """Opens a temporary file beside ``path`` for writing; renames it to ``path`` when the
    block ends normally, deletes it when the block raises (KeyboardInterrupt included).

    ``mode`` is "w" (text) or "wb". ``compress`` gzips the data (default: when the name ends
    in .gz). ``kind`` (OUTPUT_KINDS: "json", "csv" ...): what is written, and so the only
    kind of file it may replace. A failure of the file system (full disk, permissions changed
    meanwhile) becomes ``OutputWriteError`` naming the file and the reason."""
    if kind is not None:  # checked here too, not only by the commands' check_output_paths: the Python API
        target = _through_links(_named(path))
        _refuse_a_store(target, "output")  # the message that names a store
        refuse_another_kind(target, "output", kind)
    staged: list[tuple[Path, Path]] = []
    try:
        with _staged_output(path, mode, compress, encoding, staged) as fh:
            yield fh
        _commit(staged)
    finally:
        _discard(staged)


def atomic_write_all(files: Mapping[str | Path, Union[str, bytes]], *, make_folders: bool = False) -> None:
    """Writes every file of ``files`` (path -> text or bytes) or none of them: a set of files
    that belong together (a report and its figures) is never left half-written.

    Each file is written whole to a temporary file beside it first; only when all of them are
    complete and flushed are they renamed over their targets. If a rename still fails, the
    files already renamed are put back as they were (the previous file, or none).
    ``make_folders`` creates missing folders first, and removes them again on failure."""
    staged: list[tuple[Path, Path]] = []
    created: list[Path] = []
    try:
        if make_folders:
            for path in files:
                created += _make_folders(_through_links(Path(path)).parent)
        for path, data in files.items():
            with _staged_output(path, "wb" if isinstance(data, bytes) else "w", None, "utf-8", staged) as fh:
                fh.write(data)
        _commit(staged)
        created = []
    except OSError as exc:  # a folder that could not be made
        raise OutputWriteError(exc.filename or "", describe_os_error(exc)) from exc
    finally:
        _discard(staged)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def _make_folders(folder: Path) -> list[Path]:
    """Creates ``folder`` and its missing parents; returns those created, outermost first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    made = []
    try:
        for path in reversed(missing):
            os.mkdir(path)
            made.append(path)
    except OSError:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(path)
        raise
    return made


@contextlib.contextmanager
def _staged_output(path: str | Path, mode: str, compress: bool | None, encoding: str,
                   staged: list[tuple[Path, Path]]) -> Iterator[IO]:
    """Yields a temporary file beside ``path``; when the block ends normally it is complete
    and on disk, and (temporary, target) is appended to ``staged`` for ``_commit``. When the
    block raises, the temporary file is removed."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = _through_links(_named(path))
    # Checked here too, not only by the commands' check_output_paths: a caller of the Python API
    # (result.to_json(path), a trace session's save) writes through here without them.
    _refuse_a_special_file(path, "output")
    _refuse_a_store(path, "output")
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
        os.chmod(tmp_name, _replaced_mode(path))
        staged.append((tmp_name, path))
        tmp_name = None
    except OSError as exc:
        raise OutputWriteError(path, describe_os_error(exc), previous_kept=os.path.exists(path)) from exc
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def _commit(staged: list[tuple[Path, Path]]) -> None:
    """Renames each staged temporary file over its target, emptying ``staged``. With several,
    each previous file is kept under a hard link until all are renamed, so that a failed
    rename can put back those already replaced."""
    several = len(staged) > 1
    done: list[tuple[Path, Path | None]] = []  # (target, its previous file kept aside, or None: there was none)
    try:
        while staged:
            tmp_name, path = staged[0]
            kept = _keep_aside(path) if several else None
            try:
                os.replace(tmp_name, path)
            except OSError as exc:
                _discard_kept(kept)
                _put_back(done)
                done.clear()
                rest = "; the files written with it were put back as they were" if several else ""
                raise OutputWriteError(path, describe_os_error(exc) + rest,
                                       previous_kept=os.path.exists(path)) from exc
            staged.pop(0)
            done.append((path, kept))
    finally:
        for _, kept in done:
            _discard_kept(kept)


def _keep_aside(path: Path) -> Path | None:
    """A hard link to the file now at ``path`` (None when there is none, or the file system
    has no hard links: that one file then cannot be put back)."""
    if not os.path.isfile(path):
        return None
    kept = _sibling_name(path.parent, path.name, ".previous")
    try:
        os.link(path, kept)
    except OSError:
        return None
    return kept


def _put_back(done: list[tuple[Path, Path | None]]) -> None:
    for path, kept in reversed(done):
        with contextlib.suppress(OSError):
            if kept is not None:
                os.replace(kept, path)
            else:
                os.unlink(path)


def _discard_kept(kept: Path | None) -> None:
    if kept is not None:
        with contextlib.suppress(OSError):
            os.unlink(kept)


def _discard(staged: list[tuple[Path, Path]]) -> None:
    """Removes the temporary files that were never renamed (a later file failed, Ctrl-C)."""
    for tmp_name, _ in staged:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
    staged.clear()


def atomic_write_json(path: str | Path, text: str) -> None:
    """``atomic_write_text`` of a JSON document: it refuses to replace a file that holds
    something else (``session.save("train.py")`` had replaced the user's script with JSON)."""
    atomic_write_text(path, text, kind="json")


# What an output may replace: nothing, an empty file, or a file of the kind it writes. A
# mistyped --json, -o or --csv had replaced a user's train.py, or a CSV with a JSON document.
# Each test reads the file's first 8 KiB and says whether they look like that kind.
def _looks_like_json(head: bytes) -> bool:
    """Text that starts as a JSON document does (an object or a list); gzipped: taken as ours."""
    start = head.lstrip(b" \t\r\n\xef\xbb\xbf")  # a BOM too
    return not start or head[:2] == b"\x1f\x8b" or start[:1] in (b"{", b"[")


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip(b" \t\r\n\xef\xbb\xbf").lower()
    return start.startswith((b"<!doctype html", b"<html"))


def _looks_like_csv(head: bytes) -> bool:
    """A table: its first lines (up to five) have the same number of comma-separated fields, two or
    more. A script or prose does not (``from x import a, b`` then ``import torch``). Lines of
    ncu's own messages (``==PROF== ...``), which its raw CSV starts with, are passed over."""
    text = head.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()
    if len(head) == _HEAD_BYTES and not text.endswith(("\n", "\r")):
        lines = lines[:-1]  # cut off mid-line
    lines = [line for line in lines if line.strip() and not line.startswith("==")][:5]
    widths = {len(row) for row in csv.reader(lines)}
    return len(widths) == 1 and widths.pop() >= 2


OUTPUT_KINDS = {
    "json": ("JSON", _looks_like_json),
    "html": ("an HTML page", _looks_like_html),
    "csv": ("CSV", _looks_like_csv),
    "parquet": ("Parquet", lambda head: head.startswith(b"PAR1")),
    "png": ("a PNG image", lambda head: head.startswith(b"\x89PNG")),
}
_HEAD_BYTES = 8192


def refuse_another_kind(path: Path, what: str, kind: str) -> None:
    """BadInputError if ``path`` is a non-empty file that does not look like ``kind`` (OUTPUT_KINDS)."""
    name, looks_like = OUTPUT_KINDS[kind]
    if not path.is_file():
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:  # unreadable: the write says why it cannot replace it
        return
    if head.strip() and not looks_like(head):
        raise BadInputError(f"{what} {path} holds something other than {name}, which this output would replace; "
                            "give another file name, or remove it first if it is to go")


def atomic_write_text(path: str | Path, text: str, *, compress: bool | None = None, kind: str | None = None) -> None:
    """Writes ``text`` (UTF-8) to ``path`` atomically; see ``atomic_output``."""
    with atomic_output(path, "w", compress=compress, kind=kind) as fh:
        fh.write(text)
