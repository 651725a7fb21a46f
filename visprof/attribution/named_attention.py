"""Attention modules by name that compute no attention: their class-name rules do not apply.

The taxonomy counts a module as attention by its class name (``attention_module`` in
``visprof/data/categories.toml``) where the dataflow does not show the attention itself: a
1x1-conv projection of CoAtNet's ``Attention2d``, the scaling and head copies of a ViT's
``Attention``. A class name is a hint, and some names mislead: NextViT's ``ConvAttention``
(multi-head *convolutional* attention) is a grouped 3x3 conv, a batch norm, a ReLU and a 1x1
conv; nothing in it relates tokens to each other, yet by its name its 1x1 conv was an attention
projection (8% of NextViT-S's FLOPs) and its norm-free ops attention core, while timm's cpubone
and lowformer ``ConvAttention`` do run q.k^T -> softmax -> .v.

So a module instance counts as attention by name only if its own ops or its children's relate
activations to each other (``affinity_op`` in the taxonomy file): a softmax, any SDPA backend, or
a product of two tensors that is no linear layer (bmm, matmul, einsum, baddbmm). Linear attention (EfficientViT's ``LiteMLA``, a
product without softmax) and additive attention (SwiftFormer, a softmax without a product)
keep their names' rules; an instance with neither is read by its ops (convolution,
normalization, activation), like the gating modules the taxonomy excludes by name (CBAM,
coordinate attention). Compiled graphs write a linear layer as ``mm``/``addmm``, which is why
those two kinds are no evidence either way. A table without either pattern (a user's complete
table) keeps the names' rules as they are.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from visprof.attribution.categories import CategoryTable, expand_patterns
from visprof.native.records import ModuleRecord

# The default taxonomy's patterns: attention modules by class name, and ops that relate activations.
ATTENTION_MODULE_PATTERN = "attention_module"
AFFINITY_OP_PATTERN = "affinity_op"
# Appended to the class name of an instance that computes no attention: the attention_module
# pattern (anchored at the end) no longer matches it; every other rule sees the name as before.
NO_AFFINITY_MARK = "[computes no attention]"


def _pattern(table: CategoryTable, name: str) -> re.Pattern | None:
    pattern = table.patterns.get(name)
    return re.compile(expand_patterns(pattern, table.patterns)) if pattern is not None else None


def attention_by_name_only(modules: Sequence[ModuleRecord], ops: Iterable[tuple[str, int]],
                           table: CategoryTable) -> dict[int, str]:
    """Module index -> the class name its rules see, for each instance named as attention that
    computes none (module docstring). ``ops``: (aten op name, index of its innermost module) of
    what ran. Empty when no op ran (ranges imported from a recording: their ops are unknown) or
    the table has neither pattern."""
    named_as_attention, affinity = _pattern(table, ATTENTION_MODULE_PATTERN), _pattern(table, AFFINITY_OP_PATTERN)
    if named_as_attention is None or affinity is None:
        return {}
    named = [i for i, m in enumerate(modules) if named_as_attention.search(m.cls)]
    if not named:
        return {}
    related: set[int] = set()  # modules whose subtree runs an affinity op
    is_affinity: dict[str, bool] = {}  # per op name: a model repeats a few hundred names
    ran = False
    for name, module in ops:
        ran = True
        if module < 0:
            continue
        if name not in is_affinity:
            is_affinity[name] = bool(affinity.search(name))
        if is_affinity[name]:
            m = module
            while m >= 0 and m not in related:
                related.add(m)
                m = modules[m].parent
    if not ran:
        return {}
    return {i: f"{modules[i].cls}{NO_AFFINITY_MARK}" for i in named if i not in related}
