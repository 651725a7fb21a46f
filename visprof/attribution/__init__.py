"""Categories (a data table users extend) and attribution: kernels -> ops -> categories.

categories     the category rule table (visprof/data/categories.toml) and classification
category_file  a rules file read, and its shape checked field by field before rules are built
op_types       op types and kernel families: the tables every profile keeps
attribute      a CapturedTrace attributed: per-category, per-module and per-op time

The functions of ``attribute`` are re-exported here: ``visprof.attribution.attribute(trace)``.
"""
from visprof.attribution.attribute import (HOW_LABELS, Attribution, attribute, busy_time_ns, category_rows,
                                           coverage, kernel_time_ns, module_category_ns, module_rows, other_ops,
                                           span_ns, summarize, unattributed_kernels, weight_casts)

__all__ = ["HOW_LABELS", "Attribution", "attribute", "busy_time_ns", "category_rows", "coverage", "kernel_time_ns",
           "module_category_ns", "module_rows", "other_ops", "span_ns", "summarize", "unattributed_kernels",
           "weight_casts"]
