"""What each input and output of AOTAutograd's graphs is, read from the descriptors AOTAutograd
sets on their placeholders and output node (`node.meta["desc"]`, torch._functorch._aot_autograd.descriptors).

Beside the Dynamo graph's inputs, an AOTAutograd forward may take values of its own: an effect
token per kind of side effect it orders (`with_effects`, e.g. around the `_linalg_check_errors`
that torch.linalg.solve / inv / cholesky bring), which it returns again first. Binding by
position would feed the token where the first input belongs; the descriptors say what each is.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx as fx

# Role kinds. Forward inputs: arg (the Dynamo graph's input `index`), token (effect token `index`).
# Forward outputs: token, mutated (the new value of Dynamo graph input `index`), out (the Dynamo
# graph's output `index`), saved (the `index`-th tensor kept for the backward). Backward inputs:
# saved, cotangent (of output `index`), token. Backward outputs: grad (of Dynamo graph input
# `index`), token, none (no gradient). Anything else: other (irlens does not bind it; `what` says
# what AOTAutograd calls it).


@dataclass(frozen=True)
class Role:
    kind: str
    index: int | None = None
    what: str = ""  # AOTAutograd's name for the value (its descriptor's expr())

    def __str__(self) -> str:
        return self.what or f"{self.kind}{'' if self.index is None else self.index}"


def _descriptors():
    from torch._functorch._aot_autograd import descriptors

    return descriptors


def input_descriptor(node: fx.Node):
    return node.meta.get("desc")


def placeholders(gm: fx.GraphModule) -> list[fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def output_descriptors(gm: fx.GraphModule) -> list:
    out = next(n for n in gm.graph.nodes if n.op == "output")
    descs = out.meta.get("desc")
    return list(descs) if descs is not None else [None] * len(out.args[0])


def is_token(desc) -> bool:
    d = _descriptors()
    return isinstance(desc, (d.ForwardTokenAOTInput, d.BackwardTokenAOTInput))


def token_name(desc) -> str:
    """The common view's name for an effect-token input: what it is, not `arg0_1`."""
    d = _descriptors()
    return f"{'backward_' if isinstance(desc, d.BackwardTokenAOTInput) else ''}effect_token{desc.idx}"


def new_token() -> torch.Tensor:
    """An effect token's value: the empty tensor AOTAutograd's runtime passes."""
    from torch._higher_order_ops.effects import new_token_tensor

    return new_token_tensor()


def _other(desc) -> Role:
    return Role("other", what=desc.expr() if desc is not None else "no AOTAutograd descriptor")


def forward_roles(gm: fx.GraphModule) -> tuple[list[Role], list[Role]]:
    """The roles of an AOTAutograd forward (or inference) graph's inputs and outputs."""
    d = _descriptors()
    inputs = []
    for desc in map(input_descriptor, placeholders(gm)):
        if isinstance(desc, d.PlainAOTInput):
            inputs.append(Role("arg", desc.idx))
        elif isinstance(desc, d.ForwardTokenAOTInput):
            inputs.append(Role("token", desc.idx, desc.expr()))
        else:
            inputs.append(_other(desc))
    outputs, saved = [], 0
    for desc in output_descriptors(gm):
        if isinstance(desc, d.PlainAOTOutput):
            outputs.append(Role("out", desc.idx))
        elif isinstance(desc, d.InputMutationAOTOutput) and isinstance(desc.mutated_input, d.PlainAOTInput):
            outputs.append(Role("mutated", desc.mutated_input.idx))
        elif isinstance(desc, (d.SavedForBackwardsAOTOutput, d.SavedForBackwardsNoVcCheckAOTOutput)):
            outputs.append(Role("saved", saved))  # the backward takes them in this order
            saved += 1
        elif isinstance(desc, d.ForwardTokenAOTOutput):
            outputs.append(Role("token", desc.idx, desc.expr()))
        else:
            outputs.append(_other(desc))
    return inputs, outputs


def backward_roles(gm: fx.GraphModule) -> tuple[list[Role], list[Role]]:
    """The roles of an AOTAutograd backward graph's inputs (the saved tensors carry no descriptor
    of their own, or their forward input's) and outputs (one gradient or None per forward input)."""
    d = _descriptors()
    inputs, saved = [], 0
    for desc in map(input_descriptor, placeholders(gm)):
        if isinstance(desc, d.TangentAOTInput) and isinstance(desc.output, d.PlainAOTOutput):
            inputs.append(Role("cotangent", desc.output.idx))
        elif (isinstance(desc, d.TangentAOTInput) and isinstance(desc.output, d.InputMutationAOTOutput)
              and isinstance(desc.output.mutated_input, d.PlainAOTInput)):
            # the cotangent of an input's new value (a parameter the module rescales in place):
            # the loss reads the outputs only, so it is zero
            inputs.append(Role("mutation_cotangent", desc.output.mutated_input.idx))
        elif isinstance(desc, d.BackwardTokenAOTInput):
            inputs.append(Role("token", desc.idx, desc.expr()))
        elif desc is None or isinstance(desc, d.PlainAOTInput):
            inputs.append(Role("saved", saved))
            saved += 1
        else:
            inputs.append(_other(desc))
    outputs = []
    for desc in output_descriptors(gm):
        if desc is None:
            outputs.append(Role("none"))
        elif isinstance(desc, d.GradAOTOutput) and isinstance(desc.grad_of, d.PlainAOTInput):
            outputs.append(Role("grad", desc.grad_of.idx))
        elif isinstance(desc, d.BackwardTokenAOTOutput):
            outputs.append(Role("token", desc.idx, desc.expr()))
        else:
            outputs.append(_other(desc))
    return inputs, outputs
