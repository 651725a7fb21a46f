"""How far a published speed-up is a property of the work a model runs: models that run identical work.

timm publishes some architectures under several names (``deit_tiny_patch16_224`` and
``vit_tiny_patch16_224``; ``beit_base_patch16_224`` and ``beitv2_base_patch16_224``). Two such
models launch the same ops on the same tensors, so any difference between their published
speed-ups is the benchmark's own noise (run-to-run, clocks, the order it ran in). Its size bounds
what any predictor of the speed-up from the work can reach: with published = true + noise, no
prediction correlates with the published values better than sqrt(1 - noise variance / total
variance). A calibration far below that ceiling is missing features, not fighting noise.

"Identical work" is read from the profiles, not from names: the same input size, parameter count
(to the thousand) and op-type table (each op type's calls, GFLOP and MB per iteration).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np


def work_signature(result) -> tuple | None:
    """What a profile says its model runs, comparable across models; None without an op-type table."""
    if not result.op_types:
        return None
    ops = tuple(sorted((o.op_type, round(o.calls), round(o.gflop, 1), round(o.mb)) for o in result.op_types))
    params = result.model.param_count
    return result.model.img_size, None if params is None else params // 1000, ops  # None: unknown (frozen TorchScript)


def identical_work_groups(results: dict) -> list[list[str]]:
    """Models (name -> ProfileResult) grouped by work signature; only groups of two or more, sorted."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for name, result in results.items():
        signature = work_signature(result)
        if signature is not None:
            groups[signature].append(name)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


@dataclass
class Repeatability:
    groups: int  # groups of identical work with at least two published speed-ups
    models: int
    within_sd: float  # sd of log published speed-up within a group (pooled, unbiased)
    total_sd: float  # sd of log published speed-up over all published models
    ceiling: float  # the correlation a perfect predictor of the work's speed-up could reach

    def line(self) -> str:
        return (f"  published speed-up of identical work ({self.groups} groups, {self.models} models with the same "
                f"op types, FLOPs and bytes): differs by {self.within_sd:.1%} (sd) within a group against "
                f"{self.total_sd:.1%} over the fleet; correlation ceiling {self.ceiling:.3f}\n")

    def to_dict(self) -> dict:
        return {"groups": self.groups, "models": self.models, "within_sd": self.within_sd,
                "total_sd": self.total_sd, "ceiling": self.ceiling}


def repeatability(groups: list[list[str]], log_published: dict[str, float]) -> Repeatability | None:
    """Pooled within-group variance of the log published speed-up over the groups with two or more
    published members; None where no group has two."""
    squares, dof, used, models = 0.0, 0, 0, 0
    for group in groups:
        values = np.array([log_published[m] for m in group if math.isfinite(log_published.get(m, math.nan))])
        if len(values) < 2:
            continue
        squares += float(((values - values.mean()) ** 2).sum())
        dof += len(values) - 1
        used += 1
        models += len(values)
    everything = np.array([v for v in log_published.values() if math.isfinite(v)])
    if not dof or len(everything) < 2:
        return None
    within, total = squares / dof, float(everything.var(ddof=1))
    ceiling = math.sqrt(max(0.0, 1.0 - within / total)) if total > 0 else math.nan
    return Repeatability(used, models, math.sqrt(within), math.sqrt(total), ceiling)
