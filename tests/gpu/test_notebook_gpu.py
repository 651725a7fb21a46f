"""visprof on a GPU from a real Jupyter kernel: CUPTI, the allocator hooks and the memory pass in a
kernel process (which runs threads of its own), a model class defined in a cell, and a sweep whose
GPU worker the kernel starts, then resumes. tests/profiler/test_notebook.py does the CPU side."""
from __future__ import annotations

import pytest

from notebook_kernel import run_cells

pytestmark = pytest.mark.gpu

CELLS = [
    "import visprof\n"
    "r = visprof.profile('resnet50', batch_size=32, progress=False)\n"
    "r",
    "print(r.measurement, len(r.failed_checks), [c.name for c in r.failed_checks])",
    "import torch\n"
    "from torch import nn\n"
    "class Tiny(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.conv, self.head = nn.Conv2d(3, 64, 3), nn.Linear(64, 10)\n"
    "    def forward(self, x):\n"
    "        return self.head(self.conv(x).mean((2, 3)))\n"
    "t = visprof.profile(Tiny(), batch_size=16, img_size=64, progress=False)\n"
    "print(t.measurement, len(t.failed_checks), t.category_totals()['convolution'].share > 0.5)",
    "from visprof.sweep import run_sweep\n"
    "kwargs = dict(store='nb.db', batch_sizes=[16], progress=False)\n"
    "first = run_sweep(['resnet18', 'mobilenetv3_small_050'], **kwargs)\n"
    "again = run_sweep(['resnet18', 'mobilenetv3_small_050'], **kwargs)\n"
    "print(first.done, first.failed_total, again.done, again.skipped)",
]


def test_visprof_on_the_gpu_in_a_jupyter_kernel(tmp_path):
    shown, checks, tiny, swept = run_cells(CELLS, tmp_path)
    assert shown.startswith("<ProfileResult resnet50 on cuda:0 (NVIDIA"), shown
    assert "all pass" in shown, shown
    assert checks.strip() == "gpu 0 []", checks
    assert tiny.strip() == "gpu 0 True", tiny
    assert swept.split() == ["2", "0", "0", "2"], swept
