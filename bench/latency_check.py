"""visprof's latency, memory and speed against plain loops a user would write, per regime.

For each model, on a model instance visprof never sees (built with timm.create_model and
moved to the GPU here), and a separate whole `visprof.profile()` call:

1. Memory, each alone on the GPU: a plain loop's torch.cuda.max_memory_allocated and
   max_memory_reserved (cache emptied first, as a fresh process would start), then visprof's
   memory pass peak (held by tensors, reserved) for the same model, batch and regime.
2. Latency, in alternating rounds (plain loop, visprof.profile(), next regime, ...; odd
   rounds run visprof first, so neither side always follows the other): for each regime, the
   loop written that way (a CUDA event pair around each forward, synchronize after each, 40
   timed steps, median) against the whole profile's clean latency (median); the ratio is taken
   per round and its median reported, with both sides' round-to-round spreads (a model where
   either moves more than the tolerance between rounds does not "hold still"). The loop warms
   up for 10 steps and at least a second: the first run (bench/results/h200-memory-2) gave it
   10 steps only, and after the idle seconds of a profile's result building the GPU's clocks
   had not ramped back within them on short models (DeiT-S 4.56 ms against visprof's 4.46).
   Each loop runs under the grad mode visprof is given for it: inference_mode, visprof's default
   (timm's benchmark.py), and no_grad for the one regime where the two differ, autocast around
   the loop (under no_grad autocast caches each weight's cast; under inference_mode it caches
   none). Until 2026-12-05 every loop ran under no_grad against visprof's inference_mode: on an
   H100 that read whole-loop as +1.8-12.8% on 14 of 16 models and the peak of four ViT-like models
   as -12-20% (the cached casts; bench/results/h100-latency-2026-12-05).
     per-forward          with torch.inference_mode(): for ...: with torch.autocast(...): m(x)   (timm's benchmark.py)
     whole-loop           with torch.inference_mode(), torch.autocast(...): for ...: m(x)
     model-cast           m16 = m.to(bf16); with torch.inference_mode(): for ...: m16(x16)
     whole-loop/no_grad   with torch.no_grad(), torch.autocast(...): for ...: m(x)   (casts cached)
   The memory pass is compared with the per-forward loop under inference_mode, visprof's default,
   and again under no_grad (a memory-only profile), where autocast holds the weights' cast copies.
3. Speed: the wall time of every whole visprof.profile() call (all three passes).

    python bench/latency_check.py --json bench/results/h200-memory-2/latency-regimes-h200.json --deadline-s 480

--memory-only skips the latency rounds (2.): the memory comparison and the wall time of its
one whole profile, per model, in one short call:

    python bench/latency_check.py --memory-only --json bench/results/h200-s15-final/memory-blocks-h200.json

All models run in one process (imports, CUDA context, the compiled observer and tracker are
shared, as in a sweep). The JSON is rewritten after every model, and no new model starts after
--deadline-s, so a call cut short keeps what it measured.
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

# Sixteen families: plain, depthwise and grouped CNNs, ViTs, windowed and hierarchical
# transformers, hybrids, an MLP-mixer and a pool-former.
MODELS = [
    "resnet50", "convnext_tiny", "efficientnet_b0", "mobilenetv3_large_100", "regnety_016", "densenet121",
    "vit_base_patch16_224", "deit_small_patch16_224", "eva02_base_patch14_224.mim_in22k",
    "swin_tiny_patch4_window7_224", "maxvit_tiny_tf_224", "coatnet_0_rw_224", "levit_128", "mobilevit_s",
    "mixer_b16_224", "poolformer_s12",
]
# label: (grad mode, autocast regime), as visprof.profile takes them and the plain loop runs them
REGIMES = {"per-forward": ("inference_mode", "per-forward"), "whole-loop": ("inference_mode", "whole-loop"),
           "model-cast": ("inference_mode", "model-cast"), "whole-loop/no_grad": ("no_grad", "whole-loop")}
TOLERANCE = 0.01


def plain_loop_ms(model, x, regime: str, dtype, warmup: int = 10, steps: int = 40, warmup_s: float = 1.0,
                  grad_mode: str = "inference_mode") -> float:
    """The loop as a user writes it for `regime` under `grad_mode`; median ms of a CUDA event pair per forward."""
    import torch

    grad = {"inference_mode": torch.inference_mode, "no_grad": torch.no_grad}[grad_mode]

    def run(step) -> list[float]:
        started, done = time.perf_counter(), 0
        while done < warmup or time.perf_counter() - started < warmup_s:
            step()
            torch.cuda.synchronize()
            done += 1
        times = []
        for _ in range(steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return times

    if regime == "per-forward":
        with grad():
            def step():
                with torch.autocast("cuda", dtype=dtype):
                    model(x)
            times = run(step)
    elif regime == "whole-loop":
        with grad(), torch.autocast("cuda", dtype=dtype):
            times = run(lambda: model(x))
    else:
        with grad():
            times = run(lambda: model(x))
    return statistics.median(times)


def cached_segments() -> list[list[int]]:
    """[size, stream, bytes in use] of each segment the allocator holds now: where a reserved
    peak differs between two runs, the segments cached after each show which allocation did."""
    import torch

    return [[s["total_size"], s["stream"], s["allocated_size"]] for s in torch.cuda.memory_snapshot()]


def benchmark_input(model, batch: int):
    """A batch at the size timm's benchmark.py feeds the model (its pretrained config's test size
    where it has one, as timm's own resolve_data_config says), which is also visprof's default:
    the loop and visprof.profile() must see the same input."""
    import torch
    from timm.data import resolve_data_config

    return torch.randn(batch, *resolve_data_config({}, model=model, use_test_size=True)["input_size"], device="cuda")


def plain_memory(name: str, batch: int, dtype, grad_mode: str = "inference_mode") -> dict:
    """A plain per-forward loop's peaks under ``grad_mode`` (default inference_mode, visprof's), alone
    on the GPU, cache emptied first."""
    import timm
    import torch

    model = timm.create_model(name).cuda().eval()
    x = benchmark_input(model, batch)
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    plain_loop_ms(model, x, "per-forward", dtype, warmup=2, steps=3, warmup_s=0.0, grad_mode=grad_mode)
    out = {"input_shape": list(x.shape), "max_memory_allocated": torch.cuda.max_memory_allocated(),
           "max_memory_reserved": torch.cuda.max_memory_reserved(), "segments": cached_segments()}
    del model, x
    gc.collect()
    torch.cuda.empty_cache()
    return out


def one_model(name: str, batch: int, rounds: int, memory_only: bool = False) -> dict:
    import timm
    import torch

    import visprof

    dtype = torch.bfloat16
    row: dict = {"model": name, "batch_size": batch}
    # 1. memory, each alone on the GPU
    plain = plain_memory(name, batch, dtype)
    start = time.perf_counter()
    result = visprof.profile(name, batch_size=batch, precision="bf16", progress=False)
    wall = {"regime": "per-forward", "wall_s": time.perf_counter() - start,
            "passes": {k: round(v.wall_s, 3) for k, v in result.passes.items()}}
    if list(result.model.input_shape) != plain["input_shape"]:  # the comparison would be of two workloads
        raise RuntimeError(f"{name}: visprof profiled input {result.model.input_shape}, the plain loop ran "
                           f"{plain['input_shape']}")
    row["input_shape"] = plain["input_shape"]
    mem = result.memory
    visprof_segments = cached_segments()
    row["memory"] = {
        "plain_segments": plain["segments"],
        "segments_after_visprof": visprof_segments,
        "plain_max_memory_allocated": plain["max_memory_allocated"],
        "plain_max_memory_reserved": plain["max_memory_reserved"],
        "visprof_peak_held_by_tensors": mem.peak_bytes,
        "visprof_requested_peak": mem.requested_peak_bytes,
        "visprof_block_fallbacks": mem.block_fallbacks,
        "visprof_torch_max_memory_allocated": mem.torch_peaks.get("max_memory_allocated"),
        "visprof_reserved_peak": mem.reserved_peak_bytes,
        "allocated_vs_plain": mem.peak_bytes / plain["max_memory_allocated"] - 1,
        "torch_allocated_vs_plain": mem.torch_peaks["max_memory_allocated"] / plain["max_memory_allocated"] - 1,
        "reserved_vs_plain": mem.reserved_peak_bytes / plain["max_memory_reserved"] - 1,
        "method": mem.method,
        "by_category_at_peak": mem.by_category_at_peak,
        "failed_checks": [c.name for c in result.failed_checks],
        "warnings": [w for w in result.warnings if w.startswith("memory pass")],
    }
    del result
    gc.collect()
    torch.cuda.empty_cache()
    # The same under no_grad, where autocast holds a cast copy of each weight it casts until the
    # forward's autocast exits (a transformer's peak, at its end, holds them all): visprof's memory
    # pass must book those copies as the plain loop's max_memory_allocated counts them.
    plain_ng = plain_memory(name, batch, dtype, grad_mode="no_grad")
    result = visprof.profile(name, batch_size=batch, precision="bf16", grad_mode="no_grad", passes="memory",
                             progress=False)
    row["memory_no_grad"] = {"plain_max_memory_allocated": plain_ng["max_memory_allocated"],
                             "visprof_peak_held_by_tensors": result.memory.peak_bytes,
                             "allocated_vs_plain": result.memory.peak_bytes / plain_ng["max_memory_allocated"] - 1,
                             "failed_checks": [c.name for c in result.failed_checks]}
    del result
    gc.collect()
    torch.cuda.empty_cache()
    if memory_only:
        row["profile_walls"] = [wall]
        row["median_profile_wall_s"] = wall["wall_s"]
        return row
    # 2. latency, alternating, and 3. the wall time of every whole profile
    model = timm.create_model(name).cuda().eval()
    x = benchmark_input(model, batch)
    cast = copy.deepcopy(model).to(dtype)
    x16 = x.to(dtype)
    per_regime = {regime: {"loop_ms": [], "visprof_ms": [], "ratio": []} for regime in REGIMES}
    walls = []
    for round_ in range(rounds):
        for label, (grad_mode, regime) in REGIMES.items():
            def loop() -> float:
                if regime == "model-cast":
                    return plain_loop_ms(cast, x16, regime, dtype, grad_mode=grad_mode)
                return plain_loop_ms(model, x, regime, dtype, grad_mode=grad_mode)

            loop_first = round_ % 2 == 0
            loop_ms = loop() if loop_first else None
            start = time.perf_counter()
            result = visprof.profile(name, batch_size=batch, precision="bf16", autocast=regime, grad_mode=grad_mode,
                                     progress=False)
            walls.append({"regime": label, "wall_s": time.perf_counter() - start,
                          "passes": {k: round(v.wall_s, 3) for k, v in result.passes.items()}})
            if not loop_first:
                loop_ms = loop()
            median = result.timing.latency_ms.median
            entry = per_regime[label]
            entry["loop_ms"].append(loop_ms)
            entry["visprof_ms"].append(median)
            entry["ratio"].append(median / loop_ms)
            entry.setdefault("visprof_sm_clock_mhz", []).append(
                ((result.gpu or {}).get("during_run") or {}).get("sm_clock_mhz"))
            if "weight_cast_ms" not in entry and result.attribution is not None:
                entry["weight_cast_ms"] = result.attribution.weight_cast_ms
                entry["weight_cast_share"] = result.attribution.weight_cast_ms / result.attribution.activity_ms
            del result
    for regime, entry in per_regime.items():
        entry["visprof_vs_loop"] = statistics.median(entry["ratio"]) - 1
        entry["loop_spread"] = max(entry["loop_ms"]) / min(entry["loop_ms"]) - 1
        entry["visprof_spread"] = max(entry["visprof_ms"]) / min(entry["visprof_ms"]) - 1
        entry["holds_still"] = max(entry["loop_spread"], entry["visprof_spread"]) <= TOLERANCE
        entry["within_1pct"] = abs(entry["visprof_vs_loop"]) <= TOLERANCE
        # The GPU's own clock: under its power cap (ViT-B/16 at batch 64 on the H200 ran at
        # 1845-1965 MHz) latency follows the power history of what ran before, which two
        # sequential loops do not share. Reported next to the result, not folded into it.
        clocks = [c for c in entry["visprof_sm_clock_mhz"] if c]
        entry["sm_clock_range"] = (max(c["max"] for c in clocks) / min(c["min"] for c in clocks) - 1) if clocks else None
        entry["clock_steady"] = entry["sm_clock_range"] is not None and entry["sm_clock_range"] <= TOLERANCE
    row["latency"] = per_regime
    row["profile_walls"] = walls
    row["median_profile_wall_s"] = statistics.median(w["wall_s"] for w in walls)
    del model, cast, x, x16
    gc.collect()
    torch.cuda.empty_cache()
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat-first", action="store_true",
                        help="measure the first model again at the end (one-time process state shows up as a difference)")
    parser.add_argument("--deadline-s", type=float, default=None, help="start no model after this many seconds")
    parser.add_argument("--memory-only", action="store_true",
                        help="skip the latency rounds: memory against a plain loop and one whole profile's wall time")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = []
    names = args.models.split(",")
    for name in names + (names[:1] if args.repeat_first else []):
        if args.deadline_s is not None and time.perf_counter() - start > args.deadline_s:
            rows.append({"model": name, "skipped": "deadline"})
            continue
        try:
            row = one_model(name, args.batch_size, args.rounds, args.memory_only)
        except Exception as exc:  # noqa: BLE001 - recorded, the next model still runs
            row = {"model": name, "error": f"{type(exc).__name__}: {exc}"}
        rows.append(row)
        print(summary_line(row), flush=True)
        if args.json:  # after every model, whole or not at all: a call cut short loses nothing done so far
            from visprof.base.outputs import atomic_write_text

            atomic_write_text(args.json, json.dumps({"provenance": provenance(), "rows": rows}, indent=2))
    walls = [r["median_profile_wall_s"] for r in rows if "median_profile_wall_s" in r]
    if walls:
        print(f"median whole visprof.profile() wall over {len(walls)} models: {statistics.median(walls):.2f} s")
    return 0


def summary_line(row: dict) -> str:
    if "memory" not in row:
        return f"{row['model']:36s} {row.get('error', row.get('skipped'))}"
    parts = []
    for regime, entry in row.get("latency", {}).items():
        flag = "ok" if entry["within_1pct"] else ("NOISY" if not entry["holds_still"] else
                                                   "OFF, clock moved" if not entry.get("clock_steady", True) else "OFF")
        parts.append(f"{regime} {entry['visprof_vs_loop']:+.2%} (spreads {entry['loop_spread']:.1%}/"
                     f"{entry['visprof_spread']:.1%}) {flag}")
    no_grad = row.get("memory_no_grad")
    if no_grad:
        flag = "ok" if abs(no_grad["allocated_vs_plain"]) <= TOLERANCE else "OFF"
        parts.append(f"no_grad peak {no_grad['visprof_peak_held_by_tensors'] / (1 << 20):.1f} vs plain "
                     f"{no_grad['plain_max_memory_allocated'] / (1 << 20):.1f} MiB {no_grad['allocated_vs_plain']:+.2%} {flag}")
    return (f"{row['model']:36s} " + " | ".join(parts + [memory_part(row["memory"])])
            + f" | profile {row['median_profile_wall_s']:.2f} s")


def memory_part(mem: dict) -> str:
    """Booked peak against the plain loop's max_memory_allocated, reserved against its
    max_memory_reserved (MiB), and how the books got there."""
    mib = 1 << 20
    flag = "ok" if abs(mem["allocated_vs_plain"]) <= TOLERANCE else "OFF"
    fallbacks = mem.get("visprof_block_fallbacks")
    return (f"mem peak {mem['visprof_peak_held_by_tensors'] / mib:.1f} vs plain max_memory_allocated "
            f"{mem['plain_max_memory_allocated'] / mib:.1f} MiB {mem['allocated_vs_plain']:+.2%} {flag} "
            f"(torch in pass {mem['torch_allocated_vs_plain']:+.2%}, fallbacks {fallbacks}) | reserved "
            f"{mem['visprof_reserved_peak'] / mib:.1f} vs plain max_memory_reserved "
            f"{mem['plain_max_memory_reserved'] / mib:.1f} MiB {mem['reserved_vs_plain']:+.2%}"
            + (f" | FAILED {mem['failed_checks']}" if mem["failed_checks"] else ""))


if __name__ == "__main__":
    sys.exit(main())
