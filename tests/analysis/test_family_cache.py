"""The timm model -> family map kept in the cache folder (visprof.analysis.families): an analysis
command imported timm, and torch with it, only to read that map (3-4 s of a 9 s compare). Each
case runs in a fresh interpreter, where whether timm was imported can be seen."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from visprof.analysis.families import family
from visprof.base.child_env import child_env

NAMES = ["vit_base_patch16_224", "vit_base_resnet50_384", "coatnet_0_rw_224", "timm/convnext_tiny.fb_in1k",
         "resnet50.a1_in1k", "my_custom_net"]
TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"

FAMILIES = f"""
import json, sys
from visprof.analysis.families import family
print(json.dumps({{"families": [family(n) for n in {NAMES!r}], "timm": "timm" in sys.modules,
                  "torch": "torch" in sys.modules}}))
"""


def fresh(cache: Path, code: str = FAMILIES) -> dict:
    env = child_env({**os.environ, "VISPROF_CACHE_DIR": str(cache)})
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_map_is_read_from_timm_once_then_from_the_cache(tmp_path):
    live = [family(n) for n in NAMES]  # this process imported timm: the live registry
    assert live == ["vision_transformer", "vision_transformer_hybrid", "maxxvit", "convnext", "resnet", "unknown"]
    first = fresh(tmp_path)
    assert first == {"families": live, "timm": True, "torch": True}
    [saved] = tmp_path.glob("timm-families-*.json")
    assert json.loads(saved.read_text())["families"]["vit_base_resnet50_384"] == "vision_transformer_hybrid"
    assert fresh(tmp_path) == {"families": live, "timm": False, "torch": False}


def test_a_damaged_or_foreign_cache_file_is_made_again(tmp_path):
    fresh(tmp_path)
    [saved] = tmp_path.glob("timm-families-*.json")
    for damage in ("{not json", json.dumps({"key": "another timm", "families": {"vit_base_patch16_224": "wrong"}}),
                   json.dumps(["a list"])):
        saved.write_text(damage)
        assert fresh(tmp_path)["families"][0] == "vision_transformer"
        assert json.loads(saved.read_text())["families"]["vit_base_patch16_224"] == "vision_transformer"


def test_a_cache_folder_that_cannot_be_written_costs_the_import_not_the_answer(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    for _ in range(2):
        assert fresh(blocked / "visprof") == {"families": [family(n) for n in NAMES], "timm": True, "torch": True}


def test_a_model_registered_in_the_process_is_found_in_the_live_registry(tmp_path):
    code = """
import json, timm
from timm.models import register_model
from timm.models.resnet import resnet18
from visprof.analysis.families import family

@register_model
def my_registered_net(pretrained=False, **kwargs):
    return resnet18(pretrained=pretrained, **kwargs)

print(json.dumps({"family": family("my_registered_net")}))
"""
    fresh(tmp_path)  # the saved map, made before the model was registered, does not have it
    assert fresh(tmp_path, code)["family"] == "__main__"  # the module that defines it, as timm names it


def test_compare_reads_neither_timm_nor_torch_once_the_map_is_saved(tmp_path):
    fresh(tmp_path)
    code = f"""
import json, sys
from visprof.cli import app
code = app.main(["compare", {str(TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv")!r},
                 {str(TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv")!r}, "-q", "--json", {str(tmp_path / "c.json")!r}])
print(json.dumps({{"code": code, "timm": "timm" in sys.modules, "torch": "torch" in sys.modules}}))
"""
    assert fresh(tmp_path, code) == {"code": 0, "timm": False, "torch": False}
    families = {row["family"] for row in json.loads((tmp_path / "c.json").read_text())["models"]}
    assert {"resnet", "vision_transformer"} <= families
