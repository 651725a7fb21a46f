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
