"""The GPU spec table (``visprof/data/gpus.toml``): peak rates, bandwidth, memory, SMs, L2, clocks.

    table = gpu_table()                      # the built-in rows (+ $VISPROF_GPUS, if set)
    table.extend_from_file("my_gpus.toml")   # add or replace rows; checked, with clear errors
    spec = table.get("rtx4090")              # by id, alias or device name
    spec = table.for_device("NVIDIA H200")   # the row an NVML/torch device name matches
    spec.tensor_peak("bf16")                 # dense TFLOP/s with fp32 accumulation
    device_warnings(spec, result.gpu)        # the row against what NVML measured

The file's conventions (dense figures, fp32 accumulation, units) are in its header.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from visprof.base.errors import BadInputError
from visprof.base.spelling import either
from visprof.base.inputs import load_toml_file

DEFAULT_GPUS_PATH = Path(__file__).resolve().parent.parent / "data" / "gpus.toml"
ENV_FILE = "VISPROF_GPUS"  # a user file added to the built-in table by gpu_table()

TENSOR_KEYS = ("fp16", "bf16", "tf32", "fp8", "int8", "fp4", "fp16_acc16")
# Numeric fields of a row, with their unit for messages; every one is required.
NUMBERS = {
    "sms": "SMs",
    "boost_clock_mhz": "MHz",
    "memory_gb": "GB",
    "memory_bandwidth_gbs": "GB/s",
    "l2_mb": "MB",
    "fp32_tflops": "TFLOP/s",
}
TEXT = {"id", "name", "arch", "compute_capability", "note"}
LISTS = {"match", "aliases"}
ROW_KEYS = {*NUMBERS, *TEXT, *LISTS, "tensor_tflops", "source"}
# The device check's tolerances (module doc of device_warnings).
MEMORY_TOLERANCE = 0.08
CLOCK_TOLERANCE = 0.05
L2_TOLERANCE = 0.10
# Precisions visprof runs at, and the tensor rate each uses.
PRECISION_TENSOR_KEY = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32", "fp32": None, "fp8": "fp8"}


# A word after a GPU's name that makes it another GPU (RTX 3090 Ti, A100 PCIe, H100 NVL, 40GB).
_VARIANT = re.compile(r"ti|super|xt|pcie|sxm\d?|nvl|max|mobile|laptop|\d+gb")


def normalize_name(text: str) -> str:
    """``NVIDIA GeForce RTX 4090`` -> ``rtx4090``: lower case, no vendor words, no punctuation."""
    return _normalized(str(text))


@lru_cache(maxsize=4096)  # a comparison looks up a few names some 200,000 times (``GpuTable.find``)
def _normalized(text: str) -> str:
    text = re.sub(r"\b(nvidia|geforce|tesla)\b", "", text.lower())
    return re.sub(r"[^a-z0-9]", "", text)


@dataclass(frozen=True)
class GpuSpec:
    id: str
    name: str
    sms: int
    boost_clock_mhz: float
    memory_gb: float
    memory_bandwidth_gbs: float
    l2_mb: float
    fp32_tflops: float
    tensor_tflops: dict[str, float]
    match: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    arch: str = ""
    compute_capability: str = ""
    note: str = ""
    source: dict[str, str] = field(default_factory=dict)
    origin: str = ""  # the file the row came from

    def tensor_peak(self, precision: str | None) -> float | None:
        """Dense tensor-core TFLOP/s at ``precision`` ("fp16", "bf16", "tf32", "fp8"); None
        where the GPU has no tensor rate for it (fp32 without TF32, FP8 on Ampere)."""
        key = PRECISION_TENSOR_KEY.get(precision or "", precision)
        return self.tensor_tflops.get(key) if key else None

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gbs * 1e9

    def matches(self, device_name: str) -> bool:
        return any(re.search(p, device_name, re.IGNORECASE) for p in self.match)

    @property
    def short_name(self) -> str:
        """The name sentences use: "RTX 4090", "H200 SXM 141GB" (no vendor or brand)."""
        return self.name.replace("NVIDIA ", "").replace("GeForce ", "")

    def names(self) -> list[str]:
        """Every name this row answers to on the command line."""
        return [self.id, self.name, *self.aliases]

    def as_dict(self) -> dict[str, Any]:
        """The figures a result or a prediction records of the GPU it used."""
        return {"id": self.id, "name": self.name, "sms": self.sms, "boost_clock_mhz": self.boost_clock_mhz,
                "memory_gb": self.memory_gb, "memory_bandwidth_gbs": self.memory_bandwidth_gbs,
                "l2_mb": self.l2_mb, "fp32_tflops": self.fp32_tflops, "tensor_tflops": dict(self.tensor_tflops)}


def _fail(origin: str, where: str, message: str) -> BadInputError:
    return BadInputError(f"GPU spec file {origin}: {where}: {message}")


def spec_from_mapping(data: Mapping[str, Any], origin: str = "<mapping>", index: int = 0,
                      require_sources: bool = False) -> GpuSpec:
    """One [[gpus]] row, checked: every figure present, a positive number, in known keys."""
    where = f"row {index + 1}" + (f" (id {data.get('id')!r})" if isinstance(data, Mapping) and data.get("id") else "")
    if not isinstance(data, Mapping):
        raise _fail(origin, where, f"expected a table, got {type(data).__name__}")
    unknown = set(data) - ROW_KEYS
    if unknown:
        raise _fail(origin, where, f"unknown key(s) {sorted(unknown)}; valid keys: {sorted(ROW_KEYS)}")
    for key in ("id", "name"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise _fail(origin, where, f"'{key}' must be a non-empty string")
    numbers = {}
    for key, unit in NUMBERS.items():
        numbers[key] = _positive(data.get(key), origin, where, key, unit)
    if numbers["sms"] != int(numbers["sms"]):  # 0.5 SMs had become 0, and a ZeroDivisionError in predict
        raise _fail(origin, where, f"'sms' must be a whole number of SMs, got {numbers['sms']}")
    tensor = data.get("tensor_tflops")
    if not isinstance(tensor, Mapping) or not tensor:
        raise _fail(origin, where, "'tensor_tflops' must be a table such as { fp16 = 165.2, bf16 = 165.2 }")
    bad_keys = set(tensor) - set(TENSOR_KEYS)
    if bad_keys:
        raise _fail(origin, where, f"tensor_tflops: unknown precision(s) {sorted(bad_keys)}; valid: {list(TENSOR_KEYS)}")
    tensor_tflops = {k: _positive(v, origin, where, f"tensor_tflops.{k}", "TFLOP/s") for k, v in tensor.items()}
    lists = {}
    for key in LISTS:
        value = data.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _fail(origin, where, f"'{key}' must be a list of strings")
        lists[key] = tuple(value)
    for pattern in lists["match"]:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise _fail(origin, where, f"bad match regex {pattern!r}: {exc}") from None
    source = data.get("source", {})
    if not isinstance(source, Mapping) or not all(isinstance(v, str) for v in source.values()):
        raise _fail(origin, where, "'source' must be a table of strings, one per figure")
    if require_sources:
        missing = [k for k in [*NUMBERS, "tensor_tflops"] if k not in source]
        if missing:
            raise _fail(origin, where, f"no source for {missing}")
    else:
        source = {key: source.get(key, f"user file {origin}") for key in [*NUMBERS, "tensor_tflops"]}
    for key in ("arch", "compute_capability", "note"):
        if key in data and not isinstance(data[key], str):
            raise _fail(origin, where, f"'{key}' must be a string")
    return GpuSpec(id=data["id"].strip(), name=data["name"].strip(), sms=int(numbers["sms"]),
                   boost_clock_mhz=numbers["boost_clock_mhz"], memory_gb=numbers["memory_gb"],
                   memory_bandwidth_gbs=numbers["memory_bandwidth_gbs"], l2_mb=numbers["l2_mb"],
                   fp32_tflops=numbers["fp32_tflops"], tensor_tflops=tensor_tflops, match=lists["match"],
                   aliases=lists["aliases"], arch=data.get("arch", ""),
                   compute_capability=data.get("compute_capability", ""), note=data.get("note", ""),
                   source=dict(source), origin=origin)


def _positive(value: Any, origin: str, where: str, key: str, unit: str) -> float:
    if value is None:
        raise _fail(origin, where, f"missing '{key}' ({unit})")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:  # NaN fails both
        raise _fail(origin, where, f"'{key}' must be a positive, finite number ({unit}), got {value!r}")
    return float(value)


class GpuTable:
    """GPU rows by id, in file order; later rows with the same id replace earlier ones."""

    def __init__(self, specs: Iterable[GpuSpec] = ()):
        self.specs: dict[str, GpuSpec] = {}
        for spec in specs:
            self.specs[spec.id] = spec

    @classmethod
    def default(cls) -> "GpuTable":
        """A fresh copy of the built-in table (safe to extend)."""
        return cls(_default_specs())

    @classmethod
    def from_file(cls, path: str | Path, require_sources: bool = False) -> "GpuTable":
        return cls(read_specs(path, require_sources))

    def extend_from_file(self, path: str | Path) -> list[GpuSpec]:
        """Adds the rows of a user file (same shape as gpus.toml); a row whose id exists
        replaces it. A bad file raises BadInputError and leaves the table unchanged."""
        specs = read_specs(path)
        replaced = {spec.id for spec in specs}
        kept = {normalize_name(n): row.id for row in self.specs.values() if row.id not in replaced for n in row.names()}
        for i, spec in enumerate(specs):
            clash = next((n for n in spec.names() if normalize_name(n) in kept), None)
            if clash is not None:  # find() would answer it with this row, without a word (by what was added last)
                other = kept[normalize_name(clash)]
                raise BadInputError(f"GPU spec file {path}: row {i + 1} ({spec.id!r}) is called {clash!r}, a name of the "
                                    f"table's row {other!r}; give it id = {other!r} to replace that row, or another name")
        for spec in specs:
            self.specs[spec.id] = spec
        return specs

    def __iter__(self):
        return iter(self.specs.values())

    def __len__(self) -> int:
        return len(self.specs)

    def for_device(self, device_name: str | None) -> GpuSpec | None:
        """The row whose ``match`` regexes fit an NVML/torch device name, else the one whose name or
        alias the device name is (a user's row needs no ``match``: its profiles had found no row);
        the last-added row wins, so a user row overrides the built-in one."""
        if not device_name:
            return None
        hits = [spec for spec in self.specs.values() if spec.matches(device_name)]
        if not hits:
            key = normalize_name(device_name)
            hits = [spec for spec in self.specs.values() if key in {normalize_name(n) for n in spec.names()}]
        return hits[-1] if hits else None

    def find(self, name: str | None) -> GpuSpec | None:
        """By id, alias, row name or device name (case and punctuation ignored); None if unknown."""
        if not name:
            return None
        key = normalize_name(name)
        for spec in reversed(list(self.specs.values())):
            if key in {normalize_name(n) for n in spec.names()}:
                return spec
        return self.for_device(name)

    def named_in(self, text: str) -> list[GpuSpec]:
        """The rows that ``text`` (a file name's words, ``l4-vs-t4``) names, left to right, each by
        the longest run of words that is one of its names (``a100-40gb``, ``rtx-4090``); else the row
        ``find`` takes (a device name). Several mean the text names several GPUs, where ``find``
        takes the one its device patterns fit last."""
        words = [w for w in re.split(r"[-_\s.]+", text) if w]
        found: list[GpuSpec] = []
        i = 0
        while i < len(words):
            for j in range(len(words), i, -1):
                spec = self._by_name(" ".join(words[i:j]))
                if spec is not None and j < len(words) and _VARIANT.fullmatch(words[j].lower()):
                    spec = None  # rtx-3090-ti: another GPU than the 3090, which the table may lack
                if spec is not None:
                    if spec not in found:
                        found.append(spec)
                    i = j
                    break
            else:
                i += 1
        if found:
            return found
        spec = self.find(text)
        return [spec] if spec is not None else []

    def _by_name(self, name: str) -> GpuSpec | None:
        key = normalize_name(name)
        return next((spec for spec in reversed(list(self.specs.values()))
                     if key in {normalize_name(n) for n in spec.names()}), None) if key else None

    def get(self, name: str) -> GpuSpec:
        """As ``find``, but an unknown name is a BadInputError that lists the known ones."""
        spec = self.find(name)
        if spec is None:
            raise BadInputError(f"unknown GPU {name!r}; known: {self.known()} (add a row with {more_gpus()}, "
                                f"see docs/hardware-sensitivity.md)")
        return spec

    def known(self) -> str:
        """The rows' ids, for a message that asks for a GPU name."""
        return ", ".join(spec.id for spec in self.specs.values())


def more_gpus() -> str:
    """How the caller adds rows to the spec table: a table made with them, or the CLI's option."""
    return either("table=gpu_table(extra=FILE)", "--gpus FILE")


def read_specs(path: str | Path, require_sources: bool = False) -> list[GpuSpec]:
    path = Path(path)
    # The shared reader: a folder, random bytes or a binary file are one line, as any input file.
    data = load_toml_file(path, "GPU spec file", hint="the shape of visprof/data/gpus.toml")
    rows = data.get("gpus")
    if not isinstance(rows, list) or not rows:
        raise BadInputError(f"GPU spec file {path}: no [[gpus]] rows")
    extra = set(data) - {"version", "gpus"}
    if extra:
        raise BadInputError(f"GPU spec file {path}: unknown top-level key(s) {sorted(extra)}; expected 'version' and [[gpus]]")
    specs = [spec_from_mapping(row, str(path), i, require_sources) for i, row in enumerate(rows)]
    seen: dict[str, int] = {}
    for i, spec in enumerate(specs):
        if spec.id in seen:
            raise BadInputError(f"GPU spec file {path}: rows {seen[spec.id] + 1} and {i + 1} both have id {spec.id!r}")
        seen[spec.id] = i
    called: dict[str, int] = {}  # one name, one row: find() answers a name shared by two rows with either
    for i, spec in enumerate(specs):
        for key, name in {normalize_name(n): n for n in spec.names()}.items():
            if called.setdefault(key, i) != i:
                raise BadInputError(f"GPU spec file {path}: rows {called[key] + 1} and {i + 1} are both called {name!r}")
    return specs


@lru_cache(maxsize=1)
def _default_specs() -> tuple[GpuSpec, ...]:
    return tuple(read_specs(DEFAULT_GPUS_PATH, require_sources=True))


def gpu_table(extra: str | Path | None = None) -> GpuTable:
    """The built-in table, plus the file named by $VISPROF_GPUS, plus ``extra``."""
    table = GpuTable.default()
    env = os.environ.get(ENV_FILE)
    if env:
        try:
            table.extend_from_file(env)
        except BadInputError as exc:  # the user may not know where the path came from
            raise BadInputError(f"${ENV_FILE}: {exc}") from None
    if extra is not None:
        table.extend_from_file(extra)
    return table


def table_or_default(table: Any) -> GpuTable:
    """``table``, or the default table (``gpu_table()``) for None; anything else is one line (a spec
    file's path had failed deep inside with an AttributeError)."""
    if table is None:
        return gpu_table()
    if not isinstance(table, GpuTable):
        hint = f"; a spec file's rows are added with {more_gpus()}" if isinstance(table, (str, os.PathLike)) else ""
        raise BadInputError(f"table must be a GpuTable (or None), not {type(table).__name__}{hint}")
    return table


def device_warnings(spec: GpuSpec | None, gpu: Mapping[str, Any] | None) -> list[str]:
    """Disagreements between a spec row and what NVML/torch say about the running GPU
    (``ProfileResult.gpu`` / ``hardware.gpu_identity``):

    * no row matches the device name: the roofline has no ceilings;
    * SM count differs (exact);
    * memory differs by more than 8% (``memory_gb`` read as GiB: NVML reports GiB less
      reserved/ECC memory);
    * the maximum SM clock NVML reports is more than 5% below the row's boost clock (a
      power-limited variant or a capped clock). A higher maximum is normal on GeForce cards;
    * the L2 cache torch reports differs by more than 10% from the row's ``l2_mb`` (read as MiB:
      the datasheets' "50 MB" is the 50 MiB the driver reports on an H100). Predictions read it
      to decide how much of a model's traffic stays on chip.
    """
    if not gpu:
        return []
    name = gpu.get("name") or "?"
    if spec is None:
        return [f"GPU {name!r} has no row in the GPU spec table: no roofline ceilings or predictions for it "
                f"(add one with VISPROF_GPUS=FILE; see docs/hardware-sensitivity.md)"]
    out = []
    sms = gpu.get("sm_count")
    if sms and int(sms) != spec.sms:
        out.append(f"GPU {name!r}: NVML/torch report {sms} SMs, the spec row {spec.id!r} says {spec.sms}")
    memory = gpu.get("memory_total_bytes")
    if memory:
        gib = memory / 2**30
        if abs(gib - spec.memory_gb) > MEMORY_TOLERANCE * spec.memory_gb:
            out.append(f"GPU {name!r}: {gib:.1f} GiB of memory, the spec row {spec.id!r} says {spec.memory_gb:g} GB")
    clock = gpu.get("max_sm_clock_mhz")
    if clock and clock < (1 - CLOCK_TOLERANCE) * spec.boost_clock_mhz:
        out.append(f"GPU {name!r}: max SM clock {clock} MHz, below the spec row {spec.id!r}'s boost clock "
                   f"{spec.boost_clock_mhz:g} MHz: its peak rates are not reachable here")
    l2 = gpu.get("l2_cache_bytes")
    if l2 and spec.l2_mb and abs(l2 / 2**20 - spec.l2_mb) > L2_TOLERANCE * spec.l2_mb:
        out.append(f"GPU {name!r}: torch reports {l2 / 2**20:g} MiB of L2 cache, the spec row {spec.id!r} says "
                   f"{spec.l2_mb:g} MB")
    return out


__all__ = ["DEFAULT_GPUS_PATH", "GpuSpec", "GpuTable", "device_warnings", "gpu_table", "normalize_name",
           "read_specs", "spec_from_mapping", "table_or_default"]
