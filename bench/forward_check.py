"""The calibration fit on the models profiled before a sweep, judged on the models that sweep added (issue 25).

    python bench/forward_check.py --pair PAIR1.db rtx3090 rtx4090 --pair PAIR2.db rtx4090 rtx5090 \\
        --store profiles.db --models bench/sweep_models_rest253.txt --out DIR

A user's case of ``visprof calibrate``: published numbers for many models, profiles of some; the
fit predicts the others. Here the others are the models of ``--models``, a list fixed before they
were profiled: the fit sees none of their published numbers (they share families with the fit's
models where timm has them). The features and covariate scales are chosen from every profile, as in
``visprof calibrate`` (label-free). Per pair: Spearman, median |error| and its ratio to the
training models' median's, the 80% band's coverage; the spec-only models beside it. Then the same
for the listed models whose family no unlisted model has, fitted on every other model: a
family-held-out test on new architectures. Writes ``forward.txt``, ``forward-BASE-TARGET.csv.gz``
and ``forward-new-families-BASE-TARGET.csv.gz`` (per test model) into --out, atomically.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from visprof.analysis import sources
from visprof.analysis.calibration_fleet import fleet_from_comparison
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table
from visprof.analysis.held_out import held_out_split
from visprof.base.errors import BadInputError
from visprof.base.outputs import atomic_write_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate_check import prepare_out, write_predictions  # noqa: E402


def listed_models(path: Path) -> set[str]:
    return {line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}


def new_family_flags(families: list[str], test: list[bool], published: list[bool]) -> list[bool]:
    """The test models of a family that no published training model has. The fit on every model
    outside those families is the issue's family-held-out test, on architectures no earlier
    profile had."""
    known = {fam for fam, t, ok in zip(families, test, published) if ok and not t}
    return [t and fam not in known for fam, t in zip(families, test)]


def run_pair(refs: Path, base: str, target: str, store: Path,
             listed: set[str]) -> tuple[str, list[dict], list[dict]]:
    table = gpu_table()
    loaded = sources.load([refs, store], table)
    comparison = compare(loaded.measurements, base, target, table)
    fleet, _ = fleet_from_comparison(comparison, loaded.profiles, spec_excess=["fraction"], table=table)
    archs = [name.split(".")[0] for name in fleet.models]  # published names may carry a pretrained tag
    test = [arch in listed for arch in archs]
    held = held_out_split(fleet, test)
    found = {arch for arch, t in zip(archs, test) if t}
    published = [math.isfinite(obs) for obs in fleet.log_obs]
    trained = sum(1 for ok, t in zip(published, test) if ok and not t)
    text = (f"== {comparison.base} -> {comparison.target}: fit on {trained} published rows, tested on "
            f"{held.models} published rows of {len(found)} of the {len(listed)} listed models ==\n" + held.lines())
    new = new_family_flags(fleet.families, test, published)
    new_predictions = []
    if any(n and ok for n, ok in zip(new, published)):
        fresh = held_out_split(fleet, new)
        text += (f"-- the listed models of the {fresh.families} families with no unlisted published model "
                 f"(the fit sees every other model) --\n" + fresh.lines())
        new_predictions = fresh.predictions
    return text, held.predictions, new_predictions


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", nargs=3, action="append", required=True, metavar=("REFS_DB", "BASE", "TARGET"))
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--models", type=Path, required=True, help="the test models, one per line (# comments)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    missing = [str(p) for p in [args.store, args.models, *(Path(p[0]) for p in args.pair)] if not p.is_file()]
    if missing:
        print(f"forward_check.py: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    listed = listed_models(args.models)
    texts = []
    try:
        prepare_out(args.out, ["forward.txt"] + [f"forward{kind}-{b}-{t}.csv.gz" for _, b, t in args.pair
                                                 for kind in ("", "-new-families")],
                    {"--store": args.store, "--models": args.models, "--pair": [p[0] for p in args.pair]})
        for refs, base, target in args.pair:
            text, predictions, new_families = run_pair(Path(refs), base, target, args.store, listed)
            print(text, flush=True)
            write_predictions(args.out / f"forward-{base}-{target}.csv.gz", predictions)
            new_path = args.out / f"forward-new-families-{base}-{target}.csv.gz"
            if new_families:
                write_predictions(new_path, new_families)
            else:
                new_path.unlink(missing_ok=True)  # an earlier run's, which this forward.txt does not describe
            texts.append(text)
    except BadInputError as exc:
        print(f"forward_check.py: {exc}", file=sys.stderr)
        return 2
    atomic_write_text(args.out / "forward.txt", "\n".join(texts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
