"""The conditions a reference's checks are judged with (irlens.numerics.verdicts.allowed_error): how far the
loss moves, relative to itself, with its outputs' rounding, and how little it sees each gradient's
value. From the highest precision that ran (irlens.matrix.references)."""
from __future__ import annotations

import torch

from irlens.workloads.workload import Workload


def loss_condition(wl: Workload, results: dict[str, torch.Tensor]) -> float:
    """The loss's condition with respect to the outputs it reduces: how far it moves, relative to
    itself, when each output is off by one relative unit independently, as rounding leaves them:
    sqrt(sum (dL/do * o)^2) / |L| (the absolute figure where L is 0, as `rel_err` then is), from
    the reference's outputs. A mean of cubes that nearly cancels is large; a mean square is
    far under 1. 0 where the loss is not differentiable in its outputs."""
    outs = [results[f"out{i}"] for i in range(len(results)) if f"out{i}" in results]
    leaves = [o.detach().clone().requires_grad_(o.is_floating_point()) for o in outs]
    floating = [leaf for leaf in leaves if leaf.requires_grad]
    try:
        with torch.enable_grad():
            loss = wl.loss(tuple(leaves))
            grads = torch.autograd.grad(loss, floating, allow_unused=True)
    except Exception:  # a loss that is not differentiable in its outputs: no condition to add
        return 0.0
    terms = [(g.double() * o.detach().double()).square().sum() for g, o in zip(grads, floating) if g is not None]
    spread = float(sum(terms)) ** 0.5 if terms else 0.0
    size = abs(float(loss.detach()))
    return spread / size if size > 0 else spread


def gradient_conditions(results: dict[str, torch.Tensor], values: dict[str, torch.Tensor]) -> dict[str, float]:
    """Each gradient's condition: |L| / (||dL/dv|| ||v||), the inverse of how far the loss moves,
    relative to itself, when the value v it is the gradient of moves by one relative unit. A
    gradient whose loss barely sees it (a conv bias before a train-mode BatchNorm, attention's key
    bias: exactly zero in truth) has a huge condition: float32 noise in it is invisible to the loss,
    and `numerics.allowed_error` allows the error the loss's own rounding hides. ||g|| counts as 1
    where g is 0 (its error is then absolute, see `rel_err`), ||v|| as sqrt(numel) where v is 0
    (a zero-initialized bias: a unit per element)."""
    loss = abs(float(results["loss"])) if results.get("loss") is not None else 0.0
    conditions = {}
    for name, g in results.items():
        value = values.get(name[len("grad:"):]) if name.startswith("grad:") else None
        if g is None or value is None or loss == 0.0:
            continue
        g_norm = torch.linalg.vector_norm(g.detach().double()).item() or 1.0
        v_norm = torch.linalg.vector_norm(value.detach().double()).item() or value.numel() ** 0.5
        conditions[name] = loss / (g_norm * v_norm)
    return conditions
