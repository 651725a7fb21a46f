"""Allocation-hook bookkeeping through the host backend: exact counts under concurrency."""
import ctypes
import threading

import pytest

from visprof.native import alloc, native

c = native()
# Each test books on its own device id, so tests never see each other's bytes.


def test_live_peak_and_counts():
    dev = 101
    a = c.alloc.host_malloc(1000, dev)
    b = c.alloc.host_malloc(3000, dev)
    c.alloc.host_free(a, dev)
    s = alloc.stats(dev)
    assert (s.live, s.peak, s.allocs, s.frees) == (3000, 4000, 2, 1)
    c.alloc.host_free(b, dev)
    assert alloc.stats(dev).live == 0


def test_tags_transient_peaks_and_breakdown_at_the_peak():
    dev = 102
    with alloc.tagged(1):
        x = c.alloc.host_malloc(100, dev)
    with alloc.tagged(2):
        y = c.alloc.host_malloc(500, dev)
        c.alloc.host_free(y, dev)  # tag 2 peaks at 500 but is gone by the global peak
        with alloc.tagged(3):
            z = c.alloc.host_malloc(50, dev)
    w = c.alloc.host_malloc(700, dev)  # untagged: tag 0; global peak = 100 + 50 + 700 = 850
    s = alloc.stats(dev)
    assert s.peak == 850
    assert s.tag(s.live_at_peak, 0) == 700 and s.tag(s.live_at_peak, 1) == 100
    assert s.tag(s.live_at_peak, 2) == 0 and s.tag(s.live_at_peak, 3) == 50
    assert s.tag(s.tag_peak, 2) == 500  # its own transient peak is kept
    for ptr in (x, z, w):
        c.alloc.host_free(ptr, dev)
    assert c.alloc.current_tag() == 0


def test_reset_peaks_restarts_from_live_bytes():
    dev = 103
    a = c.alloc.host_malloc(400, dev)
    b = c.alloc.host_malloc(600, dev)
    c.alloc.host_free(b, dev)
    alloc.reset_peaks()
    s = alloc.stats(dev)
    assert (s.live, s.peak, s.allocs) == (400, 400, 0)
    c.alloc.host_free(a, dev)


def test_freeing_an_unknown_pointer_changes_nothing():
    dev = 104
    a = c.alloc.host_malloc(10, dev)
    before = alloc.stats(dev)
    c.alloc.host_free(0, dev)
    assert alloc.stats(dev).live == before.live == 10
    c.alloc.host_free(a, dev)


def test_concurrent_alloc_free_from_many_threads_gives_exact_counts():
    dev = 105
    threads, rounds = 8, 2000
    kept: list[list[int]] = [[] for _ in range(threads)]

    def work(index: int) -> None:
        alloc.push_tag(index + 1)
        for i in range(rounds):
            ptr = c.alloc.host_malloc(64 + i % 7, dev)
            if i % 4 == 0:
                kept[index].append(ptr)  # a quarter stay live
            else:
                c.alloc.host_free(ptr, dev)
        alloc.pop_tag()

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    expected_live = sum(64 + i % 7 for i in range(0, rounds, 4)) * threads
    s = alloc.stats(dev)
    assert s.allocs == threads * rounds
    assert s.frees == threads * rounds - threads * len(range(0, rounds, 4))
    assert s.live == expected_live
    # tags are per thread: each thread's live bytes are booked under its own tag
    per_thread = expected_live // threads
    assert [s.tag(s.tag_live, t + 1) for t in range(threads)] == [per_thread] * threads
    for ptrs in kept:
        for ptr in ptrs:
            c.alloc.host_free(ptr, dev)
    assert alloc.stats(dev).live == 0


def test_framework_entry_points_are_exported_with_the_expected_names():
    lib = ctypes.CDLL(c.__file__)
    for name in (c.alloc.TORCH_MALLOC, c.alloc.TORCH_FREE, "visprof_cupy_malloc", "visprof_cupy_free"):
        assert getattr(lib, name) is not None
    malloc_addr, free_addr = c.alloc.cupy_entry_points()
    assert malloc_addr == ctypes.cast(lib.visprof_cupy_malloc, ctypes.c_void_p).value
    assert free_addr == ctypes.cast(lib.visprof_cupy_free, ctypes.c_void_p).value


def test_torch_allocator_refuses_without_cuda_backend_or_gpu():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this checks the no-GPU path")
    from visprof.base.errors import NoGPUError, VisprofError

    with pytest.raises((NoGPUError, VisprofError)) as info:
        alloc.install_torch_allocator()
    assert "GPU" in str(info.value) or "CUDA" in str(info.value)
