"""Small user modules the profiler's tests feed (not timm models)."""
from __future__ import annotations

import torch
from torch import nn


class TwoLinears(nn.Module):
    """An MLP over 3x8x8 images: two GEMMs and a ReLU, fast on any CPU."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(3 * 8 * 8, 32), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


class PaddedEncoder(nn.Module):
    """Images -> tokens -> nn.TransformerEncoder with a padding mask (the first image's last half is
    padding). In eval under no_grad or inference_mode it takes torch's fast path: the batch is packed
    into a nested tensor before the fused layers and padded back after them."""

    width, heads, hidden, layers = 16, 4, 24, 2

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, self.width, 1)
        layer = nn.TransformerEncoderLayer(self.width, self.heads, self.hidden, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, self.layers)

    def forward(self, images):
        tokens = self.stem(images).flatten(2).transpose(1, 2)
        return self.encoder(tokens, src_key_padding_mask=self.padding(tokens))

    @staticmethod
    def padding(tokens: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros(tokens.shape[:2], dtype=torch.bool, device=tokens.device)
        mask[0, tokens.shape[1] // 2:] = True
        return mask


class FlexMixer(nn.Module):
    """Images -> tokens -> q, k, v from one linear -> eager flex_attention -> an output linear. Named
    so that no attention-module rule matches: its projections are found by the dataflow."""

    width, heads = 16, 2

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, self.width, 1)
        self.qkv, self.out = nn.Linear(self.width, 3 * self.width), nn.Linear(self.width, self.width)

    def forward(self, images):
        from torch.nn.attention.flex_attention import flex_attention

        tokens = self.stem(images).flatten(2).transpose(1, 2)
        batch, length, width = tokens.shape
        q, k, v = self.qkv(tokens).reshape(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        mixed = flex_attention(q, k, v, score_mod=lambda score, b, h, i, j: score - (i - j).abs())
        return self.out(mixed.transpose(1, 2).reshape(batch, length, width))


class ThreeConvolutionKinds(nn.Module):
    """One dense, one depthwise and one pointwise convolution."""

    def __init__(self):
        super().__init__()
        self.conv, self.depthwise, self.pointwise = nn.Conv2d(3, 8, 3), nn.Conv2d(8, 8, 3, groups=8), nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.pointwise(self.depthwise(self.conv(x)))


# --- attention by name, and not (tests/attribution/test_named_attention.py, tests/gpu/test_capture_gpu.py) ---
class ConvAttention(nn.Module):
    """NextViT's multi-head convolutional attention: no token relates to another."""

    def __init__(self, dim=16):
        super().__init__()
        self.group_conv3x3 = nn.Conv2d(dim, dim, 3, padding=1, groups=4, bias=False)
        self.norm = nn.BatchNorm2d(dim)
        self.act = nn.ReLU()
        self.projection = nn.Conv2d(dim, dim, 1, bias=False)

    def forward(self, x):
        return self.projection(self.act(self.norm(self.group_conv3x3(x))))


class Attention2d(nn.Module):
    """Attention by 1x1 convs whose core is q.k^T -> softmax -> .v (as CoAtNet's)."""

    def __init__(self, dim=16):
        super().__init__()
        self.qkv = nn.Conv2d(dim, 3 * dim, 1)
        self.proj = nn.Conv2d(dim, dim, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(x).flatten(2).chunk(3, dim=1)
        attn = (q.transpose(-2, -1) @ k).softmax(dim=-1)
        return self.proj((v @ attn.transpose(-2, -1)).view(b, c, h, w))


class AdditiveAttention(nn.Module):
    """SwiftFormer's additive attention: a softmax, no product of two activations."""

    def __init__(self, dim=16):
        super().__init__()
        self.to_query = nn.Linear(dim, dim)
        self.w_g = nn.Parameter(torch.randn(dim, 1))

    def forward(self, x):
        q = self.to_query(x)
        weights = (q @ self.w_g).softmax(dim=1)
        return q * (weights * q).sum(dim=1, keepdim=True)


class Hybrid(nn.Module):
    """A conv block named attention (NextViT's ConvAttention), then attention by 1x1 convs, then additive attention."""

    def __init__(self, dim=16):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 3, padding=1)
        self.mhca = ConvAttention(dim)
        self.attn = Attention2d(dim)
        self.additive = AdditiveAttention(dim)

    def forward(self, x):
        x = self.attn(self.mhca(self.stem(x)))
        return self.additive(x.flatten(2).transpose(1, 2))
