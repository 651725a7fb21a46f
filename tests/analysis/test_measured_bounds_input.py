"""Bound libraries and ncu results that are not what they should be: one line that names the file
and what is wrong with it. A damaged library used to be taken as it was (and print "weird 99%"),
and one ncu result given twice was pooled twice."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from cli_process import refused, visprof
from test_measured_bounds import recorded_vit
from visprof.analysis.measured_bounds import BoundLibrary, build_library, counter_set
from visprof.base.errors import BadInputError
from visprof.result import CounterSummary, ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"
PROFILE = DATA / "h200-result-vit_base_patch16_224.json"


def write_library(path: Path, change=lambda doc: None) -> Path:
    """The library of the recorded ViT-B/16 counters, written after ``change`` edited its document."""
    doc = build_library([recorded_vit()]).to_dict()
    change(doc)
    # JSON has no infinity; a number too large for a double reads as one
    path.write_text(json.dumps(doc, indent=1).replace('"1e999"', "1e999"))
    return path


DAMAGED = {  # what was done to the library: (the change, what the error says after the file's name)
    "unknown bound": (lambda d: d["entries"][0].update(bound="weird"),
                      ": entries[0].bound: expected one of compute, memory, latency or null, got a string ('weird')"),
    "text for a percentage": (lambda d: d["entries"][0].update(sm_pct="high"),
                              ": entries[0].sm_pct: expected a number >= 0 or null, got a string ('high')"),
    "no weight": (lambda d: d["entries"][0].update(weight_ns=None),
                  ": entries[0].weight_ns: expected a number >= 0, got null"),
    "infinite": (lambda d: d["entries"][1].update(dram_pct="1e999"),
                 ": entries[1].dram_pct: expected a number >= 0 or null, got a number (inf)"),
    "a range of one": (lambda d: d["entries"][1].update(dram_pct_range=[3.0]),
                       ": entries[1].dram_pct_range: expected [lowest, highest] or null, got a list of 1"),
    "no family": (lambda d: d["entries"][0].pop("family"), ": entries[0].family: missing (a kernel family name)"),
    "a number for an entry": (lambda d: d["entries"].insert(0, 5),
                              ": entries[0]: expected an object, got an integer (5)"),
    "no GPU": (lambda d: d.update(gpu=None), ": gpu: expected the GPU's name, got null"),
    "no entries": (lambda d: d.pop("entries"), ": entries: missing (a list of kernel families)"),
    "empty entries": (lambda d: d.update(entries=[]),
                      " has no entries: nothing measured to look up (visprof bounds build NCU_RESULT ... -o LIBRARY "
                      "makes one from visprof ncu results)"),
    "entries as text": (lambda d: d.update(entries="abc"),
                        ": entries: expected a list of kernel families, got a string ('abc')"),
    "another format": (lambda d: d.update(format="visprof.bounds/9"),
                       " is not a visprof bound library (its format is 'visprof.bounds/9', this visprof reads "
                       "'visprof.bounds/1')"),
    "no format": (lambda d: d.pop("format"),
                  " is not a visprof bound library (its format is null, this visprof reads 'visprof.bounds/1')"),
}


@pytest.mark.parametrize("damage", DAMAGED)
def test_a_damaged_library_is_refused_naming_the_file_and_the_first_bad_field(tmp_path, damage):
    change, says = DAMAGED[damage]
    path = write_library(tmp_path / "lib.json", change)
    with pytest.raises(BadInputError, match=f"^{re.escape(f'bound library {path}{says}')}$"):
        BoundLibrary.load(path)


def test_a_family_listed_twice_is_refused_and_unknown_fields_are_left_to_newer_writers(tmp_path):
    path = write_library(tmp_path / "lib.json", lambda d: d["entries"].append(d["entries"][0]))
    entries = json.loads(path.read_text())["entries"]
    says = (f"bound library {path}: entries[{len(entries) - 1}]: {entries[0]['family']} ({entries[0]['category']}) "
            "is listed twice (also entries[0])")
    with pytest.raises(BadInputError, match=f"^{re.escape(says)}$"):
        BoundLibrary.load(path)
    newer = write_library(tmp_path / "newer.json", lambda d: d["entries"][0].update(note="from a newer visprof"))
    assert BoundLibrary.load(newer) == build_library([recorded_vit()])


def test_coverage_refuses_a_damaged_library_in_one_line_and_prints_nothing(tmp_path):
    write_library(tmp_path / "lib.json", DAMAGED["unknown bound"][0])
    (tmp_path / "vit.json").write_bytes(PROFILE.read_bytes())
    told = visprof(tmp_path, "bounds", "coverage", "lib.json", "vit.json")
    assert refused(told) == f"visprof: error: bound library lib.json{DAMAGED['unknown bound'][1]}"
    assert told.stdout == ""


def test_a_profile_given_as_the_library_is_named_and_the_order_told(tmp_path):
    write_library(tmp_path / "lib.json")
    (tmp_path / "vit.json").write_bytes(PROFILE.read_bytes())
    line = refused(visprof(tmp_path, "bounds", "coverage", "vit.json", "lib.json"))
    assert line == ("visprof: error: bound library vit.json is a visprof profile result, not a visprof bound library; "
                    "the library comes first: visprof bounds coverage LIBRARY SOURCE ...")


@pytest.mark.parametrize("again", ["vit.json", "./vit.json", "link.json", "copy.json", "copy.json.gz"])
def test_one_ncu_result_given_twice_is_refused_not_pooled_twice(tmp_path, again):
    (tmp_path / "vit.json").write_bytes(PROFILE.read_bytes())
    (tmp_path / "link.json").symlink_to("vit.json")
    (tmp_path / "copy.json").write_bytes(PROFILE.read_bytes())
    (tmp_path / "copy.json.gz").write_bytes(gzip.compress(PROFILE.read_bytes()))
    line = refused(visprof(tmp_path, "bounds", "build", "vit.json", again, "-o", "lib.json"))
    how = "is given twice" if Path(again) == Path("vit.json") else "is the same result as vit.json"
    assert line == f"visprof: error: NCU_RESULT {Path(again)} {how}: its kernels would count twice in the library"
    assert not (tmp_path / "lib.json").exists()


def test_two_different_results_are_not_taken_for_one(tmp_path):
    (tmp_path / "vit.json").write_bytes(PROFILE.read_bytes())
    other = json.loads(PROFILE.read_text())
    other["model"]["name"] = "vit_other"
    (tmp_path / "other.json").write_text(json.dumps(other))
    # past the check, to the results themselves (these have no counters)
    refused(visprof(tmp_path, "bounds", "build", "vit.json", "other.json", "-o", "lib.json"),
            "vit_base_patch16_224: no Nsight Compute counters")


def test_an_ncu_result_without_a_gpu_name_makes_no_library():
    """The library it would make names no GPU, which loading it refuses."""
    result = ProfileResult.load(PROFILE)
    result.counters = CounterSummary(tool="ncu 2025.3.1.0", metrics={}, nvtx_filters=[], clock_control="none",
                                     samples_per_kind=2, kernels_profiled=2, kernels=recorded_vit().kernels)
    result.gpu = None
    with pytest.raises(BadInputError, match="^vit_base_patch16_224: the result names no GPU, and a bound library is "
                                            "of one GPU$"):
        counter_set(result)
