"""`visprof bounds build` and `coverage` as a user runs them: real files, real processes."""
from __future__ import annotations

import json
from pathlib import Path

from cli_process import refused, visprof
from visprof.result import CounterSummary, KernelCounters, KernelFamilyRow, ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"


def ncu_result(tmp_path: Path, depthwise_blocks: float | None = None) -> Path:
    """The recorded H200 ViT-B/16 profile with the counters `visprof ncu` measured on it; its
    depthwise kernels (which ncu did not measure) launched with ``depthwise_blocks`` blocks."""
    recorded = json.loads((DATA / "ncu" / "h200-vit_base_patch16_224.kernel-counters.json").read_text())
    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    kernels = [KernelCounters(**k) for k in recorded["kernels"]]
    result.counters = CounterSummary(tool=recorded["tool"], metrics={"duration": "gpu__time_duration.sum"},
                                     nvtx_filters=[], clock_control="none", samples_per_kind=2,
                                     kernels_profiled=sum(k.launches for k in kernels), kernels=kernels)
    result.kernel_families = [KernelFamilyRow("nvjet_sm90_tst", "linear", None, 49.0, 3.0, 0.75),
                              KernelFamilyRow("conv_depthwise2d_forward_kernel", "convolution", "depthwise", 4.0, 1.0, 0.25,
                                              blocks=depthwise_blocks)]
    path = tmp_path / "vit-ncu.json"
    result.to_json(path)
    return path


def test_a_library_is_built_and_tells_each_profiles_measured_share(tmp_path):
    result = ncu_result(tmp_path)
    built = visprof(tmp_path, "bounds", "build", result.name, "-o", "lib.json")
    assert built.returncode == 0, built.stderr
    library = json.loads((tmp_path / "lib.json").read_text())
    assert library["format"] == "visprof.bounds/1" and library["gpu"] == "NVIDIA H200"
    assert built.stdout.startswith(f"lib.json: {len(library['entries'])} kernel families x categories on NVIDIA H200")
    told = visprof(tmp_path, "bounds", "coverage", "lib.json", result.name, "--json", "coverage.json")
    assert told.returncode == 0, told.stderr
    assert "measured bounds: 75.0% of all kernel time" in told.stdout
    # the profile by its batch and precision too: one model's runs at two batches had read alike
    assert ("vit_base_patch16_224 @224 b64 bf16: bounds: 75% of kernel time on bounds measured by Nsight Compute "
            "(compute 75%), 25% estimated from tensor sizes") in told.stdout
    assert "25.0%  conv_depthwise2d_forward_kernel (convolution)" in told.stdout
    doc = json.loads((tmp_path / "coverage.json").read_text())
    assert doc["profiles"][0]["measured_ms"] == 3.0 and doc["profiles"][0]["by_bound_ms"] == {"compute": 3.0}
    assert (doc["profiles"][0]["batch_size"], doc["profiles"][0]["precision"]) == (64, "bf16")


def test_time_in_launches_too_small_for_the_gpu_is_told_apart_from_the_estimate(tmp_path):
    result = ncu_result(tmp_path, depthwise_blocks=64.0)  # of the H200's 132 SMs
    assert visprof(tmp_path, "bounds", "build", result.name, "-o", "lib.json").returncode == 0
    told = visprof(tmp_path, "bounds", "coverage", "lib.json", result.name, "--json", "coverage.json")
    assert told.returncode == 0, told.stderr
    assert ("latency-bound by launch size (fewer thread blocks than the GPU has SMs), not measured: 25.0% of all "
            "kernel time; estimated from tensor sizes: 0.0%") in told.stdout
    assert ("bounds: 75% of kernel time on bounds measured by Nsight Compute (compute 75%), 25% latency-bound by "
            "launch size (fewer thread blocks than the GPU's 132 SMs), 0% estimated from tensor sizes") in told.stdout
    assert "conv_depthwise2d_forward_kernel" not in told.stdout  # its bound is known: ncu need not measure it
    assert json.loads((tmp_path / "coverage.json").read_text())["profiles"][0]["under_filled_ms"] == 1.0


def test_a_csv_beside_the_profiles_is_passed_over_unread(tmp_path):
    result = ncu_result(tmp_path)
    assert visprof(tmp_path, "bounds", "build", result.name, "-o", "lib.json").returncode == 0
    (tmp_path / "published.csv").write_text("model,infer_img_size,infer_samples_per_sec\nresnet50,224,100\n")
    told = visprof(tmp_path, "bounds", "coverage", "lib.json", "published.csv", result.name)
    assert told.returncode == 0, told.stderr
    assert "note: published.csv not read: bounds coverage reads profiles, and a CSV holds none" in told.stderr
    assert "measured bounds: 75.0% of all kernel time" in told.stdout


def test_the_library_never_overwrites_what_it_was_given(tmp_path):
    result = ncu_result(tmp_path)
    before = result.read_bytes()
    line = refused(visprof(tmp_path, "bounds", "build", result.name, "-o", result.name), result.name)
    assert "input" in line and result.read_bytes() == before


def test_a_profile_without_counters_is_one_line(tmp_path):
    plain = tmp_path / "vit.json"
    plain.write_bytes((DATA / "h200-result-vit_base_patch16_224.json").read_bytes())
    refused(visprof(tmp_path, "bounds", "build", plain.name, "-o", "lib.json"), "no Nsight Compute counters")
    assert not (tmp_path / "lib.json").exists()


def test_coverage_of_inputs_without_a_profile_is_one_line(tmp_path):
    """Published throughputs only (a timm CSV, a store made by import-timm): refused as predict and
    calibrate refuse them, not "no profile to tell" and exit 0."""
    csv = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
    assert visprof(tmp_path, "bounds", "build", ncu_result(tmp_path).name, "-o", "lib.json").returncode == 0
    assert visprof(tmp_path, "import-timm", csv, "--store", "refonly.db").returncode == 0
    for source, held in ((csv, f"{csv} is a timm benchmark CSV: published throughputs, not profiles"),
                         ("refonly.db", "60 reference rows")):
        line = refused(visprof(tmp_path, "bounds", "coverage", "lib.json", source),
                       "no profile results in the inputs (bounds coverage reads visprof profiles")
        assert held in line
    predicted = refused(visprof(tmp_path, "predict", "--from", "refonly.db", "--to", "h200"))
    assert predicted.startswith("visprof: error: no profile results in the inputs (")


def test_coverage_accounts_for_every_profile_read_repeats_included(tmp_path):
    # a profile measured twice counts once (the latest); the older one had vanished from the count
    result = ncu_result(tmp_path)
    assert visprof(tmp_path, "bounds", "build", result.name, "-o", "lib.json").returncode == 0
    again = ProfileResult.load(result)
    again.created_at = "2099-01-01T00:00:00+00:00"
    again.to_json(tmp_path / "again.json")
    told = visprof(tmp_path, "bounds", "coverage", "lib.json", result.name, "again.json")
    assert told.returncode == 0, told.stderr
    assert ("1 profiles on NVIDIA H200 with kernel families (0 on other GPUs or the CPU, 0 without kernel families "
            "and 1 older repeats left out)") in told.stderr


def test_coverage_of_profiles_on_another_gpu_is_one_line(tmp_path):
    assert visprof(tmp_path, "bounds", "build", ncu_result(tmp_path).name, "-o", "lib.json").returncode == 0
    other = ProfileResult.load(DATA / "h100-result-vit_base_patch16_224.json")
    other.to_json(tmp_path / "h100.json")
    line = refused(visprof(tmp_path, "bounds", "coverage", "lib.json", "h100.json"),
                   "no profile in the inputs ran on NVIDIA H200, the library's GPU, with kernel families (1 on other GPUs")
    assert "; they ran on NVIDIA H100 80GB HBM3 (1))" in line  # what they ran on, not only where they did not


def test_coverage_names_what_it_could_not_read_or_split_and_a_swapped_or_raw_input(tmp_path):
    """A truncated file in a source folder was left out without a word (predict names it); profiles whose
    kernel-family rows keep no split by category gave a shared family its largest category's bound without
    a word; a store given as LIBRARY, and ncu's raw CSV given for its --json, had misleading messages."""
    import sqlite3

    result = ncu_result(tmp_path)
    assert visprof(tmp_path, "bounds", "build", result.name, "-o", "lib.json").returncode == 0
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "vit.json").write_bytes(result.read_bytes())
    (folder / "cut.json").write_bytes(result.read_bytes()[:2000])
    told = visprof(tmp_path, "bounds", "coverage", "lib.json", "runs")
    assert told.returncode == 0, told.stderr
    assert "note: skipped 1 file(s) of the input folders: " in told.stderr and "cut.json" in told.stderr
    # nvjet's GEMMs were measured as attention projections and as linear; the profile's row keeps one category
    library = json.loads((tmp_path / "lib.json").read_text())
    assert len({e["category"] for e in library["entries"] if e["family"] == "nvjet_sm90_tst"}) == 2
    assert "note: 1 of the 1 profiles keep one category per kernel-family row" in told.stderr
    sqlite3.connect(tmp_path / "s.db").execute("CREATE TABLE t (x)").connection.close()
    refused(visprof(tmp_path, "bounds", "coverage", "s.db", result.name),
            "bound library s.db is a visprof results store, not a bound library; the library comes first")
    raw = DATA / "ncu" / "deit_small_attention.ncu-raw.csv"
    for argv in (["build", str(raw), "-o", "x.json"], ["coverage", "lib.json", str(raw)]):
        refused(visprof(tmp_path, "bounds", *argv),
                "is Nsight Compute's raw CSV (visprof ncu --csv); give the result visprof ncu wrote with --json")
