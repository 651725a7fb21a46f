import pytest


def pytest_collection_modifyitems(config, items):
    """GPU tests skip, with the reason, where no CUDA GPU is visible (CI)."""
    try:
        import torch

        has_gpu = torch.cuda.is_available()
        reason = "no CUDA GPU visible" if not has_gpu else ""
    except ImportError:
        has_gpu, reason = False, "torch is not installed"
    if has_gpu:
        return
    skip = pytest.mark.skip(reason=f"GPU test: {reason}; run on the lent H200")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
