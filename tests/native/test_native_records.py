"""CUPTI record processing without a GPU: fabricated records through the tracer's parser."""
import numpy as np
import pytest

from visprof.native import native, native_info
from visprof.native.tracer import TraceRecords, span_check
from visprof.native.records import API_DTYPE, KERNEL_DTYPE, KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET

c = native()
pytestmark = pytest.mark.skipif(native_info()["backend"] != "cuda", reason="record parsing is in the CUDA backend")
T = c._testing


def parse(*records: bytes, dropped: int = 0) -> TraceRecords:
    return TraceRecords.from_native(T.parse(b"".join(records), dropped))


def test_row_layouts_match_the_numpy_dtypes():
    assert T.record_sizes() == (KERNEL_DTYPE.itemsize, API_DTYPE.itemsize)


def test_kernel_fields_survive_parsing():
    r = parse(T.kernel("gemm", 1000, 3500, device=1, stream=13, correlation=42, grid=(8, 4, 2), block=(128, 1, 1),
                       registers=96, static_shared=1024, dynamic_shared=2048))
    (k,) = r.kernels
    assert k["kind"] == KIND_KERNEL
    assert r.kernel_names[k["name_id"]] == "gemm"
    assert (k["start_ns"], k["end_ns"], k["device"], k["stream"], k["correlation_id"]) == (1000, 3500, 1, 13, 42)
    assert list(k["grid"]) == [8, 4, 2] and list(k["block"]) == [128, 1, 1]
    assert k["registers"] == 96 and k["shared_mem"] == 3072


def test_external_ids_join_kernels_and_api_calls_in_any_record_order():
    r = parse(
        T.kernel("a", 0, 10, correlation=1),
        T.kernel("b", 10, 30, correlation=2),
        T.kernel("c", 30, 40, correlation=3),  # launched with no op open: no external record
        T.api(False, 211, 0, 5, 77, 1),
        T.external_correlation(500, 1),  # arrives after the kernel it describes
        T.external_correlation(501, 2),
    )
    assert list(r.kernels["external_id"]) == [500, 501, 0]
    assert list(r.api_calls["external_id"]) == [500]
    assert r.api_calls[0]["thread_id"] == 77 and r.api_calls[0]["cbid"] == 211
    assert r.external_correlations == 2
    assert r.linked_fraction() == pytest.approx(2 / 3)


def test_kernel_names_are_deduplicated():
    r = parse(*[T.kernel(name, i, i + 1, correlation=i) for i, name in enumerate(["x", "y", "x", "x", "y"])])
    assert sorted(r.kernel_names) == ["x", "y"]
    names = [r.kernel_names[i] for i in r.kernels["name_id"]]
    assert names == ["x", "y", "x", "x", "y"]


def test_memcpy_and_memset_rows_keep_their_bytes():
    r = parse(T.memcpy(4096, 0, 100, 0, 7, 9), T.memset(512, 100, 120, 0, 7, 10))
    assert list(r.kernels["kind"]) == [KIND_MEMCPY, KIND_MEMSET]
    assert list(r.kernels["bytes"]) == [4096, 512]
    assert r.kernel_time_ns() == 0  # transfers are not kernel time


def test_driver_api_rows_are_marked():
    r = parse(T.api(True, 307, 5, 9, 3, 4))
    assert r.api_calls[0]["domain"] == 1


def test_dropped_records_are_reported_never_silent():
    assert parse(T.kernel("k", 0, 1), dropped=17).dropped == 17


def test_kernel_time_and_span_and_span_check():
    r = parse(T.kernel("a", 100, 200), T.kernel("b", 150, 400), T.kernel("c", 1000, 1100))
    assert r.kernel_time_ns() == 100 + 250 + 100
    assert r.kernel_span_ns() == 1000
    assert span_check(r, 1020).passed
    # A tracer whose timestamps are TSC ticks (Kineto's callback) would read ~2x too long.
    assert not span_check(r, 500).passed


def test_truncated_buffers_stop_cleanly():
    whole = T.kernel("a", 0, 1) + T.kernel("b", 1, 2)
    r = TraceRecords.from_native(T.parse(whole[:-10], 0))
    assert len(r.kernels) == 1


def test_empty_buffer_gives_empty_arrays_with_the_right_dtypes():
    r = parse()
    assert r.kernels.dtype == KERNEL_DTYPE and r.api_calls.dtype == API_DTYPE and len(r.kernels) == 0


def test_work_submitting_api_selection_covers_launches_copies_and_memsets_only():
    names = set(c.tracer.work_submitting_apis())
    for needed in ("cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cudaMemcpyAsync_v3020",
                   "cudaMemsetAsync_v3020", "cudaGraphLaunch_v10000", "cuLaunchKernel", "cuLaunchKernelEx",
                   "cuMemcpyAsync", "cuMemsetD32Async", "cuGraphLaunch"):
        assert needed in names, needed
    for chatty in ("cudaGetDevice_v3020", "cudaStreamIsCapturing_v10000", "cuCtxGetCurrent", "cuGraphAddMemcpyNode",
                   "cuPointerGetAttribute"):
        assert chatty not in names, chatty


def test_launch_callback_links_join_kernels_to_ops_like_external_ids():
    buffer = T.kernel("a", 0, 10, correlation=7) + T.kernel("b", 10, 20, correlation=8) + T.kernel("c", 20, 30, correlation=9)
    r = TraceRecords.from_native(T.parse(buffer, 0, [(7, 100), (8, 101)]))
    assert list(r.kernels["external_id"]) == [100, 101, 0]
    assert r.external_correlations == 0  # no EXTERNAL_CORRELATION records were involved


def test_op_scope_without_a_running_tracer_links_nothing():
    assert not c.tracer.active() and not c.tracer.correlates_by_callback()
    c.op_enter(5, -1, 0, -1)
    assert c.op_depth() == 1
    c.op_exit()
    assert c.op_depth() == 0


def _rows(*spec):
    """KERNEL_DTYPE rows from (kind, name_id, start_ns, end_ns)."""
    rows = np.zeros(len(spec), dtype=KERNEL_DTYPE)
    for i, (kind, name_id, start, end) in enumerate(spec):
        rows[i]["kind"], rows[i]["name_id"], rows[i]["start_ns"], rows[i]["end_ns"] = kind, name_id, start, end
    return rows


def test_the_span_check_counts_from_the_lead_marker_and_attribution_never_sees_it():
    from visprof.passes.attributed import marker_span_check, split_lead_marker

    names = ["_ZN2at4cuda12_GLOBAL__N_111spin_kernelEl", "gemm", "relu"]
    # The lead ran at 500 (CUPTI's slow first launch, before the start event). The start event
    # fired at 1000 and the marker ran right behind it; the host then took 2 us to its first
    # launch (a compiled model's guards): both spans hold that gap.
    records = TraceRecords(_rows((KIND_KERNEL, 0, 1003, 1004), (KIND_KERNEL, 1, 3000, 3500), (KIND_MEMSET, 2, 3600, 3700),
                                 (KIND_KERNEL, 2, 3800, 4005), (KIND_KERNEL, 0, 500, 501)),
                           np.zeros(0, dtype=API_DTYPE), names)
    kept, marker_start = split_lead_marker(records)
    assert marker_start == 1003
    assert list(kept.kernels["name_id"]) == [1, 2, 2]
    check = marker_span_check(kept, marker_start, 3010)
    assert check.kernel_span_ns == 3002 and check.passed
    assert not span_check(kept, 3010).passed  # from the first kernel, the host's gap is on one side only
    # without its lead (one spin kernel first), the spin is the marker
    kept, marker_start = split_lead_marker(
        TraceRecords(_rows((KIND_KERNEL, 0, 0, 1), (KIND_KERNEL, 1, 2000, 2500)), np.zeros(0, dtype=API_DTYPE), names))
    assert marker_start == 0 and list(kept.kernels["name_id"]) == [1]
    # a model's own spin kernel later in the loop is its work: kept, and the span is the kernels'
    later = TraceRecords(_rows((KIND_KERNEL, 1, 0, 10), (KIND_KERNEL, 0, 20, 90)), np.zeros(0, dtype=API_DTYPE), names)
    kept, marker_start = split_lead_marker(later)
    assert len(kept.kernels) == 2 and marker_start is None
    assert marker_span_check(kept, None, 90).kernel_span_ns == 90
    assert split_lead_marker(None) == (None, None)
