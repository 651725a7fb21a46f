"""The software versions that make a result a new row: visprof, torch, timm and CUDA.

A store keeps one row per (cell, GPU, versions), so upgrading any of them measures anew and
never overwrites what the older versions measured.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from visprof.base.timm_import import import_timm

__all__ = ["SoftwareVersions"]


@dataclass(frozen=True)
class SoftwareVersions:
    visprof: str
    torch: str
    timm: str
    cuda: str  # torch.version.cuda; "" for a CPU-only torch

    @classmethod
    def current(cls) -> "SoftwareVersions":
        """This process's versions (imports torch and timm)."""
        timm = import_timm()
        import torch

        from visprof.result import visprof_version

        return cls(visprof_version(), torch.__version__, timm.__version__, torch.version.cuda or "")

    @classmethod
    def of_result(cls, doc: Mapping[str, Any]) -> "SoftwareVersions":
        """The versions a result document records (those of the process that measured it)."""
        env = doc.get("environment") or {}
        return cls(str(doc.get("visprof_version") or ""), str(env.get("torch") or ""),
                   str(env.get("timm") or ""), str(env.get("cuda") or ""))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SoftwareVersions":
        return cls(**{key: str(data.get(key) or "") for key in ("visprof", "torch", "timm", "cuda")})

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def columns(self) -> dict[str, str]:
        """As the store's identity columns."""
        return {f"{key}_version": value for key, value in asdict(self).items()}

    def __str__(self) -> str:
        cuda = f", CUDA {self.cuda}" if self.cuda else ""
        return f"visprof {self.visprof}, torch {self.torch}, timm {self.timm}{cuda}"
