"""The predictor's batch scaling alone: one GPU, a profile at a small batch predicting the
measured latency at a larger one.

bench/predict_check.py judges the predictor across GPUs (H200 profiles -> published RTX 3090
and 4090 throughputs), where two things change at once: the batch (64 -> 1024) and the GPU
(peaks 5-14x lower). This check holds the GPU fixed. For every model a store holds at both
batches on the same GPU, it predicts the large batch's latency from the small batch's profile
(``visprof.analysis.predict``, each ``--excess`` mode, the GPU's own spec row as the target)
and compares it with the large batch's measured clean latency (its timing pass median): a
measurement the prediction did not use.

    python bench/predict_batch_check.py --from sweep.db --profile-batch 64 --measured-batch 256 \\
        --json bench/results/predict-l2-2026-12-01/predict-batch-64-to-256.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402
from predict_check import _finite, load_profiles, run  # noqa: E402


def pairs(results, small: int, large: int) -> list[tuple[object, object]]:
    """(profile at batch ``small``, profile at batch ``large``) per (architecture, image size,
    GPU) that has both, the second with a timing pass; the last of each in the input order.
    (``small`` may be the larger batch: the check runs either way.)"""
    from visprof.analysis.families import architecture

    at: dict[int, dict[tuple, object]] = {small: {}, large: {}}
    for r in results:
        batch = r.model.batch_size or 1
        if batch in at and r.measurement == "gpu":
            at[batch][(architecture(r.model.name), r.model.img_size, (r.gpu or {}).get("name"))] = r
    return [(at[small][k], at[large][k]) for k in sorted(at[small], key=str)
            if k in at[large] and at[large][k].timing is not None and at[large][k].timing.latency_ms.median]


def check(results, small: int, large: int, modes) -> dict:
    from visprof.analysis.gpus import gpu_table
    from visprof.analysis.metrics import ratio_errors
    from visprof.analysis.predict import predict_result, source_spec

    table = gpu_table()
    rows = []
    for a, b in pairs(results, small, large):
        spec = source_spec(a, table)
        row = {"model": a.model.name, "img_size": a.model.img_size, "gpu": spec.id, "small": small, "large": large,
               "measured_small_ms": a.timing.latency_ms.median if a.timing else None,
               "measured_large_ms": b.timing.latency_ms.median}
        for mode in modes:
            row[f"{mode}_ms"] = predict_result(a, spec, batch_size=large, excess=mode, table=table).latency_ms
        rows.append(row)
    summary = {"models": len(rows)}
    if rows:
        for mode in modes:
            summary[mode] = ratio_errors([r[f"{mode}_ms"] for r in rows], [r["measured_large_ms"] for r in rows])
    return {"rows": rows, "summary": summary}


def main() -> int:
    from visprof.analysis.group_scaling import EXCESS_MODES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="sources", nargs="+", required=True, help="stores or folders of profiles")
    parser.add_argument("--profile-batch", type=int, required=True, help="the batch to predict from")
    parser.add_argument("--measured-batch", type=int, required=True, help="the batch whose measured latency is the answer")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    outcome = check(load_profiles(args.sources), args.profile_batch, args.measured_batch, EXCESS_MODES)
    s = outcome["summary"]
    if not s["models"]:
        print(f"no model has GPU profiles at both batch {args.profile_batch} and batch {args.measured_batch} (with a timing pass)",
              file=sys.stderr)
        return 1
    print(f"{'model':40s} {'img':>4s} {'measured':>9s} " + " ".join(f"{m:>9s}" for m in EXCESS_MODES))
    for r in outcome["rows"]:
        print(f"{r['model'][:40]:40s} {r['img_size']:4d} {r['measured_large_ms']:9.2f} "
              + " ".join(f"{r[f'{m}_ms'] / r['measured_large_ms'] - 1:+9.1%}" for m in EXCESS_MODES))
    print(f"\nbatch {args.profile_batch} -> {args.measured_batch} on the same GPU, {s['models']} models: predicted / measured latency - 1")
    for mode in EXCESS_MODES:
        e = s[mode]
        print(f"  {mode:8s} median signed {e['median_signed']:+7.1%}   median |error| {e['median_abs']:6.1%}   "
              f"p90 {e['p90_abs']:6.1%}")
    if args.json:
        doc = _finite({"provenance": provenance(), "sources": args.sources, **outcome})
        args.json.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(run(main))
