"""bench/README.md names every script and model list in bench/: a script added without a line there
is one nobody can tell from the 60 others, and a line naming a file that is gone misleads."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
INDEXED = {".py", ".sh", ".txt", ".json"}


def test_every_bench_file_is_named_in_the_index():
    index = (BENCH / "README.md").read_text()
    files = [p.name for p in BENCH.iterdir() if p.is_file() and p.suffix in INDEXED]
    assert len(files) > 40  # the folder was read
    missing = sorted(name for name in files if f"`{name}`" not in index)
    assert not missing, f"bench/README.md does not name {missing}"


def test_the_index_names_no_file_that_is_gone():
    index = (BENCH / "README.md").read_text()
    named = set(re.findall(r"`([\w.]+\.(?:py|sh|txt|json))`", index))
    assert named  # the pattern still matches how the index writes names
    gone = sorted(name for name in named if not (BENCH / name).exists())
    assert not gone, f"bench/README.md names {gone}, which bench/ does not have"


def test_every_result_record_is_named_in_the_results_index():
    index = (BENCH / "results" / "README.md").read_text()
    # a record's name, or its stem for the pairs written `NAME.{json,txt}`
    entries = [p.name for p in (BENCH / "results").iterdir() if p.name != "README.md"]
    assert len(entries) > 40
    missing = sorted(name for name in entries if name not in index and name.rsplit(".", 1)[0] not in index)
    assert not missing, f"bench/results/README.md does not name {missing}"
