"""FLOPs of one aten op from its argument shapes.

torch.utils.flop_counter's formulas cover the ops autograd leaves behind (convolution, mm,
addmm, bmm, the SDPA backends). Under torch.inference_mode the dispatch mode sees the
composite ops before they decompose (aten.conv2d, aten.linear, aten.matmul,
aten.scaled_dot_product_attention), and under no_grad the CPU runs its own SDPA backend, so
those are mapped onto the same formulas here.
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils.flop_counter import flop_registry

aten = torch.ops.aten
_CONV_ND = {aten.conv1d, aten.conv2d, aten.conv3d}


def _shape(t: Any) -> tuple[int, ...]:
    return tuple(t.shape)


def _conv_nd(args, kwargs, out) -> float:
    x, w = args[0], args[1]
    groups = args[6] if len(args) > 6 else kwargs.get("groups", 1)
    stride = args[3] if len(args) > 3 else 1
    return flop_registry[aten.convolution](x, w, None, stride, 0, 1, False, [0], groups, out_val=out)


def _linear(args, kwargs, out) -> float:
    in_features = args[1].shape[1]
    return 2.0 * math.prod(_shape(out)) * in_features


def _matmul(args, kwargs, out) -> float:
    return 2.0 * math.prod(_shape(out)) * args[0].shape[-1]


def _sdpa(args, kwargs, out) -> float:
    q, k, v = args[:3]
    if q.dim() != 4:
        return 0.0
    return flop_registry[aten._scaled_dot_product_efficient_attention](q, k, v, None, False, out_val=(out,))


_COMPOSITES = {
    **{packet: _conv_nd for packet in _CONV_ND},
    aten.linear: _linear,
    aten.matmul: _matmul,
    aten.scaled_dot_product_attention: _sdpa,
    # The CPU's SDPA backend (what no_grad, unlike inference_mode, dispatches to on the CPU).
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa,
}


def op_flops(func, args: tuple, kwargs: dict, out: Any) -> float:
    """FLOPs of `func(*args, **kwargs) -> out`; 0 for ops no formula covers (elementwise,
    norms: visprof counts matrix and convolution work, as torch's FlopCounterMode does)."""
    packet = func._overloadpacket
    try:
        formula = flop_registry.get(packet)
        if formula is not None:
            return float(formula(*args, **kwargs, out_val=out))
        composite = _COMPOSITES.get(packet)
        return float(composite(args, kwargs, out)) if composite else 0.0
    except Exception:  # a formula that cannot read these arguments counts nothing
        return 0.0
