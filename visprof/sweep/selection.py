"""Which models a sweep runs, chosen the way timm users choose them.

    select_models(["resnet50", "vit_*"], exclude=["*_giant_*"], limit=20)
    select_models(model_list="models.txt")      # one name or pattern a line, as timm's benchmark.py
    select_models(all_models=True)

A name is checked against timm's registry (with close matches when it is unknown); a pattern
(``*``, ``?``, ``[...]``) expands through ``timm.list_models`` and must match something. The
result keeps the order given, without repeats. Models registered by a module imported with
``--import`` count as timm's own, so import those modules first (``import_modules``).
"""
from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from visprof.base.errors import BadInputError, UnknownModelError
from visprof.base.spelling import option
from visprof.base.timm_import import import_timm
from visprof.sweep.plan import SIZE_MARK, ModelSizes, img_size_text, split_sized

__all__ = ["STARTER_MODELS", "ModelList", "select_models", "load_model_list", "read_model_list", "split_names",
           "import_modules", "is_pattern", "registry_sizes"]

# What `visprof sweep --store FILE` sweeps when no model is named: one model of each kind the
# categories tell apart (CNNs plain, depthwise and mobile; ViTs plain, distilled, windowed;
# a hybrid), small enough to run on a CPU in minutes.
STARTER_MODELS = ("resnet50", "convnext_tiny", "efficientnet_b0", "mobilenetv3_large_100", "vit_base_patch16_224",
                  "deit_small_patch16_224", "swin_tiny_patch4_window7_224", "maxvit_tiny_tf_224")

_PATTERN_CHARS = set("*?[")


def is_pattern(text: str) -> bool:
    return any(ch in _PATTERN_CHARS for ch in text)


def split_names(items: Iterable[str] | str | None) -> list[str]:
    """``"resnet50,vit_*"`` or ``["resnet50", "vit_*,deit_*"]`` -> the names, stripped."""
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    return [part.strip() for item in items for part in str(item).split(",") if part.strip()]


@dataclass(frozen=True)
class ModelList:
    """A model-list file's entries, read once: ``--model-list <(grep vit_ models.txt)`` is a pipe,
    which a second read finds empty, so whoever checks the file early hands this on."""

    path: str
    entries: tuple[tuple[str, int], ...]  # (name or pattern, line number)


def read_model_list(path: str | Path) -> list[str]:
    """Names from a file, one a line (timm's ``--model-list`` format; several on a line separated by
    commas or whitespace); ``#`` starts a comment."""
    return [name for name, _ in load_model_list(path).entries]


def load_model_list(path: str | Path) -> ModelList:
    """The file's names or patterns with their line numbers (errors name the line)."""
    return ModelList(str(path), tuple(_model_list_entries(path)))


# What a name or pattern of a model list may hold: timm names and tags (letters, digits, _ . -),
# hub prefixes (timm/, hf-hub:), patterns (* ? [!...]) and @SIZE (@160, @384x256).
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/:*?[]!@")


def _model_list_entries(path: str | Path) -> list[tuple[str, int]]:
    """(entry, line number) for each name or pattern of a model-list file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: the byte-order mark Windows Notepad starts with
    except FileNotFoundError:
        raise BadInputError(f"{option('model_list')}: no such file: {path}") from None
    except IsADirectoryError:
        raise BadInputError(f"{option('model_list')}: {path} is a directory; give a file with one model name "
                            "a line") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise BadInputError(f"{option('model_list')}: cannot read {path}: {why}") from None
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        # Several names on a line may be separated by commas or by any whitespace (a tab-separated
        # line was refused): no timm name, tag, pattern or @SIZE holds whitespace.
        entries.extend((name, number) for name in split_names(line.split("#", 1)[0].split()))
    if not entries:
        raise BadInputError(f"{option('model_list')}: {path} names no model (one name or pattern a line)")
    return entries


def import_modules(modules: Sequence[str]) -> None:
    """Imports each module by name (``my_models``) or file (``path/to/my_models.py``).

    Such a module can register models with timm's ``register_model``; the sweep imports it
    in the driver (to select models) and in every worker (to build them)."""
    for entry in modules:
        _import_one(entry)


def import_roots(modules: Sequence[str]) -> list[str]:
    """The folders the driver found modules named by name (not by file) in that a worker would not
    search, for the workers' PYTHONPATH. Those are the driver's first ``sys.path`` entry: the
    script's folder, or the current one under ``python -m``, which workers started with
    PYTHONSAFEPATH leave out; ``run.py`` beside ``my_models.py`` had failed in every worker.
    Call it after ``import_modules``."""
    # sys.flags.safe_path is Python 3.11's (-P, PYTHONSAFEPATH); on 3.10 the first entry is always there
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return []
    hidden = os.path.realpath(sys.path[0] or os.getcwd())
    roots = []
    for entry in modules:
        spec = None if _names_a_file(entry) else getattr(sys.modules.get(entry.split(".")[0]), "__spec__", None)
        if spec is None or not (spec.submodule_search_locations or spec.origin):
            continue
        location = spec.submodule_search_locations[0] if spec.submodule_search_locations else spec.origin
        root = os.path.dirname(os.path.realpath(location))  # a package's parent, or a module's folder
        if root == hidden and root not in roots:
            roots.append(root)
    return roots


def _names_a_file(entry: str) -> bool:
    return entry.endswith(".py") or "/" in entry or "\\" in entry


def _import_one(entry: str) -> None:
    try:
        if _names_a_file(entry):
            path = Path(entry).resolve()
            if not path.is_file():
                raise BadInputError(f"{_import_option()}: no such file: {entry}")
            name = f"visprof_user_{path.stem}"
            if name in sys.modules:
                return
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        else:
            importlib.import_module(entry)
    except BadInputError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and entry.split(".")[0] == exc.name.split(".")[0]:
            raise BadInputError(f"{_import_option()}: no module named {entry!r} (give a module on the Python path, "
                                "or a path to a .py file)") from None
        raise BadInputError(f"{_import_option()} {entry}: {type(exc).__name__}: {exc}") from exc
    except Exception as exc:
        raise BadInputError(f"{_import_option()} {entry} failed: {type(exc).__name__}: {exc}") from exc


def _import_option() -> str:
    """The option that names modules to import: run_sweep's ``imports``, the CLI's ``--import``."""
    return option("imports", flag="--import")


def select_models(
    names: Iterable[str] | str | None = None,
    *,
    model_list: str | Path | ModelList | None = None,
    all_models: bool = False,
    exclude: Iterable[str] | str | None = None,
    limit: int | None = None,
) -> list[str]:
    """The model names to sweep, in order, without repeats (see the module docstring)."""
    timm = import_timm()

    # (entry, where it came from: None, or the model list's line number)
    requested: list[tuple[str, int | None]] = [(name, None) for name in split_names(names)]
    if model_list is not None:
        if not isinstance(model_list, ModelList):
            model_list = load_model_list(model_list)
        requested += model_list.entries
    if all_models:
        requested += [(name, None) for name in timm.list_models()]
    if not requested:
        raise BadInputError("no models given: name models or patterns ('resnet50,vit_*'), "
                            f"or use {option('model_list', metavar='FILE')} or "
                            f"{option('all_models', True, flag='--all')}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise BadInputError(f"{option('limit')} must be an integer >= 1, got {limit!r}")
    exclude_patterns = split_names(exclude)

    chosen: dict[str, None] = {}
    for item, line in requested:
        for name in _expand(item, timm) if line is None else _expand_listed(item, timm, model_list.path, line):
            chosen.setdefault(name, None)
    kept = [name for name in chosen if not any(_excludes(pattern, name) for pattern in exclude_patterns)]
    if not kept:
        raise BadInputError(f"{option('exclude', exclude_patterns)} leaves none of the {len(chosen)} selected models")
    return kept if limit is None else _first_models(kept, limit)


def _first_models(names: list[str], limit: int) -> list[str]:
    """The entries of the first ``limit`` models: ``resnet18@96`` and ``resnet18@128`` are one model
    at two sizes (``--limit`` had counted them as two, and dropped the next model)."""
    models: set[str] = set()
    kept = []
    for name in names:
        model = name.split(SIZE_MARK, 1)[0]
        if model in models or len(models) < limit:
            models.add(model)
            kept.append(name)
    return kept


def _excludes(pattern: str, name: str) -> bool:
    """An --exclude pattern without @SIZE leaves out the model at every size (``resnet18`` left
    ``resnet18@160`` in); one with it, that size only."""
    model = name if "@" in pattern else name.split("@", 1)[0]
    return fnmatch.fnmatchcase(model, pattern)


def _expand_listed(item: str, timm, path: str | Path, line: int) -> list[str]:
    """``_expand`` for an entry of a model-list file: an error names the file and the line."""
    where = f"{option('model_list')} {path} line {line}"
    if not set(item) <= _NAME_CHARS:  # a JSON or CSV file, a sentence: no name could hold these
        raise BadInputError(f"{where}: {item!r} is not a timm model name (a model list has one name or pattern a "
                            "line, # starts a comment)")
    try:
        return _expand(item, timm)
    except (BadInputError, UnknownModelError) as exc:
        raise BadInputError(f"{where}: {exc}") from None


def _expand(item: str, timm) -> list[str]:
    """The timm names an entry stands for; ``NAME@SIZE`` keeps its size on each (``resnet50@160``)."""
    if SIZE_MARK in item:
        name, size = split_sized(item)
        return [f"{model}{SIZE_MARK}{img_size_text(size)}" for model in _expand(name, timm)]
    if is_pattern(item):
        # A pattern with a tag ("resnet50.*", "*.in1k") matches pretrained names, which
        # list_models() leaves out: it had matched nothing
        matches = timm.list_pretrained(item) if "." in item else timm.list_models(item)
        if not matches:
            raise BadInputError(f"model pattern {item!r} matches no timm model "
                                "(timm.list_models() lists the names; quote patterns in the shell)")
        return matches
    from visprof.passes.models import timm_name

    return [timm_name(item)]  # UnknownModelError, with close matches, for a typo


def registry_sizes(name: str) -> ModelSizes | None:
    """``name``'s sizes from its pretrained config in timm's registry (the config ``timm.create_model``
    gives the model, which the worker's ``resolve_model`` reads the test and training sizes from), for
    a ``SweepPlan`` to see which cells measure the same thing. A look-up, no model built: all 1371
    architectures of timm 1.0.31 took 0.07 s. None where the registry has no config with an input size
    (a model registered without one, as visprof's test models): its cells are told apart by key only."""
    timm = import_timm()
    try:
        cfg = timm.models.get_pretrained_cfg(name)
    except Exception:  # noqa: BLE001 - a name timm cannot resolve a config for: nothing to merge on
        return None
    input_size = getattr(cfg, "input_size", None)
    if not input_size:
        return None
    train = tuple(input_size[-2:])
    test = tuple(cfg.test_input_size[-2:]) if getattr(cfg, "test_input_size", None) else train
    tag = getattr(cfg, "tag", None)
    return ModelSizes(f"{name.split('.', 1)[0]}.{tag}" if tag else name, train, test)
