"""Higher-order ops a capture records: torch's ``flex_attention`` and its backward.

A higher-order op (``torch._ops.HigherOrderOperator``) takes functions as arguments (flex_attention's
``score_mod`` and ``mask_mod``) and does not pass through a ``TorchDispatchMode`` as aten ops do: torch
calls a handler registered for the mode's own class (``hop.py_impl(ModeClass)``), and without one it
raises ``NotImplementedError: There was no rule registered for HigherOrderOperator flex_attention and
mode ...``. So an eager ``flex_attention(q, k, v)`` inside ``visprof.trace()`` failed.

``register`` hands each op here to the mode's ``__torch_dispatch__`` (as torch's own
``redirect_to_mode`` does), where it is one op like any other: timed, ranged, its FLOPs counted
(visprof.capture.op_costs) and classified by its name (``flex_attention``: attention/core). It runs
without the mode, as an aten op does: the aten ops eager flex_attention runs inside it (the scores, the
masks, the softmax) are its own work. Other higher-order ops (``cond``, ``while_loop``, ...) run
functions of the user's whose ops should be recorded one by one; they are not registered, and torch
still refuses them.

``torch._higher_order_ops`` is private: where it or ``py_impl`` is missing (a torch without flex
attention), nothing is registered and the refusal stays torch's.
"""
from __future__ import annotations

from typing import Any


def _flex_attention_ops() -> tuple[Any, Any]:
    try:
        from torch._higher_order_ops.flex_attention import flex_attention, flex_attention_backward
    except ImportError:  # pragma: no cover - depends on the installed torch
        return None, None
    return flex_attention, flex_attention_backward


FLEX_ATTENTION, FLEX_ATTENTION_BACKWARD = _flex_attention_ops()
RECORDED = tuple(op for op in (FLEX_ATTENTION, FLEX_ATTENTION_BACKWARD) if op is not None)


def is_higher_order(func: Any) -> bool:
    """Whether ``func`` is a higher-order op, not an aten overload (which has a schema)."""
    return not hasattr(func, "_schema")


def register(mode_class: type) -> None:
    """Sends the ops of ``RECORDED`` to ``mode_class.__torch_dispatch__``; once per class."""
    for op in RECORDED:
        try:
            op.py_impl(mode_class)(_to_dispatch(op))
        except (AttributeError, AssertionError, TypeError):  # an older torch's table, or registered already
            pass


def _to_dispatch(op: Any):
    def handler(mode, *args, **kwargs):
        return mode.__torch_dispatch__(op, (), args, kwargs)

    return handler
