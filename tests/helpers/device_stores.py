"""Small results stores as a user's sweeps and imports leave them: one with a GPU's rows and the
CPU's rows (which have no GPU name), and one holding only imported timm rows (no results)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from visprof.store.result_store import Reference, open_store
from visprof.store.versions import SoftwareVersions
from visprof.sweep.plan import SweepPlan

VIT = Path(__file__).resolve().parents[1] / "data" / "h200-result-vit_base_patch16_224.json"


def cpu_result(gpu_doc: dict) -> dict:
    """A GPU result as a CPU run of it would be recorded: no GPU record, measured on the host."""
    doc = copy.deepcopy(gpu_doc)
    doc.update(gpu=None, measurement="cpu")
    doc["config"].update(device="cpu", precision="fp32")
    return doc


def measured_here(doc: dict) -> dict:
    """A result document as if this process had measured it (its visprof, torch, timm and CUDA): a
    sweep counts a stored cell as done only for the software that would measure it now."""
    doc = copy.deepcopy(doc)
    versions = SoftwareVersions.current()
    doc["visprof_version"] = versions.visprof
    doc["environment"].update(torch=versions.torch, timm=versions.timm, cuda=versions.cuda)
    return doc


class NoExecutor:
    """The executor of a sweep that is planned and queued, never run."""

    description = "none"


def mixed_store(path: Path) -> Path:
    """ViT-B/16 on an H200 and on the CPU, and a failed CPU cell."""
    gpu_doc = json.loads(VIT.read_text())
    with open_store(path, write=True) as store:
        store.add_result(SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0], gpu_doc)
        store.add_result(SweepPlan(["vit_base_patch16_224"], "cpu").cells()[0], cpu_result(gpu_doc))
        store.add_failure(SweepPlan(["broken"], "cpu").cells()[0], versions=SoftwareVersions.of_result(gpu_doc),
                          gpu=None, kind="error", error_class="ModelForwardError", message="boom")
    return path


def reference_only_store(path: Path) -> Path:
    """What `visprof import-timm CSV --store PATH` makes: one published row, no results."""
    with open_store(path, write=True) as store:
        store.add_references([Reference(source="benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv",
                                        gpu_name="NVIDIA GeForce RTX 3090", model="resnet50", img_size=224,
                                        batch_size=256, precision="amp-fp16", samples_per_s=2000.0)])
    return path
