"""Activations and dropout: composites, kept whole at the composite level (as the frontends write
them) and expanded by their rule at the primitive level; their backward ops likewise."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from irlens.core.ops._torch import with_grad
from irlens.core.ops.core import Attr, composite, decomposition, meaning

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_APPROXIMATE = Attr("str", "none", choices=("none", "tanh"))


# --- activations ----------------------------------------------------------------------------
gelu = composite("gelu", approximate=_APPROXIMATE)
relu = composite("relu")
silu = composite("silu", doc="x * sigmoid(x)")


def _gelu(a, x):
    return F.gelu(x, approximate=a["approximate"])


meaning(gelu)(_gelu)
meaning(relu)(lambda a, x: torch.relu(x))
meaning(silu)(lambda a, x: F.silu(x))


@decomposition(gelu)
def _gelu_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    half_x = e.emit("mul", [x, 0.5])
    if e.attr("approximate") == "tanh":
        cube = e.emit("pow", [x, 3])
        inner = e.emit("add", [x, e.emit("mul", [cube, 0.044715])])
        t = e.emit("tanh", [e.emit("mul", [inner, _SQRT_2_OVER_PI])])
        e.emit("mul", [half_x, e.emit("add", [t, 1.0])], oname=out.name)
    else:
        erf = e.emit("erf", [e.emit("mul", [x, _SQRT1_2])])
        e.emit("mul", [half_x, e.emit("add", [erf, 1.0])], oname=out.name)


@decomposition(relu)
def _relu_rule(e, vals):
    out = e.out()
    e.emit("maximum", [e.parent.inputs[0], 0.0], oname=out.name)


@decomposition(silu)
def _silu_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    s = e.emit("sigmoid", [x])
    e.emit("mul", [x, s], oname=out.name)


dropout = composite("dropout", outputs="y mask?", p=Attr("float", 0.5), training=Attr("bool", True),
                    doc="training and p > 0: x / (1 - p) where rand >= p, else 0 (random: no two runs "
                        "agree); otherwise the identity. mask: where x was kept")


def _random_dropout(a) -> bool:
    return a["training"] and a["p"] > 0


@meaning(dropout)
def _dropout(a, x):
    if not _random_dropout(a):
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    keep = torch.rand_like(x) >= a["p"]
    return torch.where(keep, x / (1 - a["p"]), torch.zeros_like(x)), keep


@decomposition(dropout)
def _dropout_rule(e, vals):
    x, out, mask = e.parent.inputs[0], e.out(), e.out(1)
    sh, dt = out.shape, out.dtype
    if not _random_dropout(e.attrs):
        e.emit("copy", [x], oname=out.name)
        if mask is not None:
            e.emit("full", [], oname=mask.name, shape=list(sh), value=True, dtype="bool")
        return
    p = e.attr("p")
    r = e.emit("rand", [], shape=list(sh), dtype=dt, distribution="uniform")
    keep = e.emit("ge", [r, p], oname=mask.name if mask is not None else None)
    e.emit("where", [keep, e.emit("mul", [x, 1.0 / (1.0 - p)]), 0.0], oname=out.name)


# --- parametric activations ---------------------------------------------------------------------
elu = composite("elu", alpha=Attr("float", 1.0), scale=Attr("float", 1.0), input_scale=Attr("float", 1.0),
                doc="scale * x where x > 0, else scale * alpha * (exp(input_scale * x) - 1)")
hardtanh = composite("hardtanh", min_val=Attr("float", -1.0), max_val=Attr("float", 1.0), doc="clamp(x, min_val, max_val)")
leaky_relu = composite("leaky_relu", negative_slope=Attr("float", 0.01), doc="x where x > 0, else negative_slope * x")
meaning(elu)(lambda a, x: torch.ops.aten.elu(x, a["alpha"], a["scale"], a["input_scale"]))
meaning(hardtanh)(lambda a, x: F.hardtanh(x, a["min_val"], a["max_val"]))
meaning(leaky_relu)(lambda a, x: F.leaky_relu(x, a["negative_slope"]))


@decomposition(elu)
def _elu_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    positive = e.emit("gt", [x, 0.0])
    neg = e.emit("mul", [e.emit("expm1", [e.emit("mul", [x, e.attr("input_scale")])]),
                         e.attr("alpha") * e.attr("scale")])
    e.emit("where", [positive, e.emit("mul", [x, e.attr("scale")]), neg], oname=out.name)


@decomposition(hardtanh)
def _hardtanh_rule(e, vals):
    out = e.out()
    e.emit("clamp", [e.parent.inputs[0], e.attr("min_val"), e.attr("max_val")], oname=out.name)


@decomposition(leaky_relu)
def _leaky_relu_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    positive = e.emit("gt", [x, 0.0])
    e.emit("where", [positive, x, e.emit("mul", [x, e.attr("negative_slope")])], oname=out.name)


# --- backward --------------------------------------------------------------------------------
gelu_backward = composite("gelu_backward", "grad x", approximate=_APPROXIMATE)
silu_backward = composite("silu_backward", "grad x")
tanh_backward = composite("tanh_backward", "grad y", doc="grad * (1 - y^2), y = tanh(x)")
sigmoid_backward = composite("sigmoid_backward", "grad y", doc="grad * y * (1 - y), y = sigmoid(x)")
threshold_backward = composite("threshold_backward", "grad x", threshold=Attr("float", 0.0),
                               doc="0 where x <= threshold, else grad")

meaning(gelu_backward)(with_grad(_gelu, 1))
meaning(silu_backward)(with_grad(lambda a, x: F.silu(x), 1))
meaning(tanh_backward)(lambda a, g, y: g * (1 - y * y))
meaning(sigmoid_backward)(lambda a, g, y: g * y * (1 - y))
meaning(threshold_backward)(lambda a, g, x: torch.where(x <= a["threshold"], torch.zeros_like(g), g))


@decomposition(tanh_backward)
def _tanh_backward_rule(e, vals):
    g, y = e.parent.inputs[:2]
    out = e.out()
    one_minus = e.emit("sub", [1.0, e.emit("mul", [y, y])])
    e.emit("mul", [g, one_minus], oname=out.name)


@decomposition(gelu_backward)
def _gelu_backward_rule(e, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    if e.attr("approximate") == "tanh":
        # d/dx 0.5 x (1 + tanh(u)), u = c (x + 0.044715 x^3)
        x2 = e.emit("mul", [x, x])
        inner = e.emit("add", [x, e.emit("mul", [e.emit("mul", [x2, x]), 0.044715])])
        t = e.emit("tanh", [e.emit("mul", [inner, _SQRT_2_OVER_PI])])
        du = e.emit("mul", [e.emit("add", [e.emit("mul", [x2, 3 * 0.044715]), 1.0]),
                            _SQRT_2_OVER_PI])
        sech2 = e.emit("sub", [1.0, e.emit("mul", [t, t])])
        right = e.emit("mul", [e.emit("mul", [x, e.emit("mul", [sech2, du])]), 0.5])
        left = e.emit("mul", [e.emit("add", [t, 1.0]), 0.5])
        d = e.emit("add", [left, right])
    else:
        cdf = e.emit("mul", [e.emit("add", [e.emit("erf", [e.emit("mul", [x, _SQRT1_2])]), 1.0]),
                             0.5])
        pdf = e.emit("mul", [e.emit("exp", [e.emit("mul", [e.emit("mul", [x, x]), -0.5])]),
                             _INV_SQRT_2PI])
        d = e.emit("add", [cdf, e.emit("mul", [x, pdf])])
    e.emit("mul", [g, d], oname=out.name)


@decomposition(sigmoid_backward)
def _sigmoid_backward_rule(e, vals):
    g, y = e.parent.inputs[:2]
    out = e.out()
    e.emit("mul", [g, e.emit("mul", [y, e.emit("sub", [1.0, y])])], oname=out.name)


@decomposition(silu_backward)
def _silu_backward_rule(e, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    s = e.emit("sigmoid", [x])
    d = e.emit("mul", [s, e.emit("add", [e.emit("mul", [x, e.emit("sub", [1.0, s])]), 1.0])])
    e.emit("mul", [g, d], oname=out.name)


@decomposition(threshold_backward)
def _threshold_backward_rule(e, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    below = e.emit("le", [x, e.attr("threshold")])
    e.emit("where", [below, 0.0, g], oname=out.name)
