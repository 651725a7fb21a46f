"""A small saved calibration with known numbers, over the buckets a recorded profile has."""
from __future__ import annotations

import numpy as np

from visprof.analysis.calibrate import Fit
from visprof.analysis.calibration_buckets import buckets_of
from visprof.analysis.calibration_fleet import BASE_COVARIATE
from visprof.analysis.calibration_file import SavedCalibration

COVARIATES = ["cov:spec", "cov:profile_time_per_sample", "cov:profile_flops_per_byte"]
BASE_FILL = -0.05  # the fleet's median log(published / predicted base time), for a profile alone


def saved_calibration(result, base="rtx4090", target="rtx5090", fitted=("deit_small_patch16_224.fb_in1k",),
                      base_covariate: bool = True, batch_size: int | None = 1024):
    """Three of ``result``'s buckets, one no profile has, and the covariates, with fixed corrections,
    variance factors, band quantiles and leverage coefficients. ``base_covariate=False``: a file of
    the method before it read the base GPU's published number (three covariates, no fill).
    ``batch_size``: the published batch it keeps (None: a file written before it was kept)."""
    buckets = sorted(k for k, v in buckets_of(result).items() if v > 0.05)[:3] + ["op:never/-/seen"]
    features = buckets + COVARIATES + ([f"cov:{BASE_COVARIATE}"] if base_covariate else [])
    delta = np.array([0.2, -0.3, 0.1, 0.5, -0.4, 0.05, 0.02, 0.3][:len(features)])
    a_inv = np.diag(np.linspace(0.01, 0.08, len(features) + 1))
    a_inv[0, 1] = a_inv[1, 0] = 0.004
    fit = Fit(features, 0.1, -0.05, delta, a_inv, q_low=-0.07, q_high=0.06, c=4.0, c_seen=2.0)
    scales = {"spec": (0.3, 0.2), "profile_time_per_sample": (-7.0, 1.5), "profile_flops_per_byte": (4.0, 0.8)}
    fills = {}
    if base_covariate:
        scales[BASE_COVARIATE] = (0.02, 0.1)
        fills[BASE_COVARIATE] = BASE_FILL
    return SavedCalibration(base, target, "fp16", fit, scales, list(fitted), 1,
                            {"spearman": 0.7, "median_abs_error": 0.04, "coverage": 0.8}, covariate_fills=fills,
                            batch_size=batch_size)
