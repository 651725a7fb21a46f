"""Eager vs torch.compile per category, on the GPU: do compiled profiles attribute like eager ones?

For each model: one compiled and one eager profile (timing + attributed passes, batch 64,
bf16), their category rows, the comparison (compiled time on the eager scale, the work fused
into each category's kernels), the self-checks, and how the compiled kernels were linked.
The eager run uses the layout Inductor gave the convolutions (its layout optimisation makes
them channels-last): an eager NCHW run does other convolution work (cuDNN's NCHW<->NHWC
conversions, other kernels), which is no check of the attribution. The acceptance compares
the library work (GEMM, convolution, attention kernels) per category; the rest of a category
is pointwise and layout work Inductor fuses. Prints each comparison, then a short table last;
writes JSON with provenance (and, with --recordings, each run's kernel recording).

    python bench/compile_check.py --out bench/results/h200-s15-final/compile-check-h200.json
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
    parser.add_argument("--recordings", type=Path, default=None, metavar="DIR",
                        help="write each run's kernel recording (.json.gz) here")
    args = parser.parse_args()
    if args.out is not None:
        from visprof.base.output_paths import check_output_path

        check_output_path(args.out, "--out")

    if args.recordings is not None:
        args.recordings.mkdir(parents=True, exist_ok=True)

    import visprof
    from visprof.report.compile_compare import compare_compile, comparison_rows_as_dicts, render_compile_comparison

    options = dict(batch_size=args.batch_size, precision=args.precision, passes="timing,attributed", warmup=10,
                   iterations=args.iterations, progress=False)
    report, summary = {}, []
    for name in [m for m in args.models.split(",") if m]:
        start = time.perf_counter()
        recording = (lambda kind: str(args.recordings / f"{name}-{kind}.json.gz")) if args.recordings else (lambda k: None)
        compiled = visprof.profile(name, compile=True, recording_path=recording("compiled"),
                                   **{**options, "passes": "timing,attributed,memory"})  # every self-check
        layout = compiled.attribution.inductor_conv_layout if compiled.attribution else None
        eager = visprof.profile(name, channels_last=layout == "channels_last", recording_path=recording("eager"),
                                **options)
        rows = compare_compile(eager, compiled)
        print(render_compile_comparison(eager, compiled), "\n", flush=True)
        worst = max((abs(r.library_points) for r in rows if r.category in SAME_WORK), default=0.0)
        report[name] = {
            "eager": eager.to_dict(), "compiled": compiled.to_dict(), "wall_s": time.perf_counter() - start,
            "inductor_conv_layout": layout, "comparison": comparison_rows_as_dicts(rows),
            "worst_library_points": worst,
        }
        summary.append((name, eager.timing.latency_ms.median, compiled.timing.latency_ms.median, rows, worst,
                        [c.name for c in compiled.failed_checks]))
    if args.out is not None:
        from visprof.base.outputs import atomic_write_text

        atomic_write_text(args.out, json.dumps({"provenance": provenance(), "options": options, "models": report},
                                               indent=1) + "\n")
    print(f"{'model':30s} {'eager ms':>9s} {'comp ms':>8s} " + " ".join(f"{c[:5]:>13s}" for c in SAME_WORK)
          + f" {'worst':>6s}  failed checks (compiled)")
    for name, e_ms, c_ms, rows, worst, failed in summary:
        by = {r.category: r for r in rows}
        cells = " ".join(f"{by[c].eager_flop_ms / by[c].eager_total_ms:5.1%}/{by[c].compiled_flop_ms / by[c].eager_total_ms:5.1%}"
                         if c in by and by[c].eager_total_ms else f"{'-':>13s}" for c in SAME_WORK)
        print(f"{name:30s} {e_ms:9.3f} {c_ms:8.3f} {cells} {worst:6.1f}  {', '.join(failed) or '-'}")
    print("(cells: library time (GEMM/conv/attention kernels) of the eager run / of the compiled run, both as shares "
          "of the eager total; eager in the layout Inductor gave the convolutions; worst: largest gap in points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
