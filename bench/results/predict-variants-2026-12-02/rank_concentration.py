"""Where the predictor's rank disagreement with timm's 3090 -> 4090 speed-ups comes from: the
models with the largest squared rank differences, and Spearman without the N models whose
speed-up is furthest off. Reads predict_check's JSON (default: the 300-model record).

    python rank_concentration.py [../predict-l2-2026-12-01/predict-check-h200-300models-b64.json]
"""
import json
import sys
from pathlib import Path

import numpy as np

path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent
            / "predict-l2-2026-12-01/predict-check-h200-300models-b64.json")
rows = json.loads(path.read_text())["rows"]
pred = np.array([r["speedup_predicted"] for r in rows])
pub = np.array([r["speedup_published"] for r in rows])


def ranks(a):
    r = np.empty(len(a))
    r[a.argsort()] = np.arange(len(a))
    return r


def spearman(a, b):
    n = len(a)
    return 1 - 6 * ((ranks(a) - ranks(b)) ** 2).sum() / (n * (n * n - 1))


d2 = (ranks(pred) - ranks(pub)) ** 2
print(f"{len(rows)} models, Spearman {spearman(pred, pub):.3f}")
cumulative = 0.0
for i in np.argsort(-d2)[:25]:
    cumulative += d2[i]
    print(f"{rows[i]['model']:36s} {rows[i]['family']:26s} predicted x{pred[i]:.3f} published x{pub[i]:.3f} "
          f"share of sum d^2 so far {cumulative / d2.sum():.2f}")
for drop in (10, 15, 20, 30):
    keep = np.argsort(np.abs(np.log(pred / pub)))[:len(rows) - drop]
    print(f"without the {drop} furthest off: Spearman {spearman(pred[keep], pub[keep]):.3f}")
