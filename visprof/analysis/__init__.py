"""Hardware sensitivity: roofline bounds, GPU specs, cross-GPU comparison, prediction, timm
benchmark import (docs/hardware-sensitivity.md).

Modules, each small and importable on its own (nothing heavy loads at import):

    gpus          the GPU spec table (visprof/data/gpus.toml), lookup and NVML check
    roofline      op groups, bounds and time shares of one result
    timm_csv      timm benchmark CSVs -> reference rows (pure parsing and validation)
    store_adapter the results store as the analysis reads and writes it
    sources       results, stores and CSVs -> measurements
    families      a model's family from the timm module that defines it
    comparison    what compare returns: a row per model, aggregates, the predictions' agreement
    compare       speed-ups between two GPUs, sensitivity, aggregates (joins and predicts)
    compare_notes what a comparison says of its inputs: disagreeing rows, precisions, software
    compare_explain  each compared model's sentence: its gain, its bounds, the GPUs' ratios
    batch_witness what timm's published batches say of the memory each run held
    group_scaling one roofline group's time on another GPU (the per-group step of predict)
    predict       a profile on one GPU -> latency on another (its groups added up, with the host's time)
    calibrate     a GPU pair's spec-ratio prediction fitted to a published table, per op type
    calibration_buckets  a profile's time as the calibration's buckets (category, op type, kernel family)
    calibration_ratios  the fitted ratio per bucket, the table calibrate prints
    calibration_fleet  the models a calibration sees, from a comparison: buckets and covariates
    calibration_band  the calibration's 80% band: quantiles, and how fast it widens with leverage
    held_out      the calibration judged on models its fit did not see (families held out)
    calibration_sentences  each model's calibrated speed-up told from the fitted ratios
    calibration_file  a fitted calibration saved, and applied to profiles it never saw
    repeatability identical work in the profiles, and the ceiling noise leaves a predictor
    measured_bounds  bounds per kernel family from Nsight Compute counters, and their coverage
    accuracy      ImageNet top-1 of timm's pretrained weights (a compact copy)
    metrics       Spearman, Pearson, ratio errors
"""
from visprof.base.lazy_names import lazy_names as _lazy_names

__all__ = ["compare", "gpu_table", "predict_result", "roofline"]

# A name that is also a module's is that module: importing the module binds its name on this package,
# so a function of that name would be what the first read returns and the module every later one.
_LAZY = {
    "compare": ("visprof.analysis.compare", None),
    "gpu_table": ("visprof.analysis.gpus", "gpu_table"),
    "predict_result": ("visprof.analysis.predict", "predict_result"),
    "roofline": ("visprof.analysis.roofline", None),
}


__getattr__, __dir__ = _lazy_names(__name__, _LAZY)
