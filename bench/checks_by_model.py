"""Self-checks per model of a sweep list, from a results store: which pass all, which do not and why.

    xz -dc bench/results/h200-profiles/profiles.db.xz > /tmp/profiles.db
    python bench/checks_by_model.py /tmp/profiles.db bench/sweep_models_optypes557.txt \
        --since 2026-12-03T13:00 > bench/results/h200-optypes557-2026-12-03/checks-by-model.txt

For each model of the list (in list order) that has a result made at or after ``--since``, its
latest such result: image size, checks passed of all, the failed checks with value, reference and
detail, and the sizes of its op-type and kernel-family tables. Models of the list without such a
result are counted, not listed. Record: bench/results/h200-optypes557-2026-12-03/README.md.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visprof.store.result_store import open_store


def latest_results(store: Path, since: str) -> dict[str, dict]:
    """Each model's latest result document made at or after ``since`` (ISO time; "" for all)."""
    with open_store(store) as results:
        return {doc["model"]["name"]: doc for doc in results.result_documents() if doc.get("created_at", "") >= since}


def line(model: str, result: dict) -> list[str]:
    checks = result.get("checks", [])
    failed = [c for c in checks if not c.get("passed")]
    size = result.get("model", {}).get("img_size") or result.get("config", {}).get("img_size")
    size = f"{size[-1]}px" if isinstance(size, list) else f"{size}px"
    out = [f"{model:46s} {size:>6s}  {len(checks) - len(failed)}/{len(checks)} checks pass  "
           f"op types {len(result.get('op_types') or [])}, kernel families {len(result.get('kernel_families') or [])}"]
    for check in failed:
        out.append(f"    FAIL {check['name']}: {check['value']:.4g} vs {check['reference']:.4g} {check.get('unit', '')}"
                   f" ({check.get('detail', '')})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("models", type=Path, help="the sweep's model list, one name a line ('#' comments)")
    parser.add_argument("--since", default="", help="only results made at or after this ISO time")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.read_text().splitlines() if n.strip() and not n.startswith("#")]
    latest = latest_results(args.store, args.since)
    measured = [n for n in names if n in latest]
    passing = sum(all(c.get("passed") for c in latest[n].get("checks", [])) for n in measured)
    print(f"{len(measured)} models of the list's {len(names)} have a result; {passing} pass every self-check")
    for name in measured:
        print("\n".join(line(name, latest[name])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
