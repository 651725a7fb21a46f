"""Output paths checked before any work starts: one line for a path that cannot be written, or
that names one of the command's inputs, before minutes of profiling (``visprof.base.outputs``
then writes the files whole or not at all).

* a path that cannot be written (a folder, a missing or read-only folder, a device, two
  options naming the same file) is refused;
* a path that names one of the command's inputs is refused, however it is named: the same
  path, ``./x``, a symbolic link, a hard link, a file a folder given as an input holds, or a
  results store's SQLite side file (``s.db-wal``, ``-shm``, ``-journal``);
* a path that holds something other than what the output writes (a script under a mistyped
  ``--json``, a results store under ``--csv``) is refused (``refuse_another_kind``).

    check_output_paths({"--json": args.json, "--trace": args.trace}, inputs={"--categories file": args.categories})
"""
from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
import secrets
import stat
import zlib
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence, Union

from visprof.base.errors import BadInputError
from visprof.base.inputs import NAME_MAX, SQLITE_HEADER, refuse_a_long_name
from visprof.base.json_documents import CHROME_TRACE, SUMMARY_KINDS, document_name, mark_of_head

__all__ = ["OUTPUT_KINDS", "InputPaths", "SQLITE_SIDE_SUFFIXES", "check_not_an_input", "check_output_dir",
           "check_output_path", "check_output_paths", "create_new", "describe_os_error", "files_in", "is_sqlite_file",
           "json_document_mark",
           "named_path", "refuse_a_special_file", "refuse_a_store", "refuse_a_store_named_as_a_side_file",
           "refuse_another_kind", "sibling_name", "sqlite_side_files", "through_links"]

# SQLite keeps part of a database beside it, in files named after it: a results store is
# these files as well as its own (writing over one of them corrupts the store).
SQLITE_SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")

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
    path = through_links(named_path(path, what))
    _refuse_a_link_loop(path, what)
    if path.is_dir():
        raise BadInputError(f"{what}: {path} is a directory; give a file name")
    refuse_a_special_file(path, what)
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


def named_path(path: str | Path, what: str = "output") -> Path:
    """``path`` as a Path; an empty one refused (Path("") is ".", the folder, and writing to it
    said "could not write .: Device or resource busy")."""
    if not isinstance(path, (str, os.PathLike)):  # Path(3) is a TypeError from deep in pathlib
        raise BadInputError(f"{what}: a file path is a str or a pathlib.Path, got {type(path).__name__} {path!r}")
    if isinstance(path, str) and not path.strip():
        raise BadInputError(f"{what}: the path is empty; give a file name")
    _refuse_a_dash(path, what)
    path = Path(path)
    refuse_a_long_name(path, what)
    return path


def _refuse_a_dash(path: str | Path, what: str) -> None:
    """``-`` means standard output to most tools; here it made a file named ``-`` in the working
    folder without a word (``--csv - | head`` printed nothing). Path("./-") is Path("-") too, so
    a file of that name is given by its full path."""
    if str(path) == "-":
        raise BadInputError(f"{what}: '-' would be a path named '-' here, not standard output; give another "
                            "(for one named '-', its full path)")


def through_links(path: Path) -> Path:
    """The file a symbolic link names (the link stays, its target is replaced), else ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _probe(parent: Path, name: str, what: str) -> None:
    """Creates and removes a file where the temporary file will go. os.access cannot see
    everything: for root every folder is "writable", yet /sys refuses new files (EACCES),
    /proc has none to create (ENOENT), and a read-only mount shows only on creation (EROFS)."""
    probe = sibling_name(parent, name, ".probe")
    ours = True  # until the name turns out to be taken: then the file there is not ours to remove
    try:
        os.close(create_new(probe))
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
def sibling_name(parent: Path, name: str, suffix: str) -> Path:
    """A fresh ``.NAME.<12 hex digits>SUFFIX`` beside the file, NAME shortened where the whole would
    pass NAME_MAX (a 240-byte name is legal; its temporary file must be too)."""
    token = secrets.token_hex(6)
    room = NAME_MAX - len(os.fsencode(f"..{token}{suffix}"))
    if len(os.fsencode(name)) > room:
        name = os.fsencode(name)[:room].decode("utf-8", "ignore")  # a character cut in two is left out
    return parent / f".{name}.{token}{suffix}"


def create_new(path: Path) -> int:
    """Creates ``path`` (it must not exist) for writing, readable by the owner only until it
    is complete; returns the descriptor."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)


def check_output_paths(paths: Mapping[str, str | Path | None], inputs: Mapping[str, InputPaths] | None = None, *,
                       folder_files: str | tuple[str, ...] = "*", sqlite: Sequence[str] = (),
                       kinds: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Checks each given path (None: option not used), that no two name the same file (nor
    one a store's side file of the other), that none but the ``sqlite`` ones (a sweep's --store)
    would replace an SQLite file, that none of those ``kinds`` names (option -> "profile", "diff", "html",
    "predict-csv", "parquet", "png", ...: OUTPUT_KINDS, what it writes) would replace a file of something else, and, given
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
            refuse_a_store(path, what)
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


def refuse_a_special_file(path: Path, what: str) -> None:
    """A device, a pipe or a socket is no file to replace: renamed over, /dev/null became a file."""
    if path.exists() and not (path.is_dir() or stat.S_ISREG(path.stat().st_mode)):  # a folder: refused apart
        raise BadInputError(f"{what}: {path} is not a regular file (a device, a pipe or a socket)")


def refuse_a_store(path: Path, what: str) -> None:
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


def refuse_a_name_without_room_for_side_files(path: Path, what: str) -> None:
    """An SQLite file named with 248-255 bytes is legal, but its -journal is not: writing to it
    failed as "unable to open database file", its name never said."""
    refuse_a_long_name(path, what, room=max(len(suffix) for suffix in SQLITE_SIDE_SUFFIXES))


def refuse_a_store_named_as_a_side_file(path: Path, what: str) -> None:
    """A store written as ``runs.db-wal``, or as ``runs.db`` beside a whole database named ``runs.db-wal``:
    SQLite takes the second for the first's write-ahead log (or journal) and deletes it when it opens the
    first, and a sweep's measured rows went without a word."""
    for suffix in SQLITE_SIDE_SUFFIXES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            owner = path.with_name(path.name[:-len(suffix)])
            raise BadInputError(f"{what} {path}: SQLite takes a file of this name for the {suffix} file of {owner}, "
                                f"and deletes it when {owner} is opened; give the store another name")
    for side in sqlite_side_files(path):
        if is_sqlite_file(side):
            raise BadInputError(f"{what} {path}: beside it, {side} is a whole SQLite database, which SQLite would take "
                                f"for this store's {side.name[len(path.name):]} file and delete; rename it first")


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
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
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
    path = through_links(Path(path))
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
    probe = sibling_name(ancestor, "visprof", ".probe")
    try:
        os.mkdir(probe)
    except OSError as exc:
        reason = "it takes no new folders" if exc.errno == errno.ENOENT else describe_os_error(exc)
        raise BadInputError(f"{what}: cannot create {path} in directory {ancestor}: {reason}") from None
    with contextlib.suppress(OSError):
        os.rmdir(probe)
    return path


# What an output may replace: nothing, an empty file, or a file of the kind it writes. A
# mistyped --json, -o or --csv had replaced a user's train.py, or a CSV with a JSON document.
# Each test reads the file's first 8 KiB and says whether they look like that kind.
def _looks_like_json(head: bytes) -> bool:
    """Text that starts as a JSON document does (an object or a list), also gzipped (a
    ``--json x.json.gz``): judged by what it unpacks to, so a ``.tar.gz`` or a gzipped script is not."""
    if head[:2] == b"\x1f\x8b":
        head = _gunzipped_start(head)
        if head is None:
            return False
    start = head.lstrip(b" \t\r\n\xef\xbb\xbf")  # a BOM too
    return not start or start[:1] in (b"{", b"[")


def _gunzipped_start(head: bytes) -> bytes | None:
    """What the first bytes of a gzip stream unpack to (None: not a gzip stream)."""
    try:
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(head, _HEAD_BYTES)
    except zlib.error:
        return None


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip(b" \t\r\n\xef\xbb\xbf").lower()
    return start.startswith((b"<!doctype html", b"<html"))


def _names_the_report(head: bytes) -> bool:
    """Whether a page's head or a PNG's text chunks (written before its pixels) name visprof's report."""
    return REPORT_GENERATOR.encode() in head


def _looks_like_csv(head: bytes) -> bool:
    """A table: its first lines (up to five) have the same number of comma-separated fields, two or
    more. A script or prose does not (``from x import a, b`` then ``import torch``). Lines of
    ncu's own messages (``==PROF== ...``), which its raw CSV starts with, are passed over. Binary
    (a NUL byte: a PNG, a gzip stream) is none, and Python 3.10's csv reader raises on it."""
    if b"\x00" in head:
        return False
    text = head.decode("utf-8-sig", errors="replace")
    cut = len(head) == _HEAD_BYTES and not text.endswith(("\n", "\r"))  # cut off mid-record
    # Records, not lines: a quoted field may hold line breaks (export --failures' tracebacks), and read
    # line by line such a table had "other widths", so export refused to replace its own CSV.
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("=="))
    rows = []
    try:
        for row in csv.reader(io.StringIO(body)):
            if any(field.strip() for field in row):
                rows.append(row)
            if len(rows) > 5:
                break
    except csv.Error:  # what the reader cannot read is no table of visprof's, unless the cut made it so
        if not cut:
            return False
    if cut and len(rows) <= 5:
        rows = rows[:-1]  # the last record read may be the cut one
    widths = {len(row) for row in rows[:5]}
    return len(widths) == 1 and widths.pop() >= 2


# Each of visprof's JSON documents (visprof.base.json_documents: a schema in its first key, or a
# Chrome trace's traceEvents) is replaced only by an output of its own kind, and no other JSON is.
# A --trace had replaced a saved profile result, a --json a dataset's annotations.json, and diff's
# --json a package.json, without a word.
_DOCUMENT_KINDS = {"profile": "visprof.profile", "recording": "visprof.trace", "calibration": "visprof.calibration",
                   "bounds": "visprof.bounds", "store-export": "visprof.store-export", "chrome-trace": CHROME_TRACE,
                   **SUMMARY_KINDS}
# The report's page and figures say they are visprof's (html.py's generator tag, figures.py's PNG
# text), so that a report replaces its own earlier page and figures, never a page or image of the user's.
REPORT_GENERATOR = "visprof report"


def json_document_mark(head: bytes) -> str | None:
    """``json_documents.mark_of_head`` of a file's first bytes, gzipped or not."""
    if head[:2] == b"\x1f\x8b":
        head = _gunzipped_start(head) or b""
    return mark_of_head(head)


# The header each of visprof's CSVs starts with, by output kind: a CSV output replaces only an
# earlier one of its own kind, no table of the user's (export had replaced a users.csv) and no other
# command's (compare --csv had replaced predict's). Tests write each with its writer and write it
# again (tests/cli/test_inputs_never_destroyed.py, tests/base/test_outputs.py; ncu's from a fixture).
CSV_HEADS = {
    "export-csv": "id,run_id,cell_key,model,",  # visprof export --format csv (results and --failures)
    "compare-csv": "model,img_size,family,base_samples_per_s,",
    "predict-csv": "model,img_size,source_gpu,target_gpu,",
    "categories-csv": "model,measurement,category,",  # write_categories_csv
    "modules-csv": "model,measurement,path,cls,",  # write_modules_csv
    "ncu-csv": '"ID","Process ID",',  # ncu's raw CSV (visprof ncu --csv), after its ==PROF== lines
}
_CSV_NAMES = {"export-csv": "a visprof store export CSV", "compare-csv": "a visprof compare CSV",
              "predict-csv": "a visprof predict CSV", "categories-csv": "a visprof category CSV",
              "modules-csv": "a visprof module CSV", "ncu-csv": "an ncu raw CSV of visprof ncu"}
# timm's benchmark CSV, which export --format timm writes too: an export cannot be told from a
# published table, so neither is replaced.
_TIMM_CSV_HEAD = "model,infer_img_size,infer_samples_per_sec,"
# A Parquet file keeps its schema's metadata in its footer: visprof's exports name themselves there.
PARQUET_MARK = b"visprof.store-export"


def _parquet_footer(fh) -> bytes:
    """A Parquet file's footer (its schema and key-value metadata), read from its end."""
    size = fh.seek(0, os.SEEK_END)
    if size < 12:
        return b""
    fh.seek(size - 8)
    length = int.from_bytes(fh.read(4), "little")
    fh.seek(max(0, size - 8 - min(length, 1 << 20)))
    return fh.read()


def _csv_header(head: bytes) -> str:
    lines = head.decode("utf-8-sig", errors="replace").splitlines()
    return next((line for line in lines if line.strip() and not line.startswith("==")), "")


OUTPUT_KINDS = {
    **{kind: (document_name(mark), lambda head, mark=mark: json_document_mark(head) == mark)
       for kind, mark in _DOCUMENT_KINDS.items()},
    "html": ("a visprof report", lambda head: _looks_like_html(head) and _names_the_report(head)),
    **{kind: (_CSV_NAMES[kind], lambda head, start=start: _looks_like_csv(head) and _csv_header(head).startswith(start))
       for kind, start in CSV_HEADS.items()},
    # timm's benchmark header, which export --format timm writes too, cannot be told from a published table
    "timm-csv": ("a file visprof can tell it wrote", lambda head: False),
    # the footer is read apart (_parquet_footer)
    "parquet": ("a visprof Parquet export", lambda head: head.startswith(b"PAR1") and PARQUET_MARK in head),
    "png": ("a visprof report's figure", lambda head: head.startswith(b"\x89PNG") and _names_the_report(head)),
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
            if kind == "parquet" and head.startswith(b"PAR1"):
                head = head[:4] + _parquet_footer(fh)
    except OSError:  # unreadable: the write says why it cannot replace it
        return
    if head.strip() and not looks_like(head):
        mark = json_document_mark(head) if _looks_like_json(head) else None
        held = document_name(mark) if mark else None
        header = _csv_header(head) if _looks_like_csv(head) else None
        if held is None and header is not None:
            held = next((_CSV_NAMES[k] for k, start in CSV_HEADS.items() if header.startswith(start)), None)
        if header is not None and header.startswith(_TIMM_CSV_HEAD):
            holds = "holds a timm benchmark CSV (visprof cannot tell its own export in that format from a published table),"
        elif kind == "timm-csv":
            raise BadInputError(f"{what} {path} is not empty, and an export in timm's format replaces only an empty file "
                                "(its header is timm's, which visprof cannot tell from a published table's); give another "
                                "file name, or remove it first if it is to go")
        else:
            holds = f"holds {held}, not {name}," if held else f"holds something other than {name},"
        raise BadInputError(f"{what} {path} {holds} which this output would replace; "
                            "give another file name, or remove it first if it is to go")
