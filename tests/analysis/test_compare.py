"""Loading measurements (results, folders, stores, CSVs), families, and `compare`."""
from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from recorded_results import recorded_result, write_results
from visprof.analysis import sources
from visprof.analysis.compare import compare, on_base_and_target, profile_for
from visprof.analysis.families import architecture, family
from visprof.analysis.sources import Measurement
from visprof.analysis.store_adapter import open_store
from visprof.analysis.gpus import gpu_table
from visprof.analysis.timm_csv import read_benchmark_csv
from visprof.base.errors import BadInputError, NotAResultError
from visprof.result import ProfileResult

TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"
CSV_3090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
CSV_4090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"


def m(model, gpu, samples, img=224, batch=256, precision="fp16", **kw) -> Measurement:
    return Measurement(model=model, img_size=img, gpu_name=gpu, gpu_id=gpu, batch_size=batch, precision=precision,
                       samples_per_s=samples, source="test", kind="reference", **kw)


@pytest.mark.parametrize("name, expected", [
    ("vit_base_patch16_224", "vision_transformer"), ("vit_base_resnet50_384", "vision_transformer_hybrid"),
    ("deit3_small_patch16_224", "deit"), ("coatnet_0_rw_224", "maxxvit"), ("resnet50.a1_in1k", "resnet"),
    ("timm/convnext_tiny.fb_in1k", "convnext"), ("my_custom_net", "unknown")])
def test_family_is_the_defining_timm_module(name, expected):
    assert family(name) == expected
    assert architecture("hf-hub:timm/resnet50.a1_in1k") == "resnet50"


def test_speedup_sensitivity_and_aggregates_with_known_answers():
    ms = [m("resnet50", "rtx3090", 100), m("resnet50", "rtx4090", 120),
          m("vit_base_patch16_224", "rtx3090", 100), m("vit_base_patch16_224", "rtx4090", 200),
          m("convnext_tiny", "rtx3090", 100), m("convnext_tiny", "rtx4090", 150),
          m("efficientnet_b0", "rtx3090", 100)]  # only on one GPU
    c = compare(ms)
    assert (c.base, c.target) == ("rtx3090", "rtx4090")
    assert c.median_speedup == pytest.approx(1.5)
    assert {x.model: x.speedup for x in c.models} == pytest.approx({"vit_base_patch16_224": 2.0, "convnext_tiny": 1.5,
                                                                    "resnet50": 1.2})
    assert {x.model: x.sensitivity for x in c.models} == pytest.approx({"vit_base_patch16_224": 1 / 3, "convnext_tiny": 0.0,
                                                                        "resnet50": -0.2})
    assert [x.model for x in c.models] == ["vit_base_patch16_224", "convnext_tiny", "resnet50"]  # most sensitive first
    assert c.unmatched == {"rtx3090": 1, "rtx4090": 0}
    families = {a.key: (a.count, a.median_speedup) for a in c.by_family}
    assert families == {"vision_transformer": (1, 2.0), "convnext": (1, 1.5), "resnet": (1, 1.2)}
    assert "gains x2.00 against a median x1.50 (+33%); no profile of it at 224 px to say why" in c.models[0].explanation
    # the other direction: the reciprocal
    back = compare(ms, base="rtx4090", target="3090")
    assert {x.model: x.speedup for x in back.models}["resnet50"] == pytest.approx(1 / 1.2)


def test_best_pair_matches_precision_and_batch():
    ms = [m("resnet50", "a", 100, precision="fp32"), m("resnet50", "a", 300, precision="fp16"),
          m("resnet50", "b", 450, precision="fp16"), m("resnet50", "b", 150, precision="fp32", batch=64)]
    c = compare(ms)
    assert c.models[0].speedup == pytest.approx(1.5)  # fp16 with fp16


@pytest.mark.parametrize("order", [1, -1])
def test_one_gpus_two_tables_pair_with_the_other_gpus_software_whatever_their_order(order):
    """Both of timm's RTX 4090 tables beside the 5090's (torch 2.9.1): the row compared was the one
    loaded last, so mobileone_s0 came out x8.26 (torch 2.4 vs 2.9.1) or x1.55 by import order."""
    old, new = m("mobileone_s0", "a", 3552.46, torch="2.4.0"), m("mobileone_s0", "a", 18890.62, torch="2.9.1")
    target = m("mobileone_s0", "b", 29328.65, torch="2.9.1")
    c = compare([*[old, new][::order], target], "a", "b")
    assert c.models[0].speedup == pytest.approx(29328.65 / 18890.62)
    assert c.models[0].base.torch == "2.9.1"
    # a precision that matches still comes first: the other software at fp16 beats the same at fp32
    fp32 = m("mobileone_s0", "a", 9000.0, torch="2.9.1", precision="fp32")
    assert compare([old, fp32, target], "a", "b").models[0].base is old


def test_the_profile_read_is_the_one_at_the_batch_nearest_the_published_one():
    at64, at256, newer64 = (m("resnet50", "h200", 1, batch=64), m("resnet50", "h200", 2, batch=256),
                            m("resnet50", "h200", 3, batch=64))
    # timm published at 1024: the batch-256 profile, though an older batch-64 one follows it
    assert profile_for([at64, at256, newer64], "rtx3090", 1024) is at256
    assert profile_for([at64, at256, newer64], "rtx3090", 96) is newer64  # a tie of distance: the newest
    assert profile_for([at64, at256], "rtx3090", None) is at256  # no batch to match: the newest
    on_base = m("resnet50", "rtx3090", 4, batch=32)
    assert profile_for([at256, on_base], "rtx3090", 1024) is on_base  # a profile on the base GPU comes first
    assert profile_for([], "rtx3090", 1024) is None


def test_choosing_gpus_needs_names_when_there_are_more_than_two():
    ms = [m("resnet50", g, 100 + i) for i, g in enumerate(("rtx3090", "rtx4090", "h200"))]
    with pytest.raises(BadInputError, match=r"measurements on 3 GPU\(s\) \(rtx3090, rtx4090, h200\); name the two"):
        compare(ms)
    assert compare(ms, base="h200", target="RTX 4090").target == "rtx4090"
    with pytest.raises(BadInputError, match="no measurements on GPU 'a100'"):
        compare(ms, base="a100", target="h200")
    with pytest.raises(BadInputError, match="are the same GPU"):
        compare(ms, base="h200", target="h200")
    with pytest.raises(BadInputError, match="no model was measured on both"):
        compare([m("a_net", "rtx3090", 1), m("b_net", "rtx4090", 1)])


@pytest.mark.parametrize("ms, held", [([m("resnet50", "rtx3090", 100), m("vit_base_patch16_224", "rtx3090", 90)],
                                         "on one only (rtx3090)"),
                                        ([m("resnet50", "rtx3090", None)], "on none (no throughput in them)")])
@pytest.mark.parametrize("names", [{}, {"base": "rtx3090"}, {"base": "rtx3090", "target": "h200"}])
def test_one_gpu_is_refused_as_one_not_with_a_request_for_names(ms, held, names):
    with pytest.raises(BadInputError, match=rf"^a comparison needs measurements on two GPUs, and the inputs have "
                                            rf"measurements {re.escape(held)}: add the other GPU's") as info:
        compare(ms, **names)
    assert "--base" not in str(info.value)


def test_profiled_models_are_explained_from_their_predicted_bounds_on_the_base_gpu():
    profile = sources.from_result(recorded_result("deit_small_patch16_224"), "h200.json", gpu_table())
    ms = [profile,
          m("deit_small_patch16_224", "rtx3090", 4586.19, batch=1024), m("deit_small_patch16_224", "rtx4090", 7688.09, batch=1024),
          m("resnet50", "rtx3090", 3219.06, batch=1024), m("resnet50", "rtx4090", 4217.6, batch=1024),
          m("convnext_tiny", "rtx3090", 2000, batch=1024), m("convnext_tiny", "rtx4090", 2600, batch=1024)]
    c = compare(ms, base="rtx3090", target="rtx4090")
    deit = next(x for x in c.models if x.model == "deit_small_patch16_224")
    assert deit.dominant_category == "attention" or deit.dominant_category in ("linear", "convolution", "normalization")
    assert deit.shares_from == "predicted from h200"
    assert deit.shares["tensor"] > 0.5
    print(deit.explanation)
    assert deit.explanation.startswith("gains x1.68 against a median x1.31 (+28%): ")
    assert "of its RTX 3090 time is tensor-core bound (predicted from the H200 SXM 141GB profile), and the RTX 4090 has 2.33x " \
           "the RTX 3090's tensor throughput but 1.08x its bandwidth" in deit.explanation
    assert {a.key for a in c.by_category} >= {deit.dominant_category, "(no profile)"}
    # the profile's own prediction, independent of compare: the same number, and said
    from visprof.analysis.predict import speedup

    *_, expected = speedup(profile.result, "rtx3090", "rtx4090", batch_size=1024, precision="fp16")
    assert deit.predicted_speedup == pytest.approx(expected)
    assert deit.explanation.endswith(f"; its profile predicts x{expected:.2f}")
    assert abs(expected / 1.68 - 1) <= 0.10  # a transformer's gain is accounted for by its bounds


def test_notes_say_when_the_tables_batches_differ_or_the_profiles_precision_is_not_the_tables():
    """An fp32 table was explained by bf16 profiles (tensor-core rates), and rows of two batches were
    compared, each with no word, where two precisions between the GPUs had a note."""
    profile = sources.from_result(recorded_result("deit_small_patch16_224"), "h200.json", gpu_table())
    rows = [m("deit_small_patch16_224", "rtx3090", 4586.19, batch=1024), m("deit_small_patch16_224", "rtx4090", 7688.09, batch=1024),
            m("resnet50", "rtx3090", 3219.06, batch=1024), m("resnet50", "rtx4090", 4217.6, batch=512)]
    notes = compare([profile, *rows], base="rtx3090", target="rtx4090").notes
    assert ("1 model(s) compare numbers at two batch sizes (e.g. the RTX 3090 at 1024, the RTX 4090 at 512): their "
            "speed-ups carry the change of batch as well as the GPUs', and their predictions are at the RTX 3090's "
            "batch") in notes
    assert not any("another precision" in note for note in notes)  # bf16 profile, fp16 tables: one kind
    fp32 = [replace(row, precision="fp32") for row in rows]
    notes = compare([profile, *fp32], base="rtx3090", target="rtx4090").notes
    assert ("1 model(s) are predicted from profiles at another precision than the published numbers (e.g. profiled "
            "at bf16, the RTX 3090 at fp32): their predicted speed-ups and sentences are of bf16 runs; profile them at "
            "fp32 to predict the tables' runs") in notes, notes


def cpu_measurement(model: str) -> Measurement:
    """A recorded H200 profile as a CPU run of it would be recorded: host-clock times, no GPU."""
    result = replace(recorded_result(model), measurement="cpu", gpu=None)
    return sources.from_result(result, "cpu.json", gpu_table())


def test_a_cpu_result_is_no_profile_of_its_model_and_a_note_says_it_was_left_out():
    """A CPU result gave its model a dominant category (and a row of 'By dominant category') while
    the same row said 'no profile of it': its host-clock breakdown read as the GPU model's."""
    ms = [cpu_measurement("deit_small_patch16_224"),
          m("deit_small_patch16_224", "rtx3090", 4586.19, batch=1024), m("deit_small_patch16_224", "rtx4090", 7688.09, batch=1024),
          m("resnet50", "rtx3090", 3219.06, batch=1024), m("resnet50", "rtx4090", 4217.6, batch=1024)]
    c = compare(ms, base="rtx3090", target="rtx4090")
    deit = next(x for x in c.models if x.model == "deit_small_patch16_224")
    assert deit.profile is None and deit.dominant_category is None and deit.shares_from == ""
    assert "no profile of it at 224 px" in deit.explanation
    assert [a.key for a in c.by_category] == ["(no profile)"]
    assert c.notes[0] == "1 CPU result(s) left out: their times are host-clock, not a GPU's"


def test_cpu_results_are_not_a_gpu_to_compare_with():
    """A CPU result's throughput was a 'GPU' named CPU: one GPU's CSV and a CPU result made a pair."""
    ms = [cpu_measurement("resnet50"), m("resnet50", "rtx3090", 3219.06, batch=1024)]
    with pytest.raises(BadInputError, match=r"measurements on one only \(rtx3090\): .* \(1 CPU result\(s\) left out: "
                                            r"their times are host-clock, not a GPU's\)$"):
        compare(ms)


def test_an_explanation_says_when_the_bounds_do_not_account_for_the_gain():
    profile = sources.from_result(recorded_result("mobilevit_s"), "h200.json", gpu_table())
    # mobilevit_s published: 3090 -> 4090 gains more than its mostly memory-bound profile predicts
    ms = [profile, m("mobilevit_s", "rtx3090", 3000, batch=1024, img=256), m("mobilevit_s", "rtx4090", 3000 * 1.9, batch=1024, img=256),
          m("resnet50", "rtx3090", 3219.06, batch=1024), m("resnet50", "rtx4090", 4217.6, batch=1024)]
    c = compare(ms, base="rtx3090", target="rtx4090")
    mv = next(x for x in c.models if x.model == "mobilevit_s")
    assert mv.predicted_speedup is not None and mv.predicted_speedup < 1.9 / 1.1
    assert f"its profile predicts only x{mv.predicted_speedup:.2f}" in mv.explanation
    assert "so the bounds under-state its speed-up" in mv.explanation
    # its band (x1.16-1.45 here) is wide and the measured x1.9 outside it: quoted, not offered as the reason
    lo, hi = mv.predicted_band
    assert hi / lo > 1.2 and not lo <= 1.9 <= hi
    assert f"(x{lo:.2f}-{hi:.2f} by how its kernels far below their roof scale)" in mv.explanation
    assert mv.row()["predicted_low"] == lo and mv.row()["predicted_high"] == hi
    inside = [profile, m("mobilevit_s", "rtx3090", 3000, batch=1024, img=256),
              m("mobilevit_s", "rtx4090", 3000 * hi * 0.99, batch=1024, img=256), *ms[3:]]
    within = next(x for x in compare(inside, base="rtx3090", target="rtx4090").models if x.model == "mobilevit_s")
    assert within.speedup / within.predicted_speedup - 1 > 0.10  # off the prediction, inside the band
    assert "the measured gain is within that range" in within.explanation and "under-state" not in within.explanation
    # memory-bound on the 3090: the sentence names the L2 the predictor credits (72 MB against 6)
    assert "is memory-bandwidth bound" in mv.explanation and "less than its 2.33x tensor throughput, 12.0x its L2" in mv.explanation
    slow = [m("mobilevit_s", "rtx3090", 3000, batch=1024, img=256), m("mobilevit_s", "rtx4090", 3000 * 1.01, batch=1024, img=256)]
    c = compare([profile, *slow, *ms[3:]], base="rtx3090", target="rtx4090")
    mv = next(x for x in c.models if x.model == "mobilevit_s")
    assert "so the bounds over-state its speed-up" in mv.explanation
    assert not any("profiled model" in n for n in c.notes)  # one profiled model: no agreement summary


def test_a_slower_target_is_not_said_to_gain_nor_to_gain_from_fewer_sms():
    """4090 -> 3090 (a downgrade): every model "gains x0.7-0.9", and one whose bounds under-state it
    "gains from the RTX 3090's 0.43x SMs x clock"."""
    profile = sources.from_result(recorded_result("mobilevit_s"), "h200.json", gpu_table())
    ms = [profile, m("mobilevit_s", "rtx4090", 3000, batch=1024, img=256), m("mobilevit_s", "rtx3090", 3000 * 0.9, batch=1024, img=256),
          m("resnet50", "rtx4090", 4217.6, batch=1024), m("resnet50", "rtx3090", 3219.06, batch=1024)]
    c = compare(ms, base="rtx4090", target="rtx3090")
    mv = next(x for x in c.models if x.model == "mobilevit_s")
    assert mv.explanation.startswith("runs at x0.90 against a median x0.83")
    assert "under-state its speed-up" in mv.explanation and "SMs x clock" not in mv.explanation
    assert not any(x.explanation.startswith("gains x0.") for x in c.models)


def test_gpu_time_sentences_leave_out_the_launch_share_that_gpu_time_excludes():
    profile = sources.from_result(recorded_result("mobilevit_s"), "h200.json", gpu_table())
    end_to_end = on_base_and_target(profile, profile, gpu_table().get("h200"),
                                    gpu_table().get("rtx4090"), gpu_table())
    busy = on_base_and_target(profile, profile, gpu_table().get("h200"),
                              gpu_table().get("rtx4090"), gpu_table(), gpu_time=True)
    assert end_to_end.shares.get("launch", 0) > 0.01  # there is some to leave out
    assert "launch" not in busy.shares and sum(busy.shares.values()) == pytest.approx(1.0)
    kernel = sum(v for b, v in end_to_end.shares.items() if b != "launch")
    assert busy.shares["memory"] == pytest.approx(end_to_end.shares["memory"] / kernel)


def test_the_text_explains_the_models_its_table_shows_at_both_ends():
    """"Why" took the first 2 x top profiled models from the most sensitive end: the least sensitive
    (the group-norm models that lose on the 5090) got no sentence, and models not in the table did."""
    from visprof.report.compare_text import format_comparison

    table = gpu_table()
    profiles = [sources.from_result(recorded_result(name), "h200.json", table)
                for name in ("deit_small_patch16_224", "mobilevit_s", "resnet50")]
    gains = {"deit_small_patch16_224": (224, 2.0), "mobilevit_s": (256, 1.1), "resnet50": (224, 1.5),
             "vit_tiny_patch16_224": (224, 1.7), "vit_small_patch16_224": (224, 1.6)}
    ms = [*profiles]
    for name, (img, gain) in gains.items():
        ms += [m(name, "rtx3090", 1000, batch=1024, img=img), m(name, "rtx4090", 1000 * gain, batch=1024, img=img)]
    text = format_comparison(compare(ms, base="rtx3090", target="rtx4090"), top=1)
    why = text.split("Why (profiled models)")[1].split("\n\n")[0]
    explained = [line.split(" @")[0].strip() for line in why.strip().splitlines()]
    assert explained == ["deit_small_patch16_224", "mobilevit_s"]  # the top 1 and the bottom 1; resnet50 not shown


def test_load_folders_csvs_and_named_gpus(tmp_path):
    folder = tmp_path / "results"
    write_results(folder)
    (folder / "notes.json").write_text('{"not": "a result"}')
    loaded = sources.load([folder, CSV_3090, f"{CSV_4090}@RTX 4090"])
    profiles = loaded.profiles
    assert len(profiles) == 4 and {p.gpu for p in profiles} == {"h200"}
    assert len(loaded.skipped) == 1 and "notes.json" in loaded.skipped[0]
    refs = [x for x in loaded.measurements if x.kind == "reference"]
    assert {x.gpu for x in refs} == {"rtx3090", "rtx4090"} and len(refs) == 120
    assert all(x.precision == "fp16" for x in refs)
    # shown as counts (a store's thousands of measurements printed megabytes in a notebook)
    assert repr(loaded) == "<Loaded 124 measurements (4 profiles) from 3 input(s): h200 4, rtx3090 60, rtx4090 60; 1 file(s) skipped>"
    c = compare(loaded.measurements, base="rtx3090", target="rtx4090")
    assert repr(c) == (f"<Comparison rtx3090 -> rtx4090: {len(c.models)} models, median speed-up x{c.median_speedup:.3f}; "
                       f"{c.prediction.models} profiled, predicted at Spearman {c.prediction.spearman:.2f}, median error "
                       f"{c.prediction.median_abs_error:.1%}; {len(c.notes)} note(s)>")
    assert len(c.models) == 60 and c.prediction.models == 4
    # a notebook's table: the --csv rows
    frame = c.dataframe()
    assert len(frame) == 60 and list(frame.columns[:3]) == ["model", "img_size", "family"]
    assert frame["speedup"].tolist() == [m.speedup for m in c.models]
    assert frame["predicted_speedup"].notna().sum() == 4
    # one line each, where the dataclasses' reprs nested a profile's five lines in 40 of fields
    deit = next(mc for mc in c.models if mc.model == "deit_small_patch16_224")
    assert repr(deit) == (f"<ModelComparison deit_small_patch16_224 @224 (deit): x{deit.speedup:.3f} rtx3090 -> rtx4090, "
                          f"sensitivity {deit.sensitivity:+.1%}, predicted x{deit.predicted_speedup:.3f} (band "
                          f"x{deit.predicted_band[0]:.3f}-x{deit.predicted_band[1]:.3f}) from its profile>")
    assert repr(deit.base) == (f"<Measurement deit_small_patch16_224 @224 on rtx3090: {deit.base.samples_per_s:,.1f} samples/s "
                               f"at batch {deit.base.batch_size}, fp16; reference from {CSV_3090.name}>")
    assert repr(deit.profile) == (f"<Measurement deit_small_patch16_224 @224 on h200: {deit.profile.samples_per_s:,.1f} "
                                  f"samples/s at batch 64, bf16; profile from {deit.profile.source}>")
    assert "\n" not in repr(deit) + repr(deit.profile)


def test_a_dataframe_without_pandas_says_how_to_install_it(tmp_path, monkeypatch):
    from visprof.base.errors import VisprofError
    from visprof.store.result_store import open_store

    loaded = sources.load([CSV_3090, CSV_4090])
    c = compare(loaded.measurements, base="rtx3090", target="rtx4090")
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without it gives `import pandas`
    with pytest.raises(VisprofError, match=r'^Comparison.dataframe\(\) needs pandas: pip install "visprof\[pandas\]"$'):
        c.dataframe()
    with open_store(tmp_path / "s.db", write=True) as store:
        with pytest.raises(VisprofError, match=r"^store.dataframe\(\) needs pandas"):
            store.dataframe()
        with pytest.raises(VisprofError, match=r"^store.references_dataframe\(\) needs pandas"):
            store.references_dataframe()


def test_a_folder_holds_gzipped_results_too_and_one_path_is_not_its_characters(tmp_path):
    """profile --json r.json.gz writes gzip; in a folder such files were skipped without a word.
    load("folder/") with a str walked its characters ("no such file or folder: f")."""
    import gzip
    import shutil

    plain, zipped = tmp_path / "plain", tmp_path / "zipped"
    write_results(plain)
    zipped.mkdir()
    for file in plain.glob("*.json"):
        with open(file, "rb") as src, gzip.open(zipped / (file.name + ".gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
    assert len(sources.load([plain]).profiles) == len(sources.load(str(zipped)).profiles) == 4


def test_load_errors_are_one_line(tmp_path):
    with pytest.raises(BadInputError, match="no such file or folder"):
        sources.load([tmp_path / "missing.json"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInputError, match="no visprof profile results"):
        sources.load([tmp_path / "empty"])
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(BadInputError, match="not a visprof profile result"):
        sources.load([bad])
    odd = tmp_path / "benchmark-infer-amp-nchw-pt240-cu124-mygpu.csv"
    odd.write_text(CSV_3090.read_text())
    with pytest.raises(BadInputError, match=r"GPU 'mygpu' \(from the file name\) is not in the GPU spec table; name it as FILE@GPU"):
        sources.load([odd])
    assert len(sources.load([f"{odd}@rtx3090"]).measurements) == 60


def test_a_document_of_another_kind_is_named_once_as_not_a_result(tmp_path):
    trace = tmp_path / "trace.json"
    trace.write_text('{"schema": "visprof.trace/1"}')
    with pytest.raises(NotAResultError) as caught:
        sources.load([trace])
    assert str(caught.value) == (f"result file {trace}: not a visprof profile result (schema='visprof.trace/1'): it is a "
                                 "trace recording (session.save; visprof.CapturedTrace.load reads it)")
    damaged = tmp_path / "damaged.json"  # a result, but a field does not fit: said as such, with the file
    damaged.write_text('{"schema": "visprof.profile/1", "model": 3}')
    with pytest.raises(BadInputError) as caught:
        sources.load([damaged])
    assert not isinstance(caught.value, NotAResultError)
    assert str(caught.value).startswith(f"{damaged}: not a visprof profile result (result file {damaged}: ")


def test_store_round_trip_of_reference_rows(tmp_path):
    store_path = tmp_path / "s.db"
    rows = read_benchmark_csv(CSV_4090, "NVIDIA GeForce RTX 4090").rows
    with open_store(store_path, write=True) as store:
        assert store.add_references(rows) == 60
        assert store.add_references(rows) == 0  # same source, GPU, model, size, batch, precision: kept
    with open_store(store_path) as store:
        back = store.references(model="resnet50")
        assert len(back) == 1 and store.references(gpu_name="*3090*") == []
        assert len(store.references(gpu_name="*4090")) == 60
    loaded = sources.load([store_path])
    assert len(loaded.measurements) == 60 and loaded.measurements[0].gpu == "rtx4090"


def test_results_of_a_store_are_loaded_with_their_profiles(tmp_path):
    from visprof.sweep.plan import Cell

    path = tmp_path / "store.db"
    doc = recorded_result("resnet50").to_dict()
    with open_store(path, write=True) as store:
        assert store.add_result(Cell(model="resnet50", batch_size=64), doc) is not None
    with open_store(path) as store:
        results = list(store.results())
        assert [r.model.name for r in results] == ["resnet50"] and results[0].roofline.groups
        assert list(store.results(model="vit*")) == [] and store.references() == []
    profiles = sources.load([path]).profiles
    assert len(profiles) == 1 and profiles[0].gpu == "h200" and profiles[0].result.roofline.groups


def test_store_path_errors(tmp_path):
    with pytest.raises(BadInputError):
        open_store(tmp_path / "none.db")
    text = tmp_path / "text.db"
    text.write_text("hello")
    with pytest.raises(BadInputError):
        open_store(text, write=True)
    with pytest.raises(BadInputError, match="does not exist"):
        open_store(tmp_path / "no" / "dir.db", write=True)


def test_the_agreement_of_profiled_predictions_is_a_note(tmp_path):
    folder = tmp_path / "results"
    write_results(folder)
    c = compare(sources.load([folder, CSV_3090, CSV_4090]).measurements, base="rtx3090", target="rtx4090")
    profiled = [x for x in c.models if x.predicted_speedup]
    assert len(profiled) == 4
    errors = sorted(abs(x.predicted_speedup / x.speedup - 1) for x in profiled)
    note = next(n for n in c.notes if "profiled model" in n)
    assert note.startswith("4 profiled model(s): their profiles predict the speed-up with median error "
                           f"{(errors[1] + errors[2]) / 2:.1%}")
    assert f"within 10% for {sum(e <= 0.10 for e in errors)} of them" in note


def test_agreement_ranks_the_models_the_spec_ratios_decide_on_their_own():
    from types import SimpleNamespace

    from visprof.analysis.comparison import DECIDED_BAND, PredictionAgreement, is_decided

    assert is_decided((1.40, 1.40 * (1 + DECIDED_BAND))) and not is_decided((1.40, 1.40 * (1 + DECIDED_BAND) + 0.01))
    assert not is_decided(None)
    narrow = [SimpleNamespace(predicted_speedup=p, speedup=s, predicted_band=(p * 0.98, p * 1.02))
              for p, s in [(1.2, 1.25), (1.4, 1.5), (1.6, 1.7), (1.8, 1.9)]]
    wide = [SimpleNamespace(predicted_speedup=p, speedup=s, predicted_band=(p * 0.8, p * 1.3))
            for p, s in [(1.3, 1.9), (1.7, 1.2), (1.5, 1.3)]]
    a = PredictionAgreement.of(narrow + wide)
    assert a.models == 7 and a.decided == 4 and a.decided_spearman == pytest.approx(1.0) and a.spearman < 0.5
    assert "on the 4 whose band is within 10% either way (the spec ratios decide them), Spearman 1.00" in a.sentence()
    assert PredictionAgreement.of(narrow[:2] + wide).decided_spearman is None  # two decided: nothing to rank


def test_numbers_of_two_torch_versions_are_said_so(tmp_path):
    same = [m("resnet50", "rtx3090", 100, torch="2.4.0", cuda="12.4"),
            m("resnet50", "rtx4090", 150, torch="2.4.0", cuda="12.4")]
    assert compare(same).software is None
    unknown = [m("resnet50", "rtx3090", 100), m("resnet50", "rtx4090", 150, torch="2.9.1", cuda="12.8")]
    assert compare(unknown).software is None  # one side unknown: nothing to say
    cuda_only = [m("resnet50", "rtx4090", 100, torch="2.9.1", cuda="12.8"),
                 m("resnet50", "rtx5090", 150, torch="2.9.1", cuda="13.0")]
    assert compare(cuda_only).software is None  # a new GPU needs a newer CUDA
    # most of each side decides: one odd row on the target does not
    mixed = [m(name, gpu, 100 + i, torch=torch, cuda=cuda) for i, (name, gpu, torch, cuda) in enumerate([
        ("resnet50", "rtx3090", "2.4.0", "12.4"), ("resnet50", "rtx5090", "2.9.1", "13.0"),
        ("vit_base_patch16_224", "rtx3090", "2.4.0", "12.4"), ("vit_base_patch16_224", "rtx5090", "2.9.1", "13.0"),
        ("convnext_tiny", "rtx3090", "2.4.0", "12.4"), ("convnext_tiny", "rtx5090", "2.4.0", "12.4")])]
    c = compare(mixed)
    assert c.software.startswith("the RTX 3090 numbers were measured under torch 2.4.0, CUDA 12.4 and the "
                                 "RTX 5090's under torch 2.9.1, CUDA 13.0: ")
    assert c.software in c.notes
    # and the odd row is said: the target's rows mix two versions
    assert c.software.endswith("; the RTX 5090 rows mix PyTorch versions (2 under torch 2.9.1, 1 under torch 2.4.0): "
                               "each model's row is the one under the other GPU's version where there is one, so the "
                               "speed-ups mix software versions; give one table per GPU")
    one_side = [m(name, gpu, 100 + i, torch=torch) for i, (name, gpu, torch) in enumerate([
        ("resnet50", "rtx4090", "2.9.1"), ("resnet50", "rtx5090", "2.9.1"),
        ("convnext_tiny", "rtx4090", "2.4.0"), ("convnext_tiny", "rtx5090", "2.9.1"),
        ("vit_base_patch16_224", "rtx4090", "2.9.1"), ("vit_base_patch16_224", "rtx5090", "2.9.1")])]
    assert compare(one_side).software.startswith("the RTX 4090 rows mix PyTorch versions (2 under torch 2.9.1, "
                                                 "1 under torch 2.4.0)")


def test_timm_csvs_and_profiles_carry_their_software():
    loaded = sources.load([CSV_3090, f"{CSV_4090}@RTX 4090"])
    assert {x.software for x in loaded.measurements} == {"torch 2.4.0, CUDA 12.4"}
    h200 = ProfileResult.load(Path(__file__).resolve().parents[1] / "data" / "h200-result-vit_base_patch16_224.json")
    profile = sources.from_result(h200, "test", gpu_table())
    assert (profile.torch, profile.cuda, profile.software) == ("2.11.0", "13.0", "torch 2.11.0, CUDA 13.0")
    assert sources.versions({"cuda": "13.0"}) == {"torch": None, "cuda": "13.0"}
    assert m("resnet50", "a", 1, cuda="13.0").software is None


def test_a_profiled_model_keeps_the_base_throughput_its_profile_predicts():
    from visprof.analysis.predict import predict_result

    table = gpu_table()
    profile = sources.from_result(recorded_result("deit_small_patch16_224"), "h200.json", table)
    ms = [profile, m("deit_small_patch16_224", "rtx3090", 4586.19, batch=1024),
          m("deit_small_patch16_224", "rtx4090", 7688.09, batch=1024),
          m("resnet50", "rtx3090", 3219.06, batch=1024), m("resnet50", "rtx4090", 4217.6, batch=1024)]
    c = compare(ms, base="rtx3090", target="rtx4090")
    deit = next(x for x in c.models if x.model == "deit_small_patch16_224")
    on_base = predict_result(profile.result, table.get("rtx3090"), batch_size=1024, table=table, precision="fp16")
    assert deit.predicted_base_samples_per_s == pytest.approx(on_base.samples_per_s, rel=1e-12)
    assert deit.row()["predicted_base_samples_per_s"] == deit.predicted_base_samples_per_s
    resnet = next(x for x in c.models if x.model == "resnet50")
    assert resnet.predicted_base_samples_per_s is None and resnet.row()["predicted_base_samples_per_s"] is None


@pytest.mark.parametrize("bound, base, target, said", [
    ("memory", "rtx3090", "rtx4090", "the RTX 4090 has 1.08x the RTX 3090's bandwidth, less than its 2.33x tensor throughput"),
    ("memory", "rtx4090", "rtx5090", "the RTX 5090 has 1.78x the RTX 4090's bandwidth, more than its 1.27x tensor throughput"),
    ("tensor", "rtx3090", "rtx4090", "the RTX 4090 has 2.33x the RTX 3090's tensor throughput but 1.08x its bandwidth"),
    ("tensor", "rtx4090", "rtx5090", "the RTX 5090 has 1.27x the RTX 4090's tensor throughput, less than its 1.78x bandwidth"),
])
def test_an_explanation_says_which_ratio_is_the_larger(bound, base, target, said):
    """The 5090's bandwidth is its largest gain over the 4090: "only 1.78x" misread it (issue 25)."""
    from visprof.analysis.compare_explain import explain
    from visprof.analysis.comparison import ModelComparison

    table = gpu_table()
    b, t = table.get(base), table.get(target)
    mc = ModelComparison(model="x", img_size=224, family="f", base=m("x", base, 100.0), target=m("x", target, 150.0),
                         speedup=1.5, shares={bound: 0.8, "launch": 0.05}, shares_from="predicted from h200")
    names = [g.name.replace("NVIDIA ", "").replace("GeForce ", "") for g in (b, t)]
    text = explain(mc, 1.4, b, t, names[0], names[1], "fp16")
    assert said in text, text


def deit_between(base: str, target: str, precision: str, measured: float):
    """deit_small's sentence between two GPUs from its bf16 H200 profile, with a second model for the median."""
    profile = sources.from_result(recorded_result("deit_small_patch16_224"), "h200.json", gpu_table())
    ms = [profile, m("deit_small_patch16_224", base, 1000.0, precision=precision),
          m("deit_small_patch16_224", target, 1000.0 * measured, precision=precision),
          m("resnet50", base, 1000.0, precision=precision), m("resnet50", target, 1000.0 * measured, precision=precision)]
    return next(x for x in compare(ms, base=base, target=target).models if x.model == "deit_small_patch16_224")


@pytest.mark.parametrize("base, target, precision, measured, said", [
    # an fp32 table: compare predicts the bf16 profile at bf16 (its note says so), so at the bf16 tensor peaks,
    # 165.2 / 71 TFLOP/s; the FP32 ratio (82.6 / 35.6 = 2.32x) is not what its tensor-core time scaled by
    ("rtx3090", "rtx4090", "fp32", 1.33, "70% of its RTX 3090 time is tensor-core bound (predicted from the H200 SXM "
     "141GB profile), and the RTX 4090 has 2.33x the RTX 3090's bf16 tensor throughput but 1.08x its bandwidth; "
     "its profile predicts x2.05, so the bounds over-state its speed-up: its kernels reach less of the RTX 4090's "
     "peak than the profile's GPU suggests"),
    # the T4 has no bf16 tensor rate: the predictor runs that work at its FP32 peak, 8.1 / 121 TFLOP/s of the L4's
    ("l4", "t4", "bf16", 0.5, "67% of its L4 time is memory-bandwidth bound (predicted from the H200 SXM 141GB "
     "profile), and the T4 has 1.07x the L4's bandwidth, more than its 0.07x bf16 throughput (no bf16 tensor cores: "
     "its FP32 units run that work), 0.08x its L2; its profile predicts only x0.21, so the bounds under-state its speed-up"),
    # the other way the T4's FP32 units ran the bf16 work that the L4's tensor cores run: 121 / 8.1 TFLOP/s
    ("t4", "l4", "bf16", 5.0, "84% of its T4 time is other-compute bound (predicted from the H200 SXM 141GB "
     "profile), and the L4 has 3.74x the T4's FP32 throughput and 14.94x its bf16 throughput (the T4 has no bf16 "
     "tensor cores: its FP32 units ran that work), 0.94x its bandwidth; its profile predicts x4.83"),
])
def test_an_explanation_names_the_ratios_its_prediction_used_and_ends_with_it(base, target, precision, measured, said):
    """An fp32 table, or a GPU with no tensor rate at the table's precision, had its sentence stop at the
    bounds: no spec ratios and no prediction, though the CSV had it (3090 -> 4090 at fp32: x2.00 predicted
    against x1.33 measured, with no word of it). From a user's review."""
    deit = deit_between(base, target, precision, measured)
    assert deit.explanation.endswith(said), deit.explanation
    assert re.search(rf"; its profile predicts (only )?x{deit.predicted_speedup:.2f}", deit.explanation)


@pytest.mark.parametrize("model, img, base, target, said", [
    # 132 SMs x 1980 MHz against 108 x 1410; the FP32 TFLOP/s ratio, 67 / 19.5 = 3.44x, had been said
    ("resnet50", 224, "a100-sxm4-80gb", "h100-sxm",
     "kernels below their roof gain from the H100 SXM5 80GB's 1.72x SMs x clock as well"),
    # 58 x 2040 against 40 x 1590; FP32's 30.3 / 8.1 = 3.74x had been said
    ("mobilevit_s", 256, "t4", "l4", "kernels below their roof gain from the L4's 1.86x SMs x clock as well"),
])
def test_the_sms_x_clock_a_sentence_names_is_the_predictors(model, img, base, target, said):
    """The under-stated gain of a memory-bound model named the FP32 TFLOP/s ratio as "SMs x clock",
    2x the SMs x clock of A100 -> H100 that the predictor scales rate-limited time by."""
    from visprof.analysis.group_scaling import rate_ratio

    profile = sources.from_result(recorded_result(model), "h200.json", gpu_table())
    ms = [profile, m(model, base, 1000.0, img=img, precision="bf16"), m(model, target, 3000.0, img=img, precision="bf16"),
          m("vit_base_patch16_224", base, 1000.0, precision="bf16"), m("vit_base_patch16_224", target, 3000.0, precision="bf16")]
    explained = next(x for x in compare(ms, base=base, target=target).models if x.model == model)
    assert explained.shares["memory"] > 0.5
    assert explained.explanation.endswith(said), explained.explanation
    sms_x_clock = 1 / rate_ratio(gpu_table().get(base), gpu_table().get(target), "throughput")
    assert f"{sms_x_clock:.2f}x SMs x clock" in said


def test_numbers_of_two_precisions_are_said_so_and_fp32_quotes_no_tensor_ratio():
    """A user's fp32 table against timm's amp 5090 table: no note said the speed-ups carry the
    change of precision, and the spec line and sentences quoted the fp16 tensor ratio."""
    from visprof.report.compare_text import format_comparison

    ms = [m(name, "l4", 100.0 * (i + 1), precision="fp32") for i, name in enumerate(["resnet50", "vit_base_patch16_224"])]
    ms += [m(name, "rtx5090", 900.0 * (i + 1), precision="fp16") for i, name in enumerate(["resnet50", "vit_base_patch16_224"])]
    c = compare(ms, "l4", "rtx5090")
    assert ("2 model(s) compare numbers of two precisions (e.g. the L4 at fp32, the RTX 5090 at "
            "fp16): their speed-ups carry the change of precision as well as the GPUs'") in c.notes
    text = format_comparison(c)
    assert "spec ratios RTX 5090 / L4: FP32 x" in text and "tensor (" not in text
    same = compare([m("resnet50", "l4", 100.0), m("resnet50", "rtx5090", 300.0)], "l4", "rtx5090")
    assert not any("two precisions" in n for n in same.notes)
    assert "tensor (fp16) x" in format_comparison(same)


def test_published_rows_of_one_model_that_disagree_are_said_so():
    """Two user tables of one GPU, resnet50 at 3000 and 300 samples/s: the last loaded was compared
    (x21 where the other says x2.1) with no word."""
    import dataclasses

    ms = [dataclasses.replace(m("resnet50", "rtx4090", 3000.0), source="run1.csv"),
          dataclasses.replace(m("resnet50", "rtx4090", 300.0), source="run2.csv"),
          m("resnet50", "rtx5090", 6356.0), m("vit_base_patch16_224", "rtx4090", 1000.0),
          m("vit_base_patch16_224", "rtx4090", 1020.0), m("vit_base_patch16_224", "rtx5090", 1500.0)]
    c = compare(ms, "rtx4090", "rtx5090")
    [note] = [n for n in c.notes if "agree in precision, software, layout and batch but not in throughput" in n]
    assert note.startswith("1 model(s) have published rows on one GPU")  # vit's rows are within 5% of each other
    assert "e.g. resnet50 @224 on the RTX 4090: 300 samples/s compared, 3000 left out, from run1.csv" in note
    apart = [m("resnet50", "rtx4090", 3000.0, batch=1024), m("resnet50", "rtx4090", 300.0, batch=64),
             m("resnet50", "rtx5090", 6356.0, batch=1024)]  # two batches: told apart, nothing to say
    assert not any("not in throughput" in n for n in compare(apart, "rtx4090", "rtx5090").notes)


def test_a_row_under_another_pretrained_tag_left_out_is_counted():
    """resnet50.a1_in1k and resnet50.tv_in1k on the 3090, within 5% of each other: one pair was compared
    and the other tag's row disappeared, with no count and no note."""
    ms = [m("resnet50.a1_in1k", "rtx3090", 3000.0), m("resnet50.tv_in1k", "rtx3090", 3100.0),
          m("resnet50", "rtx4090", 4000.0)]
    c = compare(ms, "rtx3090", "rtx4090")
    [note] = [n for n in c.notes if "under another pretrained tag left out" in n]
    assert note.startswith("1 row(s) of a compared architecture") and "resnet50.a1_in1k @224 on the RTX 3090" in note
    assert not any("pretrained tag" in n for n in compare(ms[1:], "rtx3090", "rtx4090").notes)  # one row: nothing left


def _profiled_pair(base_rates, target_rates):
    """Two recorded H200 profiles with published numbers on the 3090 and 4090 (fp16, batch 256)."""
    table = gpu_table()
    names = ["deit_small_patch16_224", "resnet50"]
    profiles = [sources.from_result(recorded_result(n), f"{n}.json", table) for n in names]
    refs = [m(n, "rtx3090", b) for n, b in zip(names, base_rates)] + \
        [m(n, "rtx4090", t) for n, t in zip(names, target_rates)]
    return compare([*profiles, *refs], base="rtx3090", target="rtx4090", table=table)


def test_tables_that_cannot_be_right_are_said_so():
    """A hunt's tables: one file imported for both GPUs (every speed-up x1.000), and a 4090 table in
    ms per batch read as samples/s (x0.09 where the spec ratios say x1.9): compared without a word."""
    plausible = _profiled_pair([1000.0, 2000.0], [1400.0, 2700.0])
    assert plausible.implausible is None
    same = _profiled_pair([1000.0, 2000.0], [1000.0, 2000.0])
    assert "exactly x1.000" in same.implausible and same.implausible in same.notes
    predicted = sorted(mc.predicted_speedup for mc in plausible.models)
    assert all(p > 1.2 for p in predicted)
    ms_per_batch = _profiled_pair([1000.0, 2000.0], [256 / 1400.0 * 1e3, 256 / 2700.0 * 1e3])
    assert "check the tables' units" in ms_per_batch.implausible


def test_a_time_basis_it_does_not_know_is_refused_not_run_end_to_end_under_its_name():
    """compare(..., time="GPU") divided end-to-end throughput and said time "GPU" (the CLI offers only its two)."""
    ms = [m("resnet50", "rtx3090", 100), m("resnet50", "rtx4090", 120)]
    for wrong in ("GPU", "busy", None):
        with pytest.raises(BadInputError, match=rf"^time must be one of 'end-to-end', 'gpu', got {re.escape(repr(wrong))}$"):
            compare(ms, time=wrong)
    assert compare(ms, time="end-to-end").time == "end-to-end"


def test_what_is_not_a_list_of_measurements_is_refused_in_one_line(tmp_path):
    """sources.load's Loaded, a path or ProfileResults had raised a TypeError or an AttributeError from inside."""
    ms = [m("resnet50", "rtx3090", 100), m("resnet50", "rtx4090", 120)]
    loaded = sources.Loaded(measurements=ms)
    said = r"^compare takes a list of measurements \(sources\.load\(paths\)\.measurements\), got "
    for given, what in ((loaded, "a Loaded: pass its .measurements"), ("results.db", "a str"), (None, "a NoneType"),
                        ([recorded_result("deit_small_patch16_224")], "a ProfileResult in the list")):
        with pytest.raises(BadInputError, match=said + re.escape(what) + "$"):
            compare(given)
    # any iterable of measurements is a list of them
    assert compare(tuple(ms)).models[0].speedup == compare(x for x in ms).models[0].speedup == pytest.approx(1.2)


def test_an_l2_ratio_below_ten_keeps_two_decimals():
    """The RTX 4090 -> RTX 3090 L2 ratio, 6 / 72 MB, had printed as 0.1x; 1.25 as 1.2x."""
    from visprof.analysis.compare_explain import l2_ratio_text
    from visprof.report.compare_text import format_comparison

    assert [l2_ratio_text(r) for r in (6 / 72, 1.25, 12.0)] == ["0.08", "1.25", "12.0"]
    text = format_comparison(compare([m("resnet50", "rtx4090", 3000.0), m("resnet50", "rtx3090", 2000.0)],
                                     "rtx4090", "rtx3090"))
    assert "L2 x0.08" in text.splitlines()[1]
