"""A model's family: the timm module that defines its architecture.

``vit_base_patch16_224`` and ``deit3_small_patch16_224`` are both ``vision_transformer``;
``resnet50d`` and ``seresnext26t_32x4d`` are ``resnet``; ``coatnet_0_rw_224`` is
``maxxvit``. Name prefixes would get these wrong (``vit_base_resnet50_384`` is a hybrid,
``vision_transformer_hybrid``), the registry does not.
"""
from __future__ import annotations

from functools import lru_cache

UNKNOWN = "unknown"


def architecture(name: str) -> str:
    """``timm/resnet50.a1_in1k`` -> ``resnet50``: the name without hub prefix or pretrained tag."""
    name = name.strip()
    for prefix in ("hf-hub:", "hf_hub:", "timm/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name.startswith("timm/"):
        name = name[len("timm/"):]
    return name.split(".", 1)[0]


@lru_cache(maxsize=None)
def family(name: str) -> str:
    """The timm module defining ``name`` (e.g. ``vision_transformer``), or "unknown" for a
    name this timm does not register (a user module, a model renamed since)."""
    try:
        from timm.models import is_model, model_entrypoint
    except ImportError:
        return UNKNOWN
    arch = architecture(name)
    if not is_model(arch):
        return UNKNOWN
    module = _registry_modules().get(arch)
    if module is None:
        module = model_entrypoint(arch).__module__.rsplit(".", 1)[-1]
    return module


def _registry_modules() -> dict[str, str]:
    """timm's own model -> module map. Deprecated names (``vit_base_resnet50_384``) are
    registered there under the module of the model they now stand for, while their entry
    point is a wrapper defined in timm's registry module."""
    try:
        from timm.models import _registry

        return dict(getattr(_registry, "_model_to_module", {}))
    except ImportError:
        return {}


__all__ = ["UNKNOWN", "architecture", "family"]
