"""A small training loop under visprof.trace(), recorded by Nsight Systems for the fixture
training_loop.nsys2022.sqlite.gz (record_cpu_fixtures.py) and re-run by the tests to compare
the ops the recording holds with the ops visprof captures in process.

Each step is wrapped in a user range of the visprof domain ("step N"), which the importer must
ignore: ranges users push carry NVTX category 0."""
from __future__ import annotations

import torch

STEPS = 2


def build():
    import timm

    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=2, num_classes=10)
    x = torch.randn(2, 3, 32, 32)
    y = torch.tensor([1, 7])
    return model, x, y


def train(model, x, y, steps: int = STEPS) -> None:
    from visprof.native import nvtx

    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        with nvtx.range(f"step {step}"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()


def main():
    import visprof

    model, x, y = build()
    with visprof.trace(model, gpu=False) as session:
        train(model, x, y)
    return session


if __name__ == "__main__":
    main()
