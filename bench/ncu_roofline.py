"""Counter-based roofline per category (issue 11): `visprof ncu MODEL -c all` for ViT-B/16 and
ResNet-50, each in a fresh process. Per category: the attributed pass's time, share and FLOPs,
and Nsight Compute's SM and DRAM throughput (% of peak), achieved occupancy, tensor-pipe use,
DRAM bytes per iteration, arithmetic intensity (visprof's FLOPs per DRAM byte), achieved DRAM
bandwidth and the bound it implies.

    python bench/ncu_roofline.py --json bench/results/h200-s15-ncu/ncu-roofline-h200.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _fresh_process import run_one  # noqa: E402
from _provenance import provenance  # noqa: E402

MODELS = "vit_base_patch16_224,resnet50"


def one(name: str, batch: int, precision: str, samples: int, categories: str, csv_dir: str | None) -> dict:
    import dataclasses

    from visprof.nsight.ncu_run import profile_with_ncu

    csv_path = Path(csv_dir) / f"ncu-{name}.csv" if csv_dir else None
    result = profile_with_ncu(name, categories.split(","), samples=samples, batch_size=batch, precision=precision,
                              progress=False, csv_path=csv_path)
    totals = result.category_totals()
    rows = []
    for c in result.counters.categories:
        total = totals[c.category]
        rows.append({"category": c.category, "time_ms": total.time_ms, "share": total.share, "gflop": total.flops / 1e9,
                     "tflops": total.tflops, **dataclasses.asdict(c)})
    return {"model": name, "batch_size": batch, "precision": precision, "gpu": (result.gpu or {}).get("name"),
            "latency_ms": result.timing.latency_ms.median if result.timing else None,
            "tool": result.counters.tool, "metrics": result.counters.metrics,
            "nvtx_filters": result.counters.nvtx_filters, "samples_per_kind": samples,
            "kernels_profiled": result.counters.kernels_profiled, "warnings": result.counters.warnings,
            "categories": rows, "kernels": [dataclasses.asdict(k) for k in result.counters.kernels]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--samples", type=int, default=2, help="ops profiled per kind of op")
    parser.add_argument("--categories", default="all")
    parser.add_argument("--csv-dir", help="keep ncu's raw CSV of each model here")
    parser.add_argument("--one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.batch_size, args.precision, args.samples, args.categories, args.csv_dir)))
        return 0
    settings = ["--batch-size", str(args.batch_size), "--precision", args.precision, "--samples", str(args.samples),
                "--categories", args.categories] + (["--csv-dir", args.csv_dir] if args.csv_dir else [])
    rows = [run_one(__file__, name, settings) for name in args.models.split(",")]
    result = {"provenance": provenance(), "rows": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
    for r in rows:
        if "error" in r:
            print(f"\n{r['model']}: ERROR {r['error'][-300:]}")
            continue
        print(f"\n{r['model']} · batch {r['batch_size']} · {r['precision']} · {r['gpu']} · {r['tool']} · "
              f"{r['kernels_profiled']} kernels profiled · filters {' '.join(r['nvtx_filters'])}")
        print(f"{'category':14s} {'GPU ms':>7s} {'share':>6s} {'TFLOP/s':>8s} {'ncu ms':>7s} {'SM%':>5s} {'DRAM%':>6s} "
              f"{'occ%':>5s} {'tensor%':>7s} {'DRAM MB':>8s} {'FLOP/B':>7s} {'GB/s':>6s} {'cover':>6s}  bound")
        for c in r["categories"]:
            print(f"{c['category']:14s} {c['time_ms']:7.3f} {c['share']:6.1%} {fmt(c['tflops'], '8.1f')} "
                  f"{fmt(c['duration_ms'], '7.3f')} {fmt(c['sm_throughput_pct'], '5.1f')} "
                  f"{fmt(c['dram_throughput_pct'], '6.1f')} {fmt(c['achieved_occupancy_pct'], '5.1f')} "
                  f"{fmt(c['tensor_pipe_pct'], '7.1f')} {fmt(c['dram_bytes'] and c['dram_bytes'] / 1e6, '8.1f')} "
                  f"{fmt(c['arithmetic_intensity'], '7.1f')} {fmt(c['dram_gbps'], '6.0f')} {c['time_coverage']:6.0%}  "
                  f"{c['bound'] or '-'}")
        for w in r["warnings"]:
            print(f"  warning: {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
