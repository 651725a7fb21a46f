"""The HTML report and its PNGs: drawn from real inputs, self-contained, and not blank when a
browser renders them (headless Chromium, skipped with the reason where it is not installed)."""
from __future__ import annotations

import io
import os
import re
from html import escape
import shutil
import subprocess
from pathlib import Path

import pytest

from recorded_results import write_results
from visprof.analysis import sources
from visprof.analysis.gpus import gpu_table
from visprof.analysis.compare import compare
from visprof.report import figures
from visprof.report.html import build_report

TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"
CSVS = sorted(TIMM.glob("*.csv"))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def image(png: bytes):
    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(png), format="png")


def ink(pixels) -> float:
    """Share of pixels that are not (near) white."""
    rgb = pixels[..., :3]
    return float((rgb.min(axis=-1) < 0.94).mean())


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("h200")
    write_results(folder)
    return sources.load([folder, *CSVS])


@pytest.fixture(scope="module")
def report(loaded, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    written = build_report(loaded, out / "report.html", png_dir=out / "png")
    return out / "report.html", written


def test_every_figure_is_a_png_with_content(loaded):
    comparison = compare(loaded.measurements, "rtx3090", "rtx4090")
    drawn = {
        "categories": figures.category_bars(loaded.profiles),
        "roofline": figures.roofline(loaded.profiles, gpu_table()),
        "pareto": figures.pareto(loaded.measurements),
        "speedup": figures.speedup_scatter(comparison),
        "families": figures.family_boxes(comparison),
    }
    # intensity, tensor share, and measured against what each of the 4 profiles predicts
    titles = [ax.get_title(loc="left") for ax in drawn["speedup"].axes]
    assert len(titles) == 3 and titles[2].startswith("Measured vs predicted (Spearman ")
    # the 4 profiled models as points: filled where their band is narrow, hollow where it is not
    from matplotlib.collections import PathCollection

    from visprof.analysis.comparison import is_decided

    points = [c for c in drawn["speedup"].axes[2].collections if isinstance(c, PathCollection)]
    assert sum(len(c.get_offsets()) for c in points) == 4
    undecided = sum(1 for m in comparison.models if m.predicted_band and not is_decided(m.predicted_band))
    assert len(points[-1].get_offsets()) == 4 - undecided
    for name, fig in drawn.items():
        assert fig is not None, name
        png = figures.png_bytes(fig)
        assert png.startswith(PNG_MAGIC), name
        pixels = image(png)
        assert pixels.shape[0] > 250 and pixels.shape[1] > 600, name
        assert 0.02 < ink(pixels) < 0.6, (name, ink(pixels))


def test_a_band_a_rounding_error_off_its_prediction_is_drawn(loaded):
    """The band comes from the off-roof scalings, the prediction by another route: on timm's
    4090 -> 5090 table two models' predictions sat 2e-16 below their band, and the bar was refused."""
    comparison = compare(loaded.measurements, "rtx3090", "rtx4090")
    undecided = [m for m in comparison.models if m.predicted_band]
    assert undecided
    for m in undecided:
        m.predicted_band = (m.predicted_speedup * (1 + 1e-15), m.predicted_speedup * 1.5)  # wide, just above
    fig = figures.speedup_scatter(comparison)
    assert figures.png_bytes(fig).startswith(PNG_MAGIC)


def test_figures_are_none_without_data():
    assert figures.category_bars([]) is None
    assert figures.roofline([], gpu_table()) is None
    assert figures.pareto([]) is None


def test_category_bars_grow_with_the_number_of_models_and_cap_it(loaded):
    profiles = loaded.profiles
    one = figures.category_bars(profiles[:1])
    many = figures.category_bars(profiles * 20)  # 80 bars
    assert many.get_size_inches()[1] > one.get_size_inches()[1]
    assert "the 60 slowest per image of 80" in many.axes[0].get_title(loc="left")


def test_an_outlier_does_not_flatten_the_other_bars(loaded):
    import copy

    profiles = loaded.profiles
    giant = copy.deepcopy(profiles[0])
    giant.model = "giant_net"
    for row in giant.result.categories:
        row.time_ms *= 40
    fig = figures.category_bars([*profiles, giant])
    ax = fig.axes[0]
    per_row: dict[float, float] = {}
    for bar in ax.patches:  # stacked segments: a row's length is the sum of its segments
        row = round(bar.get_y() + bar.get_height() / 2, 3)
        per_row[row] = per_row.get(row, 0.0) + bar.get_width()
    lengths = sorted(per_row.values())
    assert ax.get_xlim()[1] == pytest.approx(1.3 * lengths[-2])
    assert [t.get_text() for t in ax.texts] == [f"{lengths[-1]:,.0f} ▸"]
    assert len(figures.category_bars(profiles).axes[0].texts) == 0  # no outlier: nothing clipped


def test_several_outliers_are_cut_at_the_largest_step(loaded):
    """Twenty bars, two of them giants (40x and 25x): both are cut, the axis ends past the third."""
    import copy

    profiles = []
    for i in range(20):
        p = copy.deepcopy(loaded.profiles[i % len(loaded.profiles)])
        p.model = f"net_{i}"
        factor = {0: 40.0, 1: 25.0}.get(i, 1.0 + 0.01 * i)
        for row in p.result.categories:
            row.time_ms *= factor
        profiles.append(p)
    ax = figures.category_bars(profiles).axes[0]
    per_row: dict[float, float] = {}
    for bar in ax.patches:
        row = round(bar.get_y() + bar.get_height() / 2, 3)
        per_row[row] = per_row.get(row, 0.0) + bar.get_width()
    lengths = sorted(per_row.values())
    assert ax.get_xlim()[1] == pytest.approx(1.3 * lengths[-3])
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:,.0f} ▸" for v in lengths[-2:])


def test_repeated_profiles_are_shown_once(loaded, tmp_path):
    import copy

    again = copy.deepcopy(loaded.profiles[0])
    again.result.created_at = "2099-01-01T00:00:00+00:00"
    doubled = sources.Loaded([*loaded.measurements, again], [])
    latest, dropped = doubled.latest_profiles_only()
    assert dropped == 1 and len(latest.profiles) == len(loaded.profiles)
    assert again in latest.profiles and loaded.profiles[0] not in latest.profiles
    assert len(latest.measurements) == len(loaded.measurements)  # references untouched
    build_report(doubled, tmp_path / "r.html")
    assert "1 repeated profile(s) of a model under the same conditions" in (tmp_path / "r.html").read_text()


def test_a_fourth_gpus_roofline_left_out_is_named(loaded):
    """Rooflines of four GPUs: the fourth had been left out of the figure without a word."""
    import copy
    import dataclasses

    from visprof.report.figures import roofline_gpus

    profiles = []
    for gpu, copies in (("a100-sxm4-80gb", 1), ("h100-sxm", 3), ("l40s", 2), ("h200", 2)):
        for _ in range(copies):
            m = copy.copy(loaded.profiles[0])
            m.result = copy.copy(m.result)
            m.result.roofline = dataclasses.replace(m.result.roofline, gpu=gpu)
            profiles.append(m)
    assert roofline_gpus(profiles) == (["h100-sxm", "l40s", "h200"], ["a100-sxm4-80gb"])


def test_a_report_of_timing_only_profiles_says_why_it_has_no_category_figure(tmp_path):
    """Its caption had described a figure that was not there ("time per image by operator category")."""
    from recorded_results import recorded_result

    result = recorded_result("resnet50")
    result.categories = []
    result.to_json(tmp_path / "t.json")
    build_report(sources.load([tmp_path / "t.json"]), tmp_path / "t.html", png_dir=tmp_path / "png")
    page = (tmp_path / "t.html").read_text()
    assert "No category breakdown: no profile here ran the attributed pass" in page
    assert "by operator category" not in page and 'alt="time by category"' not in page


def test_an_earlier_reports_figures_this_one_does_not_draw_are_removed(loaded, tmp_path):
    """A GPU report then a timing-only one into the same --png-dir: the first's roofline and Pareto PNGs had
    stayed beside the second's, as if they were its figures."""
    from recorded_results import recorded_result

    build_report(loaded, tmp_path / "first.html", png_dir=tmp_path / "png")
    assert len(list((tmp_path / "png").glob("*.png"))) == 5
    (tmp_path / "png" / "notes.png").write_bytes(b"\x89PNG mine")  # not one of the report's names: kept
    timing_only = recorded_result("resnet50")
    timing_only.categories = []
    timing_only.to_json(tmp_path / "t.json")
    written = build_report(sources.load([tmp_path / "t.json"]), tmp_path / "second.html", png_dir=tmp_path / "png")
    left = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert left == sorted(["notes.png", *(p.name for p in written)])


def test_each_bar_of_the_category_figure_is_labelled_apart(loaded):
    """resnet18 at 64 and 96 px (or fp16 and bf16) had two bars labelled "resnet18 · CPU (host clock) · b1"."""
    import copy
    import dataclasses

    from visprof.report.figures import bar_labels

    first = loaded.profiles[0]
    regime = copy.copy(first)
    regime.result = copy.copy(first.result)
    other = "no_grad" if first.result.config.grad_mode != "no_grad" else "inference_mode"
    regime.result.config = dataclasses.replace(first.result.config, grad_mode=other)
    labels = bar_labels([*loaded.profiles, regime])
    assert labels[0] == f"{first.model} @{first.img_label} · h200 · b{first.batch_size} · {first.precision} · " \
                        f"{first.result.config.grad_mode}"
    assert labels[-1].endswith(f"· {other}") and len(set(labels)) == len(labels)
    assert all(label.count("·") == 3 for label in labels[1:-1])  # no regime where the rest tells them apart


def test_profiles_in_another_regime_are_kept_and_one_with_categories_is_preferred(loaded):
    """A no_grad and an inference_mode profile of one model had been "the same conditions" (diff calls them a
    difference), one dropped; a newer timing-only profile had taken the place of one with categories."""
    import copy
    import dataclasses

    first = loaded.profiles[0]
    other_regime = copy.copy(first)
    other_regime.result = copy.copy(first.result)
    other = "no_grad" if first.result.config.grad_mode != "no_grad" else "inference_mode"
    other_regime.result.config = dataclasses.replace(first.result.config, grad_mode=other)
    timing_only = copy.copy(first)
    timing_only.result = copy.copy(first.result)
    timing_only.result.categories = []
    timing_only.result.created_at = "2099-01-01T00:00:00+00:00"  # newer than every other
    doubled = sources.Loaded([*loaded.measurements, other_regime, timing_only], [], list(loaded.inputs))
    latest, dropped = doubled.latest_profiles_only()
    assert dropped == 1 and other_regime in latest.profiles and first in latest.profiles
    assert timing_only not in latest.profiles


def test_a_non_square_input_is_shown_as_height_x_width(loaded, tmp_path):
    """A 96x160 and a 160x96 profile had read 96 and 160 in the report's img column, as if the sizes
    differed and were square (the result's img_size is the height)."""
    import copy

    wide = copy.deepcopy(loaded.profiles[0])
    batch, channels = wide.result.model.input_shape[:2]
    wide.result.model.input_shape = [batch, channels, 96, 160]
    wide.img_size = wide.result.model.img_size = 96
    assert (wide.img_label, loaded.profiles[0].img_label) == ("96x160", str(loaded.profiles[0].img_size))
    build_report(sources.Loaded([wide], []), tmp_path / "r.html")
    assert "<td>96x160</td>" in (tmp_path / "r.html").read_text()


def test_a_pair_of_two_torch_versions_is_noted_in_the_report(loaded, tmp_path):
    import dataclasses

    # the 4090's numbers as if measured under a newer PyTorch than the 3090's
    newer = [dataclasses.replace(x, torch="2.9.1") if x.kind == "reference" and x.gpu == "rtx4090" else x
             for x in loaded.measurements]
    build_report(sources.Loaded(newer, []), tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    assert "RTX 3090 numbers were measured under torch 2.4.0, CUDA 12.4 and the RTX 4090&#x27;s under torch 2.9.1" in html
    build_report(loaded, tmp_path / "same.html")
    assert "numbers were measured under" not in (tmp_path / "same.html").read_text()


def test_two_runs_that_took_different_paths_are_noted_in_the_report(loaded, tmp_path):
    import dataclasses

    # one model's 4090 run at a batch two steps below the 3090's, on a GPU of the same memory
    first = next(x for x in loaded.measurements if x.kind == "reference" and x.gpu == "rtx3090" and x.batch_size == 1024
                 and any(y.model == x.model and y.img_size == x.img_size and y.gpu == "rtx4090"
                         for y in loaded.measurements if y.kind == "reference"))
    hungrier = [dataclasses.replace(x, batch_size=512) if x.kind == "reference" and x.gpu == "rtx4090"
                and (x.model, x.img_size) == (first.model, first.img_size) else x for x in loaded.measurements]
    build_report(sources.Loaded(hungrier, []), tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    assert ("1 model(s) ran at batches that no single memory footprint per sample explains" in html
            and f"{first.model} at {first.img_size}px (x1.33 on the RTX 4090)" in html)
    build_report(loaded, tmp_path / "same.html")  # timm's 3090 -> 4090 rows: one software, no such row
    assert "no single memory footprint" not in (tmp_path / "same.html").read_text()


def test_a_saved_calibration_adds_each_profile_s_calibrated_speed_up(loaded, tmp_path):
    from recorded_results import recorded_result
    from saved_calibration import saved_calibration

    cal = saved_calibration(recorded_result("deit_small_patch16_224"), "rtx3090", "rtx4090")
    build_report(loaded, tmp_path / "r.html", calibration=cal)
    html = (tmp_path / "r.html").read_text()
    section = html.split("<h2>Calibrated speed-up rtx3090 → rtx4090</h2>")[1].split("</section>")[0]
    assert "fitted on 1 published models of 1 families" in section
    bands = re.findall(r"<td>x(\d\.\d\d)</td><td>x(\d\.\d\d) – x(\d\.\d\d)</td>", section)
    assert len(bands) == len(loaded.profiles) == 4
    assert all(float(lo) <= float(mid) <= float(hi) for mid, lo, hi in bands)
    assert section.count("yes (in sample)") == 1 and "<td class=\"text\">its family</td>" not in section
    import dataclasses

    cal.fit = dataclasses.replace(cal.fit, q_low_seen=-0.03, q_high_seen=0.02, families=frozenset({"deit", "resnet"}))
    build_report(loaded, tmp_path / "kin.html", calibration=cal)
    kin = (tmp_path / "kin.html").read_text().split("<h2>Calibrated speed-up rtx3090 → rtx4090</h2>")[1]
    assert kin.split("</section>")[0].count("<td class=\"text\">its family</td>") == 1  # resnet50; deit is in sample
    build_report(loaded, tmp_path / "plain.html")
    assert "Calibrated speed-up" not in (tmp_path / "plain.html").read_text()
    # at a batch asked for, the batch column is that batch (it read the profiles' 64 under "At batch 1024"),
    # and the image size tells one model's profiles apart
    build_report(loaded, tmp_path / "b1024.html", calibration=cal, batch_size=1024)
    at = (tmp_path / "b1024.html").read_text().split("<h2>Calibrated speed-up rtx3090 → rtx4090</h2>")[1]
    rows = re.findall(r"<tr><td class=\"text\">([^<]+)</td><td>(\d+)</td><td>(\d+)</td>", at.split("</section>")[0])
    assert len(rows) == 4 and {batch for _, _, batch in rows} == {"1024"}
    assert {(name, int(img)) for name, img, _ in rows} == {(m.model, m.img_size) for m in loaded.profiles}


def test_the_calibrated_speed_ups_are_at_the_batch_asked_for(loaded, tmp_path):
    """As predict --batch-size: the spec speed-up the fit corrects is made at that batch."""
    from recorded_results import recorded_result
    from saved_calibration import saved_calibration


    cal = saved_calibration(recorded_result("deit_small_patch16_224"), "rtx3090", "rtx4090")
    build_report(loaded, tmp_path / "own.html", calibration=cal)  # the published batch the file keeps, 1024
    build_report(loaded, tmp_path / "at.html", calibration=cal, batch_size=64)
    own, at = ((tmp_path / f"{name}.html").read_text().split("<h2>Calibrated speed-up rtx3090 → rtx4090</h2>")[1]
               .split("</section>")[0] for name in ("own", "at"))
    assert "At the published batch 1024:" in own
    assert escape("At batch 64 (the band's coverage was measured at the published batch 1024 only):") in at
    first = sorted(loaded.profiles, key=lambda m: (m.model, m.batch_size or 0))[0]
    expected = cal.predict(first, gpu_table(), batch_size=64)
    assert f"<td>x{expected.spec_speedup:.2f}</td><td>x{expected.calibrated:.2f}</td>" in at
    assert re.findall(r"<td>x(\d\.\d\d)</td>", own) != re.findall(r"<td>x(\d\.\d\d)</td>", at)



def test_report_help_gives_the_calibrated_batchs_default(capsys):
    # it had given "each profile's own" as the default, where the report uses the published batch
    from cli_in_process import run_cli

    code, out, _ = run_cli(capsys, "report", "--help")
    assert code == 0 and "default: the published batch the calibration keeps" in " ".join(out.split())


def test_html_is_self_contained(report):
    path, written = report
    html = path.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert html.count('src="data:image/png;base64,') == len(written) == 5
    for forbidden in ("http://", "https://", "<script", "<link", "@import"):
        assert forbidden not in html
    for section in ("Where the time goes", "Roofline", "Pareto fronts", "Speed-up RTX 3090 → RTX 4090", "By family"):
        assert section in html
    assert "deit_small_patch16_224" in html and "tensor-core bound" in html
    # every profiled model explained, with what its profile predicts and how far that holds overall
    assert "<h2>Why: the 4 profiled models</h2>" in html and html.count("its profile predicts") >= 4
    assert "4 profiled model(s): their profiles predict the speed-up with median error" in html
    # and each one's range over the rate scalings, in its own column
    assert "<th>its range</th>" in html
    why = html.split("<h2>Why: the 4 profiled models</h2>")[1].split("<h2>By family</h2>")[0]
    assert len(re.findall(r"<td>x\d\.\d\d – x\d\.\d\d</td>", why)) == 4


def test_the_speed_up_section_carries_every_note_compare_gives(loaded, tmp_path):
    """H200 profiles (bf16, batch 64) against the RTX 4090's published rows (fp16, batch 1024): compare
    warns of two precisions, two batches, profiles against published rows; the page had kept only its
    software, path and host notes, and shown the same speed-ups without the rest."""
    comparison = compare(loaded.measurements, "h200", "rtx4090")
    said = [n for n in comparison.notes if not comparison.prediction or n != comparison.prediction.sentence()]
    assert any("two precisions" in n for n in said) and any("two batch sizes" in n for n in said)
    build_report(loaded, tmp_path / "r.html", base="h200", target="rtx4090")
    page = (tmp_path / "r.html").read_text()
    for note in said:
        assert escape(note) in page, note


def text_of(html_file: Path) -> str:
    """The report's words: tags and embedded images left out."""
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", " ", html_file.read_text()))


@pytest.fixture(scope="module")
def cpu_result_file(tmp_path_factory) -> Path:
    from fixtures import cpu_trace
    from toy_results import make_result

    path = tmp_path_factory.mktemp("cpu") / "cpu.json"
    make_result(cpu_trace()).to_json(path)
    return path


def test_a_cpu_result_is_reported_as_host_clock_not_gpu_time(cpu_result_file, tmp_path):
    """Docs promise every report labels CPU results as host-clock; the HTML said '1 GPU(s) (CPU)',
    'GPU kernel time per image' and, in its figure, 'share of kernel time'."""
    build_report(sources.load([cpu_result_file]), tmp_path / "cpu.html", png_dir=tmp_path / "png")
    text = text_of(tmp_path / "cpu.html")
    assert "HOST CLOCK (CPU) MEASUREMENT: times are host-clock op durations, not GPU kernel times" in text
    assert "1 measurements of 1 models on the CPU (host clock);" in text
    assert "Host-clock time per image by operator category" in text
    for gpu_words in ("GPU(s)", "GPU kernel time per", "GPU time", "share of kernel time"):
        assert gpu_words not in text
    assert "CPU (host clock)" in text.split("Where the time goes")[1]  # the profiles table's device column


def test_the_category_figure_names_a_cpu_results_clock(cpu_result_file, loaded):
    cpu = sources.load([cpu_result_file]).profiles
    assert figures.clock_of(cpu) == "cpu" and figures.clock_of(loaded.profiles) == "gpu"
    assert figures.clock_of(cpu + loaded.profiles) == "mixed"
    axes = {c: [ax.get_xlabel() for ax in figures.category_bars(ps).axes[:2]]
            for c, ps in (("cpu", cpu), ("gpu", loaded.profiles), ("mixed", cpu + loaded.profiles))}
    assert axes == {"cpu": ["host µs per image", "share of host time (%)"],
                    "gpu": ["GPU kernel µs per image", "share of kernel time (%)"],
                    "mixed": ["µs per image (GPU kernel; CPU: host clock)", "share of its time (%)"]}


def test_a_report_of_gpu_and_cpu_results_says_which_is_which(cpu_result_file, tmp_path):
    h200 = Path(__file__).resolve().parents[1] / "data" / "h200-result-vit_base_patch16_224.json"
    build_report(sources.load([cpu_result_file, h200]), tmp_path / "mixed.html")
    text = text_of(tmp_path / "mixed.html")
    assert "2 measurements of 2 models on 1 GPU(s) (h200) and 1 on the CPU (host clock);" in text
    assert ("1 of the 2 profiles are HOST CLOCK (CPU) MEASUREMENTS, marked \"CPU (host clock)\": their times are "
            "host-clock op durations, not GPU kernel times; the others' are GPU kernel times") in text
    assert "GPU kernel time for the GPU profiles, host-clock op time for the CPU ones" in text
    assert "no speed-up section" not in text  # one GPU: nothing to compare, and the CPU is no second GPU


def test_report_refuses_empty_inputs(tmp_path):
    from visprof.base.errors import BadInputError

    with pytest.raises(BadInputError, match="no measurements"):
        build_report(sources.Loaded(), tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)")
def test_chromium_renders_the_report_and_it_is_not_blank(report, tmp_path):
    path, _ = report
    shot = tmp_path / "shot.png"
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--hide-scrollbars", "--window-size=1400,2400",
           f"--screenshot={shot}", path.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert shot.exists(), f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-800:]}"
    pixels = image(shot.read_bytes())
    assert pixels.shape[0] >= 2000 and pixels.shape[1] >= 1300
    # the dark header band, figures and tables: a blank or unstyled page has far less ink
    assert ink(pixels) > 0.08, ink(pixels)
    top = pixels[:60, :, :3]
    assert top.mean() < 0.4  # the header bar is dark: the CSS applied


def test_what_the_models_run_names_each_profile_s_costliest_op_types_and_kernel_families(tmp_path):
    from recorded_results import load_trace, recorded_result
    from visprof.attribution.attribute import attribute
    from visprof.attribution.op_types import kernel_family_rows, launch_size_rows, op_type_rows

    folder = tmp_path / "profiles"
    folder.mkdir()
    for name in ("resnet50", "deit_small_patch16_224"):
        result = recorded_result(name)
        attr = attribute(load_trace(name))
        result.op_types, result.kernel_families = op_type_rows(attr), kernel_family_rows(attr)
        result.launch_sizes = launch_size_rows(attr, 132)
        result.to_json(folder / f"{name}.json")
    recorded_result("mobilevit_s").to_json(folder / "mobilevit_s.json")  # made before the tables: no row
    build_report(sources.load([folder]), tmp_path / "r.html")
    section = (tmp_path / "r.html").read_text().split("<h2>What the models run</h2>")[1].split("</section>")[0]
    rows = re.findall(r'<tr><td class="text">(\w+)</td><td>(\d+)</td><td>(\d+)</td><td class="text">bf16</td>'
                      r'<td class="text">h200</td><td class="text">([^<]*)</td><td class="text">([^<]*)</td><td>([^<]*)</td></tr>',
                      section)
    assert [r[:3] for r in rows] == [("deit_small_patch16_224", "224", "64"), ("resnet50", "224", "64")]
    deit, resnet = (r[:1] + r[3:] for r in rows)
    # the profile made before the tables is said to be left out, not dropped without a word
    assert "1 profile(s) without op-type tables (made before they were kept" in section
    assert resnet[1].startswith("aten.batch_norm.default 34%, aten.conv2d.default [dense] 23%") and resnet[1].count("%") == 4
    assert deit[2].startswith("nvjet_sm90_tst 29%") and deit[2].count("%") == 3
    assert (resnet[3], deit[3]) == ("8.7%", "2.0%")
    build_report(sources.load([folder / "mobilevit_s.json"]), tmp_path / "old.html")
    assert "What the models run" not in (tmp_path / "old.html").read_text()


def test_a_narrow_span_gets_a_linear_axis_with_readable_ticks_a_wide_one_a_log_axis(loaded):
    """Over less than a decade a log axis labels its minor ticks (6.955x10^2, ...) on top of each
    other: two profiles of one model on two GPUs drew an unreadable Pareto panel."""
    import copy

    profiled = [m for m in loaded.measurements if m.result is not None and m.samples_per_s and figures.peak_memory(m)]
    assert len(profiled) >= 2
    narrow = [copy.copy(m) for m in profiled[:2]]
    narrow[1].samples_per_s = narrow[0].samples_per_s * 1.04
    fig = figures.pareto(narrow)
    fig.canvas.draw()
    for ax in fig.axes:
        assert ax.get_xscale() == "linear" and "log" not in ax.get_xlabel()
        labels = [t.get_text() for t in ax.get_xticklabels(which="both") if t.get_text()]
        assert labels and not any("times" in t or "^" in t for t in labels), labels
    spread = [m.samples_per_s for m in loaded.measurements if m.samples_per_s]
    assert max(spread) / min(spread) >= 10
    wide = figures.pareto(loaded.measurements)
    assert wide.axes[0].get_xscale() == "log" and wide.axes[0].get_xlabel().endswith(", log)")


def test_a_profile_without_roofline_says_so_in_the_bound_panel(loaded):
    import copy
    import dataclasses

    profiles = [m for m in loaded.profiles if m.result.roofline and m.result.roofline.shares]
    assert len(profiles) >= 2
    bare = copy.copy(profiles[0])
    bare.result = dataclasses.replace(bare.result, roofline=None)
    fig = figures.category_bars([bare, profiles[1]])
    texts = [t.get_text() for t in fig.axes[2].texts]
    assert texts == ["no roofline in this result"]
    assert not figures.category_bars(profiles[:2]).axes[2].texts


def test_the_roofline_draws_a_crowd_of_profiles_smaller_and_see_through(loaded):
    from matplotlib.collections import PathCollection

    def category_markers(profiles):
        fig = figures.roofline(profiles, gpu_table())
        return [c for c in fig.axes[0].collections if isinstance(c, PathCollection) and c.get_label() != "op groups"]

    few = category_markers(loaded.profiles[:2])
    crowd = category_markers(loaded.profiles * 6)
    assert len(loaded.profiles * 6) > 20 and few and crowd
    assert min(c.get_sizes().min() for c in few) >= 30 and all(c.get_alpha() == 0.85 for c in few)
    assert max(c.get_sizes().max() for c in crowd) <= 530 * 0.25 and all(c.get_alpha() == 0.5 for c in crowd)


def test_each_bandwidth_bar_says_its_share_of_the_profiles_time(loaded):
    fig = figures.roofline(loaded.profiles, gpu_table())
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert labels and all(re.fullmatch(r"[a-z]+\n\d+\.\d% of time", label) for label in labels), labels
    shares = {label.split("\n")[0]: float(label.split("\n")[1].split("%")[0]) for label in labels}
    total = sum(p.time_ms for m in loaded.profiles for p in m.result.roofline.categories)
    for category, share in shares.items():
        expected = sum(p.time_ms for m in loaded.profiles for p in m.result.roofline.categories
                       if p.category == category and p.gbps and not p.flops) / total * 100
        assert share == pytest.approx(expected, abs=0.05), category


def test_the_pareto_figure_names_a_cpu_series_by_its_clock(cpu_result_file, tmp_path):
    """A CPU result's throughput was a series named "CPU" beside the GPUs, as if the CPU were one."""
    import json

    document = json.loads(cpu_result_file.read_text())
    document["model"].update(name="resnet50", img_size=224)  # a model with a published ImageNet top-1
    renamed = tmp_path / "resnet50-cpu.json"
    renamed.write_text(json.dumps(document))
    fig = figures.pareto(sources.load([renamed]).measurements)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["CPU (host clock) (front of 1)"]


def test_the_pareto_panels_coloured_by_category_have_a_key(loaded):
    """Two panels coloured by dominant category had no legend: a PNG of them could not be read alone."""
    from visprof.analysis.roofline import dominant_category

    fig = figures.pareto(loaded.measurements)
    coloured = [ax for ax in fig.axes if "colour: dominant category" in ax.get_title(loc="left")]
    assert coloured
    expected = {figures._categories()[0].category(c).label for c in
                (dominant_category(m.result) for m in loaded.profiles) if c}
    for ax in coloured:
        assert expected <= {t.get_text() for t in ax.get_legend().get_texts()}


def test_bars_of_over_ten_ms_an_image_are_drawn_in_ms(loaded):
    """A CPU's host-clock times (0.5-1.3 s an image) had an axis of "1e6" µs; past 10 ms an image the
    axis is in ms, and the bars are the same lengths in it."""
    import copy

    slow = []
    for p in loaded.profiles:
        p = copy.deepcopy(p)
        for row in p.result.categories:
            row.time_ms *= 1000
        slow.append(p)
    fast_ax, slow_ax = figures.category_bars(loaded.profiles).axes[0], figures.category_bars(slow).axes[0]
    assert (fast_ax.get_xlabel(), slow_ax.get_xlabel()) == ("GPU kernel µs per image", "GPU kernel ms per image")
    assert [b.get_width() for b in slow_ax.patches] == pytest.approx([b.get_width() for b in fast_ax.patches])


def test_a_model_named_in_characters_the_font_lacks_gives_one_warning_not_one_per_character(loaded, tmp_path):
    """matplotlib warned once per missing character per figure (a CJK model name: a line each, under -q
    too); the report gives one VisprofWarning naming them, and lets other warnings through."""
    import dataclasses
    import warnings

    from visprof.base.errors import VisprofWarning

    renamed = [dataclasses.replace(m, model="モデル") if m.result is not None and m.model == "resnet50" else m
               for m in loaded.measurements]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_report(sources.Loaded(renamed, list(loaded.skipped)), tmp_path / "r.html", png_dir=tmp_path / "png")
    glyphs = [w for w in caught if "Glyph" in str(w.message) or "font lacks" in str(w.message)]
    assert [w.category for w in glyphs] == [VisprofWarning], [str(w.message) for w in glyphs]
    assert str(glyphs[0].message).startswith("the figures' font lacks 3 character(s) of their labels (e.g. 'デモル')")
