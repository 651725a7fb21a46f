"""visprof.passes.batch_search with fake try_batch callables standing in for a GPU."""
from __future__ import annotations

import pytest
import torch

from visprof.passes.batch_search import is_out_of_memory, largest_fitting_batch
from visprof.base.errors import OutOfMemoryError


class FakeGPU:
    """Fits any batch up to ``capacity``; raises the given OOM error beyond it."""

    def __init__(self, capacity: int, error=lambda b: torch.cuda.OutOfMemoryError(f"CUDA out of memory at {b}")):
        self.capacity = capacity
        self.error = error
        self.tried: list[int] = []

    def __call__(self, batch: int) -> None:
        self.tried.append(batch)
        if batch > self.capacity:
            raise self.error(batch)


@pytest.mark.parametrize(
    "start, capacity, expected",
    [
        (64, 64, 64),
        (64, 1000, 64),  # never above start
        (64, 63, 63),
        (64, 33, 33),
        (64, 32, 32),
        (64, 1, 1),
        (100, 37, 37),
        (1, 1, 1),
        (7, 5, 5),
        (1000, 999, 999),
    ],
)
def test_finds_the_exact_largest_fitting_batch(start, capacity, expected):
    gpu = FakeGPU(capacity)
    assert largest_fitting_batch(gpu, start) == expected
    assert max(b for b in gpu.tried if b <= capacity) == expected


def test_every_capacity_below_start_is_found_exactly():
    for capacity in range(1, 130):
        assert largest_fitting_batch(FakeGPU(capacity), 129) == capacity


def test_fitting_start_is_tried_once():
    gpu = FakeGPU(512)
    assert largest_fitting_batch(gpu, 256) == 256
    assert gpu.tried == [256]


def test_search_halves_then_bisects_without_retrying():
    gpu = FakeGPU(40)
    assert largest_fitting_batch(gpu, 256) == 40
    assert gpu.tried[:4] == [256, 128, 64, 32]  # halving until 32 fits
    assert gpu.tried[4:] == [48, 40, 44, 42, 41]  # then bisecting (32, 64)
    assert len(gpu.tried) == len(set(gpu.tried))


def test_none_when_even_batch_one_fails():
    gpu = FakeGPU(0)
    assert largest_fitting_batch(gpu, 16) is None
    assert gpu.tried == [16, 8, 4, 2, 1]


@pytest.mark.parametrize(
    "error",
    [
        lambda b: torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        lambda b: RuntimeError("CUDA error: out of memory"),
        lambda b: RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"),
        lambda b: OutOfMemoryError(b),  # as reported back by the memory pass
    ],
)
def test_every_form_of_oom_counts(error):
    assert largest_fitting_batch(FakeGPU(10, error), 64) == 10


def test_other_errors_propagate_at_once():
    gpu = FakeGPU(10, error=lambda b: RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    with pytest.raises(RuntimeError, match="mat1"):
        largest_fitting_batch(gpu, 64)
    assert gpu.tried == [64]


def test_a_custom_oom_predicate_is_used():
    gpu = FakeGPU(3, error=lambda b: MemoryError("host"))
    assert largest_fitting_batch(gpu, 8, is_oom=lambda e: isinstance(e, MemoryError)) == 3


def test_on_result_reports_each_try():
    seen = []
    largest_fitting_batch(FakeGPU(5), 8, on_result=lambda b, ok: seen.append((b, ok)))
    assert seen == [(8, False), (4, True), (6, False), (5, True)]


@pytest.mark.parametrize("bad", [0, -4, 2.0, True])
def test_bad_start_is_refused(bad):
    with pytest.raises(ValueError):
        largest_fitting_batch(FakeGPU(4), bad)


def test_is_out_of_memory_rejects_ordinary_errors():
    assert not is_out_of_memory(ValueError("out of memory"))  # not a RuntimeError: not CUDA's
    assert not is_out_of_memory(RuntimeError("expected scalar type Float"))
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("x"))


def test_a_tensor_too_large_for_any_memory_is_out_of_memory_on_the_gpu_too():
    """An absurd --img-size on the GPU: torch refuses the input before any allocation, with the text the
    host path reads as out of memory; on CUDA it had been the model failing (exit 1)."""
    with pytest.raises(RuntimeError) as refused:
        torch.empty((1, 3, 9_999_999_999, 9_999_999_999), device="meta")
    assert is_out_of_memory(refused.value)
