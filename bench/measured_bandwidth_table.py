"""The share of each roofline group key's time that scales with DRAM bandwidth, measured from
H100 / H200 profile pairs (bench/results/measured-bandwidth-2026-12-05/).

A spec-only model that scaled these shares by the bandwidth ratio (`predict --excess measured`) was
rejected by its prereg there: the table is a measurement, read by nothing in visprof.

    python bench/measured_bandwidth_table.py --h100 /tmp/h100.db --h200 /tmp/profiles.db -o TABLE.json

An H100 SXM is the H200's chip (same SMs, clocks and compute peaks) with 3.35 instead of 4.8 TB/s.
Per key (category, sub-category, aten op), over every model profiled on both at the same batch,
image size and precision: s = summed H100 group time / summed H200 group time, and
b = (s - 1) / (4800 / 3350 - 1), clipped to [0, 1]. Groups pair within a model by key, FLOPs,
bytes and tensor-core precision; a group without a partner is left out. Only keys paired in at
least MIN_MODELS models get a b. The H200 row of each pair is the one h100_transfer_check.py
scores (newest at the key).
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import zlib
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from h100_transfer_check import BANDWIDTH_RATIO, h100_rows, h200_rows, read_only  # noqa: E402
from visprof.base.outputs import atomic_write_text  # noqa: E402

MIN_MODELS = 10  # fixed by the prereg, not tuned
FORMAT = "visprof.measured-bandwidth/1"


def groups_by_identity(store: sqlite3.Connection, result_id: int) -> dict[tuple, dict]:
    """A result's roofline groups by (category, sub-category, op, FLOPs, bytes, tensor core)."""
    blob = store.execute("SELECT result_json FROM results WHERE id=?", (result_id,)).fetchone()[0]
    doc = json.loads(zlib.decompress(blob))
    groups = ((doc.get("roofline") or {}).get("groups")) or []
    return {(g["category"], g.get("subcategory"), g["op"], g["flops"], g["bytes"], g.get("tensor_core")): g
            for g in groups}


def share_table(h100: Path, h200: Path) -> dict:
    """{"format", "source", "bandwidth_ratio", "min_models", "keys": [{category, subcategory, op,
    models, h200_ms, h100_ms, ratio, bandwidth_share}]} over every paired result."""
    slow = h100_rows(h100)
    fast = h200_rows(h200, slow.keys())
    totals: dict[tuple, list] = defaultdict(lambda: [0.0, 0.0, set()])
    h200_conn, h100_conn = read_only(h200), read_only(h100)  # one connection each for every result
    for key, fast_row in fast.items():
        on_h200 = groups_by_identity(h200_conn, fast_row["id"])
        on_h100 = groups_by_identity(h100_conn, slow[key]["id"])
        for ident, group in on_h200.items():
            partner = on_h100.get(ident)
            if partner is None:
                continue
            entry = totals[ident[:3]]
            entry[0] += group["time_ms"]
            entry[1] += partner["time_ms"]
            entry[2].add(key[0])
    keys = []
    for (category, subcategory, op), (h200_ms, h100_ms, models) in sorted(totals.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        if len(models) < MIN_MODELS or h200_ms <= 0:
            continue
        ratio = h100_ms / h200_ms
        keys.append({"category": category, "subcategory": subcategory, "op": op, "models": len(models),
                     "h200_ms": round(h200_ms, 4), "h100_ms": round(h100_ms, 4), "ratio": round(ratio, 4),
                     "bandwidth_share": round(min(max((ratio - 1) / (BANDWIDTH_RATIO - 1), 0.0), 1.0), 4)})
    return {"format": FORMAT, "pairs": len(fast), "bandwidth_ratio": BANDWIDTH_RATIO, "min_models": MIN_MODELS,
            "source": "H100 SXM / H200 roofline group times, bench/measured_bandwidth_table.py", "keys": keys}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h100", type=Path, required=True, help="the consolidated H100 store (uncompressed)")
    parser.add_argument("--h200", type=Path, required=True, help="the consolidated H200 store (uncompressed)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the table (JSON)")
    args = parser.parse_args()
    for path in (args.h100, args.h200):
        if not path.is_file():
            print(f"measured_bandwidth_table.py: not found: {path}", file=sys.stderr)
            return 2
        if args.output.resolve() == path.resolve():
            print(f"measured_bandwidth_table.py: -o {args.output} is an input store; it is not overwritten", file=sys.stderr)
            return 2
    table = share_table(args.h100, args.h200)
    atomic_write_text(args.output, json.dumps(table, indent=1) + "\n")
    covered = sum(k["h200_ms"] for k in table["keys"])
    print(f"{len(table['keys'])} keys with >= {MIN_MODELS} models, over {table['pairs']} H100/H200 pairs; "
          f"{covered:.0f} ms of paired H200 group time in them")
    for k in sorted(table["keys"], key=lambda k: -k["h200_ms"])[:25]:
        print(f"  {k['category']:<14} {str(k['subcategory'] or ''):<12} {k['op'][:44]:<44} {k['models']:>4} models  "
              f"x{k['ratio']:.3f}  b {k['bandwidth_share']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
