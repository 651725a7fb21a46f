"""visprof in a real Jupyter kernel, as a notebook user runs it: a result shown by its repr, a
model class defined in a cell (so ``__main__`` has no file for a worker to import), a trace, a
sweep that starts a worker process from the kernel and then resumes, and a typo in a model name.

The other tests stand in for a notebook (a script without a main guard, ``__main__`` read from
stdin); this one runs the kernel itself, through nbclient. tests/gpu/test_notebook_gpu.py does
the same on a GPU."""
from __future__ import annotations

from notebook_kernel import run_cells

CELLS = [
    "import visprof\n"
    "r = visprof.profile('resnet18', device='cpu', batch_size=1, img_size=64, iterations=3)\n"
    "r",
    "import torch\n"
    "from torch import nn\n"
    "class Tiny(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.conv, self.head = nn.Conv2d(3, 8, 3), nn.Linear(8, 4)\n"
    "    def forward(self, x):\n"
    "        return self.head(self.conv(x).mean((2, 3)))\n"
    "t = visprof.profile(Tiny(), device='cpu', batch_size=2, img_size=32, iterations=3, progress=False)\n"
    "t.category_totals()['linear'].share > 0, t.category_totals()['convolution'].share > 0",
    "with visprof.trace(Tiny()) as session:\n"
    "    Tiny()(torch.randn(2, 3, 32, 32))\n"
    "print(session.table())",
    "from visprof.sweep import run_sweep, open_store\n"
    "kwargs = dict(store='nb.db', device='cpu', img_sizes=[64], batch_sizes=[1], progress=False)\n"
    "first = run_sweep(['resnet18', 'mobilenetv3_small_050'], **kwargs)\n"
    "again = run_sweep(['resnet18', 'mobilenetv3_small_050'], **kwargs)\n"
    "with open_store('nb.db') as store:\n"
    "    frame = store.dataframe()\n"
    "print(first.done, first.failed_total, again.done, again.skipped, sorted(frame.model))",
    "try:\n"
    "    visprof.profile('resnet_5O', device='cpu')\n"
    "except visprof.VisprofError as exc:  # the one base class a user catches\n"
    "    print(type(exc).__name__, '|', exc)",
]


def test_visprof_in_a_jupyter_kernel(tmp_path):
    shown, parts, traced, swept, typo = run_cells(CELLS, tmp_path)
    assert shown.startswith("<ProfileResult resnet18 on cpu: batch 1, 64 px, fp32"), shown
    assert "convolution" in shown and "self-checks:" in shown
    assert parts.strip() == "(True, True)"
    assert "linear" in traced and "convolution" in traced and "total" in traced
    assert swept.split() == ["2", "0", "0", "2", "['mobilenetv3_small_050',", "'resnet18']"], swept
    assert typo.startswith("UnknownModelError | unknown model 'resnet_5O'; did you mean: resnet50"), typo
    assert typo.count("\n") == 1


def test_the_subpackages_the_docs_name_work_after_a_plain_import():
    """The README's `visprof.sweep.open_store("results.db").dataframe()` was an AttributeError after
    `import visprof`; served on first use, and `import visprof` still loads no torch."""
    import subprocess
    import sys

    from visprof.base.child_env import child_env

    code = ("import sys, visprof\n"
            "assert 'torch' not in sys.modules, 'torch loaded'\n"
            "print(visprof.sweep.open_store.__module__, visprof.store.__name__, visprof.report.render.__name__)\n"
            "try:\n"
            "    visprof.nothing_of_that_name\n"
            "except AttributeError as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["visprof.store.result_store visprof.store render",
                                        "module 'visprof' has no attribute 'nothing_of_that_name'"]
