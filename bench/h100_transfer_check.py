"""H200 profiles against a measured H100: spec-only prediction of each model's slow-down, per --excess.

    python bench/h100_transfer_check.py --h100 h100.db --h200 /tmp/profiles.db --out DIR [--models FILE]

--models scores only the H100 rows of the models a list names (one a line, as a sweep's model
list): the consolidated H100 store holds more than one sample, each its own record's list.

The rule is bench/results/h100-transfer-2026-12-05/prereg.md, committed before the H100 run. The
truth is the ratio of GPU busy time per iteration (timing pass), H100 over H200, of the same model,
batch, image size and precision; the H200 row is the one `visprof predict` reads (newest at the
batch). Each spec model of `visprof predict --to h100-sxm --excess E` is scored by Spearman and the
median absolute error of the ratio, beside "no change" (1.0), the fleet median of the measured
ratios (an oracle constant) and the pure bandwidth ratio. Then the same ratio per category and
sub-category, and per kernel family (over all its categories) with >= 1% of the H200 kernel time,
with the bound library's measured DRAM share where it has the family. Descriptive: nothing is adopted on it.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sqlite3
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from visprof.analysis.metrics import spearman  # noqa: E402
from visprof.base.errors import BadInputError  # noqa: E402
from visprof.base.spelling import command_line  # noqa: E402
from visprof.base.outputs import atomic_write_text  # noqa: E402
from visprof.sweep.selection import read_model_list  # noqa: E402
EXCESS = ("clock", "fraction", "bound", "compute", "none")
BANDWIDTH_RATIO = 4800 / 3350  # gpus.toml: H200 over H100 SXM
LIBRARY = REPO / "bench/results/bounds-2026-12-03/h200-bounds.json"


def read_only(path: Path) -> sqlite3.Connection:
    """The store at ``path``, read only: a missing one is not created empty (sqlite3.connect would)."""
    if not path.is_file():
        raise SystemExit(f"h100_transfer_check.py: not found: {path}")
    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def h100_rows(path: Path, models: set[str] | None = None) -> dict[tuple, dict]:
    """The H100 rows with a timing pass, of ``models`` only where given, by (model, image size,
    precision, batch)."""
    conn = read_only(path)
    rows = conn.execute("SELECT * FROM results WHERE busy_ms IS NOT NULL ORDER BY id").fetchall()
    return {(r["model"], r["img_height"], r["precision"], r["batch_size"]): dict(r) for r in rows
            if models is None or r["model"] in models}


def h200_rows(path: Path, keys) -> dict[tuple, dict]:
    """The newest H200 row of each key (what visprof predict reads at the row's own batch)."""
    conn = read_only(path)
    found = {}
    for model, img, precision, batch in keys:
        row = conn.execute("SELECT * FROM results WHERE model=? AND img_height=? AND precision=? AND batch_size=? "
                           "AND busy_ms IS NOT NULL ORDER BY id DESC LIMIT 1", (model, img, precision, batch)).fetchone()
        if row is not None:
            found[(model, img, precision, batch)] = dict(row)
    return found


def predicted_busy(h200_store: Path, excess: str, out: Path) -> dict[tuple, float]:
    """visprof predict's GPU busy time per iteration on the H100, per (model, image size)."""
    path = out / f"predict-{excess}.csv"
    subprocess.run([sys.executable, "-m", "visprof", "predict", "--from", str(h200_store), "--to", "h100-sxm",
                    "--excess", excess, "--csv", str(path)], check=True, stdout=subprocess.DEVNULL)
    with path.open() as f:
        rows = {(r["model"], int(r["img_size"]), r["precision"], int(r["batch_size"])): float(r["busy_ms"])
                for r in csv.DictReader(f) if r["busy_ms"]}
    path.unlink()
    return rows


def score(predicted: list[float], measured: list[float]) -> tuple[float | None, float]:
    rho = spearman(predicted, measured) if len(set(predicted)) > 1 else None
    error = statistics.median(abs(p / m - 1) for p, m in zip(predicted, measured))
    return rho, error


def grouped_times(path: Path, ids: list[int], table: str, key: str) -> dict[str, float]:
    conn = read_only(path)
    marks = ",".join("?" * len(ids))
    totals = defaultdict(float)
    for name, ms in conn.execute(f"SELECT {key}, time_ms FROM {table} WHERE result_id IN ({marks})", ids):
        totals[name] += ms or 0.0
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h100", type=Path, required=True, help="the H100 sweep store")
    parser.add_argument("--h200", type=Path, required=True, help="the consolidated H200 store (uncompressed)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the per-model CSV")
    parser.add_argument("--models", type=Path, help="score only these models (a sweep model list)")
    args = parser.parse_args()

    models = None
    if args.models is not None:
        try:
            with command_line():  # the reader names the sweep's flag, --model-list; this script's is --models
                models = {entry.split("@")[0] for entry in read_model_list(args.models)}  # a row's size is its own
        except BadInputError as exc:
            raise SystemExit(f"h100_transfer_check.py: --models: {str(exc).removeprefix('--model-list: ')}") from None
    slow = h100_rows(args.h100, models)
    fast = h200_rows(args.h200, slow)
    args.out.mkdir(parents=True, exist_ok=True)  # once the inputs are read: a refused run leaves no folder
    keys = [k for k in slow if k in fast]
    print(f"{len(slow)} H100 rows, {len(keys)} with an H200 row of the same model, image size, precision and batch")
    measured = [slow[k]["busy_ms"] / fast[k]["busy_ms"] for k in keys]
    latency = [slow[k]["latency_median_ms"] / fast[k]["latency_median_ms"] for k in keys]
    kernel = [slow[k]["kernel_ms"] / fast[k]["kernel_ms"] for k in keys]
    q = statistics.quantiles(measured, n=10)
    print(f"measured H100/H200 GPU busy time: median x{statistics.median(measured):.3f}, 10-90% x{q[0]:.3f}-x{q[-1]:.3f}, "
          f"range x{min(measured):.3f}-x{max(measured):.3f}; kernel time median x{statistics.median(kernel):.3f}; "
          f"latency median x{statistics.median(latency):.3f} (Spearman latency vs busy "
          f"{spearman(latency, measured):.3f})")
    clocks = sorted({(r["sm_clock_mhz_median"], r["mem_clock_mhz_median"]) for r in slow.values()})
    print(f"H100 clocks (SM, memory MHz, medians per row): {clocks[:4]}{' ...' if len(clocks) > 4 else ''}")

    predictions = {e: predicted_busy(args.h200, e, args.out) for e in EXCESS}
    print(f"\n{'predictor':<34}{'n':>5}{'Spearman':>10}{'median err':>12}{'median ratio':>14}")
    per_model = {k: {"measured": m} for k, m in zip(keys, measured)}
    for excess, busy in predictions.items():
        have = [k for k in keys if k in busy]
        ratio = [busy[k] / fast[k]["busy_ms"] for k in have]
        rho, err = score(ratio, [per_model[k]["measured"] for k in have])
        for k, r in zip(have, ratio):
            per_model[k][excess] = r
        print(f"{'predict --excess ' + excess:<34}{len(have):>5}{rho:>10.3f}{err:>11.1%}{statistics.median(ratio):>13.3f}")
    constants = {"no change (x1.0)": 1.0, "fleet median (oracle constant)": statistics.median(measured),
                 f"bandwidth ratio (x{BANDWIDTH_RATIO:.3f})": BANDWIDTH_RATIO}
    for name, value in constants.items():
        _, err = score([value] * len(measured), measured)
        print(f"{name:<34}{len(measured):>5}{'-':>10}{err:>11.1%}{value:>13.3f}")

    ids_fast = [fast[k]["id"] for k in keys]
    ids_slow = [slow[k]["id"] for k in keys]
    for title, table, key in (("category/sub-category", "result_categories", "category || '/' || subcategory"),
                              ("kernel family", "result_kernel_families", "family")):
        t_fast = grouped_times(args.h200, ids_fast, table, key)
        t_slow = grouped_times(args.h100, ids_slow, table, key)
        total = sum(t_fast.values())
        library = library_dram(LIBRARY) if table == "result_kernel_families" else {}
        ratios, drams = [], []
        print(f"\nper {title} with >= 1% of the H200 kernel time (summed over the {len(keys)} models):")
        print(f"  {'name':<76}{'H200 share':>11}{'H100/H200':>11}{'  library DRAM %' if library else ''}")
        for name, ms in sorted(t_fast.items(), key=lambda kv: -kv[1]):
            if ms < 0.01 * total or name not in t_slow:
                continue
            extra = f"{library[name]:>16.1f}" if name in library else ("" if not library else f"{'-':>16}")
            print(f"  {name[:75]:<76}{ms / total:>10.1%}{t_slow[name] / ms:>11.3f}{extra}")
            if name in library:
                ratios.append(t_slow[name] / ms)
                drams.append(library[name])
        if len(ratios) > 2:
            print(f"  Spearman of the library's DRAM % and the H100/H200 ratio over these {len(ratios)} families: "
                  f"{spearman(drams, ratios):.3f}")

    ranked = sorted(zip(measured, keys))
    for label, part in (("smallest", ranked[:10]), ("largest", ranked[-10:][::-1])):
        print(f"\nthe 10 {label} measured slow-downs (GPU busy time), with predict's clock and fraction:")
        for m, k in part:
            row = per_model[k]
            print(f"  {k[0]:<36}{k[1]:>5}px  measured x{m:.3f}  clock x{row.get('clock', float('nan')):.3f}  "
                  f"fraction x{row.get('fraction', float('nan')):.3f}")

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n")  # csv's own line ends, as before
    writer.writerow(["model", "img_size", "precision", "batch", "h200_busy_ms", "h100_busy_ms", "measured",
                     "latency_ratio", *EXCESS])
    for k, lat in zip(keys, latency):
        row = per_model[k]
        writer.writerow([*k, f"{fast[k]['busy_ms']:.4f}", f"{slow[k]['busy_ms']:.4f}", f"{row['measured']:.4f}",
                         f"{lat:.4f}", *(f"{row[e]:.4f}" if e in row else "" for e in EXCESS)])
    atomic_write_text(args.out / "per-model.csv", text.getvalue())  # whole or not at all
    return 0


def library_dram(path: Path) -> dict[str, float]:
    """The bound library's measured DRAM throughput (% of peak, H200) per kernel family, over all the
    categories it has the family in, weighted by their kernel time. Not per (family, category): a
    profile names a family's category by where most of its time went, and for a kernel shared by two
    kinds of op that flips between runs (focalnet_xlarge_fl3's vectorized_elementwise_kernel: activation
    on the H200, elementwise on the H100, the same 615 calls)."""
    weighted, weights = defaultdict(float), defaultdict(float)
    for e in json.loads(path.read_text())["entries"]:
        if e.get("dram_pct") is not None and e.get("weight_ns"):
            weighted[e["family"]] += e["dram_pct"] * e["weight_ns"]
            weights[e["family"]] += e["weight_ns"]
    return {family: weighted[family] / weights[family] for family in weights}


if __name__ == "__main__":
    sys.exit(main())
