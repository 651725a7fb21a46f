"""Output files written whole or not at all; their paths are checked before any work starts
(``visprof.base.output_paths``).

Every file visprof writes (results, traces, exports, reports) goes through here, so that

* an interrupted or failed write (Ctrl-C, a full disk, a crash) leaves the previous file, or
  none, never a truncated one: the data goes to a temporary file in the same folder, which
  is renamed over the target only once it is complete and flushed to disk;
* files that belong together (a report and its figures) are written all or none
  (``atomic_write_all``);
* a file is replaced only by one of its kind (``kind``: a mistyped --json does not replace a
  script) and never a results store.

    check_output_paths({"--json": args.json, "--trace": args.trace}, inputs={"--categories file": args.categories})
    with atomic_output(path) as fh:       # text; atomic_output(path, "wb") for bytes
        fh.write(text)
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import stat
from pathlib import Path
from typing import IO, Any, Iterator, Mapping, Union

from visprof.base.errors import BadInputError, OutputWriteError
from visprof.base.json_documents import summary_document
from visprof.base.output_paths import (create_new, describe_os_error, named_path, refuse_a_special_file, refuse_a_store,
                                       refuse_another_kind, sibling_name, through_links)

__all__ = ["atomic_output", "atomic_write_all", "atomic_write_json", "atomic_write_text"]


def _replaced_mode(path: Path) -> int:
    """The mode the written file gets: a file it replaces keeps its own (a private 0600 or 0640
    file stayed private when written in place, and must when replaced), a new one a plain open()'s."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return _creation_mode()


def _creation_mode() -> int:
    """The mode a plain open() would give a new file (0666 less the umask): create_new makes 0600."""
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
    target = through_links(named_path(path))
    if target.is_dir():  # as the commands say it; it had been "could not write adir: Is a directory"
        raise BadInputError(f"output {path} is a directory; give a file name")
    if kind is not None:  # checked here too, not only by the commands' check_output_paths: the Python API
        refuse_a_store(target, "output")  # the message that names a store
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
                created += _make_folders(through_links(Path(path)).parent)
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
    path = through_links(named_path(path))
    # Checked here too, not only by the commands' check_output_paths: a caller of the Python API
    # (result.to_json(path), a trace session's save) writes through here without them.
    refuse_a_special_file(path, "output")
    refuse_a_store(path, "output")
    compress = path.suffix == ".gz" if compress is None else compress
    tmp_name = None
    try:
        while True:
            tmp_name = sibling_name(path.parent, path.name, ".partial")
            try:
                fd = create_new(tmp_name)
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
    kept = sibling_name(path.parent, path.name, ".previous")
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


def atomic_write_json(path: str | Path, text: str, kind: str) -> None:
    """``atomic_write_text`` of a JSON document: it refuses to replace a file that holds
    something else (``session.save("train.py")`` had replaced the user's script with JSON).
    ``kind`` is what the document is ("profile", "chrome-trace", "diff", ...: OUTPUT_KINDS)."""
    atomic_write_text(path, text, kind=kind)


def write_json_summary(path: str | Path, kind: str, doc: dict, *, indent: int = 1, **dumps: Any) -> None:
    """A command's --json summary (``json_documents.SUMMARY_KINDS``), its schema first: it replaces
    only an earlier summary of its own kind, never a JSON file of the user's."""
    text = json.dumps(summary_document(kind, doc), indent=indent, **dumps)
    atomic_write_text(path, text + "\n", kind=kind)


def atomic_write_text(path: str | Path, text: str, *, compress: bool | None = None, kind: str | None = None) -> None:
    """Writes ``text`` (UTF-8) to ``path`` atomically; see ``atomic_output``."""
    with atomic_output(path, "w", compress=compress, kind=kind) as fh:
        fh.write(text)
