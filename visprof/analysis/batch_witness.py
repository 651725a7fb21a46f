"""What the batches of two published runs say about the memory each needed per sample.

timm's ``benchmark.py`` starts every model at one batch (1024 in its published tables) and, when
a run fails (almost always out of memory), retries at the next smaller batch of its decay
sequence (``timm.utils.decay_batch_step``: 1024, 768, 512, 384, 256, ...). A row's batch B on a
GPU of C GB therefore bounds the memory its run held per sample:

* it ran at B: at most C / B;
* if B is below the table's first batch, it failed one step up, at B': more than C / B'.

Two runs of the same model on two GPUs hold the same memory per sample when they run the same
code. Where one run's lower bound exceeds the other's upper bound by more than ``WITNESS_FACTOR``,
no single footprint explains both batches: the two runs took different paths (other kernels,
other precisions around an op, an error at the larger batch), and the pair's speed-up for that
model carries the change as well as the GPUs'. On timm's tables: none of the 1,439 3090 -> 4090 rows
(one software), 12 of 1,611 4090 -> 5090 rows (CUDA 12.8 against 13.0), 30 between one
4090 under PyTorch 2.4 and 2.9.1 (``bench/results/memory-witness-2026-12-05/``).

Memory the run holds whatever the batch (weights, the CUDA context) is left out of C. That
overstates a bound's capacity per sample by the same amount on both GPUs, which makes the
factor smaller, not larger, wherever the run that failed had the larger GPU; ``WITNESS_FACTOR``
leaves room for it the other way round and for the allocators' own differences.
"""
from __future__ import annotations

from dataclasses import dataclass

from visprof.base.spelling import either

# More than this between one run's least and the other's most memory per sample: two paths.
# One decay step is x4/3 or x3/2, so a model that failed a full step earlier than its memory
# allows clears it; a run one step apart on GPUs of equal memory (x1.0) does not.
WITNESS_FACTOR = 1.2


@dataclass(frozen=True)
class PathChange:
    """One model whose two published batches no single memory footprint per sample explains."""

    hungrier: str  # "base" or "target": the run that held more memory per sample
    factor: float  # it held at least this many times the other's memory per sample
    base_batch: int
    target_batch: int

    def phrase(self, base_name: str, target_name: str) -> str:
        more, less = (target_name, base_name) if self.hungrier == "target" else (base_name, target_name)
        return (f"the {more} run held >= x{self.factor:.2f} the {less} run's memory per sample "
                f"(batch {self.base_batch} on the {base_name}, {self.target_batch} on the {target_name})")

    def clause(self, base_name: str, target_name: str) -> str:
        """What a model's own sentence (compare's explanation, calibrate's) adds about it."""
        return f"its two runs took different paths: {self.phrase(base_name, target_name)}"


def decay_batch_step(batch: int) -> int:
    """timm's ``timm.utils.decay_batch_step`` at its defaults (two steps between powers of two:
    1024, 768, 512, 384, ...; 0 after 1), written out: importing timm.utils imports timm and torch,
    3-4 s of a compare that needs neither. tests/analysis check it against timm's for every batch
    up to 4,096."""
    if batch <= 1:
        return 0
    power = 1 << ((batch - 1).bit_length() - 1)  # the largest power of two below the batch
    step = max(power // 2, 1)
    return power + ((batch - power - 1) // step) * step


def step_up(batch: int, start: int) -> int | None:
    """The batch timm's benchmark tried just before ``batch``, starting from ``start``; None for
    ``start`` itself or a batch its decay sequence never reaches."""
    tried = start
    while tried > batch:
        smaller = decay_batch_step(tried)
        if smaller == batch:
            return tried
        tried = smaller
    return None


def decays_from(batches: list[int], start: int) -> bool:
    """Whether every batch is ``start`` or one timm's decay from it reaches: a table of hand-picked
    batches (100, 200) says nothing of failures, and no witness is read from it."""
    return all(b == start or step_up(b, start) is not None for b in batches)


def per_sample_bounds(batch: int, start: int, memory_gb: float) -> tuple[float | None, float]:
    """(more than, at most) GB per sample held by a run that settled on ``batch``; the lower bound
    is None for a run at the first batch (nothing failed)."""
    failed_at = step_up(batch, start)
    return (memory_gb / failed_at if failed_at else None), memory_gb / batch


def footprint_factor(base_batch: int | None, target_batch: int | None, base_start: int, target_start: int,
                     base_gb: float | None, target_gb: float | None) -> tuple[str, float] | None:
    """("base" or "target", f): that run held at least f times the other's memory per sample, the larger
    of the two ways round; None where neither run's batch bounds its memory from below."""
    if not (base_batch and target_batch and base_gb and target_gb):
        return None
    base_lo, base_hi = per_sample_bounds(base_batch, base_start, base_gb)
    target_lo, target_hi = per_sample_bounds(target_batch, target_start, target_gb)
    ways = [(lo / hi, run) for run, lo, hi in (("target", target_lo, base_hi), ("base", base_lo, target_hi))
            if lo is not None]
    if not ways:
        return None
    factor, run = max(ways)
    return run, factor


def path_change(base_batch: int | None, target_batch: int | None, base_start: int, target_start: int,
                base_gb: float | None, target_gb: float | None) -> PathChange | None:
    """The witnessed change between two runs of one model, if their batches show one."""
    found = footprint_factor(base_batch, target_batch, base_start, target_start, base_gb, target_gb)
    if found is None or found[1] <= WITNESS_FACTOR:
        return None
    return PathChange(found[0], found[1], base_batch, target_batch)


def path_change_note(changes: list[tuple[str, PathChange]], base_name: str, target_name: str,
                     shown: int = 5) -> str | None:
    """One sentence on the models (name, change) whose two runs took different paths; None if none."""
    if not changes:
        return None
    ranked = sorted(changes, key=lambda c: -c[1].factor)
    # Short on purpose: a warning line, with each model's whole phrase in its own sentence and the outputs.
    named = ", ".join(f"{model} (x{change.factor:.2f} on the "
                      f"{target_name if change.hungrier == 'target' else base_name})" for model, change in ranked[:shown])
    more = f" and {len(ranked) - shown} more" if len(ranked) > shown else ""
    return (f"{len(ranked)} model(s) ran at batches that no single memory footprint per sample explains, so their two "
            f"runs took different paths and their speed-ups carry that change as well as the GPUs': {named}{more} "
            f"(memory per sample, at least that many times the other run's; more in each model's sentence"
            f"{either('', ', --csv, --json')})")


__all__ = ["WITNESS_FACTOR", "PathChange", "decays_from", "footprint_factor", "path_change", "path_change_note",
           "decay_batch_step", "per_sample_bounds", "step_up"]
