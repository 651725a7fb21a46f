"""``visprof nsys import REPORT.sqlite``: visprof's breakdown of an Nsight Systems recording.

Any program that ran with visprof's NVTX ranges (``visprof profile --nvtx-only``, a training
loop under ``visprof.trace()``, ...) and was recorded with ``nsys profile --trace cuda,nvtx``,
then exported with ``nsys export --type sqlite``:

1. the ranges of the ``visprof`` domain are read back into ops (category, sub-category and
   aten op from the op range, its module path from the module ranges around it) and the
   module tree (``read_visprof_ranges``);
2. each kernel, memcpy and memset is tied to the CUDA API call that launched it
   (``correlationId``, same process), and the call to the innermost visprof range around it on
   the same thread (``projection``): an op range gives the row its op;
3. the result is a ``CapturedTrace`` like the attributed pass's, and the attributed pass's own
   functions (``profiler.attach_breakdown``, ``attach_kernel_tables``) make the result from it:
   categories, modules, op types, kernel families, launch sizes and the roofline. The run mark
   that ``--nvtx-only`` writes gives the model, the regime and each op's costs and attributes.

Rows launched outside every visprof range (warm-up, the template forward, other code) are not
counted, and the result says how much GPU time that was. Iterations are the model ranges: one
per forward.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from visprof import result as R
from visprof.attribution.categories import CategoryTable, default_table
from visprof.base.errors import BadInputError
from visprof.base.options import (AUTOCAST_MODES, AUTOCAST_OFF, DEFAULT_AUTOCAST, DEFAULT_GRAD_MODE, GRAD_MODES,
                                  UNKNOWN_REGIME, autocast_at)
from visprof.nsight import nsys_export as X
from visprof.capture.nvtx_scheme import (DOMAIN, KIND_CATEGORY, KIND_MODEL, KIND_MODULE, KIND_OP, RUN_MARK_PREFIX,
                                        parse_module_range, parse_op_range)
from visprof.nsight.projection import innermost_ranges, match_calls
from visprof.native.records import KERNEL_DTYPE, KIND_KERNEL, CapturedTrace, ModuleRecord, OpRecord


# The run mark's per-op lists (the template forward's ops), left out of environment.visprof_run.
TEMPLATE_KEYS = ("op_names", "op_costs", "op_attrs", "op_flops")


@dataclass
class VisprofRanges:
    """visprof's ranges of one export, read back."""

    ranges: X.NvtxRanges
    kinds: np.ndarray  # per range: its visprof kind (0: not visprof's)
    op_of_range: np.ndarray  # per range: index into ops, or -1
    ops: list[OpRecord]
    op_payload: list[int]
    modules: list[ModuleRecord]
    model_names: list[str]
    iterations: int  # model ranges
    kinds_inferred: bool = False  # the file had no NVTX categories: kinds were read from names


def read_visprof_ranges(ranges: X.NvtxRanges, table: CategoryTable) -> VisprofRanges:
    """Ops, modules and iterations from the ranges of the visprof domain (see nvtx_scheme)."""
    kinds = ranges.kind.copy()
    inferred = False
    if len(kinds) and not np.isin(kinds, (KIND_MODEL, KIND_MODULE, KIND_CATEGORY, KIND_OP)).any():
        kinds = _kinds_from_names(ranges.text, table)
        inferred = True
    modules: list[ModuleRecord] = []
    module_index: dict[tuple[int, str, str], int] = {}
    ops: list[OpRecord] = []
    payloads: list[int] = []
    model_names: list[str] = []
    op_of_range = np.full(len(ranges), -1, dtype=np.int64)
    iterations = 0
    # Per thread, a stack of the visprof ranges open at each range's start.
    stack: list[tuple[int, int]] = []  # (range index, module index or -1)
    thread = None
    start, end, tids = ranges.start.tolist(), ranges.end.tolist(), ranges.tid.tolist()
    iteration = -1
    for r in range(len(ranges)):
        if tids[r] != thread:
            thread, stack, iteration = tids[r], [], -1
        while stack and end[stack[-1][0]] <= start[r]:  # ended before this one began: not around it
            stack.pop()
        kind = int(kinds[r])
        parent_module = next((m for _, m in reversed(stack) if m >= 0), -1)
        if inferred and kind == KIND_MODULE and parent_module < 0:
            # told apart by place where the names cannot: visprof gives the model kind to a module range with
            # none around it (nvtx_scheme); read as a module, each iteration's had counted in one
            kind = KIND_MODEL
        module = -1
        if kind in (KIND_MODEL, KIND_MODULE):
            label, cls = parse_module_range(ranges.text[r])
            is_root = kind == KIND_MODEL or parent_module < 0
            path = "" if is_root else label
            key = (parent_module, path, cls)
            module = module_index.get(key, -1)
            if module < 0:
                module = module_index[key] = len(modules)
                modules.append(ModuleRecord(path=path, cls=cls, parent=-1 if is_root else parent_module))
                if is_root:
                    model_names.append(label)
            if kind == KIND_MODEL:
                iterations += 1
                iteration = iterations - 1
        elif kind == KIND_OP:
            category, subcategory, op_name = parse_op_range(ranges.text[r])
            op_of_range[r] = len(ops)
            ops.append(OpRecord(external_id=len(ops) + 1, name=op_name or category, module=parent_module,
                                iteration=max(iteration, 0), cpu_start_ns=int(start[r]), cpu_end_ns=int(end[r]),
                                category=f"{category}/{subcategory}" if subcategory else category))
            payloads.append(int(ranges.payload[r]))
        if kind in (KIND_MODEL, KIND_MODULE, KIND_CATEGORY, KIND_OP):
            stack.append((r, module))
    read = VisprofRanges(ranges, kinds, op_of_range, ops, payloads, modules, model_names, iterations, inferred)
    _reclassify_older_categories(read, table)
    return read


def _kinds_from_names(texts: list[str], table: CategoryTable) -> np.ndarray:
    """Kinds for a file without NVTX categories: category ranges are named by a category id,
    op ranges "category[:sub] op", module ranges "label (Class)"; the rest are users'."""
    categories = set(table.categories)
    out = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        head, space, _ = text.partition(" ")
        if text in categories:
            out[i] = KIND_CATEGORY
        elif space and head.partition(":")[0] in categories:
            out[i] = KIND_OP
        elif text.endswith(")") and " (" in text:
            out[i] = KIND_MODULE
    return out


@dataclass
class Imported:
    trace: CapturedTrace
    export: dict  # path, nsys version, schema version, tables missing
    settings: dict  # the run's settings from visprof's run mark (empty without one)
    outside_ns: int  # GPU time launched outside every visprof range (not counted)
    outside_rows: int
    unlinked_rows: int  # GPU rows whose launch call is not in the file
    gpus: dict[int, dict]
    model_names: list[str] = field(default_factory=list)  # from the model ranges
    warnings: list[str] = field(default_factory=list)


def _reclassify_older_categories(ranges: VisprofRanges, table: CategoryTable) -> None:
    """An op range that names a category without a sub-category, where the table now splits
    that category (normalization gained batch/layer/group/rms/instance/other), was recorded by
    an older visprof: its op is classified again, by its name and modules, as capture would now."""
    from visprof.attribution.attribute import module_chains

    chains = None
    for op in ranges.ops:
        category = op.category or ""
        known = table.categories.get(category)
        if "/" in category or known is None or not known.subcategories:
            continue
        if chains is None:
            chains = module_chains(ranges.modules)
        chain = chains[op.module] if 0 <= op.module < len(chains) else ()
        op.category = table.classify_op(op.name, chain).key


def import_trace(path: str | Path, table: CategoryTable | None = None) -> Imported:
    """Reads an export into a CapturedTrace of the GPU work visprof's ranges own."""
    table = table or default_table()
    with X.open_export(path) as export:
        missing = export.missing()
        info = {"path": str(path), "nsys_version": export.nsys_version, "export_schema": export.schema_version,
                "missing_tables": sorted(missing)}
        if X.NVTX in missing:
            raise BadInputError(f"{path}: {missing[X.NVTX]}")
        domains = X.domain_ids(export, DOMAIN)
        if not domains:
            raise BadInputError(f"{path}: no NVTX domain {DOMAIN!r}: the program did not run with visprof's ranges "
                                "(visprof profile --nvtx-only, visprof.trace(), or visprof.capture.op_capture.OpCapture(nvtx=True))")
        visprof_ranges = read_visprof_ranges(X.read_ranges(export, domains), table)
        if not visprof_ranges.ops:
            raise BadInputError(f"{path}: the {DOMAIN!r} domain has no op ranges")
        rows = X.read_gpu_rows(export)
        if len(rows) == 0:
            raise BadInputError(f"{path} (nsys {export.nsys_version}, export schema {export.schema_version}) has no GPU "
                                f"work to attribute ({len(visprof_ranges.ops)} visprof op ranges found): "
                                f"{X.why_no_gpu_rows(export)}")
        if X.RUNTIME in missing:
            raise BadInputError(f"{path}: {missing[X.RUNTIME]}")
        calls = X.read_runtime(export)
        settings = read_run_mark(X.read_marks(export, domains, RUN_MARK_PREFIX))
        gpus = X.read_gpus(export)
    return _to_trace(visprof_ranges, rows, calls, settings, gpus, info)


def _to_trace(vr: VisprofRanges, rows: X.GpuRows, calls: X.RuntimeCalls, settings: dict, gpus: dict,
              info: dict) -> Imported:
    call_of_row = match_calls(X.pid_of(rows.pid), rows.correlation, X.pid_of(calls.tid), calls.correlation)
    ours = vr.kinds > 0
    owned_ranges = np.flatnonzero(ours)
    ranges = vr.ranges
    owner_in_ours = innermost_ranges(ranges.start[owned_ranges], ranges.end[owned_ranges], ranges.tid[owned_ranges],
                                     calls.start, calls.end, calls.tid)
    owner_of_call = np.where(owner_in_ours >= 0, owned_ranges[np.maximum(owner_in_ours, 0)], -1)
    owner = np.where(call_of_row >= 0, owner_of_call[np.maximum(call_of_row, 0)], -1)
    keep = owner >= 0
    durations = np.maximum(rows.end - rows.start, 0)
    outside_ns = int(durations[~keep].sum())
    op_of_row = np.where(keep, vr.op_of_range[np.maximum(owner, 0)], -1)

    name_ids: dict[str, int] = {}
    kept = np.flatnonzero(keep)
    out = np.zeros(len(kept), dtype=KERNEL_DTYPE)
    for column, values in (("kind", rows.kind), ("start_ns", rows.start), ("end_ns", rows.end),
                           ("device", rows.device), ("stream", rows.stream), ("correlation_id", rows.correlation),
                           ("registers", rows.registers), ("shared_mem", rows.shared_mem), ("bytes", rows.nbytes)):
        out[column] = values[kept]
    out["grid"] = rows.grid[kept]
    out["block"] = rows.block[kept]
    out["name_id"] = [name_ids.setdefault(rows.name[i], len(name_ids)) for i in kept.tolist()]
    names = list(name_ids)
    ops = vr.ops
    out["external_id"] = np.where(op_of_row[kept] >= 0, op_of_row[kept] + 1, 0)  # ops' ids are index + 1
    _apply_template(ops, vr.op_payload, settings)
    trace = CapturedTrace(out, names, ops, vr.modules, "gpu", max(vr.iterations, 1),
                          meta={"source": R.NSYS_IMPORT, **info})
    warnings = []
    if vr.kinds_inferred:
        warnings.append("the export has no NVTX categories: visprof's ranges were told apart by their names")
    if outside_ns:
        warnings.append(f"{int((~keep).sum())} GPU rows ({outside_ns / 1e6:.3f} ms) were launched outside visprof's "
                        "ranges (warm-up, other code) and are not counted")
    unlinked = int((call_of_row < 0).sum())
    if unlinked:
        warnings.append(f"{unlinked} GPU rows have no CUDA API call with their correlationId in the export "
                        "(driver-API launches need nsys --trace cuda with driver calls)")
    if vr.iterations == 0:
        warnings.append("no model ranges: every op counts in one iteration")
    for table_name in info["missing_tables"]:
        if table_name in (X.MEMCPY, X.MEMSET, X.GPU_INFO):
            warnings.append(f"export lacks {table_name}: {X.WHAT_IT_COSTS[table_name]}")
    if X.GPU_INFO not in info["missing_tables"] and not gpus:  # the table is there, with no row
        warnings.append(f"export's {X.GPU_INFO} is empty: {X.WHAT_IT_COSTS[X.GPU_INFO]}")
    return Imported(trace, info, settings, outside_ns, int((~keep).sum()), unlinked, gpus, vr.model_names, warnings)


def read_run_mark(marks: list[str]) -> dict:
    """The last run mark's settings (visprof writes one per --nvtx-only run); {} without one."""
    for text in reversed(marks):
        try:
            return json.loads(text[len(RUN_MARK_PREFIX):])
        except json.JSONDecodeError:
            continue
    return {}


def recorded_regime(settings: dict) -> tuple[str, str, str | None]:
    """(grad mode, autocast, a warning or None) of the recorded run, from its run mark.

    A mark written before it carried the regime came from an --nvtx-only run, whose defaults
    are then taken, with a warning that they were assumed; without any mark (a program under
    visprof.trace()) nothing tells the regime, and it is "unknown"."""
    if not settings:
        return UNKNOWN_REGIME, UNKNOWN_REGIME, ("the recording has no visprof run mark (it is not a visprof profile "
                                                "--nvtx-only run): its precision, grad mode and autocast are unknown")
    grad_mode, autocast = settings.get("grad_mode"), settings.get("autocast")
    if grad_mode in GRAD_MODES and autocast in (*AUTOCAST_MODES, AUTOCAST_OFF):
        return grad_mode, autocast, None
    assumed = autocast_at(settings.get("precision", ""), DEFAULT_AUTOCAST)
    return DEFAULT_GRAD_MODE, assumed, (f"the run mark does not say which latency regime the recording ran under (a "
                                        f"visprof before the mark carried it): assumed --nvtx-only's default, "
                                        f"{DEFAULT_GRAD_MODE} with autocast {assumed}")


def _apply_template(ops: list[OpRecord], payloads: list[int], settings: dict) -> None:
    """Each op's costs (FLOPs, bytes, weight bytes, tensor-core precision) and attributes (a
    convolution's groups and kernel size, a weight cast) from the run mark's template, where
    the template's op at the op's position has the op's name."""
    op_names = settings.get("op_names")
    if not op_names:
        return
    n = len(op_names)
    costs = _mark_costs(settings)
    costs = costs if costs is not None and len(costs) == n else None
    attrs = settings.get("op_attrs")
    attrs = attrs if isinstance(attrs, list) and len(attrs) == n else None
    first = settings.get("first_op_id", 1)
    for op, payload in zip(ops, payloads):
        j = (payload - first) % n if payload >= first else -1
        if j < 0 or op_names[j] != op.name:
            continue
        if costs:
            for name, value in costs[j].record_fields().items():
                setattr(op, name, value)
        if attrs and isinstance(attrs[j], dict):
            op.attrs = dict(attrs[j])


def _mark_costs(settings: dict) -> list | None:
    """Each template op's OpCost from the mark's ``op_costs`` ([FLOPs, bytes, weight bytes,
    tensor core] per op), or from ``op_flops``, which older marks have instead: FLOPs alone (the
    schema fixtures in tests/data/nsys), or the same four lists (what --nvtx-only wrote there
    before ``op_costs``). None where unreadable."""
    from visprof.capture.op_costs import OpCost

    entries = settings.get("op_costs", settings.get("op_flops"))
    if not isinstance(entries, list):
        return None
    try:
        return [OpCost(flops=float(e)) if isinstance(e, (int, float)) else OpCost(*e) for e in entries]
    except TypeError:  # not a list of numbers or of 4-lists: a mark visprof did not write
        return None


def _why_no_kernels(imported: Imported) -> str:
    """Why an import has no kernel rows to build op types, kernel families and a roofline from."""
    if X.KERNEL in imported.export["missing_tables"]:
        return (f"the export has no {X.KERNEL} table: this nsys ({imported.export['nsys_version']}) recorded no "
                "kernels (Nsight Systems 2022.4 records none under CUDA 13)")
    return "no kernel was launched inside visprof's ranges"


def import_nsys(path: str | Path, *, table: CategoryTable | None = None, category_file: str | Path | None = None,
                top_modules: int = 15) -> R.ProfileResult:
    """A ProfileResult of the GPU work that visprof's NVTX ranges own in an nsys SQLite export."""
    from visprof import attribution
    from visprof.passes.setup import load_table
    from visprof.profiler import attach_breakdown, attach_kernel_tables, unattributed_checks

    began = time.perf_counter()
    table = load_table(table, category_file)
    imported = import_trace(path, table)
    trace, settings = imported.trace, imported.settings
    devices = sorted({int(d) for d in np.unique(trace.kernels["device"])})
    model_name = settings.get("model") or (imported.model_names[0] if imported.model_names else "unknown")
    grad_mode, autocast, regime_warning = recorded_regime(settings)
    result = R.ProfileResult(
        model=R.ModelInfo(name=model_name, source=settings.get("source", "nsys"), param_count=settings.get("param_count"),
                          input_shape=list(settings.get("input_shape", [])), batch_size=settings.get("batch_size"),
                          img_size=settings.get("img_size")),
        config=R.RunConfig(precision=settings.get("precision", "unknown"),
                           channels_last=bool(settings.get("channels_last", False)),
                           device=settings.get("device") or (f"cuda:{devices[0]}" if devices else "unknown"),
                           iterations=trace.iterations, passes=[R.NSYS_IMPORT], grad_mode=grad_mode, autocast=autocast),
        measurement="gpu",
        environment={"source": R.NSYS_IMPORT, **imported.export,
                     "visprof_run": {k: v for k, v in settings.items() if k not in TEMPLATE_KEYS}},
        warnings=[*imported.warnings, *([regime_warning] if regime_warning else [])],
    )
    if devices and devices[0] in imported.gpus:
        result.gpu = imported.gpus[devices[0]]
    attr = attribution.attribute(trace, table)
    attach_breakdown(result, attr, top_modules=top_modules)
    if (trace.kernels["kind"] == KIND_KERNEL).any():
        attach_kernel_tables(result, attr)
    else:  # memcpys and memsets alone would make a roofline, and a prediction, of copies only
        why = _why_no_kernels(imported)
        result.environment["no_kernel_rows"] = why  # predict quotes it
        result.warnings.append(f"no kernel rows: {why}; so no op types, kernel families, launch sizes or roofline")
    result.checks = unattributed_checks(result.attribution)
    result.passes["nsys_import"] = R.PassInfo(time.perf_counter() - began, trace.iterations)
    return result

