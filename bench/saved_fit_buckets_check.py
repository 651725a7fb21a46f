"""A saved calibration applied to profiles whose kernel families are split by category, when the fit's were not.

    python bench/saved_fit_buckets_check.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --fit-store /tmp/profiles.db --profiles /tmp/h100.db --out DIR

Per pair: `visprof calibrate REFS FIT_STORE --save` (the H200 store: no profile there keeps
``by_category``, so the file says ``split_families: false``), then `visprof compare REFS PROFILES
--calibration` twice, on the profiles as recorded (the H100 store: split) and with ``by_category``
taken out, which is how a profile of before c543069 reads. Each is scored against the published
speed-ups (Spearman, median absolute error, 80% band coverage), with the file as saved and with its
``split_families`` forced true, which is what every saved fit did before the file kept it: a split part
outside its row's label then lands in a bucket the fit never saw. The profiles are exported with
`visprof export --format json` and read back as ProfileResult files, so both runs read the same
rows through the same path. Descriptive: the figures are in-sample for most models (the H200 fit saw them).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from _pairs import not_found, run_visprof  # noqa: E402
from visprof.analysis.metrics import ratio_errors, spearman  # noqa: E402
from visprof.base.outputs import atomic_write_text  # noqa: E402

PROG = "saved_fit_buckets_check.py"


def export_profiles(store: Path, out: Path) -> tuple[Path, Path, int]:
    """The store's results as two folders of ProfileResult JSON: as recorded, and without ``by_category``.
    Returns both and how many kernel-family rows had it."""
    dump = out / "export.json"
    run_visprof(PROG, "export", str(store), "--format", "json", "--output", str(dump))
    split, whole, rows = out / "split", out / "unsplit", 0
    split.mkdir()
    whole.mkdir()
    for i, entry in enumerate(json.loads(dump.read_text())["results"]):
        result = entry["result"]
        (split / f"{i:04d}.json").write_text(json.dumps(result))
        for family in result.get("kernel_families") or []:
            rows += bool(family.get("by_category"))
            family["by_category"] = None
        (whole / f"{i:04d}.json").write_text(json.dumps(result))
    dump.unlink()
    return split, whole, rows


def scored(path: Path) -> tuple[dict, dict]:
    """Spearman, median absolute error and band coverage of the calibrated speed-ups in a compare CSV,
    and each row's calibrated speed-up by (model, image size)."""
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["calibrated"] and r["speedup"]]
    cal = [float(r["calibrated"]) for r in rows]
    pub = [float(r["speedup"]) for r in rows]
    inside = sum(float(r["calibrated_low"]) <= float(r["speedup"]) <= float(r["calibrated_high"]) for r in rows)
    figures = {"rows": len(rows), "spearman": spearman(cal, pub),
               "median_abs_error": ratio_errors(cal, pub)["median_abs"], "band": inside / len(rows)}
    return figures, {(r["model"], r["img_size"]): float(r["calibrated"]) for r in rows}


def run_pair(refs: Path, base: str, target: str, fit_store: Path, folders: tuple[Path, Path], work: Path) -> list[str]:
    saved = work / f"{base}-{target}.json"
    run_visprof(PROG, "calibrate", str(refs), str(fit_store), "--base", base, "--target", target, "--folds", "2",
                "--save", str(saved))
    doc = json.loads(saved.read_text())
    forced = work / f"{base}-{target}-forced.json"
    forced.write_text(json.dumps({**doc, "split_families": True}))
    lines = [f"{base} -> {target}: fitted on {len(doc['fitted_models'])} published rows, "
             f"split_families {str(doc['split_families']).lower()} as saved"]
    for label, cal in (("as saved", saved), ("split forced (before the file kept it)", forced)):
        got = {}
        for name, folder in zip(("split", "unsplit"), folders):
            out = work / f"{base}-{target}-{cal.stem}-{name}.csv"
            run_visprof(PROG, "compare", str(refs), str(folder), "--base", base, "--target", target,
                        "--calibration", str(cal), "--csv", str(out))
            got[name] = scored(out)
        moved = [got["split"][1][k] / got["unsplit"][1][k] for k in got["unsplit"][1]]
        lines.append(f"  file {label}:")
        for name in ("split", "unsplit"):
            f = got[name][0]
            lines.append(f"    profiles {name:8s} {f['rows']:5d} rows  Spearman {f['spearman']:.4f}  "
                         f"median error {f['median_abs_error']:.3%}  80% band {f['band']:.1%}")
        lines.append(f"    split over unsplit, per row: x{min(moved):.4f} to x{max(moved):.4f}; "
                     f"{sum(abs(m - 1) > 1e-12 for m in moved)} of {len(moved)} rows differ")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", nargs=3, action="append", required=True, metavar=("REFS_DB", "BASE", "TARGET"))
    parser.add_argument("--fit-store", type=Path, required=True, help="the profiles the calibration is fitted on")
    parser.add_argument("--profiles", type=Path, required=True, help="the profiles it predicts (with by_category)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if not_found(PROG, [args.fit_store, args.profiles, *(Path(p[0]) for p in args.pair)]):
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        split, whole, rows = export_profiles(args.profiles, work)
        lines = [f"{args.profiles.name}: {len(list(split.iterdir()))} profiles, {rows} kernel-family rows with by_category"]
        print(lines[0], flush=True)
        for refs, base, target in args.pair:
            pair = run_pair(Path(refs), base, target, args.fit_store, (split, whole), work)
            print("\n".join(pair), flush=True)
            lines += pair
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "figures.txt", "\n".join(lines) + "\n")
    print(f"wrote {args.out / 'figures.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
