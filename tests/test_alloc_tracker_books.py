"""The books behind the in-process memory pass, fed the caching allocator's trace events as
the tracker (csrc/alloc_tracker) delivers them, on any machine: allocated and reserved bytes,
tags, peaks, the no-op while disabled, and seeding from torch.cuda.memory_snapshot()."""
from __future__ import annotations

import pytest

from visprof.native import alloc, native
from visprof.native.alloc_tracker import seed_events

a = native().alloc
DEV = 7  # a device id no real allocation uses


@pytest.fixture(autouse=True)
def clean_books():
    a.set_trace_enabled(False)
    a.clear_trace_books()
    yield
    a.set_trace_enabled(False)
    a.clear_trace_books()


def feed(*events):
    a.feed_trace_events([(action, addr, size, DEV) for action, addr, size in events])


def test_nothing_is_booked_while_disabled():
    feed((a.TRACE_ALLOC, 0x1000, 4096), (a.TRACE_SEGMENT_ALLOC, 0x1000, 2 << 20))
    assert alloc.stats(DEV).live == 0 and a.reserved_stats(DEV)["live"] == 0


def test_blocks_are_allocated_bytes_and_segments_reserved_bytes_each_under_its_ops_tag():
    a.set_trace_enabled(True)
    with alloc.tagged(1):  # e.g. convolution
        feed((a.TRACE_SEGMENT_ALLOC, 0x10000000, 20 << 20), (a.TRACE_ALLOC, 0x10000000, 3 << 20))
    with alloc.tagged(2):  # e.g. activation: fits in the segment already reserved
        feed((a.TRACE_ALLOC, 0x10300000, 3 << 20))
    feed((a.TRACE_FREE_REQUESTED, 0x10000000, 3 << 20))
    held = alloc.stats(DEV)
    reserved = a.reserved_stats(DEV)
    assert (held.live, held.peak) == (3 << 20, 6 << 20)
    assert held.tag(held.live_at_peak, 1) == 3 << 20 and held.tag(held.live_at_peak, 2) == 3 << 20
    assert (reserved["live"], reserved["peak"]) == (20 << 20, 20 << 20)
    assert reserved["live_at_peak"][1] == 20 << 20  # the convolution made the allocator reserve it
    # A free completing later (record_stream) and events visprof does not book change nothing.
    feed((a.TRACE_FREE_COMPLETED, 0x10000000, 3 << 20), (a.TRACE_OOM, 0, 0))
    assert alloc.stats(DEV).live == 3 << 20 and alloc.stats(DEV).failed == 1


def test_empty_cache_frees_segments_and_expandable_segments_map_and_unmap():
    a.set_trace_enabled(True)
    feed((a.TRACE_SEGMENT_ALLOC, 0x20000000, 2 << 20), (a.TRACE_SEGMENT_MAP, 0x30000000, 8 << 20),
         (a.TRACE_SEGMENT_FREE, 0x20000000, 2 << 20), (a.TRACE_SEGMENT_UNMAP, 0x30000000, 8 << 20))
    reserved = a.reserved_stats(DEV)
    assert (reserved["live"], reserved["peak"]) == (0, 10 << 20)


def test_reset_peaks_restarts_both_books_from_what_is_live():
    a.set_trace_enabled(True)
    feed((a.TRACE_SEGMENT_ALLOC, 0x40000000, 20 << 20), (a.TRACE_ALLOC, 0x40000000, 5 << 20),
         (a.TRACE_ALLOC, 0x40500000, 5 << 20), (a.TRACE_FREE_REQUESTED, 0x40500000, 5 << 20))
    alloc.reset_peaks()
    assert alloc.stats(DEV).peak == 5 << 20 and a.reserved_stats(DEV)["peak"] == 20 << 20


def test_seed_events_book_what_a_snapshot_shows_live():
    snapshot = [
        {"device": DEV, "address": 0x50000000, "total_size": 2 << 20, "blocks": [
            {"address": 0x50000000, "size": 1024, "requested_size": 1000, "state": "active_allocated"},
            {"address": 0x50000400, "size": 512, "requested_size": 512, "state": "inactive"},
            {"address": 0x50000600, "size": 512, "requested_size": 300, "state": "active_pending_free"},
            {"address": 0x50000800, "size": (2 << 20) - 0x800, "requested_size": 0, "state": "inactive"},
        ]},
        {"device": DEV + 1, "address": 0x60000000, "total_size": 2 << 20, "blocks": []},  # another GPU
    ]
    events = seed_events(snapshot, DEV)
    assert events == [(a.TRACE_SEGMENT_ALLOC, 0x50000000, 2 << 20, DEV), (a.TRACE_ALLOC, 0x50000000, 1000, DEV)]
    a.set_trace_enabled(True)
    a.feed_trace_events(events)
    feed((a.TRACE_FREE_REQUESTED, 0x50000000, 1000))  # a parameter freed later is unbooked exactly
    assert alloc.stats(DEV).live == 0 and a.reserved_stats(DEV)["live"] == 2 << 20


def test_clear_forgets_every_allocation():
    a.set_trace_enabled(True)
    feed((a.TRACE_ALLOC, 0x70000000, 100), (a.TRACE_SEGMENT_ALLOC, 0x70000000, 2 << 20))
    a.clear_trace_books()
    feed((a.TRACE_FREE_REQUESTED, 0x70000000, 100))  # unknown now: changes nothing
    assert alloc.stats(DEV).live == 0 and alloc.stats(DEV).frees == 0


def test_the_capsule_carries_visprofs_entry_points():
    capsule = a._torch_trace_capsule()
    assert type(capsule).__name__ == "PyCapsule"


def test_the_memory_pass_reads_its_result_from_the_books():
    """What run_memory_pass reports after its forward, from books fed as the tracker feeds them."""
    from visprof.passes.memory import PREALLOCATED, _from_books

    a.set_trace_enabled(True)
    feed((a.TRACE_SEGMENT_ALLOC, 0x80000000, 20 << 20), (a.TRACE_ALLOC, 0x80000000, 4 << 20))  # seeded weights
    alloc.reset_peaks()
    baseline = alloc.stats(DEV).live
    with alloc.tagged(2):
        feed((a.TRACE_SEGMENT_ALLOC, 0x90000000, 20 << 20), (a.TRACE_ALLOC, 0x90000000, 8 << 20))
    with alloc.tagged(3):
        feed((a.TRACE_ALLOC, 0x90800000, 2 << 20), (a.TRACE_FREE_REQUESTED, 0x90000000, 8 << 20))
    result = _from_books(DEV, {0: PREALLOCATED, 2: "convolution", 3: "activation"}, baseline)
    assert (result.peak_bytes, result.baseline_bytes, result.reserved_peak_bytes) == (14 << 20, 4 << 20, 40 << 20)
    assert result.live_at_peak == {PREALLOCATED: 4 << 20, "convolution": 8 << 20, "activation": 2 << 20}
    assert result.reserved_at_peak == {PREALLOCATED: 20 << 20, "convolution": 20 << 20}
    assert result.transient_peak["convolution"] == 8 << 20 and result.allocs == 2
