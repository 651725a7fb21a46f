"""Eager vs torch.compile per category, on the GPU: do compiled profiles attribute like eager ones?

For each model: one eager and one compiled profile (timing + attributed passes, batch 64,
bf16), their category rows, the comparison (compiled time on the eager scale, the work fused
into each category's kernels), the self-checks, and how the compiled kernels were linked.
Prints each comparison, then a short table last; writes JSON with provenance.

    python bench/compile_check.py --out bench/results/compile-check-h200.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

MODELS = ["resnet50", "vit_base_patch16_224", "swin_tiny_patch4_window7_224", "convnext_tiny"]
SAME_WORK = ("attention", "convolution", "linear")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.out is not None:
        from visprof.outputs import check_output_path

        check_output_path(args.out, "--out")

    import visprof
    from visprof.report.compile_compare import compare_compile, render_compile_comparison

    options = dict(batch_size=args.batch_size, precision=args.precision, passes="timing,attributed", warmup=10,
                   iterations=args.iterations, progress=False)
    report, summary = {}, []
    for name in [m for m in args.models.split(",") if m]:
        start = time.perf_counter()
        eager = visprof.profile(name, **options)
        compiled = visprof.profile(name, compile=True, **options)
        rows = compare_compile(eager, compiled)
        print(render_compile_comparison(eager, compiled), "\n", flush=True)
        worst = max((abs(r.same_scale_points) for r in rows if r.category in SAME_WORK), default=0.0)
        report[name] = {
            "eager": eager.to_dict(), "compiled": compiled.to_dict(), "wall_s": time.perf_counter() - start,
            "comparison": [{**r.__dict__, "share_points": r.share_points, "same_scale_points": r.same_scale_points}
                           for r in rows],
            "worst_same_work_points": worst,
        }
        summary.append((name, eager.timing.latency_ms.median, compiled.timing.latency_ms.median, rows, worst,
                        [c.name for c in compiled.failed_checks]))
    if args.out is not None:
        from visprof.outputs import atomic_write_text

        atomic_write_text(args.out, json.dumps({"provenance": provenance(), "options": options, "models": report},
                                               indent=1) + "\n")
    print(f"{'model':30s} {'eager ms':>9s} {'comp ms':>8s} " + " ".join(f"{c[:5]:>13s}" for c in SAME_WORK)
          + f" {'worst':>6s}  failed checks (compiled)")
    for name, e_ms, c_ms, rows, worst, failed in summary:
        by = {r.category: r for r in rows}
        cells = " ".join(f"{by[c].eager_share:5.1%}/{by[c].compiled_of_eager:5.1%}" if c in by else f"{'-':>13s}"
                         for c in SAME_WORK)
        print(f"{name:30s} {e_ms:9.3f} {c_ms:8.3f} {cells} {worst:6.1f}  {', '.join(failed) or '-'}")
    print("(cells: eager share / compiled time as a share of the eager total; worst: largest gap in points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
