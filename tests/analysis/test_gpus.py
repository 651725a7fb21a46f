"""The GPU spec table: built-in rows, lookup, user files and their validation, the NVML check."""
from __future__ import annotations

import pytest

from visprof.analysis.gpus import GpuTable, device_warnings, gpu_table, normalize_name, read_specs
from visprof.base.errors import BadInputError

REQUIRED = {
    "NVIDIA H200": "h200",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA A100-SXM4-40GB": "a100-sxm4-40gb",
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA L40S": "l40s",
    "NVIDIA GeForce RTX 3090": "rtx3090",
    "NVIDIA GeForce RTX 4090": "rtx4090",
    "NVIDIA GeForce RTX 5090": "rtx5090",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "rtx-pro-6000-blackwell",
}

USER_ROW = """
[[gpus]]
id = "{id}"
name = "Test GPU"
match = ['Test GPU$']
sms = 10
boost_clock_mhz = 1000
memory_gb = 8
memory_bandwidth_gbs = 100
l2_mb = 2
fp32_tflops = 5
tensor_tflops = {{ fp16 = 40, bf16 = 40 }}
"""


def test_every_required_gpu_matches_its_nvml_name():
    table = gpu_table()
    for device_name, gpu_id in REQUIRED.items():
        assert table.for_device(device_name).id == gpu_id, device_name


def test_names_that_must_not_match():
    table = gpu_table()
    for name in ("NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090 D", "NVIDIA A10G", "NVIDIA T400", "NVIDIA GB200",
                 "Tesla V100S-PCIE-32GB"):
        assert table.for_device(name) is None, name


def test_built_in_rows_have_a_source_for_every_figure_and_sane_values():
    for spec in read_specs(gpu_table().specs["h200"].origin, require_sources=True):
        # Volta and Turing (compute capability < 8) have fp16 tensor cores only; from Ampere on, bf16 and tf32 too
        older = float(spec.compute_capability) < 8.0
        assert spec.tensor_peak("fp16") and (older or (spec.tensor_peak("bf16") and spec.tensor_peak("tf32")))
        assert not older or spec.tensor_peak("bf16") is None
        # dense tensor rates exceed FP32 ones; ridge points are tens to hundreds of FLOP/byte
        assert spec.tensor_peak("fp16") > spec.fp32_tflops
        ridge = spec.tensor_peak("fp16") * 1e12 / spec.bandwidth_bytes_per_s
        assert 30 < ridge < 600, spec.id
        assert all(spec.source[key] for key in ("tensor_tflops", "fp32_tflops", "memory_bandwidth_gbs", "sms", "l2_mb"))


def test_geforce_fp32_accumulate_rate_is_half_the_fp16_accumulate_rate():
    table = gpu_table()
    for gpu in ("rtx3090", "rtx4090", "rtx5090"):
        spec = table.get(gpu)
        assert spec.tensor_tflops["fp16"] == pytest.approx(spec.tensor_tflops["fp16_acc16"] / 2, rel=0.01)


def test_published_ratios_between_3090_and_4090():
    table = gpu_table()
    a, b = table.get("3090"), table.get("RTX 4090")
    assert b.tensor_peak("fp16") / a.tensor_peak("fp16") == pytest.approx(2.33, abs=0.01)
    assert b.memory_bandwidth_gbs / a.memory_bandwidth_gbs == pytest.approx(1.077, abs=0.001)


@pytest.mark.parametrize("name, gpu_id", [("h200", "h200"), ("H200", "h200"), ("NVIDIA GeForce RTX 4090", "rtx4090"),
                                          ("rtx 3090", "rtx3090"), ("4090", "rtx4090"), ("A100", "a100-sxm4-80gb"),
                                          ("H100 PCIe", "h100-pcie"), ("rtx-pro-6000", "rtx-pro-6000-blackwell")])
def test_lookup_by_id_alias_and_device_name(name, gpu_id):
    assert gpu_table().get(name).id == gpu_id


def test_unknown_gpu_is_one_clear_error_listing_known_ones():
    with pytest.raises(BadInputError, match=r"unknown GPU 'rtx9090'; known: h200, .*rtx4090"):
        gpu_table().get("rtx9090")
    assert normalize_name("NVIDIA GeForce RTX 4090") == "rtx4090"


def test_a_table_that_is_no_gpu_table_is_one_line_in_every_analysis(tmp_path):
    """table="gpus.toml" had failed deep inside compare (AttributeError: 'int' object has no attribute
    'name') and predict (AttributeError: 'str' object has no attribute 'get')."""
    from visprof.analysis import compare, predict, sources
    from visprof.analysis.gpus import table_or_default

    assert table_or_default(None).get("h200").id == "h200"
    table = GpuTable.default()
    assert table_or_default(table) is table
    refusal = r"^table must be a GpuTable \(or None\), not str; a spec file's rows are added with "
    for call in (lambda: sources.load([], table="gpus.toml"), lambda: compare.compare([], table="gpus.toml"),
                 lambda: predict.predict_result(None, "rtx4090", table="gpus.toml")):
        with pytest.raises(BadInputError, match=refusal):
            call()
    with pytest.raises(BadInputError, match=r"^table must be a GpuTable \(or None\), not dict$"):
        table_or_default({})
    with pytest.raises(BadInputError, match=r"^load takes a path or a list of paths, got None$"):
        sources.load(None)


def test_user_file_adds_and_replaces_rows(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(USER_ROW.format(id="test-gpu")
                    + USER_ROW.format(id="rtx4090").replace("Test GPU$", "Fake 4090$").replace('"Test GPU"', '"Fake 4090"'))
    table = gpu_table(path)
    assert table.get("test-gpu").tensor_peak("bf16") == 40
    assert table.for_device("Test GPU").id == "test-gpu"
    assert table.get("rtx4090").fp32_tflops == 5  # replaced
    assert table.get("test-gpu").source["sms"] == f"user file {path}"


def test_a_user_row_without_match_patterns_is_its_own_devices_row(tmp_path):
    """docs/hardware-sensitivity.md's own rows need no `match`: a profile made on such a GPU had found
    no row ("its GPU 'NVIDIA A40' has no row"), in predict and compare alike."""
    path = tmp_path / "mine.toml"
    path.write_text(USER_ROW.format(id="a40").replace("match = ['Test GPU$']\n", "").replace('"Test GPU"', '"NVIDIA A40"')
                    .replace("[[gpus]]", "[[gpus]]\naliases = ['A40']"))
    table = gpu_table(path)
    assert not table.get("a40").match
    assert table.for_device("NVIDIA A40").id == "a40" and table.for_device("nvidia-a40").id == "a40"
    assert table.for_device("NVIDIA A400") is None
    assert table.for_device("NVIDIA H100 80GB HBM3").id == "h100-sxm"  # the patterns first


def test_a_file_that_replaces_a_row_may_give_its_names_to_another_row(tmp_path):
    """The names of a row the same file replaces are free: moving an alias between rows is no clash."""
    path = tmp_path / "mine.toml"
    path.write_text(USER_ROW.format(id="rtx4090").replace('"Test GPU"', '"Plain 4090"')
                    + USER_ROW.format(id="fast-4090").replace("[[gpus]]", "[[gpus]]\naliases = ['4090']"))
    assert GpuTable.default().get("4090").id == "rtx4090"  # the built-in row's alias, which the file moves
    table = gpu_table(path)
    assert table.get("4090").id == "fast-4090" and table.get("rtx4090").name == "Plain 4090"


def test_environment_variable_extends_the_table(tmp_path, monkeypatch):
    path = tmp_path / "env.toml"
    path.write_text(USER_ROW.format(id="env-gpu"))
    monkeypatch.setenv("VISPROF_GPUS", str(path))
    assert gpu_table().get("env-gpu").sms == 10
    monkeypatch.setenv("VISPROF_GPUS", str(tmp_path / "nonexist.toml"))
    with pytest.raises(BadInputError) as caught:  # where the path came from is said
        gpu_table()
    assert str(caught.value).startswith("$VISPROF_GPUS: ") and "nonexist.toml" in str(caught.value)


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace("sms = 10\n", ""), r"missing 'sms' \(SMs\)"),
    (lambda s: s.replace("fp32_tflops = 5", "fp32_tflops = -5"), r"'fp32_tflops' must be a positive, finite number"),
    (lambda s: s.replace("fp32_tflops = 5", 'fp32_tflops = "fast"'), r"'fp32_tflops' must be a positive, finite number"),
    # TOML's inf: was accepted (nan was not), and every prediction onto the GPU took it
    (lambda s: s.replace("fp32_tflops = 5", "fp32_tflops = inf"), r"'fp32_tflops' must be a positive, finite number"),
    (lambda s: s.replace("fp32_tflops = 5", "fp32_tflops = nan"), r"'fp32_tflops' must be a positive, finite number"),
    # 0.5 SMs became 0, and predict and compare ended in a ZeroDivisionError; 84.7 became 84 without a word
    (lambda s: s.replace("sms = 10\n", "sms = 0.5\n"), r"'sms' must be a whole number of SMs, got 0.5"),
    (lambda s: s.replace("sms = 10\n", "sms = 84.7\n"), r"'sms' must be a whole number of SMs, got 84.7"),
    (lambda s: s.replace("fp16 = 40", "fp17 = 40"), r"unknown precision\(s\) \['fp17'\]"),
    (lambda s: s.replace("l2_mb = 2", "l2_mb = 2\nl3_mb = 4"), r"unknown key\(s\) \['l3_mb'\]"),
    (lambda s: s.replace("'Test GPU$'", "'Test ('"), r"bad match regex"),
    (lambda s: s.replace("[[gpus]]", "[[gpu]]"), r"no \[\[gpus\]\] rows"),
    (lambda s: s + "\n[[gpus", r"not valid TOML"),
    (lambda s: s + s, r"rows 1 and 2 both have id 'x'"),
    # a name another row answers to: find() answered it with whichever row was added last, without a word
    (lambda s: s.replace("[[gpus]]", "[[gpus]]\naliases = ['RTX 4090']"),
     r"row 1 \('x'\) is called 'RTX 4090', a name of the table's row 'rtx4090'; give it id = 'rtx4090' to replace "
     r"that row, or another name"),
    (lambda s: s.replace('"Test GPU"', '"NVIDIA H200"'), r"is called 'NVIDIA H200', a name of the table's row 'h200'"),
    (lambda s: s + s.replace('id = "x"', 'id = "y"'), r"rows 1 and 2 are both called 'Test GPU'"),
])
def test_bad_user_files_fail_with_one_line_naming_the_problem(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(edit(USER_ROW.format(id="x")))
    table = GpuTable.default()
    before = dict(table.specs)
    with pytest.raises(BadInputError, match=message) as info:
        table.extend_from_file(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    assert table.specs == before  # unchanged


@pytest.mark.parametrize("content, message", [
    (bytes(range(256)) * 4, r"is a binary file, not text"),
    (b"\x8f\x9a gpus = 1", r"is not UTF-8 text"),
    (None, r"is a directory, not a file"),
])
def test_a_user_file_of_random_bytes_or_a_folder_is_one_line(tmp_path, content, message):
    path = tmp_path / "gpus.toml"
    path.mkdir() if content is None else path.write_bytes(content)
    with pytest.raises(BadInputError, match=message) as info:
        gpu_table(path)
    assert str(info.value).startswith(f"GPU spec file {path}") and "\n" not in str(info.value)


def test_missing_user_file():
    with pytest.raises(BadInputError, match="no such file"):
        gpu_table("/nonexistent/gpus.toml")


H200_NVML = {"name": "NVIDIA H200", "sm_count": 132, "memory_total_bytes": 150754820096, "max_sm_clock_mhz": 1980}


def test_device_check_passes_on_the_lent_h200_facts():
    table = gpu_table()
    assert device_warnings(table.for_device("NVIDIA H200"), H200_NVML) == []


def test_device_check_warns_on_disagreement_and_on_a_missing_row():
    spec = gpu_table().get("h200")
    warnings = device_warnings(spec, {**H200_NVML, "sm_count": 114, "memory_total_bytes": 80 * 2**30, "max_sm_clock_mhz": 1500})
    assert len(warnings) == 3
    assert "114 SMs" in warnings[0] and "80.0 GiB" in warnings[1] and "1500 MHz" in warnings[2]
    assert "no row" in device_warnings(None, {"name": "NVIDIA A10"})[0]
    assert device_warnings(None, None) == []
    # a GeForce card boosting above its quoted clock is normal
    assert device_warnings(gpu_table().get("rtx4090"), {"name": "NVIDIA GeForce RTX 4090", "sm_count": 128,
                                                        "memory_total_bytes": 24564 * 2**20, "max_sm_clock_mhz": 3120}) == []
