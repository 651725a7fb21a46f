"""Attention, norms and activations recognised by what the ops do, not by what modules are called.

The template forward of the attributed pass records its dataflow (``OpCapture(structure=True)``):
for each op, which earlier ops produced its tensor inputs, which inputs were parameters or
buffers, and a few facts about the op (the softmax dim, a permute's rank, a 1x1 conv).
Compiled models give the same from Inductor's FX graph (``visprof.capture.compiled``). ``find_roles``
reads that graph and gives ops a *role*, which the taxonomy maps to a category through
``attrs = {role = ...}`` rules (``visprof/data/categories.toml``; docs/taxonomy.md):

* ``attention-core``: a product of two activations (bmm/matmul/einsum/baddbmm, through views,
  transposes, scaling and casts), then a softmax over the last dimension (after mask or bias
  adds, scaling, dropout), then a product with a third activation; every SDPA op; the head
  split/merge copies, scaling and rotary embedding on the way from the projections.
* ``attention-projection``: the linears (and 1x1 convs) that produce q, k, v or consume the
  output, found by walking through views, permutes, reshapes, splits, unbinds, copies,
  casts and norms.
* ``relative-position-bias`` / ``attention-mask``: the ops that build an additive bias of the
  scores, from a parameter table (or, for a mask, from buffers and constants only).
* ``window-partition``: the roll/pad/partition copies between the blocks' tokens and the
  projections (a roll, a pad, or a permute of a tensor of rank >= 5 on the way).
* ``normalization``: a norm written as ops (RMS norm ``x * rsqrt(mean(x^2) + eps) * w``,
  LayerNorm as mean/var/sqrt), and the permutes around a norm op (``LayerNorm2d``).
* ``activation``: an activation written as ops that uses its input more than once (QuickGELU
  ``x * sigmoid(1.702 x)``, swish, tanh-GELU, hard-swish) or squares it (StarReLU, squared ReLU).

A softmax whose input is no product of two activations (a classifier, an SE-like gate over
channels, softmax-gated pooling) gets no role and stays an activation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

__all__ = [
    "Dataflow", "EXTERNAL", "PARAM", "ROLES", "Roles", "SOFTMAX", "find_roles", "op_kind",
    "ROLE_ACTIVATION", "ROLE_CORE", "ROLE_MASK", "ROLE_NORM", "ROLE_PROJECTION", "ROLE_BIAS", "ROLE_WINDOW",
]

PARAM = -2  # a parameter, buffer or tensor a module holds
EXTERNAL = -1  # an activation from outside the recording (the model's input)

ROLE_CORE = "attention-core"
ROLE_PROJECTION = "attention-projection"
ROLE_BIAS = "relative-position-bias"
ROLE_MASK = "attention-mask"
ROLE_WINDOW = "window-partition"
ROLE_NORM = "normalization"
ROLE_ACTIVATION = "activation"
ROLES = (ROLE_CORE, ROLE_PROJECTION, ROLE_BIAS, ROLE_MASK, ROLE_WINDOW, ROLE_NORM, ROLE_ACTIVATION)

# --- op kinds (aten packet names) ---------------------------------------------------------
CASTS = {"to", "_to_copy", "type_as", "_autocast_to_reduced_precision", "_autocast_to_full_precision",
         "convert_element_type"}
# Ops that only move, alias or cast data: a walk passes through them.
LAYOUT = {
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "reshape_as", "permute", "transpose", "t",
    "contiguous", "clone", "expand", "expand_as", "squeeze", "unsqueeze", "flatten", "unflatten", "unbind",
    "split", "split_with_sizes", "unsafe_split", "chunk", "select", "slice", "narrow", "as_strided", "alias",
    "detach", "movedim", "swapaxes", "getitem", "lift_fresh", "lift_fresh_copy", "dropout", "native_dropout",
    "repeat_interleave", "repeat", "tile",
    "copy", "copy_", "permute_copy", "view_copy", "expand_copy", "unsqueeze_copy", "squeeze_copy", "transpose_copy",
    *CASTS,
}
# Layout ops a (shifted) window partition adds around an attention core.
WINDOW_MARKERS = {"roll", "constant_pad_nd", "pad", "reflection_pad2d", "replication_pad2d"}
WINDOW_LAYOUT = LAYOUT | WINDOW_MARKERS
ELEMENTWISE = {
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "masked_fill", "masked_fill_",
    "where", "clamp", "clamp_min", "clamp_max", "tanh", "cat", "stack", "exp", "reciprocal",
}
PRODUCTS = {"bmm", "matmul", "mm", "einsum", "baddbmm"}
LINEARS = {"linear", "addmm", "mm", "matmul", "bmm", "einsum", "_addmm_activation"}
CONVS = {"convolution", "_convolution", "conv1d", "conv2d", "conv3d"}
SOFTMAX = {"softmax", "_softmax", "_safe_softmax", "special_softmax"}
NORM_OPS = {
    "layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm", "native_group_norm",
    "instance_norm", "batch_norm", "native_batch_norm", "_native_batch_norm_legit_no_training",
}
# The kind of norm each norm op is (normalization's sub-category): the permutes around one, in a parent
# module (MambaOut's stem, NesT's pooling), take it as the ``norm_kind`` fact; they had been "other"
NORM_KINDS = {"layer_norm": "layer", "native_layer_norm": "layer", "rms_norm": "rms", "_fused_rms_norm": "rms",
              "group_norm": "group", "native_group_norm": "group", "instance_norm": "instance",
              "batch_norm": "batch", "native_batch_norm": "batch", "_native_batch_norm_legit_no_training": "batch"}
# Reductions a q/k normalisation makes (F.normalize): passable on the way to a projection.
QK_NORM_REDUCTIONS = {"linalg_vector_norm", "norm"}
NONLINEAR = {"sigmoid", "tanh", "relu", "relu6", "hardtanh", "erf", "softplus", "hardsigmoid", "gelu", "silu",
             "relu_", "sigmoid_", "tanh_", "hardtanh_", "hardsigmoid_"}
POINTWISE_FN = {"add", "sub", "rsub", "mul", "div", "neg", "pow", "square", "clamp", "clamp_min", "clamp_max",
                "add_", "mul_", "div_", "sub_", *NONLINEAR, *CASTS}
SCORE_MODIFIERS = LAYOUT | ELEMENTWISE - {"cat", "stack", "exp", "reciprocal"}
# Ops that create a tensor from nothing but whose values are data, not constants: an input
# drawn inside the recording (``model(torch.randn(...))``) is an activation.
DATA_SOURCES = {"randn", "rand", "randint", "randperm", "normal", "empty", "empty_strided", "randn_like", "rand_like",
                "randint_like", "empty_like", "bernoulli"}
# How far a walk goes before it gives up: attention, norms and activations are local patterns.
MAX_WALK = 48


def op_kind(name: str) -> str:
    """``aten.softmax.int`` -> ``softmax``, ``prims.convert_element_type.default`` ->
    ``convert_element_type`` (Inductor's post-grad graphs cast with prims); other names are
    kept as given (``getitem``)."""
    parts = name.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "prims") else name


def is_sdpa(kind: str) -> bool:
    return ("scaled_dot_product" in kind or "flash_attention" in kind or "efficient_attention" in kind
            or "cudnn_attention" in kind or kind in ("_fused_sdp_choice", "flex_attention"))


@dataclass
class Dataflow:
    """The ops of one forward and the edges between them.

    ``kinds[i]``: aten packet name of op i (``op_kind``). ``inputs[i]``: one entry per tensor
    input, in argument order: the index of the op that produced it, ``PARAM`` or ``EXTERNAL``.
    ``info[i]``: the op's fact that a rule needs: softmax -> over the last dim (bool); permute ->
    rank; pow -> exponent; convolution -> 1x1 with groups 1 (bool); else None.
    """

    kinds: list[str] = field(default_factory=list)
    inputs: list[tuple[int, ...]] = field(default_factory=list)
    info: list[Any] = field(default_factory=list)

    def add(self, kind: str, inputs: Iterable[int], info: Any = None) -> int:
        self.kinds.append(kind)
        self.inputs.append(tuple(inputs))
        self.info.append(info)
        return len(self.kinds) - 1

    def __len__(self) -> int:
        return len(self.kinds)


class _Analysis:
    def __init__(self, flow: Dataflow):
        self.flow = flow
        self.kinds = flow.kinds
        self.inputs = flow.inputs
        self.info = flow.info
        n = len(flow)
        self.const = [False] * n  # computed from parameters/buffers/constants only
        self.uses_param = [False] * n
        self.consumers: list[list[int]] = [[] for _ in range(n)]
        for i in range(n):
            ins = self.inputs[i]
            const = True
            uses_param = False
            for p in ins:
                if p >= 0:
                    self.consumers[p].append(i)
                    const = const and self.const[p]
                    uses_param = uses_param or self.uses_param[p]
                elif p == EXTERNAL:
                    const = False
                else:
                    uses_param = True
            self.const[i] = const and not (not ins and self.kinds[i] in DATA_SOURCES)
            self.uses_param[i] = uses_param
        # A detach that nothing uses is autograd saving a tensor for the backward (a sigmoid's or a
        # relu's output, with grad on), not a use of it: counted, it was a second exit of every
        # activation written as ops, which a training step then read as elementwise.
        for i in range(n):
            if self.kinds[i] == "detach" and not self.consumers[i]:
                for p in self.inputs[i]:
                    if p >= 0:
                        self.consumers[p].remove(i)
        self.roles: dict[int, str] = {}
        self.facts: dict[int, dict[str, str]] = {}  # op -> facts a rule reads beside its role (Roles.facts)

    # helpers --------------------------------------------------------------------------
    def active(self, i: int) -> list[int]:
        """Producers of op i's activation inputs (not parameters, constants or the model input)."""
        return [p for p in self.inputs[i] if p >= 0 and not self.const[p]]

    def is_activation(self, p: int) -> bool:
        return p == EXTERNAL or (p >= 0 and not self.const[p])

    def mark(self, ops: Iterable[int], role: str) -> None:
        for i in ops:
            self.roles.setdefault(i, role)

    def is_projection(self, i: int) -> bool:
        """A linear layer: a GEMM with one activation and one constant (weight) operand, or a 1x1 conv."""
        kind = self.kinds[i]
        if kind in CONVS:
            return bool(self.info[i])
        if kind not in LINEARS:
            return False
        ins = self.inputs[i]
        operands = ins[1:3] if kind in ("addmm", "_addmm_activation") else ins
        acts = [p for p in operands if self.is_activation(p)]
        return len(acts) == 1 and len(operands) >= 2

    def product_operands(self, i: int) -> tuple[int, ...]:
        ins = self.inputs[i]
        return ins[1:3] if self.kinds[i] == "baddbmm" else ins[:2]

    def is_attention_product(self, i: int) -> bool:
        """A GEMM of two activations (no weight): q.k^T or attn.v."""
        if self.kinds[i] not in PRODUCTS:
            return False
        operands = self.product_operands(i)
        return len(operands) == 2 and all(self.is_activation(p) for p in operands)

    # attention ------------------------------------------------------------------------
    def score_path(self, softmax: int) -> tuple[set[int], set[int]]:
        """(ops between the q.k^T product and the softmax, the products) walking back from a softmax."""
        memo: dict[int, bool] = {}
        path: set[int] = set()
        products: set[int] = set()
        budget = [MAX_WALK]

        def reaches(i: int) -> bool:
            if i in memo:
                return memo[i]
            memo[i] = False
            budget[0] -= 1
            if budget[0] < 0:
                return False
            if self.is_attention_product(i):
                products.add(i)
                memo[i] = True
                return True
            # a linear layer on the scores mixes the heads (talking heads: CaiT's proj_l, EfficientFormerV2's
            # talking_head1): part of computing them, core, where it had been read as a q/k/v projection
            if (self.kinds[i] not in SCORE_MODIFIERS and not (self.kinds[i] in SOFTMAX and i != softmax)
                    and not self.is_projection(i)):
                return False
            found = False
            for p in self.active(i):
                found = reaches(p) or found
            if found:
                path.add(i)
            memo[i] = found
            return found

        for p in self.active(softmax):
            reaches(p)
        return path, products

    def value_product(self, softmax: int) -> tuple[set[int], int | None]:
        """(ops between the softmax and attn.v, the attn.v product) walking forward."""
        seen: set[int] = set()
        frontier = [softmax]
        parents: dict[int, int] = {}
        while frontier and len(seen) < MAX_WALK:
            i = frontier.pop(0)
            for c in self.consumers[i]:
                if c in seen:
                    continue
                seen.add(c)
                parents[c] = i
                if self.is_attention_product(c):
                    path: set[int] = set()
                    j = parents[c]
                    while j != softmax:
                        path.add(j)
                        j = parents[j]
                    return path, c
                kind = self.kinds[c]
                # a linear layer on the weights mixes the heads (talking heads: CaiT's proj_w), as above
                if kind in LAYOUT or kind in ("mul", "div", "masked_fill", "where", "nan_to_num") or self.is_projection(c):
                    frontier.append(c)
        return set(), None

    def chain_back(self, start: int) -> tuple[set[int], set[int], bool]:
        """From an operand of an attention product back to its projections.

        Returns (ops on the way, projections found, whether every path ended in a projection).
        Passes through layout ops, casts, norms, scaling and rotary embeddings; a multi-input
        op is passed only where its inputs lead to the same place (x*cos + rot(x)*sin) or
        all to projections (a concatenation of two projections)."""
        memo: dict[int, tuple[frozenset, frozenset, bool]] = {}
        budget = [MAX_WALK]

        def walk(i: int) -> tuple[frozenset, frozenset, bool]:
            if i in memo:
                return memo[i]
            memo[i] = (frozenset(), frozenset(), False)
            budget[0] -= 1
            if budget[0] < 0 or i < 0:
                return memo[i]
            if self.is_projection(i):
                memo[i] = (frozenset(), frozenset([i]), True)
                return memo[i]
            kind = self.kinds[i]
            passable = (kind in LAYOUT or kind in ELEMENTWISE or kind in NORM_OPS or kind in QK_NORM_REDUCTIONS
                        or self.roles.get(i) == ROLE_NORM or kind in ("pow", "square", "sqrt", "rsqrt"))
            active = self.active(i)
            if not passable or not active:
                return memo[i]
            branches = [walk(p) for p in active]
            stops = [b[1] for b in branches]
            if len(branches) > 1 and not (all(b[2] for b in branches) or all(s == stops[0] for s in stops)):
                return memo[i]
            ops = frozenset().union(*(b[0] for b in branches)) | {i}
            memo[i] = (ops, frozenset().union(*stops), all(b[2] for b in branches))
            return memo[i]

        if start < 0 or self.const[start]:
            return set(), set(), False
        ops, projections, complete = walk(start)
        # Norm ops keep their own category; the rest of the way is head split/merge, scaling, RoPE.
        return {i for i in ops if self.kinds[i] not in NORM_OPS and self.roles.get(i) != ROLE_NORM}, set(projections), complete

    def chain_forward(self, start: int) -> tuple[set[int], set[int]]:
        """From an attention output forward through layout ops to the output projections."""
        ops: set[int] = set()
        projections: set[int] = set()
        frontier = list(self.consumers[start])
        seen: set[int] = set()
        while frontier and len(seen) < MAX_WALK:
            i = frontier.pop(0)
            if i in seen:
                continue
            seen.add(i)
            if self.is_projection(i):
                projections.add(i)
            elif self.kinds[i] in LAYOUT:
                ops.add(i)
                frontier.extend(self.consumers[i])
        return ops, projections

    def bias_branch(self, root: int, known: set[int]) -> tuple[set[int], bool]:
        """The ops that build an addend of the scores; (ops, built from a parameter table).
        A constant addend is everything it was computed from; an activation addend (relative
        logits computed from q) must lead back only to constants and ops of this attention."""
        ops: set[int] = set()
        stack = [root]
        while stack:
            i = stack.pop()
            if i < 0 or i in ops or i in known:
                continue
            if len(ops) >= MAX_WALK:
                return set(), False
            if not self.const[i] and not self.active(i):
                return set(), False  # fed by the model's input: not this attention's bias
            ops.add(i)
            stack.extend(p for p in self.inputs[i] if p >= 0)
        return ops, any(self.uses_param[i] for i in ops) or (root < 0 and root == PARAM)

    def attention(self) -> None:
        cores: list[tuple[set[int], list[int], set[int], list[int]]] = []  # (core ops, operands, addend roots, outputs)
        for s, kind in enumerate(self.kinds):
            if kind in SOFTMAX and self.info[s]:
                path, products = self.score_path(s)
                if not products:
                    continue
                post, av = self.value_product(s)
                if av is None:
                    continue
                core = {s, av, *path, *products, *post}
                operands = [p for q in products for p in self.product_operands(q)]
                operands += [p for p in self.product_operands(av) if p not in post and p != s]
                addends = {p for i in path for p in self.inputs[i]
                           if p not in path and p not in products and self.kinds[i] in ("add", "add_", "sub", "masked_fill", "where")}
                addends |= {self.inputs[q][0] for q in products if self.kinds[q] == "baddbmm"}
                cores.append((core, operands, addends, [av]))
            elif is_sdpa(kind):
                ins = self.inputs[s]
                cores.append(({s}, list(ins[:3]), set(ins[3:]), [s]))
        for core, operands, addends, outputs in cores:
            self.mark(core, ROLE_CORE)
        for core, operands, addends, outputs in cores:
            chain: set[int] = set()
            projections: set[int] = set()
            for p in operands:
                ops, found, _ = self.chain_back(p)
                chain |= ops
                projections |= found
            out_projections: set[int] = set()
            for o in outputs:
                ops, found = self.chain_forward(o)
                chain |= ops
                out_projections |= found
            self.mark(projections | out_projections, ROLE_PROJECTION)
            self.mark(chain, ROLE_CORE)
            known = core | chain | projections
            for root in addends:
                ops, from_table = self.bias_branch(root, known)
                self.mark(ops, ROLE_BIAS if from_table else ROLE_MASK)
            for p in projections:
                self.window_chain(self.active(p), backward=True)
            for p in out_projections:
                self.window_chain([p], backward=False)

    def window_chain(self, starts: list[int], backward: bool) -> None:
        """Roll/pad/partition copies between the tokens and a projection (or after the output
        projection, the reverse). Marked only when the way holds a roll, a pad or a permute
        of rank >= 5 (a window partition); plain reshapes to tokens are left as layout."""
        ops: set[int] = set()
        frontier = list(starts) if backward else [c for s in starts for c in self.consumers[s]]
        while frontier and len(ops) < MAX_WALK:
            i = frontier.pop()
            if i < 0 or i in ops or self.kinds[i] not in WINDOW_LAYOUT or self.const[i]:
                continue
            if i in self.roles and self.roles[i] != ROLE_WINDOW:
                continue
            ops.add(i)
            frontier.extend(self.active(i) if backward else self.consumers[i])
        if any(self.kinds[i] in WINDOW_MARKERS or (self.kinds[i] == "permute" and (self.info[i] or 0) >= 5)
               for i in ops):
            self.mark(ops, ROLE_WINDOW)

    # norms written as ops -------------------------------------------------------------
    def through(self, i: int, forward: bool) -> int:
        """Skip single-path views and casts (forward: to the only consumer; back: to the producer)."""
        for _ in range(8):
            if forward:
                nxt = self.consumers[i]
                if len(nxt) != 1 or self.kinds[nxt[0]] not in LAYOUT:
                    return i
                i = nxt[0]
            else:
                if self.kinds[i] not in LAYOUT:
                    return i
                active = self.active(i)
                if len(active) != 1:
                    return i
                i = active[0]
        return i

    def norms(self) -> None:
        for r, kind in enumerate(self.kinds):
            if kind in ("rsqrt", "sqrt") and r not in self.roles:
                self.norm_at(r)
            elif kind in NORM_OPS:
                self.norm_permutes(r)

    def norm_at(self, r: int) -> None:
        """rsqrt(mean(u^2) + eps) or sqrt(var(x) + eps), u = x or x - mean(x), normalising x."""
        active = self.active(r)
        if len(active) != 1:
            return
        root = lambda i: self.through(i, False)  # noqa: E731
        group = {r}
        v = root(active[0])
        if self.kinds[v] in ("add", "add_") and len(self.active(v)) == 1:  # + eps
            group.add(v)
            v = root(self.active(v)[0])
        if self.kinds[v] in ("var", "var_mean", "std"):
            if len(self.active(v)) != 1:
                return
            group.add(v)
            base = {root(self.active(v)[0])}
        elif self.kinds[v] == "mean":
            if len(self.active(v)) != 1:
                return
            sq = root(self.active(v)[0])
            kind = self.kinds[sq]
            sources = self.active(sq)
            squares = ((kind == "pow" and self.info[sq] == 2 and len(sources) == 1) or (kind == "square" and len(sources) == 1)
                       or (kind in ("mul", "mul_") and len(sources) == 2 and root(sources[0]) == root(sources[1])))
            if not squares:
                return
            group |= {v, sq}
            u = root(sources[0])
            base = {u}
            centred = self.centring(u)
            if centred:
                group |= centred[0]
                base.add(centred[1])
        else:
            return
        # The normalising op: x * rsqrt(...) or (x - mean) / sqrt(...), through views of both.
        out = None
        for c in self._consumers_through_views(r, group):
            if not ((self.kinds[c] in ("mul", "mul_") and self.kinds[r] == "rsqrt")
                    or (self.kinds[c] in ("div", "div_") and self.kinds[r] == "sqrt")):
                continue
            for p in self.active(c):
                p = root(p)
                centred = self.centring(p)
                if p in base or (centred and centred[1] in base):
                    out = c
                    group |= centred[0] if centred else set()
            if out is not None:
                break
        if out is None:
            return
        group.add(out)
        # The affine part: * weight, + bias (constants, through views).
        i = out
        for op in (("mul", "mul_"), ("add", "add_")):
            nxt = self.consumers[self.through(i, True)]
            if len(nxt) == 1 and self.kinds[nxt[0]] in op and len(self.active(nxt[0])) == 1:
                i = nxt[0]
                group.add(i)
        self.mark(group, ROLE_NORM)

    def centring(self, u: int) -> tuple[set[int], int] | None:
        """({sub, mean}, x) when u = x - mean(x), else None."""
        if self.kinds[u] not in ("sub", "sub_"):
            return None
        xs = [self.through(p, False) for p in self.active(u)]
        means = [m for m in xs if self.kinds[m] == "mean"]
        if len(xs) != 2 or len(means) != 1:
            return None
        x = xs[1] if xs[0] == means[0] else xs[0]
        if [self.through(p, False) for p in self.active(means[0])] != [x]:
            return None
        return {u, means[0]}, x

    def _consumers_through_views(self, i: int, group: set[int]) -> list[int]:
        out, frontier = [], list(self.consumers[i])
        while frontier and len(out) < MAX_WALK:
            c = frontier.pop(0)
            if self.kinds[c] in LAYOUT and self.kinds[c] not in CASTS:
                group.add(c)
                frontier.extend(self.consumers[c])
            else:
                out.append(c)
        return out

    def norm_permutes(self, n: int) -> None:
        """permute -> norm -> permute back (LayerNorm2d): the permutes are the norm's own."""
        active = self.active(n)
        if len(active) != 1:
            return
        before = []
        i = active[0]
        while self.kinds[i] in ("contiguous", "clone") and len(self.consumers[i]) == 1 and len(self.active(i)) == 1:
            before.append(i)
            i = self.active(i)[0]
        if self.kinds[i] != "permute" or len(self.consumers[i]) != 1:
            return
        before.append(i)
        after = []
        j = n
        while len(self.consumers[j]) == 1 and self.kinds[self.consumers[j][0]] in ("contiguous", "clone", "getitem"):
            j = self.consumers[j][0]
            after.append(j)
        nxt = self.consumers[j]
        if len(nxt) != 1 or self.kinds[nxt[0]] != "permute":
            return
        after.append(nxt[0])
        self.mark(before + after, ROLE_NORM)
        for i in before + after:
            if self.roles[i] == ROLE_NORM:
                self.facts[i] = {"norm_kind": NORM_KINDS[self.kinds[n]]}

    # activations written as ops ---------------------------------------------------------
    def activations(self) -> None:
        for a, kind in enumerate(self.kinds):
            if kind in NONLINEAR and a not in self.roles:
                self.activation_at(a)

    def _back_to_one_input(self, p: int, cone: set[int], budget: list[int]) -> int:
        """The op that ``p`` is computed from alone, walking back through pointwise ops used once whose
        activation inputs all come from that one op (1.702 * x; x + 0.044715 * x^3, tanh-GELU's);
        ``cone`` collects the ops passed. ``p`` itself where it is no such op."""
        budget[0] -= 1
        if (budget[0] < 0 or self.kinds[p] not in POINTWISE_FN or len(self.consumers[p]) != 1 or p in self.roles
                or not self.active(p)):
            return p
        passed: set[int] = set()
        sources = {self._back_to_one_input(q, passed, budget) for q in self.active(p)}
        if len(sources) != 1:
            return p
        cone |= passed | {p}
        return sources.pop()

    def _grow_forward(self, region: set[int], root: int) -> None:
        """Pointwise ops whose activation inputs are the region or x itself."""
        grew = True
        while grew and len(region) < 16:
            grew = False
            for r in list(region):
                for c in self.consumers[r]:
                    if c in region or c in self.roles or self.kinds[c] not in POINTWISE_FN:
                        continue
                    if all(p in region or p == root for p in self.active(c)):
                        region.add(c)
                        grew = True

    def activation_at(self, a: int) -> None:
        active = self.active(a)
        if len(active) != 1:
            return
        # Back: pointwise ops down to the input x they are all computed from.
        cone: set[int] = set()
        root = self._back_to_one_input(active[0], cone, [12])
        region = {a} | cone
        self._grow_forward(region, root)
        # A scaling of x alone that meets the region (tanh-GELU's 0.5 * x, times 1 + tanh(...)): its own
        # branch from x, which growing from the region does not reach
        for c in self.consumers[root]:
            outside = [d for d in self.consumers[c] if d not in region]
            if (c not in region and c not in self.roles and self.kinds[c] in POINTWISE_FN and self.active(c) == [root]
                    and len(outside) == 1 and self.kinds[outside[0]] in POINTWISE_FN and outside[0] not in self.roles
                    and all(p in region or p == c for p in self.active(outside[0]))):
                region |= {c, outside[0]}
                self._grow_forward(region, root)
        uses_of_root = sum(1 for r in region for p in self.active(r) if p == root)
        squared = any((self.kinds[r] == "pow" and self.info[r] == 2) or self.kinds[r] == "square"
                      for r in region if r != a)
        exits = [r for r in region if any(c not in region for c in self.consumers[r]) or not self.consumers[r]]
        if (uses_of_root >= 2 or squared) and len(exits) == 1 and len(region) > 1:
            self.mark(region, ROLE_ACTIVATION)


class Roles(dict):
    """``find_roles``' answer: op -> role, and ``facts``: op -> attributes a rule reads beside the role
    (``norm_kind``: the kind of norm a permute around a norm op serves)."""

    def __init__(self, roles=(), facts=None):
        super().__init__(roles)
        self.facts: dict[int, dict[str, str]] = dict(facts or {})


def find_roles(flow: Dataflow) -> Roles:
    """Role of each op that has one (docs above); ops without a role are left to the op rules."""
    analysis = _Analysis(flow)
    analysis.norms()  # first: a norm written as ops can sit between a projection and q
    analysis.attention()
    analysis.activations()
    return Roles(analysis.roles, analysis.facts)
