"""The predictor on both published GPU pairs at once, against the baselines DESIGN section 7 names.

    python bench/two_pair_check.py COMPARE_3090_4090.json COMPARE_4090_5090.json --store STORE [--json OUT]

Each input is the ``--json`` of ``visprof compare REFS.db STORE --base A --target B``. Per pair,
over the models with an H200 profile: Spearman and median |error| of visprof's predicted
speed-up; the fleet median ("every model gets the median speed-up"); the best single profile
feature (a category's, a bound's or a normalization sub-category's share of H200 time, by
|Spearman|); and the share of models whose published value lies in the predicted band. With
``--store``, each model's group-norm share (from the op-type/category tables) is correlated
with the published speed-up on its own. Record: bench/results/two-pairs-2026-12-01/.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import zlib
from pathlib import Path

import numpy as np


def spearman(a, b) -> float:
    ra, rb = (np.argsort(np.argsort(np.asarray(x, dtype=float))) for x in (a, b))
    return float(np.corrcoef(ra, rb)[0, 1])


def shares(store: Path) -> dict[str, dict[str, float]]:
    """Per model (latest profile at the model's test size): time shares by category and sub-category."""
    out: dict[str, dict[str, float]] = {}
    conn = sqlite3.connect(store)
    for model, blob in conn.execute("SELECT model, result_json FROM results ORDER BY created_at"):
        doc = json.loads(zlib.decompress(blob))
        rows = doc.get("categories") or []
        total = sum(r["time_ms"] for r in rows) or 1.0
        feats: dict[str, float] = {}
        for r in rows:
            feats[r["category"]] = feats.get(r["category"], 0.0) + r["time_ms"] / total
            if r.get("subcategory"):
                key = f"{r['category']}/{r['subcategory']}"
                feats[key] = feats.get(key, 0.0) + r["time_ms"] / total
        if doc.get("op_types"):  # profiles made with op types have normalization's sub-categories too
            feats["op:group_norm"] = sum(t["share"] for t in doc["op_types"] if "group_norm" in t["op_type"])
            feats["with_op_types"] = 1.0
        out[model] = feats
    return out


def pair_figures(doc: dict, feats: dict[str, dict[str, float]]) -> dict:
    rows = [m for m in doc["models"] if m.get("predicted_speedup")]
    pub = [m["speedup"] for m in rows]
    pred = [m["predicted_speedup"] for m in rows]
    med = statistics.median(m["speedup"] for m in doc["models"])
    err = [abs(p / s - 1) for p, s in zip(pred, pub)]
    fleet = [abs(med / s - 1) for s in pub]
    inside = [m for m in rows if m.get("predicted_low") and m["predicted_low"] <= m["speedup"] <= m["predicted_high"]]
    best = {}
    keys = sorted({k for m in rows for k in feats.get(m["model"], {})})
    for key in keys:
        if key == "with_op_types":
            continue
        # a sub-category or op-type share exists only in profiles made with op types: judged on those alone
        newer = "/" in key or key.startswith("op:")
        xs = [(feats[m["model"]].get(key, 0.0), m["speedup"]) for m in rows if m["model"] in feats
              and (not newer or "with_op_types" in feats[m["model"]])]
        if len(xs) > 50 and len({x for x, _ in xs}) > 5:
            best[key] = spearman([x for x, _ in xs], [y for _, y in xs])
    top = sorted(best.items(), key=lambda kv: -abs(kv[1]))[:5]
    return {"base": doc["base"], "target": doc["target"], "models": len(rows), "fleet_median_speedup": med,
            "spearman": spearman(pred, pub), "median_abs_error": statistics.median(err),
            "fleet_median_baseline_error": statistics.median(fleet),
            "band_coverage": len(inside) / len(rows), "best_single_features": top,
            "group_norm_op_share_spearman": best.get("op:group_norm")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("compares", nargs=2, type=Path)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    feats = shares(args.store)
    out = [pair_figures(json.loads(p.read_text()), feats) for p in args.compares]
    for f in out:
        print(f"{f['base']} -> {f['target']}: {f['models']} profiled models; predicted: Spearman {f['spearman']:.3f}, "
              f"median |error| {f['median_abs_error']:.1%}; fleet median x{f['fleet_median_speedup']:.3f}: median |error| "
              f"{f['fleet_median_baseline_error']:.1%}; published inside the band: {f['band_coverage']:.0%}")
        print("   best single features (Spearman with the published speed-up): "
              + ", ".join(f"{k} {v:+.2f}" for k, v in f["best_single_features"]))
        if f["group_norm_op_share_spearman"] is not None:
            print(f"   group-norm op-type share (profiles with op types): Spearman {f['group_norm_op_share_spearman']:+.2f}")
    if args.json:
        from visprof.base.outputs import atomic_write_text

        atomic_write_text(args.json, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
