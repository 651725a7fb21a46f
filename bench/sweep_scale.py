"""visprof sweep at scale: >= 300 timm models, all three passes, against a timm-benchmark-style run.

    python bench/sweep_scale.py --store sweep-h200.db --gpus all --time-budget 480 \
        --timm-loop --timm-state timm-loop-h200.json --json sweep-scale-h200.json

One call sweeps the model list (default: bench/sweep_models_300.txt, 81 timm families) at
each model's default resolution, batch 64, bf16, all passes, into ``--store``, and stops in
time to end within ``--time-budget`` seconds with a resumable store: call it again with the
same store until it reports the sweep complete. With ``--timm-loop``, time left after the
sweep goes to timing the same models with timm's own inference benchmark loop (resumable
through ``--timm-state``). Every call prints the report over everything measured so far and
writes it as JSON with provenance:

* median seconds per model, all passes, model build included (visprof's target: <= 4 s);
* failures by class;
* rate: models per minute in this call, and over all runs in the store counted from each
  run's first ready worker (steady state, without worker start-up: the figure to compare
  between 1 and 2 GPUs);
* the timm-style loop's seconds per model on the same models, and the ratio.

The timm-style loop is timm's ``benchmark.py --bench inference`` written out (its file is not
in the pip package): ``timm.create_model``, ``.cuda().eval()``, inputs ``torch.randn`` of the
model's resolved input size, ``torch.no_grad()``, autocast per step, 10 warm-up and 40 timed
steps with a ``torch.cuda.synchronize()`` after each, the batch decaying with
``decay_batch_step`` on out of memory. Its per-model time runs from model creation to the last
step (benchmark.py's optional FLOP count through fvcore/deepspeed is not included).

Records: bench/results/h200-uniform300-2026-12-01/ (the latest sweep), bench/results/sweep-h200x2-s17/.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _provenance import provenance  # noqa: E402

DEFAULT_MODELS = Path(__file__).resolve().parent / "sweep_models_300.txt"


# --- the timm-style loop ----------------------------------------------------------------

def timm_style_model_seconds(name: str, batch_size: int, precision: str, warmup: int = 10, steps: int = 40) -> dict:
    """One model as timm's InferenceBenchmarkRunner runs it; the wall time from creation to
    the last step, the batch that fit and the samples/s of the timed steps."""
    import torch
    import timm
    from timm.data import resolve_data_config
    from timm.utils import decay_batch_step

    from visprof.sweep.plan import split_sized

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    entry, (name, own_size) = name, split_sized(name)  # a list's resnet50@160: that size, as timm's tables
    start = time.perf_counter()
    batch, error = batch_size, None
    while batch:
        try:
            torch.cuda.empty_cache()
            model = timm.create_model(name, pretrained=False).cuda().eval()
            input_size = resolve_data_config({}, model=model)["input_size"]
            if isinstance(own_size, (int, tuple)):  # "test"/"train": the resolved size is the test size
                height, width = own_size if isinstance(own_size, tuple) else (own_size, own_size)
                input_size = (input_size[0], height, width)
            x = torch.randn((batch, *input_size), device="cuda")

            def step() -> float:
                t0 = time.perf_counter()
                with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                    model(x)
                torch.cuda.synchronize()
                return time.perf_counter() - t0

            with torch.no_grad():
                for _ in range(warmup):
                    step()
                t_run = time.perf_counter()
                step_times = [step() for _ in range(steps)]
                elapsed = time.perf_counter() - t_run
            wall = time.perf_counter() - start
            del model, x
            torch.cuda.empty_cache()
            return {"model": entry, "wall_s": wall, "batch_size": batch, "img_size": input_size[1],
                    "samples_per_s": batch * steps / elapsed, "step_ms_mean": 1e3 * statistics.fmean(step_times),
                    "step_ms_median": 1e3 * statistics.median(step_times)}
        except torch.cuda.OutOfMemoryError as exc:
            error = f"OutOfMemoryError: {str(exc).splitlines()[0]}"
        except Exception as exc:  # noqa: BLE001 - recorded, as benchmark.py logs and goes on
            return {"model": entry, "wall_s": time.perf_counter() - start, "error": f"{type(exc).__name__}: {exc}"[:500]}
        model = x = None
        batch = decay_batch_step(batch)
    return {"model": entry, "wall_s": time.perf_counter() - start, "error": error}


def run_timm_loop(models: list[str], state_path: Path, batch_size: int, precision: str, deadline: float) -> dict:
    """Times the models not yet in ``state_path``, one after another in this process (as
    benchmark.py does), until done or ``deadline``; the state file is rewritten after each."""
    from visprof.base.outputs import atomic_write_text

    state = json.loads(state_path.read_text()) if state_path.exists() else {"models": {}}
    state["planned"] = list(models)
    estimate = 0.0
    for name in models:
        if name in state["models"]:
            continue
        if time.monotonic() + 2 * estimate > deadline:
            break
        row = timm_style_model_seconds(name, batch_size, precision)
        estimate = max(estimate, row["wall_s"])
        state["models"][name] = row
        print(f"[timm loop] {len(state['models'])}/{len(models)} {name}: {row['wall_s']:.2f} s"
              + (f" ({row['error']})" if "error" in row else ""), file=sys.stderr, flush=True)
        atomic_write_text(state_path, json.dumps(state, indent=1) + "\n")
    return state


def timm_sample(models: list[str], count: int | None) -> list[str]:
    """``count`` models spread evenly over the list (all of them without a count)."""
    if not count or count >= len(models):
        return list(models)
    step = len(models) / count
    return [models[int(i * step)] for i in range(count)]


def shard_state_path(state_path: Path, index: int, count: int) -> Path:
    return state_path.with_name(f"{state_path.stem}.shard{index}of{count}{state_path.suffix}")


def merge_timm_states(state_path: Path, shard_paths: list[Path], planned: list[str]) -> dict:
    """The states of the shards folded into ``state_path`` (kept, and rewritten): one state."""
    from visprof.base.outputs import atomic_write_text

    state = json.loads(state_path.read_text()) if state_path.exists() else {"models": {}}
    for path in shard_paths:
        if path.exists():
            state["models"].update(json.loads(path.read_text())["models"])
    state["planned"] = list(planned)
    atomic_write_text(state_path, json.dumps(state, indent=1) + "\n")
    return state


def run_timm_shards(sample: list[str], args, gpus: int, deadline: float) -> dict:
    """The timm-style loop on ``gpus`` GPUs at once: one process per GPU (CUDA_VISIBLE_DEVICES),
    each timing every ``gpus``-th model of the sample one after another, as benchmark.py would
    on that GPU, into its own resumable state file; the states are then merged. A shard starts
    from the models already in the merged state, so a resumed loop times each model once."""
    import os
    import subprocess

    from visprof.base.outputs import atomic_write_text

    shards = [shard_state_path(args.timm_state, i, gpus) for i in range(gpus)]
    done = merge_timm_states(args.timm_state, shards, sample)["models"]
    for index, path in enumerate(shards):
        if not path.exists():  # seeded with what the merged state holds of this shard's models
            mine = set(sample[index::gpus])
            atomic_write_text(path, json.dumps({"models": {m: r for m, r in done.items() if m in mine}}, indent=1) + "\n")
    budget = max(deadline - time.monotonic(), 0)
    argv = [sys.executable, str(Path(__file__).resolve()), "--models", str(args.models), "--batch-size",
            str(args.batch_size), "--precision", args.precision, "--time-budget", f"{budget:.0f}"]
    argv += ["--limit", str(args.limit)] if args.limit else []
    argv += ["--timm-sample", str(args.timm_sample)] if args.timm_sample else []
    procs = [subprocess.Popen(argv + ["--timm-shard", f"{i}/{gpus}", "--timm-state", str(path)],
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": str(i)})
             for i, path in enumerate(shards)]
    for proc in procs:
        proc.wait()
    return merge_timm_states(args.timm_state, shards, sample)


# --- the report ----------------------------------------------------------------------------

def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(int(q * len(values)), len(values) - 1)]


def report(store_path: Path, plan_keys: list[str], models: list[str], call, timm_state: dict | None) -> dict:
    from visprof.sweep import open_store

    with open_store(store_path) as store:
        keys = set(plan_keys)
        rows = [r for r in store.rows() if r["cell_key"] in keys]
        failures = [f for f in store.failures() if f["cell_key"] in keys]
        runs = store.runs()
    # A cell may be stored more than once: from several GPUs (a store resumed on other cards
    # before the sweep matched GPUs by name). The newest row stands for the model.
    measured = {r["cell_key"] for r in rows}
    failed_keys = {f["cell_key"] for f in failures if f["final"]} - measured
    walls = {r["model"]: r["wall_s"] for r in rows if r["wall_s"] is not None}
    by_class: dict[str, int] = {}
    for f in failures:
        if f["final"]:
            by_class[f["error_class"]] = by_class.get(f["error_class"], 0) + 1
    finished = sum((r["cells_done"] or 0) + (r["cells_failed"] or 0) for r in runs)
    steady = sum(max((r["elapsed_s"] or 0) - (r["startup_s"] or 0), 0) for r in runs)
    out = {
        "models_planned": len(plan_keys),
        "models_measured": len(measured),
        "rows_measured": len(rows),
        "models_failed": len(failed_keys),
        "models_left": len(keys - measured - failed_keys),
        "failed_by_class": by_class,
        "failures": [{"model": f["model"], "error_class": f["error_class"], "message": f["message"][:300]}
                     for f in failures if f["final"]],
        "gpus": sorted({f"{r['gpu_name'] or 'cpu'} ({r['gpu_uuid'][:8]})" for r in rows}),
        "median_s_per_model": statistics.median(walls.values()) if walls else None,
        "p90_s_per_model": _quantile(list(walls.values()), 0.9),
        "mean_s_per_model": statistics.fmean(walls.values()) if walls else None,
        "median_pass_s": {name: statistics.median(v) if (v := [r[f"{name}_wall_s"] for r in rows if r[f"{name}_wall_s"] is not None]) else None
                          for name in ("timing", "trace_only", "attributed", "memory")},
        "slowest": sorted(walls.items(), key=lambda kv: -kv[1])[:10],
        "rate_models_per_min_this_call": call.rate_per_min if call is not None else None,
        "rate_models_per_min_steady_all_runs": finished / steady * 60 if steady else None,
        "runs": [{k: r[k] for k in ("id", "status", "executor", "cells_done", "cells_failed", "elapsed_s", "startup_s")}
                 for r in runs],
        "complete": not keys - measured - failed_keys,
    }
    if timm_state is not None:
        timed = {m: r for m, r in timm_state["models"].items() if "error" not in r}
        both = [m for m in models if m in timed and m in walls]
        out["timm_loop"] = {
            "models_timed": len(timed),
            "models_failed": sum(1 for r in timm_state["models"].values() if "error" in r),
            "complete": all(m in timm_state["models"] for m in timm_state.get("planned", models)),
            "median_s_per_model": statistics.median(r["wall_s"] for r in timed.values()) if timed else None,
            "same_models": len(both),
            "visprof_median_s_same_models": statistics.median(walls[m] for m in both) if both else None,
            "timm_median_s_same_models": statistics.median(timed[m]["wall_s"] for m in both) if both else None,
            "median_ratio_visprof_over_timm": statistics.median(walls[m] / timed[m]["wall_s"] for m in both) if both else None,
        }
    return out


def print_table(result: dict) -> None:
    def fmt(value, spec=".2f"):
        return "-" if value is None else format(value, spec)

    rows = [
        ("models measured / planned", f"{result['models_measured']} / {result['models_planned']} "
                                      f"({result['models_failed']} failed, {result['models_left']} left; "
                                      f"{result['rows_measured']} rows)"),
        ("GPUs", ", ".join(result["gpus"]) or "-"),
        ("median s per model, all passes", fmt(result["median_s_per_model"])),
        ("p90 / mean s per model", f"{fmt(result['p90_s_per_model'])} / {fmt(result['mean_s_per_model'])}"),
        ("median s per pass (timing/trace-only/attributed/memory)",
         " / ".join(fmt(v) for v in result["median_pass_s"].values())),
        ("failures by class", ", ".join(f"{k} {v}" for k, v in result["failed_by_class"].items()) or "none"),
        ("rate, models/min (this call)", fmt(result["rate_models_per_min_this_call"], ".1f")),
        ("rate, models/min (steady, all runs)", fmt(result["rate_models_per_min_steady_all_runs"], ".1f")),
    ]
    timm = result.get("timm_loop")
    if timm:
        rows += [
            ("timm-style loop: models timed", f"{timm['models_timed']} ({timm['models_failed']} failed)"),
            ("timm-style loop: median s per model", fmt(timm["median_s_per_model"])),
            (f"same {timm['same_models']} models: visprof / timm-style s", f"{fmt(timm['visprof_median_s_same_models'])} / "
                                                                         f"{fmt(timm['timm_median_s_same_models'])}"),
            ("median per-model ratio visprof / timm-style", fmt(timm["median_ratio_visprof_over_timm"])),
        ]
    rows.append(("sweep complete", "yes" if result["complete"] else "no: run the same command again"))
    width = max(len(k) for k, _ in rows)
    print()
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def _gpu_count(text: str) -> int | str:
    if text == "all":
        return text
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a number of GPUs (1 or more) or all, got {text!r}")
    return int(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS, help="model list (default: %(default)s)")
    parser.add_argument("--limit", type=int, help="the first N models of the list only")
    parser.add_argument("--store", type=Path, default=Path("sweep-scale.db"))
    parser.add_argument("--gpus", default="all")
    parser.add_argument("--ray", help="run the sweep on Ray instead (auto, local or an address)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--passes", help="comma-separated passes (default: every pass the device can run; "
                                         "the memory pass needs a GPU)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds per cell (default %(default)s: a hang must not eat a whole call)")
    parser.add_argument("--time-budget", type=float, default=480.0, help="seconds for this call (default %(default)s)")
    parser.add_argument("--timm-loop", action="store_true", help="time left after the sweep: the timm-style loop")
    parser.add_argument("--timm-state", type=Path, default=Path("timm-loop.json"))
    parser.add_argument("--timm-sample", type=int, metavar="N",
                        help="time only N models spread evenly over the list with the timm-style loop (default: all)")
    parser.add_argument("--json", type=Path, help="write the report here (with provenance)")
    parser.add_argument("--report-only", action="store_true", help="no sweep: the report of --store (GPU sweeps)")
    parser.add_argument("--timm-gpus", type=_gpu_count, default=1, help="GPUs for the timm-style loop at once: a number or all "
                                                         "(one process per GPU; default %(default)s)")
    parser.add_argument("--timm-shard", metavar="I/N", help=argparse.SUPPRESS)
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                        help="modules that register models (as visprof sweep --import)")
    args = parser.parse_args()

    from visprof.base.options import passes_for
    from visprof.base.output_paths import check_output_paths
    from visprof.base.outputs import atomic_write_text
    from visprof.sweep import run_sweep
    from visprof.sweep.plan import SweepPlan
    from visprof.sweep.selection import read_model_list

    check_output_paths({"--json": args.json, "--timm-state": args.timm_state if args.timm_loop else None})
    started = time.monotonic()
    deadline = started + args.time_budget
    models = read_model_list(args.models)[: args.limit]
    if args.timm_shard:  # one GPU's share of the timm-style loop (run_timm_shards started it)
        index, count = (int(part) for part in args.timm_shard.split("/"))
        run_timm_loop(timm_sample(models, args.timm_sample)[index::count], args.timm_state, args.batch_size,
                      args.precision, deadline)
        return 0
    if args.report_only:
        plan = SweepPlan(models, "cuda", [args.batch_size], [], [args.precision], [], passes_for(args.passes, "cuda"))
        timm_state = json.loads(args.timm_state.read_text()) if args.timm_state.exists() else None
        result = report(args.store, [c.key for c in plan.cells()], models, None, timm_state)
        if args.json is not None:
            atomic_write_text(args.json, json.dumps({"provenance": provenance(), **result}, indent=1, default=str) + "\n")
        print_table(result)
        return 0
    call = run_sweep(models, store=args.store, gpus=args.gpus, ray=args.ray, imports=args.imports,
                     batch_sizes=[args.batch_size],
                     precisions=[args.precision], passes=args.passes, timeout_s=args.timeout,
                     time_budget_s=max(args.time_budget - 20, 10), argv=" ".join(sys.argv))
    print(call.render(), flush=True)
    import torch

    kind = "cuda" if torch.cuda.is_available() or args.ray else "cpu"  # as the sweep chose (--ray: a GPU cluster)
    plan = SweepPlan(models, kind, [args.batch_size], [], [args.precision], [], passes_for(args.passes, kind))
    timm_state = None
    if args.timm_loop:
        if not torch.cuda.is_available():
            print("[timm loop] skipped: no GPU", file=sys.stderr)
        else:
            sample = timm_sample(models, args.timm_sample)
            gpus = torch.cuda.device_count() if args.timm_gpus == "all" else args.timm_gpus
            if gpus > 1:
                timm_state = run_timm_shards(sample, args, gpus, deadline - 10)
            else:
                timm_state = run_timm_loop(sample, args.timm_state, args.batch_size, args.precision, deadline - 10)
    elif args.timm_state.exists():
        timm_state = json.loads(args.timm_state.read_text())
    result = report(args.store, [c.key for c in plan.cells()], models, call, timm_state)
    if args.json is not None:
        atomic_write_text(args.json, json.dumps({"provenance": provenance(), "this_call": call.to_dict(),
                                                 **result}, indent=1, default=str) + "\n")
    print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
