"""``visprof ncu MODEL --category attention``: Nsight Compute counters per category.

1. visprof profiles the model (timing and attributed passes, in this process): the result the
   counters fold into, and, from the attributed pass, every op's category and the kernels it
   launched, in order.
2. It samples ops: per kind of op (same aten op, module class, FLOPs and category) the first
   ``samples`` occurrences of one forward. Each sampled op stands for ``count / samples`` ops.
3. Nsight Compute runs the model in a child process (``visprof.nsight.ncu_child``: one forward
   with visprof's ranges, between cudaProfilerStart/Stop) in which only the sampled ops push
   their category range, and profiles the kernels inside it through the NVTX filter
   (``--nvtx --nvtx-include "visprof@attention/"``, ``--clock-control none``,
   ``--profile-from-start off``) with a small metric set (``ncu_metrics``).
4. Each kernel ncu measured is tied to its op by the op id ncu reports as the payload of the
   kernel's innermost visprof range (or, without NVTX columns, in launch order to the kernels
   the sampled ops launched in the attributed pass); weighted sums and time-weighted means give
   each category's counters and its roofline position (``result.counters``,
   docs/result-schema.md).

Several categories are profiled in one ncu run with one regular-expression filter
(``regex:visprof@^(attention|linear)$/``); if that run's kernels do not match the sampled ops
(an ncu that reads the expression differently), each category gets its own run with its exact
filter instead.
"""
from __future__ import annotations

import gc
import json
import re
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from visprof import result as R
from visprof.analysis.measured_bounds import counter_bound, weighted_mean
from visprof.base.errors import BadInputError, ExternalToolError, NoGPUError
from visprof.base.output_paths import check_output_paths
from visprof.base.outputs import atomic_write_text
from visprof.base.spelling import on_command_line, option
from visprof.nsight import ncu_metrics as M
from visprof.nsight.ncu_csv import NcuKernel, parse_ncu_csv
from visprof.capture.nvtx_scheme import DOMAIN, ncu_filter
from visprof.base.child_env import child_env as visprof_child_env, module_command
from visprof.nsight.tools import failure, find_tool, run_tool

DEFAULT_SAMPLES = 2
OPTIONAL_FLAGS = ("--print-units", "--print-kernel-base")  # dropped if this ncu does not know them


def child_env() -> dict:
    """The child pushes its ranges' text rather than registered handles: ncu's NVTX filter is
    known to match ASCII messages (tests/gpu/test_nsight_gpu.py checks registered ones too)."""
    return visprof_child_env(VISPROF_NVTX_ASCII="1")


@dataclass
class TemplateOp:
    """One op of the attributed pass's first iteration, by position in the forward."""

    position: int
    name: str
    category: str
    kind: tuple  # what makes two ops the same kind: aten op, module class, FLOPs, bytes, category key, attrs, kernels
    kernels: list[str]  # kernel names it launched, in launch order
    kernel_ns: list[int]


@dataclass
class Sample:
    positions: list[int]  # template positions that push their ranges under ncu
    weight: dict[int, float]  # position -> ops per iteration it stands for
    expected: list[tuple[int, str]]  # (position, kernel name) in launch order


@dataclass
class NcuRun:
    filters: list[str]
    kernels: list[NcuKernel]
    csv: str


@dataclass
class NcuOutcome:
    summary: R.CounterSummary
    runs: list[NcuRun] = field(default_factory=list)


# --- the template and the sample ------------------------------------------------------------

def template_ops(trace, attr) -> list[TemplateOp]:
    """The first iteration's ops in forward order, with their kernels (memcpy/memset rows left
    out: ncu profiles kernels only)."""
    from visprof.native.records import KIND_KERNEL

    first = sorted((i for i, op in enumerate(trace.ops) if op.iteration == 0), key=lambda i: trace.ops[i].external_id)
    kernels_of: dict[int, list[tuple[int, str, int]]] = defaultdict(list)
    rows = trace.kernels
    for row in range(len(rows)):
        op = int(attr.op_index[row])
        if op >= 0 and rows["kind"][row] == KIND_KERNEL:
            kernels_of[op].append((int(rows["correlation_id"][row]), trace.kernel_name(row),
                                   int(rows["end_ns"][row]) - int(rows["start_ns"][row])))
    out = []
    for position, i in enumerate(first):
        op = trace.ops[i]
        found = attr.op_classification(i)
        module = trace.modules[op.module].cls if op.module >= 0 else ""
        launched = sorted(kernels_of.get(i, []))
        # A kind is one shape of work: its bytes and the kernels it launched count as well as its FLOPs. With
        # FLOPs alone every FLOP-less op was one kind: FocalNet's 53 layer norms, from its 96x96 stage down to
        # 12x12, were counted as its first two (the largest) 26.5 times each, 4.5x the category's bytes.
        kind = (op.name, module, round(op.flops), round(op.bytes), found.key, json.dumps(op.attrs, sort_keys=True),
                tuple(name for _, name, _ in launched))
        out.append(TemplateOp(position, op.name, found.category, kind,
                              [name for _, name, _ in launched], [ns for _, _, ns in launched]))
    return out


def choose_sample(ops: Sequence[TemplateOp], categories: Sequence[str], per_kind: int) -> Sample:
    """The first `per_kind` ops of each kind in `categories`, and what each stands for."""
    count = Counter(op.kind for op in ops if op.category in categories)
    taken: Counter = Counter()
    positions, weight, expected = [], {}, []
    for op in ops:
        if op.category not in categories or taken[op.kind] >= per_kind:
            continue
        taken[op.kind] += 1
        positions.append(op.position)
    for position in positions:
        op = ops[position]
        weight[position] = count[op.kind] / taken[op.kind]
        expected += [(position, name) for name in op.kernels]
    return Sample(positions, weight, expected)


def filters_for(categories: Sequence[str]) -> list[str]:
    """One --nvtx-include expression selecting the category ranges of `categories`."""
    if len(categories) == 1:
        return [ncu_filter(categories[0])]
    return [f"regex:{DOMAIN}@^({'|'.join(re.escape(c) for c in categories)})$/"]


def match_kernels(sample: Sample, measured: list[NcuKernel]) -> list[tuple[int, NcuKernel]]:
    """(template position, kernel) for each measured kernel of a sampled op: by the op id ncu
    saw as the payload of the kernel's innermost visprof range (the child ran one forward, so
    op j has id FIRST_ID + j) where ncu reports NVTX stacks, else in launch order by name
    (match_in_order)."""
    from visprof.capture.replay import FIRST_ID

    if measured and all(k.op_id is not None for k in measured):
        sampled = set(sample.positions)
        return [(k.op_id - FIRST_ID, k) for k in measured if k.op_id - FIRST_ID in sampled]
    return match_in_order(sample.expected, measured)


def renamed_kernels(sample: Sample, matched: list[tuple[int, NcuKernel]]) -> int:
    """Matched kernels whose name the attributed pass did not see in their op (a library that
    chose another kernel in the child process)."""
    expected = Counter(sample.expected)
    seen = Counter((position, kernel.name) for position, kernel in matched)
    return sum((seen - expected).values())


def match_in_order(expected: list[tuple[int, str]], measured: list[NcuKernel]) -> list[tuple[int, NcuKernel]]:
    """Pairs each measured kernel with the next expected kernel of the same name (both in launch
    order); a measured kernel with no such successor is left out."""
    pairs, j = [], 0
    for kernel in measured:
        k = j
        while k < len(expected) and expected[k][1] != kernel.name:
            k += 1
        if k < len(expected):
            pairs.append((expected[k][0], kernel))
            j = k + 1
    return pairs


# --- running ncu ----------------------------------------------------------------------------

def ncu_version(ncu: Path) -> str:
    proc = run_tool("ncu", [str(ncu), "--version"], timeout=60)
    found = re.search(r"Version\s+(\S+)", proc.stdout or "")
    return f"ncu {found.group(1)}" if found else "ncu (unknown version)"


def query_metrics(ncu: Path) -> set[str] | None:
    """Base names of the metrics this GPU's ncu knows; None when the query gives nothing."""
    proc = run_tool("ncu", [str(ncu), "--query-metrics"], timeout=120)
    names = M.available_base_names((proc.stdout or "") + (proc.stderr or ""))
    return names or None


def ncu_command(ncu: Path, filters: list[str], metrics: list[str], log_file: Path, child: list[str],
                optional: bool = True) -> list[str]:
    command = [str(ncu), "--clock-control", "none", "--target-processes", "all", "--profile-from-start", "off",
               "--nvtx"]
    for expression in filters:
        command += ["--nvtx-include", expression]
    command += ["--metrics", ",".join(metrics), "--csv", "--page", "raw"]
    if optional:
        command += ["--print-units", "base", "--print-kernel-base", "mangled"]
    return command + ["--log-file", str(log_file), "--force-overwrite", *child]


def child_command(spec_path: Path) -> list[str]:
    return module_command("visprof.nsight.ncu_child", str(spec_path))


def run_ncu(ncu: Path, filters: list[str], chosen: dict, spec: dict, scratch: Path, timeout: float) -> tuple[NcuRun, dict]:
    """One ncu run of the child; retries without metrics ncu rejects and without flags it does
    not know. Returns the run and the metric choice it ended with."""
    spec_path = scratch / "spec.json"
    spec_path.write_text(json.dumps(spec))
    rejected: set[str] = set()
    optional = True
    for _ in range(4):
        metrics = M.metric_list(chosen)
        log = scratch / "ncu.csv"
        log.unlink(missing_ok=True)
        proc = run_tool("ncu", ncu_command(ncu, filters, metrics, log, child_command(spec_path), optional),
                        timeout=timeout, env=child_env())
        output = (log.read_text(errors="replace") if log.exists() else "") + (proc.stdout or "") + (proc.stderr or "")
        bad = M.rejected_metrics(output, metrics)
        if bad:
            rejected |= bad
            chosen = M.choose(None, rejected)
            if not all(role in chosen for role in M.REQUIRED):
                raise ExternalToolError("ncu", f"this ncu measures none of the duration metrics ({', '.join(sorted(bad))})")
            continue
        if optional and proc.returncode != 0 and _rejects_an_option(output):
            optional = False  # an older ncu: its default units and kernel names, parsed all the same
            continue
        if proc.returncode != 0:
            raise failure("ncu", proc, "ncu (profiling the model's sampled kernels)")
        return NcuRun(filters, parse_ncu_csv(output), output), chosen
    raise ExternalToolError("ncu", "ncu kept rejecting the requested metrics or options")


def _rejects_an_option(output: str) -> bool:
    low = output.lower()
    complaint = any(word in low for word in ("unrecognised", "unrecognized", "unknown option", "invalid option"))
    return complaint and any(flag in output for flag in OPTIONAL_FLAGS)


# --- folding the counters into the profile ---------------------------------------------------

def fold(result: R.ProfileResult, ops: Sequence[TemplateOp], sample: Sample, measured: list[tuple[int, NcuKernel]],
         chosen: dict, categories: Sequence[str]) -> tuple[list[R.CategoryCounters], list[R.KernelCounters]]:
    totals = result.category_totals()
    by_category: dict[str, list[tuple[int, dict]]] = defaultdict(list)
    kinds_measured = set()
    for position, kernel in measured:
        op = ops[position]
        by_category[op.category].append((position, M.role_values(chosen, kernel.metrics)))
        kinds_measured.add(op.kind)
    rows, kernel_rows = [], []
    for category in categories:
        total = totals.get(category)
        entries = by_category.get(category, [])
        cat_ops = [op for op in ops if op.category == category]
        cat_ns = sum(sum(op.kernel_ns) for op in cat_ops)
        covered_ns = sum(sum(op.kernel_ns) for op in cat_ops if op.kind in kinds_measured)
        coverage = covered_ns / cat_ns if cat_ns else 0.0
        scale = 1.0 / coverage if coverage > 0 else 0.0  # to the whole category, by kernel time
        weight = sample.weight
        duration = sum(weight[p] * (v.get("duration") or 0.0) for p, v in entries)
        dram_bytes = [weight[p] * v["dram_bytes"] for p, v in entries if v.get("dram_bytes") is not None]
        by_time = lambda role: weighted_mean([(weight[p] * (v.get("duration") or 0.0), v.get(role))  # noqa: E731
                                               for p, v in entries])
        sm, dram = by_time("sm"), by_time("dram")
        bytes_per_iteration = sum(dram_bytes) * scale if dram_bytes else None
        duration_ms = duration * scale / 1e6 if entries else None
        flops = total.flops if total else 0.0
        rows.append(R.CategoryCounters(
            category=category, kernels_profiled=len(entries),
            kernels_per_iteration=total.kernel_count if total else 0.0, time_coverage=coverage,
            duration_ms=duration_ms,
            sm_throughput_pct=sm, dram_throughput_pct=dram, achieved_occupancy_pct=by_time("occupancy"),
            tensor_pipe_pct=by_time("tensor"), dram_bytes=bytes_per_iteration,
            arithmetic_intensity=flops / bytes_per_iteration if flops and bytes_per_iteration else None,
            # ncu flushes the caches before each replay (--cache-control all): its DRAM bytes are
            # cold-cache bytes and its durations cold-cache times. Divided by the warm attributed
            # pass's time they read above the DRAM peak (ResNet-50's activations: 9 TB/s on the
            # H200); by ncu's own durations both come from the same runs.
            dram_gbps=bytes_per_iteration / (duration_ms / 1e3) / 1e9 if bytes_per_iteration and duration_ms else None,
            bound=counter_bound(sm, dram)))
    grouped: dict[tuple[str, str], list[tuple[int, NcuKernel]]] = defaultdict(list)
    for position, kernel in measured:
        grouped[(ops[position].category, kernel.name)].append((position, kernel))
    for (category, name), launches in grouped.items():
        values = [M.role_values(chosen, kernel.metrics) for _, kernel in launches]
        weights = [sample.weight[p] for p, _ in launches]
        # the duration by each launch's weight, so that weight x duration is the time the row stands for (a
        # plain mean had made it 405 ms a family where ncu's whole category took 329); the rest by that time
        times = [w * (v.get("duration") or 0.0) for w, v in zip(weights, values)]
        means = {role: weighted_mean(list(zip(weights if role == "duration" or not any(times) else times,
                                              (v.get(role) for v in values))))
                 for role in chosen}
        kernel_rows.append(R.KernelCounters(name=name, category=category, launches=len(launches),
                                            weight=sum(weights), metrics=means))
    kernel_rows.sort(key=lambda k: (k.category, -(k.metrics.get("duration") or 0.0) * k.weight))
    return rows, kernel_rows


# --- the whole command ------------------------------------------------------------------------

class NoGPUForNcuError(NoGPUError):
    """No GPU for `visprof ncu`: NoGPUError's exit code (4), without its advice to pass --device
    cpu, which ncu cannot take."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.message = (f"visprof ncu needs a GPU: Nsight Compute measures GPU kernels, and no CUDA GPU is visible "
                        f"to PyTorch ({reason}); run it on a GPU machine")


def profile_with_ncu(model: str, categories: Sequence[str] | str = ("attention",), *,
                     samples: int = DEFAULT_SAMPLES, batch_size: int | None = None, img_size: Any = None,
                     precision: str | None = None, channels_last: bool | None = None, device: str | None = None,
                     category_file: str | None = None, ncu: str | None = None, timeout: float = 1800,
                     progress: bool = True, csv_path: str | Path | None = None) -> R.ProfileResult:
    """Profiles `model` and folds Nsight Compute counters of `categories` ("all": every category
    with kernels) into the result (``result.counters``); see the module doc."""
    from visprof import attribution
    from visprof.base import hardware
    from visprof.passes.setup import load_table
    from visprof.profiler import profile
    from visprof.native.records import CapturedTrace

    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise BadInputError(f"samples must be a whole number >= 1, got {samples!r}")
    if not isinstance(model, str):
        raise BadInputError("visprof ncu runs the model in a child process under Nsight Compute: give a timm name")
    check_output_paths({"csv_path": csv_path}, inputs={"category_file": category_file}, kinds={"csv_path": "ncu-csv"})  # before minutes of work
    table = load_table(None, category_file)
    wanted = [categories] if isinstance(categories, str) else list(categories)
    known = list(table.categories)
    unknown = [c for c in wanted if c != "all" and c not in known]
    if unknown:
        raise BadInputError(f"unknown categor{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                            f"choose from {', '.join(known)} or all")
    try:  # without --device, ncu's device is a GPU: a machine without one says so (exit code 4)
        on_gpu = hardware.resolve_device("cuda" if device in (None, "auto") else device).startswith("cuda")
    except NoGPUError as exc:
        raise NoGPUForNcuError(exc.reason) from None
    if not on_gpu:
        raise BadInputError("visprof ncu needs a GPU: Nsight Compute measures GPU kernels, not "
                            f"{option('device', 'cpu')}")
    tool = find_tool("ncu", ncu)
    with tempfile.TemporaryDirectory(prefix="visprof-ncu-") as scratch_dir:
        scratch = Path(scratch_dir)
        recording = scratch / "attributed.json.gz"
        result = profile(model, batch_size=batch_size, img_size=img_size, precision=precision,
                         channels_last=channels_last, device=device, passes=("timing", "attributed"),
                         recording_path=recording, table=table, progress=progress)
        if result.measurement != "gpu" or not recording.exists():
            raise BadInputError("visprof ncu needs a GPU and the attributed pass (Nsight Compute measures GPU kernels)")
        trace = CapturedTrace.load(recording)
        attr = attribution.attribute(trace, table)
        ops = template_ops(trace, attr)
        present = [c for c in (known if "all" in wanted else wanted) if any(op.category == c and op.kernels for op in ops)]
        if not present:
            raise BadInputError(f"{model} launches no kernel in {', '.join(wanted)}")
        gc.collect()
        _release_gpu_memory()
        version = ncu_version(tool)
        chosen = M.choose(query_metrics(tool))
        if not all(role in chosen for role in M.REQUIRED):
            chosen = M.choose(None)
        spec = {"model": model, "batch_size": result.model.batch_size, "img_size": img_size,
                "precision": result.config.precision, "channels_last": result.config.channels_last,
                "device": result.config.device, "category_file": category_file, "ops": len(ops),
                "op_names": [op.name for op in ops],
                "command_line": on_command_line()}  # the child's messages name options as this process's do
        warnings: list[str] = []
        runs: list[NcuRun] = []

        def measure(group: list[str]) -> tuple[Sample, list[tuple[int, NcuKernel]], NcuRun]:
            nonlocal chosen
            sample = choose_sample(ops, group, samples)
            run, chosen = run_ncu(tool, filters_for(group), chosen, {**spec, "positions": sample.positions},
                                  scratch, timeout)
            runs.append(run)
            return sample, match_kernels(sample, run.kernels), run

        sample, measured, run = measure(present)
        used = [run]
        if len(present) > 1 and (len(measured) != len(sample.expected) or len(run.kernels) != len(measured)):
            warnings.append(f"the one-run filter {run.filters[0]} profiled {len(run.kernels)} kernels for "
                            f"{len(sample.expected)} expected; each category was profiled in its own run instead")
            sample, measured, used = Sample([], {}, []), [], []
            for category in present:
                part, matched, run = measure([category])
                sample.positions += part.positions
                sample.weight.update(part.weight)
                sample.expected += part.expected
                measured += matched
                used.append(run)
        unmatched = sum(len(r.kernels) for r in used) - len(measured)
        if len(measured) < len(sample.expected):
            warnings.append(f"ncu measured {len(measured)} of the {len(sample.expected)} kernels the sampled ops "
                            "launched in the attributed pass")
        if unmatched > 0:
            warnings.append(f"{unmatched} kernels ncu measured matched no kernel of the sampled ops and are left out")
        renamed = renamed_kernels(sample, measured)
        if renamed:
            warnings.append(f"{renamed} kernels ncu measured are not the ones their op launched in the attributed "
                            "pass (the libraries chose other kernels in ncu's process); they count for their op")
        if csv_path is not None:
            atomic_write_text(csv_path, "\n".join(r.csv for r in runs), kind="ncu-csv")
    categories_rows, kernel_rows = fold(result, ops, sample, measured, chosen, present)
    result.counters = R.CounterSummary(
        tool=version, metrics={role: "+".join(M.metrics_of(c)) for role, c in chosen.items()},
        nvtx_filters=[f for r in runs for f in r.filters], clock_control="none", samples_per_kind=samples,
        kernels_profiled=len(measured), categories=categories_rows, kernels=kernel_rows, warnings=warnings)
    return result


def _release_gpu_memory() -> None:
    """The child runs the model again on the same GPU: hand back this process's cached blocks."""
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass
