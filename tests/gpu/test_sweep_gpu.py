"""visprof sweep on the GPUs of this machine: a worker per GPU, rows that name their GPU,
a real CUDA out-of-memory that decays to the batch that fits, and resume."""
import json
from pathlib import Path

import pytest
import torch

from visprof.base.hardware import gpu_identity
from visprof.sweep import open_store, run_sweep
from visprof.store.flatten import normalize_gpu_uuid

pytestmark = pytest.mark.gpu

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")
MODELS = ["resnet18", "vit_tiny_patch16_224", "convnext_atto", "mobilenetv3_small_100", "deit_tiny_patch16_224",
          "efficientnet_b0", "regnety_002", "swin_tiny_patch4_window7_224", "resnet50", "levit_128",
          "mixer_s32_224", "coatnet_0_rw_224"]


def test_a_sweep_uses_every_visible_gpu_and_rows_name_them(tmp_path):
    count = torch.cuda.device_count()
    visible = {normalize_gpu_uuid(gpu_identity(i)): gpu_identity(i)["name"] for i in range(count)}
    store_path = tmp_path / "gpu.db"
    summary = run_sweep(MODELS, store=store_path, batch_sizes=[32])
    print("\n" + summary.render(top=12))
    assert summary.status == "complete" and summary.done == len(MODELS), summary.failures
    with open_store(store_path) as store:
        rows = store.rows()
    print(f"{'model':32} {'gpu':14} {'uuid':10} {'wall s':>7} {'median ms':>10} {'peak MiB':>9} passes s (timing/attr/mem)")
    for r in rows:
        print(f"{r['model']:32} {r['gpu_name']:14} {r['gpu_uuid'][:8]:10} {r['wall_s']:7.2f} {r['latency_median_ms']:10.3f} "
              f"{(r['peak_bytes'] or 0) / 2**20:9.1f} {r['timing_wall_s']}/{r['attributed_wall_s']}/{r['memory_wall_s']}")
    assert {r["gpu_uuid"] for r in rows} <= set(visible)
    if count >= 2:
        assert len({r["gpu_uuid"] for r in rows}) >= 2, "a worker per GPU: both GPUs measure"
    for r in rows:
        assert r["device_kind"] == "gpu" and r["gpu_name"] == visible[r["gpu_uuid"]]
        assert r["batch_size"] == 32 and r["latency_median_ms"] > 0 and r["samples_per_s"] > 0
        assert r["peak_bytes"] and r["memory_wall_s"] is not None  # all three passes ran
        assert r["kernel_ms"] and r["coverage"] > 0.99
    again = run_sweep(MODELS, store=store_path, batch_sizes=[32], progress=False)
    assert again.skipped == len(MODELS) and again.done == 0


def test_a_real_cuda_oom_decays_to_the_batch_that_fits(tmp_path):
    store_path = tmp_path / "oom.db"
    summary = run_sweep(["visprof_fake_gpu_hog"], store=store_path, imports=[FAKE_MODELS], gpus=[0],
                        batch_sizes=[8], passes="timing,attributed", progress=False)
    print("\n" + summary.render())
    with open_store(store_path) as store:
        (row,) = store.rows()
    print("batches tried:", row["batch_sizes_tried"], "fit:", row["batch_size"])
    assert json.loads(row["batch_sizes_tried"]) == [8, 6, 4] and row["batch_size"] == 4
