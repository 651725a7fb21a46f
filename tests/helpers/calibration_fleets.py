"""Synthetic calibration fleets shared by the calibration tests and the bench checks' tests."""
from __future__ import annotations

import math

import numpy as np

from visprof.analysis.calibrate import make_fleet


def kin_fleet(n_families=60, per_family=8, seed=5):
    """Each family runs kernels of its own (a bucket ``kf:fN``, 20-60% of its time) that the target
    runs faster or slower than its spec ratios say (a log correction drawn per family, sd 0.15),
    over a small model noise (0.01): what the fit learns of a family from its relatives."""
    rng = np.random.default_rng(seed)
    models, fams, rows, spec, obs = [], [], [], [], []
    for f in range(n_families):
        own = rng.normal(0, 0.15)
        for m in range(per_family):
            share = rng.uniform(0.2, 0.6)
            models.append(f"m{f}_{m}")
            fams.append(f"family{f}")
            rows.append({"cat:convolution": 1 - share, f"kf:f{f}": share})
            s = math.exp(rng.normal(0.4, 0.15))
            spec.append(s)
            obs.append(s * math.exp(own * share + rng.normal(0, 0.01)))
    return make_fleet(models, fams, rows, spec, obs, features=["cat:convolution", *(f"kf:f{f}" for f in range(n_families))])
