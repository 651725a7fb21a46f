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
