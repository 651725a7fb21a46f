"""bench/bound_library.py pools an ncu_roofline.py recording with `visprof ncu --json` results."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from visprof.analysis.measured_bounds import BoundLibrary
from visprof.result import CounterSummary, KernelCounters, ProfileResult

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
sys.path.insert(0, str(REPO / "bench"))
import bound_library  # noqa: E402


def test_a_recording_and_a_visprof_ncu_result_make_one_library(tmp_path):
    recorded = json.loads((DATA / "ncu" / "h200-vit_base_patch16_224.kernel-counters.json").read_text())
    rows = tmp_path / "ncu-roofline.json"
    rows.write_text(json.dumps({"rows": [{k: recorded[k] for k in ("model", "gpu", "tool", "kernels")}]}))
    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    result.model.name = "deit_base_patch16_224"  # another model's run of the same kernels
    kernels = [KernelCounters(**k) for k in recorded["kernels"]]
    result.counters = CounterSummary(tool=recorded["tool"], metrics={}, nvtx_filters=[], clock_control="none",
                                     samples_per_kind=2, kernels_profiled=len(kernels), kernels=kernels)
    ncu_json = tmp_path / "ncu-deit.json"
    result.to_json(ncu_json)
    assert bound_library.main([str(rows), str(ncu_json), "-o", str(tmp_path / "lib.json")]) == 0
    library = BoundLibrary.load(tmp_path / "lib.json")
    assert library.gpu == "NVIDIA H200" and library.entries
    assert all(entry.models == ["deit_base_patch16_224", "vit_base_patch16_224"] for entry in library.entries)


def test_an_output_that_is_an_input_is_refused_and_left_as_it_was(tmp_path, capsys):
    rows = tmp_path / "ncu-roofline.json"
    rows.write_text('{"rows": []}')
    assert bound_library.main([str(rows), "-o", str(rows)]) == 2
    assert rows.read_text() == '{"rows": []}'
    assert "would overwrite that input" in capsys.readouterr().err
