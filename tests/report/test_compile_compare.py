"""The eager vs torch.compile view per category (visprof/report/compile_compare.py) and its CLI."""
from __future__ import annotations

import json

import pytest

from visprof.base.errors import BadInputError
from visprof.report.compile_compare import compare_compile, render_compile_comparison
from visprof.result import (AttributionSummary, CategoryRow, LatencyStats, ModelInfo, ProfileResult, RunConfig,
                            Timing)


def result(compile: bool, rows: dict[str, float], fused: dict[str, dict[str, float]] | None = None,
           latency: float = 10.0, library: dict[str, float] | None = None) -> ProfileResult:
    total = sum(rows.values())
    categories = []
    for key, ms in rows.items():
        cat, _, sub = key.partition("/")
        categories.append(CategoryRow(cat, sub or None, ms, ms / total, 1.0, 0.0, None,
                                      fused=(fused or {}).get(key, {}), flop_time_ms=(library or {}).get(key, 0.0)))
    r = ProfileResult(ModelInfo("m", batch_size=64), RunConfig(precision="bf16", compile=compile, device="cuda:0"),
                      "gpu", categories=categories)
    r.attribution = AttributionSummary(kernel_ms=total, memcpy_ms=0, memset_ms=0, activity_ms=total, busy_ms={},
                                       span_ms=total, coverage=1.0, unattributed_ms=0.0)
    r.timing = Timing(LatencyStats.from_samples([latency]), 1.0, 1)
    return r


def test_rows_compare_shares_and_the_same_work_on_the_eager_scale():
    eager = result(False, {"convolution/dense": 4.0, "convolution/pointwise": 2.0, "normalization": 2.0,
                           "activation": 1.5, "elementwise": 0.5}, latency=10.0)
    compiled = result(True, {"convolution/dense": 3.9, "convolution/pointwise": 2.1, "normalization": 1.0},
                      fused={"normalization": {"activation": 0.9, "elementwise": 0.3}}, latency=8.0)
    rows = {r.category: r for r in compare_compile(eager, compiled)}
    assert list(rows) == ["convolution", "normalization", "activation", "elementwise"]
    conv = rows["convolution"]
    assert conv.eager_share == pytest.approx(0.6) and conv.compiled_share == pytest.approx(6.0 / 7.0)
    # on its own total, compiled conv looks 26 points larger; on the eager scale it is the same work
    assert conv.share_points == pytest.approx(25.714, abs=1e-3)
    assert conv.same_scale_points == pytest.approx(0.0)
    assert rows["activation"].compiled_ms == 0.0
    assert rows["normalization"].fused == {"activation": 0.9, "elementwise": 0.3}
    text = render_compile_comparison(eager, compiled)
    assert "(compile's speed-up x1.25)" in text and "activation 0.90" in text and "fused into it" in text


def test_comparison_needs_one_eager_and_one_compiled_result():
    with pytest.raises(BadInputError):
        compare_compile(result(True, {"linear": 1.0}), result(True, {"linear": 1.0}))


@pytest.mark.parametrize("where", ["gpu", "cpu"])
def test_the_rendered_comparison_checks_its_pair_on_the_cpu_too(where):
    """render_compile_comparison printed "eager vs torch.compile" with a speed-up for its arguments swapped
    and for two eager runs of two models on the CPU, where only the GPU's table checked them."""
    def run(compile, name="m"):
        r = result(compile, {"linear": 1.0})
        r.measurement, r.model.name = where, name
        return r

    with pytest.raises(BadInputError, match=r"an eager result and a compiled one \(config.compile\), in that order; "
                                            r"got compile=True and compile=False"):
        render_compile_comparison(run(True), run(False))
    with pytest.raises(BadInputError, match="one model's runs in one setting: model m and other"):
        render_compile_comparison(run(False), run(True, "other"))
    assert render_compile_comparison(run(False), run(True)).startswith("eager vs torch.compile: m, batch 64")


def test_category_totals_merge_fused_time_of_sub_categories():
    r = result(True, {"attention/core": 1.0, "attention/projections": 2.0},
               fused={"attention/core": {"memory/layout": 0.2}, "attention/projections": {"memory/layout": 0.1,
                                                                                           "elementwise": 0.4}})
    totals = r.category_totals()
    assert totals["attention"].fused == pytest.approx({"memory/layout": 0.3, "elementwise": 0.4})
    assert r.categories[0].fused == {"memory/layout": 0.2}  # the rows themselves are untouched
    again = ProfileResult.from_dict(json.loads(r.to_json()))
    assert again.categories[1].fused == {"memory/layout": 0.1, "elementwise": 0.4}


def test_compare_compile_command_on_the_cpu(tmp_path, capsys):
    from visprof.cli.app import main

    out = tmp_path / "cmp.json"
    assert main(["compare-compile", "test_vit", "--device", "cpu", "-b", "1", "--iterations", "2", "--warmup", "0",
                 "--json", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    # On the CPU both breakdowns are of the eager model (op capture runs a compiled model eagerly): a
    # table of them had shown run-to-run noise as what compile changed. The latency is the compiled program's.
    assert "eager vs torch.compile: test_vit" in text and "latency (median): eager" in text
    assert "per category: not compared" in text and "Δ pts" not in text
    data = json.loads(out.read_text())
    assert data["schema"] == "visprof.compare-compile/1"
    assert data["eager"]["config"]["compile"] is False and data["compiled"]["config"]["compile"] is True
    assert data["comparison"] is None and "not compared" in data["comparison_note"]


def test_a_compiled_cpu_result_has_no_per_category_comparison():
    eager, compiled = result(False, {"linear": 2.0}), result(True, {"linear": 1.0})
    compiled.measurement = "cpu"
    with pytest.raises(BadInputError, match="per category: not compared. On the CPU"):
        compare_compile(eager, compiled)
    text = render_compile_comparison(eager, compiled)
    assert "not compared" in text and "library" not in text


def test_library_work_is_compared_apart_from_the_work_inductor_fuses():
    """Swin-T on the H200: eager attention held SDPA plus the window and bias copies around it,
    which Inductor fused elsewhere; only the library kernels are the same work."""
    eager = result(False, {"attention/core": 5.0, "attention/projections": 0.5, "normalization": 2.5, "other": 2.0},
                   library={"attention/core": 1.2, "attention/projections": 0.5})
    compiled = result(True, {"attention/core": 3.0, "attention/projections": 0.5, "normalization": 0.1},
                      library={"attention/core": 1.1, "attention/projections": 0.5})
    rows = {r.category: r for r in compare_compile(eager, compiled)}
    attention = rows["attention"]
    assert attention.same_scale_points == pytest.approx(-20.0)  # the whole category: fused work left it
    assert (attention.eager_flop_ms, attention.compiled_flop_ms) == pytest.approx((1.7, 1.6))
    assert attention.library_points == pytest.approx(-1.0)  # the same SDPA and GEMMs
    assert rows["normalization"].library_points == 0.0
    text = render_compile_comparison(eager, compiled)
    assert "1.700 / 1.600 (-1.0)" in text and "library" in text


def test_an_nchw_eager_run_against_inductor_s_channels_last_convolutions_is_said():
    eager = result(False, {"convolution/dense": 3.0, "normalization": 2.0}, library={"convolution/dense": 3.0})
    compiled = result(True, {"convolution/dense": 1.6, "normalization": 1.3}, library={"convolution/dense": 1.6})
    compiled.attribution.inductor_conv_layout = "channels_last"
    assert "compare with an eager channels_last=True run" in render_compile_comparison(eager, compiled)
    eager.config.channels_last = True
    assert "channels_last=True run" not in render_compile_comparison(eager, compiled)
    again = ProfileResult.from_dict(json.loads(compiled.to_json()))
    assert again.attribution.inductor_conv_layout == "channels_last"
    assert again.categories[0].flop_time_ms == 1.6
