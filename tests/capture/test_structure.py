"""Attention, norms and activations recognised by what the ops do (visprof/capture/structure.py), on
hand-written models whose classes are named nothing like attention, norm or activation."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import default_table
from visprof.capture.structure import EXTERNAL, PARAM, Dataflow, find_roles

GEMMS = ("aten.matmul.", "aten.bmm.", "aten.einsum.", "aten.baddbmm.")


def capture(model: nn.Module, x: torch.Tensor, autocast: bool = False) -> list[tuple[str, str, str | None, str]]:
    """(op name, module path, role, category key) of every op of one forward."""
    model.eval()
    table = default_table()
    tracker = ModuleTracker(model)
    template = OpCapture(tracker, table, nvtx=False, structure=True)
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else torch.autocast("cpu", enabled=False)
    with tracker, template, torch.inference_mode(), ctx:
        model(x)
    out = []
    for op in template.to_records():
        path = tracker.modules[op.module].path if op.module >= 0 else "?"
        out.append((op.name, path, op.attrs.get("role"),
                    table.classify_op(op.name, tracker.classes(op.module), op.attrs).key))
    return out


def keys(ops, name_prefix: tuple[str, ...] | str, path: str | None = None) -> list[str]:
    prefixes = (name_prefix,) if isinstance(name_prefix, str) else name_prefix
    return [k for n, p, _, k in ops if n.startswith(prefixes) and (path is None or p == path)]


def assert_attention(ops, projections: tuple[str, ...], others: tuple[str, ...] = (), products: int = 2):
    gemm = keys(ops, GEMMS)
    assert len(gemm) >= products and set(gemm) == {"attention/core"}, ops
    assert set(keys(ops, "aten.softmax.")) <= {"attention/core"}
    for path in projections:
        assert keys(ops, ("aten.linear.", "aten.conv2d."), path) == ["attention/projections"], (path, ops)
    for path in others:
        assert "attention" not in " ".join(keys(ops, ("aten.linear.", "aten.conv2d."), path)), (path, ops)


# --- hand-written attention in several shapes -----------------------------------------------
class TinyHybrid(nn.Module):
    """Conv stem + inline self-attention in the model's own forward, + MLP head."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.stem = nn.Conv2d(3, dim, 4, 4)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.fc = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        return self.fc(self.proj(x).mean(1))


def test_inline_attention_in_a_model_class():
    ops = capture(TinyHybrid(), torch.randn(2, 3, 32, 32))
    assert_attention(ops, projections=("qkv", "proj"), others=("fc",))
    assert keys(ops, "aten.conv2d.", "stem") == ["convolution/dense"]
    # head split/merge copies and the scaling belong to the core
    assert set(keys(ops, ("aten.permute.", "aten.unbind.", "aten.mul."), "")) == {"attention/core"}


def test_inline_attention_under_autocast():
    ops = capture(TinyHybrid(), torch.randn(2, 3, 32, 32), autocast=True)
    assert_attention(ops, projections=("qkv", "proj"), others=("fc",))
    assert set(keys(ops, "aten.to.")) == {"memory/cast"}


def attend(q, k, v, mask=None):
    """Attention as a plain function, with an optional additive or boolean mask."""
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    return torch.matmul(F.dropout(scores.softmax(-1), 0.0, False), v)


class Mixer(nn.Module):
    """Separate q/k/v projections, a function doing the attention, optional causal masks."""

    def __init__(self, dim=32, heads=4, mask: str | None = None, tokens=16, kv_heads=None, repeat="expand"):
        super().__init__()
        self.heads, self.kv_heads, self.repeat = heads, kv_heads or heads, repeat
        self.head_dim = dim // heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, self.kv_heads * self.head_dim)
        self.to_v = nn.Linear(dim, self.kv_heads * self.head_dim)
        self.out = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        causal = torch.ones(tokens, tokens).tril().bool()
        if mask == "bool":
            self.register_buffer("mask", causal)
        elif mask == "additive":
            self.register_buffer("mask", torch.zeros(tokens, tokens).masked_fill(~causal, -1e4))
        else:
            self.mask = None

    def split(self, t, heads):
        B, N, _ = t.shape
        return t.view(B, N, heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        B, N, C = x.shape
        q = self.split(self.to_q(x), self.heads)
        k = self.split(self.to_k(x), self.kv_heads)
        v = self.split(self.to_v(x), self.kv_heads)
        group = self.heads // self.kv_heads
        if group > 1:  # multi-query / grouped-query: share k/v heads
            if self.repeat == "expand":
                k = k[:, :, None].expand(B, self.kv_heads, group, N, self.head_dim).reshape(B, self.heads, N, -1)
                v = v[:, :, None].expand(B, self.kv_heads, group, N, self.head_dim).reshape(B, self.heads, N, -1)
            else:
                k = k.repeat_interleave(group, dim=1)
                v = v.repeat_interleave(group, dim=1)
        y = attend(q, k, v, self.mask)
        x = x + self.out(y.transpose(1, 2).reshape(B, N, C))
        return x + self.mlp(x)


@pytest.mark.parametrize("mask", [None, "bool", "additive"])
def test_attention_in_a_function_with_masks(mask):
    ops = capture(Mixer(mask=mask), torch.randn(2, 16, 32))
    assert_attention(ops, projections=("to_q", "to_k", "to_v", "out"), others=("mlp.0", "mlp.2"))
    if mask is not None:
        assert set(keys(ops, ("aten.masked_fill.", "aten.add."), "")) <= {"attention/core", "elementwise"}
        assert "attention/core" in keys(ops, ("aten.masked_fill.", "aten.add.", "aten.bitwise_not."), "")


@pytest.mark.parametrize("kv_heads, repeat", [(1, "expand"), (2, "expand"), (1, "repeat_interleave")])
def test_multi_query_and_grouped_query_attention(kv_heads, repeat):
    ops = capture(Mixer(kv_heads=kv_heads, repeat=repeat), torch.randn(2, 16, 32))
    assert_attention(ops, projections=("to_q", "to_k", "to_v", "out"), others=("mlp.0", "mlp.2"))


class EinsumMixer(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.o = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).view(B, N, 3, self.heads, -1).unbind(2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * q.shape[-1] ** -0.5
        y = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v)
        return self.o(y.reshape(B, N, C))


def test_einsum_attention():
    assert_attention(capture(EinsumMixer(), torch.randn(2, 8, 32)), projections=("qkv", "o"))


class SdpaMixer(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = (f(x).view(B, N, self.heads, -1).transpose(1, 2) for f in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.fc(self.o(y.transpose(1, 2).reshape(B, N, C)))


def test_sdpa_attention_projections_by_structure():
    ops = capture(SdpaMixer(), torch.randn(2, 8, 32))
    assert set(keys(ops, "aten.scaled_dot_product_attention.")) == {"attention/core"}
    for path in ("q", "k", "v", "o"):
        assert keys(ops, "aten.linear.", path) == ["attention/projections"]
    assert keys(ops, "aten.linear.", "fc") == ["linear"]


def window_partition(x, ws):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C).permute(0, 1, 3, 2, 4, 5).contiguous()
    return x.view(-1, ws * ws, C)


def window_reverse(w, ws, H, W):
    C = w.shape[-1]
    x = w.view(-1, H // ws, W // ws, ws, ws, C).permute(0, 1, 3, 2, 4, 5).contiguous()
    return x.view(-1, H, W, C)


class ShiftedWindowStage(nn.Module):
    """Swin-like: roll, pad, window partition, relative-position bias from a table, a
    shifted-window mask; the attention is inline in a class named nothing like attention."""

    def __init__(self, dim=32, heads=4, ws=4, shift=2):
        super().__init__()
        self.dim, self.heads, self.ws, self.shift = dim, heads, ws, shift
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("index", rel[..., 0] * (2 * ws - 1) + rel[..., 1])
        self.fc1, self.fc2 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

    def forward(self, x):  # x: B, H, W, C with H, W not multiples of the window
        B, H, W, C = x.shape
        shortcut = x
        x = torch.roll(self.norm(x), shifts=(-self.shift, -self.shift), dims=(1, 2))
        pad_h, pad_w = (-H) % self.ws, (-W) % self.ws
        x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
        Hp, Wp = H + pad_h, W + pad_w
        windows = window_partition(x, self.ws)
        n = self.ws * self.ws
        q, k, v = self.qkv(windows).reshape(-1, n, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * (C // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1).contiguous()
        attn = attn + bias.unsqueeze(0)
        windows_per_image = attn.shape[0] // B
        mask = torch.zeros(windows_per_image, n, n, device=x.device)
        mask[windows_per_image // 2:] = -100.0
        attn = attn.view(B, windows_per_image, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, self.heads, n, n).softmax(-1)
        y = self.proj((attn @ v).transpose(1, 2).reshape(-1, n, C))
        y = window_reverse(y, self.ws, Hp, Wp)[:, :H, :W, :].contiguous()
        x = shortcut + torch.roll(y, shifts=(self.shift, self.shift), dims=(1, 2))
        return x + self.fc2(F.gelu(self.fc1(x)))


def test_windowed_attention_with_relative_position_bias():
    ops = capture(ShiftedWindowStage(), torch.randn(2, 10, 10, 32))
    assert_attention(ops, projections=("qkv", "proj"), others=("fc1", "fc2"))
    roles = {role for _, _, role, _ in ops}
    assert {"window-partition", "relative-position-bias", "attention-mask"} <= roles
    # roll and pad around the windows, and the table lookup, are attention core
    assert set(keys(ops, ("aten.roll.", "aten.pad.", "aten.index."), "")) == {"attention/core"}
    assert keys(ops, "aten.layer_norm.", "norm") == ["normalization/layer"]
    # the residual adds are not
    assert keys(ops, "aten.add.Tensor", "")[-2:] == ["elementwise", "elementwise"]


class NonLocal(nn.Module):
    """Non-local block with 1x1-conv projections and bmm, in a class called Context."""

    def __init__(self, c=16):
        super().__init__()
        self.theta, self.phi, self.g = nn.Conv2d(c, c // 2, 1), nn.Conv2d(c, c // 2, 1), nn.Conv2d(c, c // 2, 1)
        self.z = nn.Conv2d(c // 2, c, 1)
        self.spatial = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        B, C, H, W = x.shape
        t = self.theta(x).flatten(2).transpose(1, 2)
        p = self.phi(x).flatten(2)
        g = self.g(x).flatten(2).transpose(1, 2)
        y = torch.bmm(torch.bmm(t, p).softmax(-1), g)
        return self.spatial(x + self.z(y.transpose(1, 2).reshape(B, C // 2, H, W)))


def test_non_local_attention_with_1x1_conv_projections():
    ops = capture(nn.Sequential(NonLocal()), torch.randn(2, 16, 6, 6))
    gemm = keys(ops, GEMMS)
    assert gemm == ["attention/core", "attention/core"]
    for path in ("0.theta", "0.phi", "0.g", "0.z"):
        assert keys(ops, "aten.conv2d.", path) == ["attention/projections"], path
    assert keys(ops, "aten.conv2d.", "0.spatial") == ["convolution/dense"]


class TalkingHeads(nn.Module):
    """CaiT's TalkingHeadAttn (linears across the heads before and after the softmax) or, with
    ``conv``, EfficientFormerV2's (1x1 convs over the heads), in a class whose name says nothing."""

    def __init__(self, dim=32, heads=4, conv=False):
        super().__init__()
        self.heads, self.conv = heads, conv
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        mix = (lambda: nn.Conv2d(heads, heads, 1)) if conv else (lambda: nn.Linear(heads, heads))
        self.mix_scores, self.mix_weights = mix(), mix()

    def mixed(self, layer, a):
        return layer(a) if self.conv else layer(a.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = self.mixed(self.mix_scores, q @ k.transpose(-2, -1) * (C // self.heads) ** -0.5)
        attn = self.mixed(self.mix_weights, attn.softmax(dim=-1))
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


@pytest.mark.parametrize("conv", [False, True])
def test_talking_heads_mixing_the_scores_are_core_not_projections(conv):
    """A layer across the heads on the scores or the weights is part of computing them; it had been
    attention/projections (CaiT's proj_l/proj_w, 1.6% of its time), beside the real q/k/v and output ones."""
    ops = capture(nn.Sequential(TalkingHeads(conv=conv)), torch.randn(2, 6, 32))
    layer = "aten.conv2d." if conv else "aten.linear."
    for path in ("0.mix_scores", "0.mix_weights"):
        assert keys(ops, layer, path) == ["attention/core"], (path, ops)
    for path in ("0.qkv", "0.proj"):
        assert keys(ops, "aten.linear.", path) == ["attention/projections"], (path, ops)


# --- softmax that is not attention --------------------------------------------------------
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.conv(x).mean((2, 3))).softmax(-1)


class SoftmaxGate(nn.Module):
    """SE-like channel weighting with a softmax over channels, and softmax-gated pooling."""

    def __init__(self, c=16):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3)
        self.fc1, self.fc2 = nn.Linear(c, c // 4), nn.Linear(c // 4, c)
        self.score = nn.Conv2d(c, 1, 1)

    def forward(self, x):
        x = self.conv(x)
        w = self.fc2(F.relu(self.fc1(x.mean((2, 3))))).softmax(dim=-1)
        x = x * w[:, :, None, None]
        weights = self.score(x).flatten(2).softmax(-1)  # B, 1, HW
        return torch.bmm(x.flatten(2), weights.transpose(1, 2)).squeeze(-1)


@pytest.mark.parametrize("model", [Classifier, SoftmaxGate])
def test_a_softmax_that_is_not_attention_stays_activation(model):
    ops = capture(model(), torch.randn(2, 3, 12, 12))
    assert set(keys(ops, "aten.softmax.")) == {"activation"}
    assert not any(k.startswith("attention") for *_, k in ops), ops
    assert not any(role for _, _, role, _ in ops)


# --- norms and activations written as ops -------------------------------------------------
class ScaleShift(nn.Module):
    """RMS norm, a channels-first LayerNorm written with mean/sqrt, a LayerNorm2d-style
    permute around layer_norm; QuickGELU and StarReLU written inline."""

    def __init__(self, c=16):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3)
        self.w = nn.Parameter(torch.ones(c))
        self.b = nn.Parameter(torch.zeros(c))
        self.fc1, self.fc2, self.fc3 = nn.Linear(c, c), nn.Linear(c, c), nn.Linear(c, c)
        self.s, self.t = nn.Parameter(torch.ones(1)), nn.Parameter(torch.zeros(1))

    def forward(self, x):
        x = self.conv(x)
        u = x.mean(1, keepdim=True)  # LayerNorm over channels, as in ConvNeXt's first release
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + 1e-6)
        x = self.w[:, None, None] * x + self.b[:, None, None]
        x = F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],)).permute(0, 3, 1, 2)  # LayerNorm2d
        t = x.flatten(2).transpose(1, 2)
        t = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w  # RMS norm
        h = self.fc1(t)
        h = h * torch.sigmoid(1.702 * h)  # QuickGELU
        h = self.fc2(h)
        h = self.s * F.relu(h) ** 2 + self.t  # StarReLU
        return self.fc3(h).sum()


def test_norms_and_activations_written_as_ops():
    ops = capture(ScaleShift(), torch.randn(2, 3, 8, 8))
    by_name = {}
    for name, path, role, key in ops:
        by_name.setdefault(name.split(".")[1], []).append(key)
    # norms written as ops (no norm module to name their kind) are "other" norms
    norm = "normalization/other"
    assert set(by_name["rsqrt"]) == {norm} and set(by_name["sqrt"]) == {norm}
    assert set(by_name["mean"]) == {norm}  # no mean of these is a pool
    # the permutes around F.layer_norm (LayerNorm2d written inline) are that norm op's kind, as layer_norm is
    assert set(by_name["permute"]) == set(by_name["layer_norm"]) == {"normalization/layer"}
    assert by_name["sigmoid"] == ["activation"] and set(by_name["pow"]) == {norm, "activation"}
    muls = by_name["mul"]
    assert muls.count("activation") == 3 and sum(k.startswith("normalization/") for k in muls) == 3, muls
    adds = by_name["add"]
    assert adds.count("activation") == 1 and sum(k.startswith("normalization/") for k in adds) == 3
    assert not any(k.startswith("attention") for *_, k in ops)


class PermutedNorm(nn.Module):
    """MambaOut's stem, NesT's pooling: the module itself runs permute -> its LayerNorm -> permute back."""

    def __init__(self):
        super().__init__()
        self.conv, self.norm = nn.Conv2d(3, 8, 3), nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.conv(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def test_the_permutes_a_parent_module_runs_around_its_norm_are_that_norms_kind():
    """Outside the LayerNorm module no module rule names the kind: they had been "normalization/other"
    (a norm written as ops), beside the layer norm they serve."""
    ops = capture(PermutedNorm(), torch.randn(1, 3, 8, 8))
    keys = {name.split(".")[1]: key for name, path, role, key in ops}
    assert keys["permute"] == keys["native_layer_norm" if "native_layer_norm" in keys else "layer_norm"]
    assert keys["permute"] == "normalization/layer"
    assert not [key for *_, key in ops if key == "normalization/other"]


def test_a_training_step_finds_the_same_norms_and_activations_written_as_ops():
    """With grad on, autograd saves a sigmoid's or relu's output for the backward (an aten.detach that
    nothing uses), which had counted as a second exit of the activation: QuickGELU's and StarReLU's
    muls and pow were elementwise in a training step, activation in inference."""
    import visprof

    from collections import Counter

    pointwise = ("sigmoid", "relu", "pow", "mul", "add", "rsqrt", "sqrt")
    model = ScaleShift()
    x = torch.randn(2, 3, 8, 8)
    inference = Counter((name.split(".")[1], key) for name, _, _, key in capture(model, x)
                        if name.split(".")[1] in pointwise)
    model.train()
    with visprof.trace(model) as session:
        model(x).backward()
    forward = Counter((op.name.split(".")[1], session.attribution.op_classification(i).key)
                      for i, op in enumerate(session.trace.ops)
                      if not op.attrs.get("backward") and op.name.split(".")[1] in pointwise)
    assert forward == inference and forward[("mul", "activation")] == 3, (forward, inference)
    assert any(op.name.startswith("aten.detach") for op in session.trace.ops)  # the saves ran


class TanhGelu(nn.Module):
    """GELU's tanh approximation written as ops (GPT-2's and BERT's form, and the factored one)."""

    def __init__(self, factored: bool):
        super().__init__()
        self.factored = factored
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 16)

    def forward(self, x):
        h = self.fc1(x)
        if self.factored:
            h = 0.5 * h * (1 + torch.tanh(0.79788456 * h * (1 + 0.044715 * h * h)))
        else:
            h = 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * torch.pow(h, 3))))
        return self.fc2(h)


@pytest.mark.parametrize("factored", [False, True])
def test_tanh_gelu_written_as_ops_is_an_activation(factored):
    """Documented as found, it was not: walking back from the tanh stopped at h + 0.044715 h^3, an op of
    two activation inputs (both h), and 0.5 * h is a branch of its own from h."""
    ops = capture(TanhGelu(factored), torch.randn(2, 4, 16))
    pointwise = [(name.split(".")[1], key) for name, path, _, key in ops if path == "" and "linear" not in name]
    assert pointwise and {key for _, key in pointwise} == {"activation"}, pointwise
    assert len(pointwise) == (9 if factored else 8)


def test_layer_scale_after_an_activation_is_not_absorbed():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.gamma = nn.Parameter(torch.ones(8))

        def forward(self, x):
            return F.relu(self.fc(x) * self.gamma) * self.gamma + x

    ops = capture(Scaled(), torch.randn(2, 8))
    assert keys(ops, "aten.mul.") == ["elementwise", "elementwise"]
    assert keys(ops, "aten.relu.") == ["activation"]


# --- the analysis on a hand-built graph, and capture hygiene ----------------------------------
def test_find_roles_on_a_hand_built_dataflow():
    flow = Dataflow()
    x = EXTERNAL
    qkv = flow.add("linear", [x, PARAM, PARAM])
    q, k, v = (flow.add("select", [qkv]) for _ in range(3))
    kt = flow.add("transpose", [k])
    scores = flow.add("bmm", [q, kt])
    soft = flow.add("_softmax", [scores], True)
    out = flow.add("bmm", [soft, v])
    proj = flow.add("addmm", [PARAM, out, PARAM])
    roles = find_roles(flow)
    assert roles[qkv] == roles[proj] == "attention-projection"
    assert {roles[i] for i in (q, k, v, kt, scores, soft, out)} == {"attention-core"}
    # the same graph with the softmax over another dim is not attention
    flow.info[soft] = False
    assert find_roles(flow) == {}


def test_structure_capture_keeps_no_activation_alive():
    import gc
    import weakref

    model = TinyHybrid().eval()
    tracker = ModuleTracker(model)
    template = OpCapture(tracker, default_table(), nvtx=False, structure=True)
    refs = []
    real_forward = model.proj.forward

    def spy(x):
        refs.append(weakref.ref(x))
        return real_forward(x)

    model.proj.forward = spy
    with tracker, template, torch.inference_mode():
        model(torch.randn(2, 3, 32, 32))
    gc.collect()
    assert refs and refs[0]() is None
    assert template.roles  # analysed at exit
