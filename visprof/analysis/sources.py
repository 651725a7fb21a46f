"""Everything the analysis commands read, as measurements: one model on one GPU at one setting.

Accepted inputs (any mix, any number):

* a ProfileResult JSON file (``visprof profile --json``), or a folder of them (searched
  recursively; JSON files that are not results are skipped and counted);
* a results store (SQLite): its results and its reference rows (``visprof import-timm``); a
  file named ``*.db``, ``*.sqlite`` or ``*.sqlite3`` is read as a store, so a damaged one is
  named as a damaged store;
* a timm benchmark CSV, named as timm names them (``...-rtx4090.csv``: the GPU comes from
  the name); ``FILE@GPU`` names the GPU of a file named otherwise.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from visprof.analysis.families import architecture
from visprof.analysis.gpus import GpuTable, more_gpus, table_or_default
from visprof.analysis.store_adapter import is_sqlite_file, open_store, reference_dict
from visprof.analysis.timm_csv import (canonical_precision, check_benchmark_csv, parse_benchmark_filename,
                                      read_benchmark_csv)
from visprof.base.errors import BadInputError, NotAResultError
from visprof.base.output_paths import files_in
from visprof.base.progress import check_callback, counted
from visprof.result import ProfileResult


@dataclass
class Measurement:
    """Throughput of one model on one GPU. ``result`` is its profile, when it is one."""

    model: str  # as recorded (may carry a pretrained tag)
    img_size: int | None
    gpu_name: str  # as the device or the source names it
    gpu_id: str | None  # the spec row it matches, if any
    batch_size: int | None
    precision: str | None  # visprof's names: fp16, bf16, fp32, tf32
    samples_per_s: float | None
    source: str
    kind: str  # "profile" | "reference"
    result: ProfileResult | None = None
    gmacs: float | None = None  # per sample (timm's count: multiply-accumulates)
    macts_m: float | None = None  # activations per sample, millions (timm's count)
    param_count_m: float | None = None
    channels_last: bool = False
    torch: str | None = None  # the PyTorch and CUDA versions it was measured under, where the source says
    cuda: str | None = None

    @property
    def software(self) -> str | None:
        """``torch 2.11.0, CUDA 13.0``; None where the torch version is not known."""
        if not self.torch:
            return None
        return f"torch {self.torch}" + (f", CUDA {self.cuda}" if self.cuda else "")

    @property
    def arch(self) -> str:
        return architecture(self.model)

    @property
    def img_label(self) -> str:
        """The input size as a column shows it: ``224``, or ``96x160`` for a profile's non-square
        input (``img_size`` is its height), ``-`` where none is known."""
        shape = self.result.model.input_shape if self.result is not None else None
        if shape and len(shape) == 4 and shape[2] != shape[3]:
            return f"{shape[2]}x{shape[3]}"
        return str(self.img_size) if self.img_size else "-"

    def __repr__(self) -> str:
        # One line: a profile's own repr is five, and the dataclass's had put it inside this one.
        size = f" @{self.img_size}" if self.img_size else ""
        rate = f"{self.samples_per_s:,.1f} samples/s" if self.samples_per_s else "no throughput"
        what = "profile" if self.result is not None else self.kind
        return (f"<Measurement {self.model}{size} on {self.gpu}: {rate} at batch {self.batch_size}, {self.precision}; "
                f"{what} from {self.source}>")

    @property
    def host_clock(self) -> bool:
        """A CPU result: its times are host-clock op durations, not a GPU's kernel times."""
        return self.result is not None and self.result.measurement == "cpu"

    @property
    def gpu(self) -> str:
        """The key measurements of one GPU share: its spec id, else its name."""
        return self.gpu_id or self.gpu_name

    @property
    def latency_ms(self) -> float | None:
        if self.samples_per_s and self.batch_size:
            return self.batch_size / self.samples_per_s * 1e3
        return None


# The files ``load`` reads from a folder given as an input (a glob, searched recursively).
FOLDER_FILES = ("*.json", "*.json.gz")  # visprof profile --json writes either


@dataclass
class Loaded:
    measurements: list[Measurement] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files passed over, with why
    # The files and folders read (``FILE@GPU`` as FILE): what a report made of them must not overwrite.
    inputs: list[Path] = field(default_factory=list)

    @property
    def profiles(self) -> list[Measurement]:
        return [m for m in self.measurements if m.result is not None]

    def __repr__(self) -> str:
        # Counts, not every measurement: a store's thousands would print megabytes in a notebook.
        per_gpu: dict[str, int] = {}
        for m in self.measurements:
            per_gpu[m.gpu] = per_gpu.get(m.gpu, 0) + 1
        gpus = ", ".join(f"{gpu} {n:,}" for gpu, n in per_gpu.items())
        skipped = f"; {len(self.skipped)} file(s) skipped" if self.skipped else ""
        return (f"<Loaded {len(self.measurements):,} measurements ({len(self.profiles):,} profiles) "
                f"from {len(self.inputs)} input(s): {gpus or 'none'}{skipped}>")

    def latest_profiles_only(self) -> tuple["Loaded", int]:
        """A copy where profiles repeated under the same conditions (REPEAT_CONDITIONS: model, image size,
        GPU kind, batch, precision, layout, grad mode, autocast, compile) are reduced to the latest with a
        category breakdown, else the latest; returns it and how many it dropped. Sweeps on two GPUs of one
        kind, or a resumed list, measure some models twice: one bar per model reads better than two, and
        speed-ups must not count a model twice. The regime is a condition (diff calls a change of grad
        mode a difference): a no_grad and an inference_mode run had been "the same conditions", and a
        newer timing-only profile had taken the place of one with categories."""
        latest: dict[tuple, Measurement] = {}

        def rank(m: Measurement) -> tuple:
            return bool(m.result.categories), m.result.created_at

        for m in self.profiles:
            c = m.result.config
            key = (m.arch, m.img_size, m.gpu, m.batch_size, m.precision, m.channels_last, c.grad_mode, c.autocast,
                   c.compile)
            if key not in latest or rank(m) >= rank(latest[key]):
                latest[key] = m
        kept = {id(m) for m in latest.values()}
        measurements = [m for m in self.measurements if m.result is None or id(m) in kept]
        return Loaded(measurements, list(self.skipped), list(self.inputs)), len(self.measurements) - len(measurements)


REPEAT_CONDITIONS = "GPU kind, batch, precision, layout, grad mode, autocast, compile"


def no_profiles_error(why: str, *, model: str | None = None, references: int = 0,
                      csvs: list[Path] | None = None) -> BadInputError:
    """The one wording, for every command that needs visprof profiles, of inputs that hold none:
    ``why`` says what the command reads them for, ``model`` is the pattern that matched none,
    ``references`` the published rows the inputs held instead, ``csvs`` the timm CSVs they were
    (refused unread: ``refuse_csvs_only``)."""
    matching = f" match {model!r}" if model else ""
    held = (f"; the inputs' {references} reference rows (timm benchmark CSVs, or a store's rows from visprof "
            "import-timm) are published throughputs, not profiles") if references else ""
    if csvs:
        held = (f"; {', '.join(map(str, csvs))} {'is a timm benchmark CSV' if len(csvs) == 1 else 'are timm benchmark CSVs'}"
                ": published throughputs, not profiles")
    return BadInputError(f"no profile results in the inputs{matching} ({why}){held}")


def refuse_csvs_only(paths: Iterable[str | Path], why: str) -> None:
    """For a command that needs profiles: inputs that are all timm benchmark CSVs are refused before
    they are read, as holding none. Read first, a CSV whose file name names no GPU was refused for
    that (``predict --from my.csv``), though no GPU name would have given it a profile."""
    files = input_paths([paths] if isinstance(paths, (str, os.PathLike)) else paths)
    if files and all(_is_csv(f) for f in files):
        for file in files:  # a CSV of another kind is said to be one, as load says it
            check_benchmark_csv(file)
        raise no_profiles_error(why, csvs=files)


def profile_inputs(paths: Iterable[str | Path], why: str) -> tuple[list[str | Path], list[Path]]:
    """For a command that reads profiles only (predict, bounds coverage): the inputs without the
    CSV files among them, and those files, which it does not read. A CSV holds published
    throughputs or a store's flat rows, never a profile, so one beside profiles is passed over
    unread rather than refused for a file name that names no GPU; CSVs alone are refused
    (``refuse_csvs_only``)."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    refuse_csvs_only(items, why)
    csvs = {index: path for index, path in enumerate(input_paths(items)) if _is_csv(path)}
    return [item for index, item in enumerate(items) if index not in csvs], list(csvs.values())


def _is_csv(path: Path) -> bool:
    return path.suffix.lower() == ".csv" and path.is_file() and not _is_store(path)


def from_result(result: ProfileResult, source: str, table: GpuTable) -> Measurement:
    gpu_name = (result.gpu or {}).get("name") or ("CPU" if result.measurement == "cpu" else "unknown GPU")
    spec = table.for_device(gpu_name) if result.measurement == "gpu" else None
    return Measurement(model=result.model.name, img_size=result.model.img_size, gpu_name=gpu_name,
                       gpu_id=spec.id if spec else None, batch_size=result.model.batch_size,
                       precision=result.config.precision, source=source, kind="profile", result=result,
                       samples_per_s=result.timing.samples_per_s if result.timing else None,
                       param_count_m=result.model.param_count / 1e6 if result.model.param_count else None,
                       channels_last=result.config.channels_last, **versions(result.environment or {}))


def from_reference(ref: Any, table: GpuTable) -> Measurement:
    row = reference_dict(ref)
    spec = table.find(row["gpu_name"])
    extra = row.get("extra") or {}
    return Measurement(model=row["model"], img_size=row["img_size"], gpu_name=row["gpu_name"],
                       gpu_id=spec.id if spec else None, batch_size=row["batch_size"],
                       precision=canonical_precision(row["precision"]), samples_per_s=row["samples_per_s"],
                       source=row["source"], kind="reference", gmacs=row.get("gmacs"), macts_m=row.get("macts_m"),
                       param_count_m=row.get("param_count_m"), channels_last=extra.get("layout") == "nhwc",
                       **versions(extra))


def versions(environment: dict) -> dict[str, str | None]:
    """The torch and CUDA versions of a profile's environment or a reference row's extra; the build
    tag of ``2.11.0+cu130`` is dropped (CUDA is named apart)."""
    torch, cuda = environment.get("torch"), environment.get("cuda")
    return {"torch": str(torch).split("+")[0] if torch else None, "cuda": str(cuda) if cuda else None}


def _load_json(path: Path, table: GpuTable, loaded: Loaded, explicit: bool) -> None:
    try:
        # ProfileResult.load reads what to_json writes, gzipped too (a name ending in .gz).
        result = ProfileResult.load(path)
    except (ValueError, TypeError, KeyError) as exc:  # BadInputError is a ValueError
        if explicit:
            if isinstance(exc, NotAResultError):
                raise  # it says so itself, naming the file
            why = str(exc) if isinstance(exc, BadInputError) else f"{type(exc).__name__}: {exc}"
            raise BadInputError(f"{path}: not a visprof profile result ({why})") from None
        loaded.skipped.append(f"{path} (not a profile result)")
        return
    loaded.measurements.append(from_result(result, str(path), table))


def csv_gpu(path: Path, gpu: str | None, table: GpuTable, how: str = "name it as FILE@GPU",
            precision_given: bool = False) -> str:
    """The spec row name of a timm CSV's GPU: given, or from the file name. A file that is no
    timm CSV (a store, a profile, binary) is said to be that first: its name says no GPU.
    ``precision_given``: the caller has the precision (import-timm --precision), so only the GPU is missing."""
    if not Path(path).is_file():
        raise BadInputError(f"no such file: {path}" if not Path(path).exists() else f"{path} is not a file")
    check_benchmark_csv(path)
    parsed = parse_benchmark_filename(Path(path).name)
    hint = parsed["gpu"]
    named = table.named_in(hint) if hint else []
    spec = named[0] if len(named) == 1 else None
    # Only a name in timm's pattern (benchmark-infer-amp-...-rtx4090.csv) says its GPU for sure: a
    # given GPU against it is refused as a slip. Another name's GPU (a100.csv) is a default that the
    # given one overrides: an A100 40GB's a100.csv could not be imported as one.
    timm_named = any(parsed[part] for part in ("mode", "precision", "layout", "torch", "cuda"))
    if gpu:
        given = table.get(gpu)
        if timm_named and spec is not None and spec.name != given.name:  # --gpu 3090 over ...-rtx4090.csv
            raise BadInputError(f"{path}: its name says {spec.name}, but {gpu!r} was given for it; leave the GPU out "
                                "to take the name's, or rename the file if its name is wrong")
        return given.name
    if len(named) > 1:  # l4-vs-t4.csv had been read as the T4's, without a word
        raise BadInputError(f"{path}: its file name names {len(named)} GPUs ({', '.join(s.name for s in named)}); "
                            f"{how} with the one it was measured on")
    if spec is None:
        raise BadInputError(f"{path}: {_unnamed_gpu(path, hint, table, how, precision_given)}")
    return spec.name


def _unnamed_gpu(path: Path, hint: str | None, table: GpuTable, how: str, precision_given: bool) -> str:
    """Why a CSV's file name gives no GPU of the table, and what to do. Only a name in timm's
    pattern says a GPU: the whole stem of my.csv had been read as "GPU 'my'"; and where the name
    says no precision either, FILE@GPU alone would only lead to that refusal next."""
    parsed = parse_benchmark_filename(Path(path).name)
    example = "e.g. benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"
    more = f"or add a row with {more_gpus()}"
    if hint and any(parsed[part] for part in ("mode", "precision", "layout", "torch", "cuda")):
        return f"GPU {hint!r} (from the file name) is not in the GPU spec table; {how} with a known GPU ({table.known()}), {more}"
    if parsed["precision"] or precision_given:  # --precision given had been told to give --precision
        return (f"its file name names no known GPU (visprof reads it from the end of a timm benchmark CSV's name, "
                f"{example}); {how} with a known GPU ({table.known()}), {more}")
    return (f"its file name names no known GPU and no precision (visprof reads both from a timm benchmark CSV's name, "
            f"{example}): rename it so, or add it to a store with visprof import-timm {path} --gpu GPU --precision P "
            f"--store STORE, which compare, predict and calibrate read; GPU: one of {table.known()}, {more}")


def _split_gpu(item: str | Path) -> tuple[Path, str | None]:
    """``FILE@GPU`` -> (FILE, GPU); a path that exists as written keeps its ``@``."""
    text = str(item)
    if "@" in text and not Path(text).exists():
        text, gpu = text.rsplit("@", 1)
        return Path(text), gpu
    return Path(text), None


def input_paths(paths: Iterable[str | Path]) -> list[Path]:
    """The files and folders ``load`` reads for ``paths`` (``FILE@GPU`` as FILE), so that a
    command can refuse to write over one of them; a folder's inputs are its ``*.json``."""
    return [_split_gpu(item)[0] for item in paths]


# The names SQLite files usually have: such a file is read as a store (and named as a damaged
# one when it is not whole), never as a JSON result.
_STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def _is_store(path: Path) -> bool:
    if is_sqlite_file(path):
        return True
    if path.suffix.lower() not in _STORE_SUFFIXES:
        return False
    try:  # a JSON result someone named *.db is still read as one
        with open(path, "rb") as fh:
            start = fh.read(64).lstrip()
    except OSError:
        return True  # open_store says why it cannot be read
    return not start.startswith((b"{", b"\x1f\x8b"))


def _first_reading(path: Path, gpu: str | None, read: set[tuple]) -> bool:
    """True the first time ``load`` meets this file (by device and inode: a link or another
    spelling of the path is the same file) as this GPU's; it is then counted as read."""
    stat = path.stat()
    key = (stat.st_dev, stat.st_ino, gpu)
    if key in read:
        return False
    read.add(key)
    return True


def load(paths: Iterable[str | Path], table: GpuTable | None = None,
         on_progress: Callable[[str], None] | None = None) -> Loaded:
    """Measurements from results, folders of results, stores and timm CSVs (module doc).
    ``on_progress`` (e.g. ``visprof.base.progress.Progress.update``) is told how far the reading got
    after each result: a store of 3,000 profiles takes about 10 s."""
    check_callback(on_progress)
    table = table_or_default(table)
    loaded = Loaded()
    if isinstance(paths, (str, os.PathLike)):  # one path, not its characters
        paths = [paths]
    if not isinstance(paths, Iterable):  # None had raised "'NoneType' object is not iterable"
        raise BadInputError(f"load takes a path or a list of paths, got {'None' if paths is None else type(paths).__name__}")
    # Each file is read once, however often the inputs name it (`predict --from s.db s.db`, a folder
    # and a file in it, a link): read twice, every profile counted twice (8 predictions of 4 profiles,
    # and "4 more profile(s) of the same models not used"). A CSV counts once per GPU it is named as.
    read: set[tuple] = set()
    for item in paths:
        path, gpu = _split_gpu(item)
        if not path.exists():
            raise BadInputError(f"no such file or folder: {path}")
        loaded.inputs.append(path)
        if path.is_dir():
            files = files_in(path, FOLDER_FILES)
            unread = [file for file in files if _first_reading(file, None, read)]
            before = len(loaded.measurements)
            for file in counted(unread, len(unread), f"files of {path.name}", on_progress):
                _load_json(file, table, loaded, explicit=False)
            if len(loaded.measurements) == before and len(unread) == len(files):  # not a folder read before
                raise BadInputError(f"{path}: no visprof profile results (*.json, *.json.gz) in this folder")
        elif not _first_reading(path, gpu, read):
            continue
        elif _is_store(path):
            with open_store(path) as store:
                # damage where these reads do not go (an index page): refused as export and the writers refuse
                # it, not read as if whole
                store.check_intact()
                results = counted(store.results(), store.count(), f"results of {path.name}", on_progress)
                loaded.measurements += [from_result(r, f"{path}", table) for r in results]
                loaded.measurements += [from_reference(ref, table) for ref in store.references()]
        elif path.suffix.lower() == ".csv":
            parsed = read_benchmark_csv(path, csv_gpu(path, gpu, table))
            loaded.measurements += [from_reference(row, table) for row in parsed.rows]
        else:
            _load_json(path, table, loaded, explicit=True)
    return loaded


__all__ = ["FOLDER_FILES", "Loaded", "Measurement", "csv_gpu", "from_reference", "from_result", "input_paths", "load",
           "no_profiles_error", "profile_inputs", "refuse_csvs_only"]
