"""Issue 12's probe on the GPU: a hand-written self-attention in a class named TinyHybrid (conv
stem + one attention block, batch 32, 224 px, bf16) has attention, with its core and its
projections, eager and torch.compile'd. Prints the breakdowns it checks; with
VISPROF_RECORDINGS=DIR it keeps each run's recording there (kernels, ops, the span check's
host marks)."""
import os

import pytest
from torch import nn

import visprof

pytestmark = pytest.mark.gpu


class TinyHybrid(nn.Module):
    def __init__(self, dim=192, heads=3):
        super().__init__()
        self.heads = heads
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.Conv2d(64, dim, 8, 8))  # 224 -> 112 -> 14x14 tokens
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 1000)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        B, N, C = x.shape
        qkv = self.qkv(self.norm(x)).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        attn = attn.softmax(dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))
        return self.head(x.mean(1))


def show(result):
    print(f"\n{result.model.name} compile={result.config.compile}")
    for row in result.categories:
        print(f"  {row.category:14s} {row.subcategory or '':12s} {row.time_ms:8.3f} ms {row.share:6.1%}"
              + (f"  fused {row.fused}" if row.fused else ""))
    print("  checks:", {c.name: (round(c.value, 4) if c.value is not None else None, c.passed) for c in result.checks})
    print("  warnings:", result.warnings)


@pytest.mark.parametrize("compile", [False, True], ids=["eager", "compiled"])
def test_hand_written_attention_in_tiny_hybrid_is_attention(compile):
    keep = os.environ.get("VISPROF_RECORDINGS")
    recording = os.path.join(keep, f"tinyhybrid-{'compiled' if compile else 'eager'}.json.gz") if keep else None
    result = visprof.profile(TinyHybrid(), batch_size=32, img_size=224, precision="bf16", compile=compile,
                             passes="timing,attributed,memory", progress=False, recording_path=recording)
    show(result)
    subs = {(r.category, r.subcategory) for r in result.categories if r.time_ms > 0}
    assert ("attention", "core") in subs and ("attention", "projections") in subs
    totals = result.category_totals()
    assert totals["attention"].share > 0.05
    # the MLP head stays linear; the softmax is attention, not an activation
    assert totals["linear"].time_ms > 0
    assert "activation" not in totals or totals["activation"].share < totals["attention"].share
    assert result.attribution.coverage > 0.995
    assert not result.failed_checks, [(c.name, c.value, c.reference) for c in result.failed_checks]
    if compile:  # kernels linked to their ops and modules, not classified by name
        assert not any("names only" in w or "by kernel names" in w for w in result.warnings), result.warnings
