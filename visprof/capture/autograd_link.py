"""Which forward op each backward op differentiates, from autograd's sequence numbers.

Backward ops run after every module's forward has returned: no module hook is active and the
forward's dataflow is over, so by themselves they have no module chain and no role, and a
training step's attention backward (the GEMMs of q·kᵀ and attn·v, the softmax's backward, the
projections' GEMMs) read as ``linear`` and ``activation``. Autograd knows better: each
differentiable op's autograd kernel makes a node with the next number of a per-thread counter
just before it calls down to the op (where a dispatch mode sees it), and the engine runs every
backward op with that node as ``torch._C._current_autograd_node()``. So the first op the mode
sees after the counter moved made the node numbered one below the counter, and a backward op
belongs to the forward op whose node it runs in.

A backward op takes its forward op's role (``attrs["role"]``: attention core, projection, ...)
only where the node's name is the forward op's (``BmmBackward0`` for ``aten.bmm``,
``NativeLayerNormBackward0`` for ``aten.native_layer_norm``), and its module only then or for a
custom ``autograd.Function``'s node. The numbers alone would misread two cases: a custom
Function's node is made before its forward's first op, so it is that Function's (its module's),
not that op's (its role's); and the counter is per thread, so the numbers are kept per thread
and a backward op looks for its node's on its own thread first (a reentrant checkpoint recomputes
and differentiates on the engine's thread), then on the thread that entered the capture, where
a number of another thread's can name an op of another kind. Whatever is not linked is
classified by its op name, as before.

Ops that run inside a module's forward during backward (a checkpoint's recomputation) are
forward ops again, in their module, and their nodes are numbered as a forward's. Not linked:
the ``add`` with which the engine sums the gradients of a tensor used twice (a residual stream;
q used for q·kᵀ and a projection) while it runs the node whose gradient arrives second: that is
gradient accumulation, elementwise work, not the node's op.
"""
from __future__ import annotations

import re
import threading

import torch
from torch.autograd.function import BackwardCFunction

try:  # private torch API (torch >= 2.1); without it backward ops stay unlinked, as before
    from torch._C import _current_autograd_node as _current_node
    from torch._C._autograd import _get_sequence_nr as _sequence_counter
except ImportError:  # pragma: no cover - depends on the installed torch
    _current_node = _sequence_counter = None

_ADDS = frozenset({torch.ops.aten.add.Tensor, torch.ops.aten.add_.Tensor})
_NODE_SUFFIX = re.compile(r"Backward\d*$")


def node_stem(node_name: str) -> str:
    """``MaxPool2DWithIndicesBackward0`` -> ``maxpool2dwithindices``."""
    return _NODE_SUFFIX.sub("", node_name).lower()


def op_stem(op_name: str) -> str:
    """``aten.max_pool2d_with_indices.default`` -> ``maxpool2dwithindices``: as node_stem spells it."""
    parts = op_name.split(".")
    return (parts[1] if len(parts) > 1 else parts[0]).replace("_", "").lower()


class AutogradLink:
    """Feed it every op the capture decides on the spot, in order (``op``); it answers with the
    module a backward op takes from its forward op, and keeps ``backward_of`` (backward op's
    index -> forward op's index) for the roles found after the capture."""

    def __init__(self) -> None:
        self.available = _current_node is not None
        self._thread = threading.get_ident()  # the capture's: it runs the forward
        # per thread, the node counter as the last op on it left it
        self._counters = {self._thread: _sequence_counter()} if self.available else {}
        # (thread, node number) -> (op index, module, op)
        self._forward: dict[tuple[int, int], tuple[int, int, object]] = {}
        self._stems: dict[object, str] = {}
        self.backward_of: dict[int, int] = {}
        # backward ops whose node was made before the capture began: their forward ran outside it
        # (a block around loss.backward() alone), so only their op names classify them
        self._first = self._counters.get(self._thread)
        self.of_an_earlier_forward = 0

    def op(self, index: int, func, module: int) -> tuple[int, bool]:
        """(module to record, whether the op is a backward op) for op ``index``, run in ``module``;
        ``backward_of`` gets the op if it is to take its forward op's role."""
        if not self.available:
            return module, False
        node = _current_node()
        if node is None or module >= 0:  # a forward op, or a recomputation inside a module's forward
            thread = threading.get_ident()
            counter = _sequence_counter()
            last = self._counters.get(thread)
            self._counters[thread] = counter
            if last is not None and counter != last:  # this op's autograd kernel made the newest node
                self._forward[thread, counter - 1] = (index, module, func)
            return module, False
        number = node._sequence_nr()
        for thread in dict.fromkeys((threading.get_ident(), self._thread)):
            forward = self._forward.get((thread, number))
            if forward is None or (func in _ADDS and forward[2] not in _ADDS):
                continue
            if self._made(node, forward[2]):
                self.backward_of[index] = forward[0]
                return forward[1], True
            if isinstance(node, BackwardCFunction):  # a custom Function's node: its module, not its first op's role
                return forward[1], True
        if self._first is not None and number < self._first and func not in _ADDS:
            self.of_an_earlier_forward += 1
        return module, True

    def _made(self, node, forward_func) -> bool:
        """Whether ``node`` is the one ``forward_func``'s autograd kernel makes (by name)."""
        stem = self._stems.get(forward_func)
        if stem is None:
            stem = self._stems[forward_func] = op_stem(str(forward_func))
        return node_stem(node.name()) == stem
