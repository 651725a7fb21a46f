"""The profile command on a GPU (issue 8): the report first, then whole files; GPU-only checks
and the memory pass still there; out of GPU memory with its exit code and a batch that fits."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from visprof.base.child_env import module_command

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]


def _visprof(*args, timeout=900, **env_extra) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), **env_extra)
    return subprocess.run([*module_command("visprof"), "profile", *map(str, args)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


def test_gpu_run_prints_the_report_then_writes_whole_files(tmp_path):
    from visprof.report.table import render
    from visprof.result import ProfileResult

    out, trace = tmp_path / "r.json", tmp_path / "t.json.gz"
    trace.write_text('{"traceEvents": []}')  # an earlier trace (the JSON outputs replace JSON only)
    # an empty module cache: what a fresh install prints, the first-use compile notices included
    with tempfile.TemporaryDirectory() as cache:
        done = _visprof("resnet18", "-b", "8", "--iterations", "20", "--precision", "tf32", "--json", out,
                        "--trace", trace, VISPROF_CACHE_DIR=cache)
    print(done.stdout[-3000:])
    assert done.returncode == 0
    result = ProfileResult.load(out)
    report = render(result)
    before, after = done.stdout.split(report)
    notices = [line for line in before.splitlines() if line.startswith("visprof: compiling its ")]
    assert len(notices) == 2 and all(line.endswith("(first use only, ~10 s)") for line in notices), before
    # the rest is visprof's progress: no torch warnings, no tracebacks
    assert all(line.startswith("[visprof] ") for line in before.splitlines() if line not in notices), before
    assert after.splitlines() == ["", f"[visprof] writing {out}", f"[visprof] wrote {out}",
                                  f"[visprof] writing {trace}", f"[visprof] wrote {trace}"]
    assert result.config.passes == ["timing", "attributed", "memory"] and result.memory is not None
    assert "dropped CUPTI records" in {c.name for c in result.checks}
    assert not any("tf32" in w for w in result.warnings)  # tf32 does something on a GPU
    assert re.search(r"^category\s+GPU ms\s+share\s+kernels\s", report, re.M)
    assert result.category_totals()["attention"].time_ms == 0.0
    from visprof.base.inputs import load_json_file

    assert load_json_file(trace, "trace")["traceEvents"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "t.json.gz"]


def test_gpu_out_of_memory_exits_3_and_names_a_batch_that_fits(tmp_path):
    done = _visprof("resnet18", "-b", "1000000", "--passes", "timing", "-q", "--json", tmp_path / "r.json")
    print(done.stdout)
    assert done.returncode == 3
    line, = done.stdout.splitlines()
    match = re.fullmatch(r"visprof: error: out of GPU memory at batch size 1000000 on cuda:0; the largest batch "
                         r"that fits is (\d+) \(--batch-size \1\)", line)
    assert match and 1 <= int(match.group(1)) < 1_000_000
    assert not (tmp_path / "r.json").exists()


class TwoGigabytesPerSample:
    """Built lazily (torch is imported by the test): holds 1 GiB a sample, then asks for another."""

    @staticmethod
    def make():
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                a = x.new_empty(x.shape[0], 1 << 28, dtype=torch.float32).fill_(1.0)
                b = x.new_empty(x.shape[0], 1 << 28, dtype=torch.float32).fill_(2.0)
                return a.add_(b).sum(dim=1)

        return Model()


def test_oom_in_the_middle_of_a_forward_searches_with_all_the_memory():
    """The first try fails with 1 GiB a sample already held; the search must not run while the
    failed try's tensors are alive (they were, inside the except block), or it finds ~half."""
    import torch

    import visprof
    from visprof.base.errors import OutOfMemoryError

    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info()
    batch = int(0.7 * free / 2**30)  # the first GiB a sample fits, the second does not
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(TwoGigabytesPerSample.make(), batch_size=batch, img_size=8, precision="fp32",
                        passes="timing", progress=False)
    best = info.value.max_batch_size
    print(str(info.value), f"free {free / 2**30:.1f} GiB, asked {batch}")
    assert best is not None and 0.8 * free / 2**31 < best < batch
