"""Notes in the result for precisions that cost far more on the CPU than the user may think.

fp16 on the CPU has fast kernels only where the CPU has fp16 arithmetic (AVX-512 FP16, AMX-FP16,
ARMv8.2 half precision); a user measured a 280x slowdown against fp32 on a CPU without it,
with nothing in the result saying why. On this project's Xeon (avx512_fp16, amx_bf16) fp16 took
1.1-1.4x fp32; with oneDNN held below AVX-512 FP16, 4-39x (visprof/passes/setup.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import visprof
from visprof.passes import setup
from visprof.passes.setup import cpu_flags, resolve_run

X86 = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480C
flags\t\t: fpu vme sse sse2 avx avx2 avx512f avx512_bf16 amx_bf16 avx512_fp16 amx_tile
bugs\t\t: spectre_v1
"""
ARM = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid bf16
CPU implementer\t: 0x41
"""


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.conv(x).mean((2, 3)))


def this_cpu_flags() -> set[str] | None:
    """Read here independently of visprof: the flags line of /proc/cpuinfo."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.split(":")[0].strip().lower() in ("flags", "features"):
            return set(line.split(":", 1)[1].split())
    return None


def notes(precision: str) -> list[str]:
    # in eval mode: a module in training mode has a note of its own
    return resolve_run(Tiny().eval(), batch_size=2, img_size=8, precision=precision, device="cpu").notes


def test_a_real_fp16_profile_on_the_cpu_says_what_fp16_costs_here():
    result = visprof.profile(Tiny(), batch_size=2, img_size=8, device="cpu", precision="fp16", passes="timing",
                             iterations=2, warmup=1, progress=False)
    (note,) = [w for w in result.warnings if w.startswith("precision fp16 on the CPU")]
    flags = this_cpu_flags()
    if flags is None:
        assert "fast kernels only on CPUs with fp16 arithmetic" in note
    elif flags & {"avx512_fp16", "amx_fp16", "asimdhp"}:
        assert "this CPU has fp16 arithmetic" in note and "no faster than fp32" in note
    else:
        assert "this CPU has no fp16 arithmetic (avx512_fp16, amx_fp16)" in note and "far slower" in note
    assert note.endswith("use bf16 or fp32") or "use fp32" in note
    # the same run at fp32 has no such note
    plain = visprof.profile(Tiny(), batch_size=2, img_size=8, device="cpu", precision="fp32", passes="timing",
                            iterations=2, warmup=1, progress=False)
    assert not [w for w in plain.warnings if w.startswith("precision ")]


@pytest.mark.parametrize("flags, fp16, bf16", [
    # Zen 2/3, Skylake: neither -> fp32 only
    ({"avx2", "f16c"}, "this CPU has no fp16 arithmetic (avx512_fp16, amx_fp16), so fp16 convolutions and matmuls run "
                       "slow fallback kernels, slower than fp32 and often far slower; use fp32 (without avx512_bf16 "
                       "or amx_bf16, bf16 is slow here too)",
     "this CPU has no bf16 arithmetic (avx512_bf16, amx_bf16)"),
    # Zen 4, Cooper Lake: bf16 but no fp16
    ({"avx512f", "avx512_bf16"}, "use fp32, or bf16 (this CPU has avx512_bf16)", None),
    # Sapphire Rapids
    ({"avx512_fp16", "amx_bf16", "avx512_bf16"}, "this CPU has fp16 arithmetic (avx512_fp16), yet fp16 ran no faster "
                                                 "than fp32", None),
])
def test_the_note_follows_the_cpu_flags(monkeypatch, flags, fp16, bf16):
    monkeypatch.setattr(setup, "cpu_flags", lambda: frozenset(flags))
    (note,) = notes("fp16")
    assert note.startswith("precision fp16 on the CPU: ") and fp16 in note
    bf16_notes = notes("bf16")
    if bf16 is None:
        assert bf16_notes == []
    else:
        (note,) = bf16_notes
        assert note.startswith("precision bf16 on the CPU: ") and bf16 in note and note.endswith("use fp32")
    assert notes("fp32") == []


def test_unknown_cpu_flags_still_warn_about_fp16(monkeypatch):
    monkeypatch.setattr(setup, "cpu_flags", lambda: None)
    (note,) = notes("fp16")
    assert "fast kernels only on CPUs with fp16 arithmetic" in note and note.endswith("use bf16 or fp32")
    assert notes("bf16") == []  # nothing known to be wrong


def test_cpu_flags_are_read_from_x86_and_arm_cpuinfo():
    assert {"avx512_fp16", "amx_bf16", "avx2"} <= cpu_flags(X86)
    assert {"asimdhp", "bf16", "fphp"} <= cpu_flags(ARM)
    assert cpu_flags("nothing here\n") is None
    if Path("/proc/cpuinfo").exists():
        assert cpu_flags() == frozenset(this_cpu_flags())


def test_fp16_notes_are_for_the_cpu_only_and_tf32_keeps_its_own(monkeypatch):
    monkeypatch.setattr(setup, "cpu_flags", lambda: frozenset())
    assert notes("tf32") == ["precision tf32 on the CPU: TF32 is an NVIDIA GPU math mode, so the CPU ran plain fp32"]
    if not torch.cuda.is_available():
        return
    assert resolve_run(Tiny(), batch_size=2, img_size=8, precision="fp16", device="cuda").notes == []
