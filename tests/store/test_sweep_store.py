"""The results store on a recorded H200 result: schema, flattening, identity (never
overwrite), resume states, failures, references, the DataFrame, exports and bad stores."""
import copy
import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest

from visprof.base.errors import BadInputError
from visprof.result import ProfileResult
from visprof.store.export import export_store
from visprof.sweep.plan import SweepPlan
from visprof.store.schema import SCHEMA_VERSION
from visprof.store.result_store import Reference, ResultStore, StoreBusyError, open_store
from visprof.store.timm_format import TIMM_COLUMNS, reference_from_timm_row
from visprof.store.versions import SoftwareVersions

DATA = Path(__file__).resolve().parents[1] / "data"
H200_UUID = "d03416d0-161e-7e43-c8e8-3a46f2386a3c"


@pytest.fixture(scope="module")
def vit_doc():
    return json.loads((DATA / "h200-result-vit_base_patch16_224.json").read_text())


@pytest.fixture
def cell():
    return SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0]


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "results.db", write=True) as s:
        yield s


def versions_of(doc):
    return SoftwareVersions.of_result(doc)


def test_a_new_store_has_its_schema_version_and_wal(store):
    assert store.schema_version == SCHEMA_VERSION == 1
    assert store.meta()["created_by"].startswith("visprof ")
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"results", "result_categories", "result_memory", "failures", "runs", "references", "meta"} <= {
        row[0] for row in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_a_store_shows_its_path_and_counts(store, cell, vit_doc, tmp_path):
    path = tmp_path / "results.db"
    assert repr(store) == f"<ResultStore {path}: 0 results, 0 failures, 0 references, 0 runs>"
    store.add_result(cell, vit_doc, batch_sizes_tried=[64], wall_s=3.2, attempts=1, host="h200")
    assert repr(store) == f"<ResultStore {path}: 1 results, 0 failures, 0 references, 0 runs>"
    with open_store(path) as reader:
        assert repr(reader) == f"<ResultStore {path} (read-only): 1 results, 0 failures, 0 references, 0 runs>"
    assert repr(reader) == f"<ResultStore {path}: closed>"


def test_a_result_is_flattened_and_kept_whole(store, cell, vit_doc):
    row_id = store.add_result(cell, vit_doc, batch_sizes_tried=[64], wall_s=3.2, attempts=1, host="h200")
    assert row_id is not None
    (row,) = store.rows()
    assert row["model"] == "vit_base_patch16_224" and row["cell_key"] == cell.key
    assert row["gpu_name"] == "NVIDIA H200" and row["gpu_uuid"] == H200_UUID and row["device_kind"] == "gpu"
    assert (row["visprof_version"], row["torch_version"], row["timm_version"], row["cuda_version"]) == (
        "0.1.0", "2.11.0+cu130", "1.0.29", "13.0")
    assert row["latency_median_ms"] == pytest.approx(8.070272)
    assert row["latency_p90_ms"] == pytest.approx(8.1840128)
    assert row["samples_per_s"] == pytest.approx(7930.339894367873)
    assert row["idle_ms"] == pytest.approx(0.635137499999999)
    assert row["peak_bytes"] == 729263008 and row["alloc_count"] == 338
    assert row["max_memory_allocated_bytes"] == 729656320
    assert row["reserved_peak_bytes"] is None  # not in this (older) result: NULL, not an error
    assert row["batch_size"] == 64 and json.loads(row["batch_sizes_tried"]) == [64]
    assert (row["img_height"], row["img_width"]) == (224, 224)
    assert row["flops"] == pytest.approx(2248170012672.0)
    assert row["sm_clock_mhz_median"] == 1965 and row["power_w_max"] == pytest.approx(689.587)
    assert row["energy_j"] == pytest.approx(918.765) and row["throttle_reasons"] == "sw_power_cap"
    assert row["checks_failed"] == 0 and row["memory_wall_s"] == pytest.approx(10.660339703999995)
    assert row["wall_s"] == 3.2 and row["host"] == "h200"
    # the whole result comes back exactly
    (result,) = store.results()
    assert result.to_dict() == ProfileResult.from_dict(vit_doc).to_dict()
    # categories and memory, row by row
    cats = store.category_rows()
    assert [(c["category"], c["subcategory"]) for c in cats] == [
        (c["category"], c["subcategory"] or "") for c in vit_doc["categories"]]
    assert sum(c["share"] for c in cats) == pytest.approx(1.0, abs=1e-6)
    memory = dict(store.conn.execute("SELECT key, allocated_at_peak FROM result_memory").fetchall())
    assert memory == vit_doc["memory"]["by_category_at_peak"] | {
        k: None for k in vit_doc["memory"]["transient_peak_by_category"] if k not in vit_doc["memory"]["by_category_at_peak"]}


def test_rows_are_never_overwritten_and_new_versions_make_new_rows(store, cell, vit_doc):
    assert store.add_result(cell, vit_doc) is not None
    changed = copy.deepcopy(vit_doc)
    changed["timing"]["latency_ms"]["median"] = 99.0
    assert store.add_result(cell, changed) is None  # same cell, GPU and versions: the first row stays
    assert [r["latency_median_ms"] for r in store.rows()] == [pytest.approx(8.070272)]
    newer = copy.deepcopy(changed)
    newer["environment"]["torch"] = "2.12.0+cu130"
    assert store.add_result(cell, newer) is not None
    other_gpu = copy.deepcopy(vit_doc)
    other_gpu["gpu"]["uuid"] = "GPU-00000000-0000-0000-0000-000000000001"
    assert store.add_result(cell, other_gpu) is not None
    assert store.count() == 3
    assert sorted(r["torch_version"] for r in store.rows()) == ["2.11.0+cu130", "2.11.0+cu130", "2.12.0+cu130"]


def test_cell_states_follow_versions_and_devices(store, cell, vit_doc):
    store.add_result(cell, vit_doc, attempts=2)
    versions = versions_of(vit_doc)
    assert store.cell_states(versions, [H200_UUID])[cell.key].status == "ok"
    assert store.cell_states(versions, [H200_UUID])[cell.key].attempts == 2
    assert store.cell_states(versions, None)[cell.key].status == "ok"  # Ray: any device
    assert cell.key not in store.cell_states(versions, ["another-gpu"])
    assert cell.key not in store.cell_states(versions, [])
    newer = SoftwareVersions(versions.visprof, "2.12.0", versions.timm, versions.cuda)
    assert store.cell_states(newer, None) == {}


def test_a_row_stored_under_a_key_with_restated_defaults_counts_as_its_cell(store, vit_doc):
    """A store swept with --img-size test (its rows keyed img=test) is resumed by a sweep without it."""
    versions = versions_of(vit_doc)
    old_key = SweepPlan(["vit_base_patch16_224"], "cuda", options={"iterations": 10}).cells()[0]
    store.add_result(old_key, vit_doc)
    store.conn.execute("UPDATE results SET cell_key = replace(cell_key, 'img=default', 'img=test') || '|top_modules=15'")
    store.conn.commit()
    assert [r["cell_key"] for r in store.rows()] == [
        "vit_base_patch16_224|b64|img=test|bf16|nchw|timing+attributed+memory|iterations=10|top_modules=15"]
    today = SweepPlan(["vit_base_patch16_224"], "cuda", options={"iterations": 10}).cells()[0]
    assert store.cell_states(versions, [H200_UUID])[today.key].status == "ok"


def test_a_cell_done_on_another_card_of_the_same_gpu_model_counts_as_done(store, cell, vit_doc):
    # A store carried to another machine with the same GPU model resumes there: on the lent
    # H200 machines every call had new GPU uuids, and the sweep measured everything again.
    store.add_result(cell, vit_doc)
    versions = versions_of(vit_doc)
    name = vit_doc["gpu"]["name"]
    assert cell.key not in store.cell_states(versions, ["new-card"])
    assert store.cell_states(versions, ["new-card"], [name])[cell.key].status == "ok"
    assert cell.key not in store.cell_states(versions, ["new-card"], ["NVIDIA A100-SXM4-80GB"])
    newer = SoftwareVersions(versions.visprof, "2.12.0", versions.timm, versions.cuda)
    assert store.cell_states(newer, ["new-card"], [name]) == {}  # new versions still measure anew
    failed = SweepPlan(["deit_small_patch16_224"], "cuda").cells()[0]
    store.add_failure(failed, versions=versions, gpu={"name": name, "uuid": "GPU-other"}, kind="error",
                      error_class="ModelBuildError", message="no such model", final=True)
    assert store.cell_states(versions, ["new-card"], [name])[failed.key].status == "failed"


def test_failures_count_attempts_and_a_later_success_clears_them(store, cell, vit_doc):
    versions = versions_of(vit_doc)
    gpu = vit_doc["gpu"]
    store.add_failure(cell, versions=versions, gpu=gpu, kind="crash", error_class="WorkerCrashed",
                      message="the worker process was killed by SIGSEGV", final=False)
    state = store.cell_states(versions, [H200_UUID])[cell.key]
    assert (state.status, state.attempts, state.final, state.kind) == ("failed", 1, False, "crash")
    store.add_failure(cell, versions=versions, gpu=gpu, kind="timeout", error_class="CellTimeout",
                      message="no result after 300 s", final=True)
    (failure,) = store.failures()
    assert (failure["attempts"], failure["final"], failure["error_class"], failure["kind"]) == (2, 1, "CellTimeout", "timeout")
    assert failure["first_at"] <= failure["last_at"]
    store.add_result(cell, vit_doc)
    assert store.failures() == []
    assert store.cell_states(versions, [H200_UUID])[cell.key].status == "ok"
    with pytest.raises(ValueError):
        store.add_failure(cell, versions=versions, gpu=gpu, kind="bad-kind", error_class="X", message="")


def test_a_result_with_missing_parts_gives_nulls(store, cell, vit_doc):
    sparse = {k: vit_doc[k] for k in ("schema", "visprof_version", "created_at", "model", "config", "measurement",
                                       "environment")}
    sparse["gpu"] = None
    store.add_result(cell, sparse)
    (row,) = store.rows()
    assert row["gpu_uuid"] == "cpu" and row["device_kind"] == "cpu"
    assert row["latency_median_ms"] is None and row["peak_bytes"] is None and row["flops"] is None
    assert row["checks_failed"] is None and store.category_rows() == []


def test_dataframe_has_a_column_per_category_and_figure(store, cell, vit_doc):
    store.add_result(cell, vit_doc)
    frame = store.dataframe()
    assert len(frame) == 1
    row = frame.iloc[0]
    attention = [c for c in vit_doc["categories"] if c["category"] == "attention"]
    assert row["time_ms.attention"] == pytest.approx(sum(c["time_ms"] for c in attention))
    assert row["share.attention"] == pytest.approx(sum(c["share"] for c in attention))
    assert row["flops.linear"] == pytest.approx(next(c["flops"] for c in vit_doc["categories"] if c["category"] == "linear"))
    assert row["live_bytes.attention"] == 34603008
    assert row["live_bytes.parameters & inputs"] == 384805792
    assert "result_json" not in frame.columns
    assert list(store.dataframe(model="resnet*").index) == []


def test_references_add_read_and_skip_duplicates(store):
    text = ("model,infer_img_size,infer_samples_per_sec,infer_step_time,infer_batch_size,param_count,infer_gmacs,infer_macts\n"
            "vit_base_patch16_224,224,3122.75,327.891,1024,86.57,16.87,16.49\n"
            "resnet50,224,3373.27,303.533,1024,25.56,4.11,11.11\n"
            'eva_giant_patch14_560,560,1.5,"1,200.5",2,"1,014.45",2000.1,3000.2\n')
    refs = [reference_from_timm_row(r, source="rtx4090.csv", gpu_name="NVIDIA GeForce RTX 4090", precision="amp-fp16")
            for r in csv.DictReader(io.StringIO(text))]
    assert store.add_references(refs) == 3
    assert store.add_references(refs[:1]) == 0  # already there
    assert store.add_references([{"source": "paper", "gpu_name": "A100", "model": "resnet50", "img_size": 224,
                                  "batch_size": 256, "precision": "fp16", "samples_per_s": 2500.0}]) == 1
    got = store.references(gpu_name="*4090*")
    assert [r.model for r in got] == ["vit_base_patch16_224", "resnet50", "eva_giant_patch14_560"]
    assert got[0].samples_per_s == 3122.75 and got[0].param_count_m == 86.57 and got[0].macts_m == 16.49
    assert got[2].step_time_ms == 1200.5 and got[2].param_count_m == 1014.45
    assert [r.gpu_name for r in store.references(model="resnet50")] == ["NVIDIA GeForce RTX 4090", "A100"]
    assert len(store.references_dataframe()) == 4
    with pytest.raises(BadInputError):
        reference_from_timm_row({"model": "x"}, source="f", gpu_name="g", precision="p")
    with pytest.raises(BadInputError):
        store.add_references([Reference(source="", gpu_name="g", model="m", img_size=1, batch_size=1, precision="p")])


def test_a_stored_reference_without_throughput_differs_from_one_with_it(store):
    """samples_per_s is optional (a step time alone is a reference); differing_references then failed
    in float(None) for the same identity given with a throughput."""
    ref = {"source": "mine.csv", "gpu_name": "NVIDIA H100 80GB HBM3", "model": "resnet50", "img_size": 224,
           "batch_size": 256, "precision": "amp-bf16"}
    assert store.add_references([{**ref, "samples_per_s": None, "step_time_ms": 80.0}]) == 1
    assert store.differing_references([{**ref, "samples_per_s": 3200.0}]) == [({**ref, "samples_per_s": 3200.0}, None)]
    assert store.differing_references([{**ref, "samples_per_s": None}]) == []


def test_exports(store, cell, vit_doc, tmp_path):
    store.add_result(cell, vit_doc, batch_sizes_tried=[64], wall_s=3.0)
    store.add_failure(SweepPlan(["broken"], "cuda").cells()[0], versions=versions_of(vit_doc), gpu=vit_doc["gpu"],
                      kind="error", error_class="ModelForwardError", message="boom")
    # csv: every flattened column, then the category columns
    out = io.StringIO()
    assert export_store(store, None, "csv", stdout=out) == 1
    (row,) = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert float(row["latency_median_ms"]) == pytest.approx(8.070272) and "time_ms.attention" in row
    # timm: its benchmark CSV's columns, GMACs from FLOPs (a multiply-add is 2 FLOPs)
    path = tmp_path / "timm.csv"
    assert export_store(store, path, "timm") == 1
    (timm_row,) = list(csv.DictReader(path.open()))
    assert tuple(timm_row) == TIMM_COLUMNS
    assert timm_row["model"] == "vit_base_patch16_224" and timm_row["infer_img_size"] == "224"
    assert float(timm_row["infer_step_time"]) == 8.07 and float(timm_row["infer_samples_per_sec"]) == 7930.34
    assert timm_row["infer_batch_size"] == "64" and float(timm_row["param_count"]) == 86.57
    assert float(timm_row["infer_gmacs"]) == pytest.approx(2248170012672.0 / 2 / 64 / 1e9, abs=0.01)
    assert timm_row["infer_macts"] == ""
    # json: nothing left out
    path = tmp_path / "all.json"
    export_store(store, path, "json")
    document = json.loads(path.read_text())
    assert document["schema"] == "visprof.store-export/1"
    assert ProfileResult.from_dict(document["results"][0]["result"]).timing.latency_ms.median == pytest.approx(8.070272)
    assert document["failures"][0]["error_class"] == "ModelForwardError"
    # failures as csv
    out = io.StringIO()
    assert export_store(store, None, "csv", failures=True, stdout=out) == 1
    assert "ModelForwardError" in out.getvalue()
    # parquet round trip
    import pandas as pd

    path = tmp_path / "rows.parquet"
    assert export_store(store, path, "parquet") == 1
    frame = pd.read_parquet(path)
    assert frame.loc[0, "samples_per_s"] == pytest.approx(7930.339894367873)
    assert not list(tmp_path.glob("*.partial"))


def test_export_errors(store, cell, vit_doc, tmp_path):
    other = copy.deepcopy(vit_doc)
    other["gpu"].update(name="NVIDIA GeForce RTX 4090", uuid="GPU-1")
    store.add_result(cell, vit_doc)
    store.add_result(cell, other)
    with pytest.raises(BadInputError, match="choose one with gpu$"):
        export_store(store, tmp_path / "t.csv", "timm")
    assert not (tmp_path / "t.csv").exists()
    assert export_store(store, tmp_path / "t.csv", "timm", gpu="*H200*") == 1
    with pytest.raises(BadInputError, match="unknown export format"):
        export_store(store, None, "xlsx")
    with pytest.raises(BadInputError, match="parquet"):
        export_store(store, None, "parquet")
    with pytest.raises(BadInputError, match="directory"):
        export_store(store, tmp_path / "missing" / "x.csv", "csv")


def test_bad_stores_are_one_line_errors(tmp_path):
    with pytest.raises(BadInputError, match="no such store"):
        open_store(tmp_path / "absent.db")
    with pytest.raises(BadInputError, match="is a directory"):
        open_store(tmp_path)
    with pytest.raises(BadInputError, match="directory"):
        open_store(tmp_path / "missing" / "r.db", write=True)
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a database\n" * 10)
    with pytest.raises(BadInputError, match="not an SQLite file"):
        open_store(text, write=True)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(BadInputError, match="no meta table"):
        open_store(other)
    future = tmp_path / "future.db"
    open_store(future, write=True).close()
    with sqlite3.connect(future) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(BadInputError, match="schema version 99"):
        open_store(future)
    # a version no visprof wrote was read as the current one, without a word (export exited 0)
    with sqlite3.connect(future) as conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    for write in (False, True):
        with pytest.raises(BadInputError, match=r"has store schema version 0, which no visprof writes \(versions start "
                                                r"at 1\): the file is damaged or not a visprof results store$"):
            open_store(future, write=write)


def test_one_writer_at_a_time(tmp_path):
    path = tmp_path / "r.db"
    with ResultStore(path, write=True):
        with pytest.raises(StoreBusyError, match="another sweep is writing"):
            ResultStore(path, write=True)
        with open_store(path) as reader:  # readers are welcome meanwhile
            assert reader.count() == 0
    ResultStore(path, write=True).close()  # free again once the writer closed


def test_reading_a_store_does_not_write(store, cell, vit_doc):
    store.add_result(cell, vit_doc)
    with open_store(store.path) as reader:
        with pytest.raises(RuntimeError, match="opened for reading"):
            reader.add_result(cell, vit_doc)
        assert reader.count() == 1


def test_op_types_and_kernel_families_are_flattened_and_old_stores_gain_the_tables(tmp_path, cell, vit_doc):
    import sqlite3

    doc = json.loads(json.dumps(vit_doc))
    doc["op_types"] = [
        {"op_type": "aten.native_group_norm.default", "category": "normalization", "subcategory": "group",
         "calls": 24, "kernels": 48, "time_ms": 0.9, "share": 0.12, "gflop": 0.0, "mb": 810.5},
        {"op_type": "aten.mm.default [high intensity]", "category": "linear", "subcategory": None,
         "calls": 48, "kernels": 48, "time_ms": 2.1, "share": 0.28, "gflop": 1200.0, "mb": 300.0},
    ]
    doc["kernel_families"] = [{"family": "nvjet_tst", "category": "linear", "subcategory": None, "calls": 48,
                               "time_ms": 2.1, "share": 0.28}]
    path = tmp_path / "old.db"
    with open_store(path, write=True) as store:  # a store made before the tables existed: drop them, as old files lack them
        store.conn.execute("DROP TABLE result_op_types")
        store.conn.execute("DROP TABLE result_kernel_families")
        store.conn.commit()
    assert {"result_op_types"} - {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    with open_store(path, write=True) as store:
        store.add_result(cell, doc)
        store.add_result(SweepPlan(["other_model"], "cuda").cells()[0], vit_doc)  # an older result: no op types, no rows
        ops = store.op_type_rows()
        assert [(r["model"], r["op_type"], r["subcategory"], r["time_ms"]) for r in ops] == [
            (cell.model, "aten.native_group_norm.default", "group", 0.9),
            (cell.model, "aten.mm.default [high intensity]", "", 2.1)]
        assert [(r["family"], r["calls"]) for r in store.kernel_family_rows()] == [("nvjet_tst", 48)]


def test_a_store_made_before_the_kernel_family_work_columns_reads_them_as_none_and_gains_them(tmp_path, cell, vit_doc):
    doc = json.loads(json.dumps(vit_doc))
    doc["kernel_families"] = [{"family": "nvjet_tst", "category": "linear", "subcategory": None, "calls": 48,
                               "time_ms": 2.1, "share": 0.28, "gflop": 1200.0, "mb": 300.0, "blocks": 132.0,
                               "threads": 384.0}]
    path = tmp_path / "old.db"
    with open_store(path, write=True) as store:  # the table as stores before the columns had it
        store.conn.execute("DROP TABLE result_kernel_families")
        store.conn.execute("CREATE TABLE result_kernel_families (result_id INTEGER NOT NULL, family TEXT NOT NULL, "
                           "category TEXT NOT NULL, subcategory TEXT NOT NULL, calls REAL, time_ms REAL, share REAL, "
                           "PRIMARY KEY (result_id, family))")
        store.conn.execute("INSERT INTO result_kernel_families VALUES (99, 'old_kernel', 'other', '', 1, 0.5, 1.0)")
        store.conn.commit()
    with open_store(path) as reader:  # read-only: the missing columns are None, nothing is written
        assert reader.kernel_family_rows() == []  # the row's result does not exist: the join drops it
        assert "gflop" not in reader.columns("result_kernel_families")
    with open_store(path, write=True) as store:
        assert {"gflop", "mb", "blocks", "threads"} <= set(store.columns("result_kernel_families"))
        store.add_result(cell, doc)
        rows = store.kernel_family_rows()
    assert [(r["family"], r["gflop"], r["mb"], r["blocks"], r["threads"]) for r in rows] == [
        ("nvjet_tst", 1200.0, 300.0, 132.0, 384.0)]


def test_kernel_family_columns_missing_from_a_read_only_store_read_as_none(tmp_path, cell, vit_doc):
    doc = json.loads(json.dumps(vit_doc))
    doc["kernel_families"] = [{"family": "nvjet_tst", "category": "linear", "subcategory": None, "calls": 48,
                               "time_ms": 2.1, "share": 0.28}]
    path = tmp_path / "old.db"
    with open_store(path, write=True) as store:
        store.add_result(cell, doc)
        for column in ("gflop", "mb", "blocks", "threads"):  # as a store written before them
            store.conn.execute(f"ALTER TABLE result_kernel_families DROP COLUMN {column}")
        store.conn.commit()
    with open_store(path) as reader:
        rows = reader.kernel_family_rows()
    assert [(r["family"], r["calls"], r["gflop"], r["blocks"]) for r in rows] == [("nvjet_tst", 48, None, None)]


def _with_family_categories(vit_doc):
    doc = json.loads(json.dumps(vit_doc))
    doc["kernel_families"] = [
        {"family": "at::native::vectorized_elementwise_kernel", "category": "activation", "subcategory": None,
         "calls": 60, "time_ms": 1.0, "share": 0.1, "by_category": {"activation": 0.7, "memory/cast": 0.3}},
        {"family": "nvjet_tst", "category": "linear", "subcategory": None, "calls": 48, "time_ms": 2.1,
         "share": 0.28, "by_category": {"linear": 2.1}},
        {"family": "old_kernel", "category": "other", "subcategory": None, "calls": 1, "time_ms": 0.5,
         "share": 0.05},  # as results made before the field: no rows
        {"family": "nvjet_tst", "category": "linear", "subcategory": None, "calls": 1, "time_ms": 9.0,
         "share": 0.9, "by_category": {"linear": 9.0}},  # a repeated family: its first row counts, as in the table
    ]
    return doc


def test_kernel_family_time_by_category_is_stored_in_long_form(store, cell, vit_doc):
    store.add_result(cell, _with_family_categories(vit_doc))
    store.add_result(SweepPlan(["other_model"], "cuda").cells()[0], vit_doc)  # an older result: no rows
    rows = store.kernel_family_category_rows()
    assert [(r["model"], r["family"], r["category"], r["subcategory"], r["time_ms"]) for r in rows] == [
        (cell.model, "at::native::vectorized_elementwise_kernel", "activation", "", 0.7),
        (cell.model, "at::native::vectorized_elementwise_kernel", "memory", "cast", 0.3),
        (cell.model, "nvjet_tst", "linear", "", 2.1)]


def test_malformed_time_by_category_is_skipped_not_an_error():
    from visprof.store.flatten import kernel_family_category_rows

    doc = {"kernel_families": [
        {"family": "a", "by_category": "activation"},  # not a mapping
        {"family": "b", "by_category": {"": 1.0, "linear": "x", "linear/": 2.0, "memory/cast": 0.5}},
        "not a row", {"by_category": {"linear": 1.0}}]}  # a string; a row without a family
    assert kernel_family_category_rows(doc) == [
        {"family": "b", "category": "linear", "subcategory": "", "time_ms": None},  # "linear/" is the same row
        {"family": "b", "category": "memory", "subcategory": "cast", "time_ms": 0.5}]
    assert kernel_family_category_rows({}) == []


def test_a_store_made_before_the_family_category_table_reads_it_empty_and_gains_it(tmp_path, cell, vit_doc):
    path = tmp_path / "old.db"
    with open_store(path, write=True) as store:  # as stores made before the table: the rest of the schema
        store.add_result(SweepPlan(["other_model"], "cuda").cells()[0], _with_family_categories(vit_doc))
        store.conn.execute("DROP TABLE result_kernel_family_categories")
        store.conn.commit()
    with open_store(path) as reader:  # read-only: no table, no rows, nothing written
        assert reader.kernel_family_category_rows() == [] and len(reader.kernel_family_rows()) == 3
    assert "result_kernel_family_categories" not in {
        r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    with open_store(path, write=True) as store:
        store.add_result(cell, _with_family_categories(vit_doc))
        rows = store.kernel_family_category_rows()
    assert [(r["model"], r["family"], r["category"]) for r in rows] == [
        (cell.model, "at::native::vectorized_elementwise_kernel", "activation"),
        (cell.model, "at::native::vectorized_elementwise_kernel", "memory"), (cell.model, "nvjet_tst", "linear")]


def test_a_refused_write_is_advised_by_its_cause(store, monkeypatch):
    """"database is locked" (another program's transaction) and read-only side files (left by a read
    while the store was read-only, which SQLite makes with the store's mode) were both told to "make
    room (or make it writable)", which the user had done."""
    import sqlite3

    import visprof.store.result_store as module

    locked = store._what_to_do(sqlite3.OperationalError("database is locked"))
    assert locked.startswith("another program (an SQLite shell or browser, a script) holds a transaction on it")
    shm = store.path.with_name(store.path.name + "-shm")
    shm.touch()
    monkeypatch.setattr(module.os, "access", lambda path, mode: Path(path) != shm)  # as a user who is not root sees 0444
    readonly = sqlite3.OperationalError("attempt to write a readonly database")
    assert store._what_to_do(readonly) == (f"{shm.name} beside it read-only (left by a read while the store was): "
                                           "make them writable too")
    monkeypatch.setattr(module.os, "access", lambda path, mode: False)
    assert store._what_to_do(readonly) == "make room (or make it writable)"


def test_a_store_named_like_sqlites_in_memory_database_is_a_file(tmp_path, monkeypatch, vit_doc, cell):
    """--store :memory: said "1 measured", and kept nothing: SQLite read the name as its in-memory database."""
    monkeypatch.chdir(tmp_path)
    with ResultStore(":memory:", write=True) as named:
        named.add_result(cell, vit_doc)
    with open_store(tmp_path / ":memory:") as reopened:
        assert reopened.count() == 1


def test_a_run_whose_driver_was_killed_is_marked_so_by_the_next(tmp_path, vit_doc, cell):
    """kill -9 of a sweep left its run "running" with 0 cells done, although it had stored rows."""
    path = tmp_path / "k.db"
    with ResultStore(path, write=True) as first:
        killed = first.start_run("visprof sweep ...", "1 local worker (cpu)", planned=2, skipped=0)
        first.add_result(cell, vit_doc, run_id=killed)  # then the driver dies: no end_run
    with ResultStore(path, write=True) as second:
        second.start_run("visprof sweep ...", "1 local worker (cpu)", planned=2, skipped=1)
        runs = second.runs()
    assert [(r["status"], r["cells_done"], r["ended_at"]) for r in runs[:1]] == [("killed", 1, None)]
    assert runs[1]["status"] == "running"
