"""Which ops of real models' graphs the common view's lowerings lack.

Tiny random-weight models (transformers configs, timm models; nothing downloaded) are acquired
by Dynamo (AOT forward and backward) and by Thunder (its final traces), and each graph's
primitive view is checked against the lowerings: JAX/XLA (`irlens.backends.xla.lower`) and the
torch ones (FX/Inductor and nvFuser run every op with a meaning, control flow excepted). Prints,
per model, frontend and mode, the ops each lowering lacks in the graphs it runs and the unknown ops
of every stage; the last lines sum them up.

    python scripts/lowering_gaps.py [--models resnet,bert] [--frontends dynamo,thunder] [--modes fwd,fwdbwd]

Each model is also a workload by reference (`irlens compare --workloads scripts/lowering_gaps.py:resnet`).

Needs transformers and timm (`pip install timm transformers 'torchvision==0.28.*' 'torch==2.13.0'`).
"""
from __future__ import annotations

import argparse
import functools
import platform
import time
from collections import Counter

import torch

from irlens.frontends.bindings import program_for
from irlens.frontends import get_frontend
from irlens.backends.lowering import LEVEL
from irlens.workloads.workload import Workload


def _torchvision_without_ops() -> None:
    """timm and transformers import torchvision; the registry's torchvision 0.28 is a CUDA build, whose import on
    the CPU torch 2.13 dies registering meta kernels for ops it has not defined (PITFALLS.md).
    Defining their schemas first is enough for models that call no torchvision op."""
    try:
        torch.ops.torchvision.nms
    except (AttributeError, RuntimeError):
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _KEEP.append(lib)


_KEEP: list = []  # the library above lives as long as the process


class _Tensors(torch.nn.Module):
    """A transformers model as a module of tensors: one field of its output."""

    def __init__(self, model, field: str):
        super().__init__()
        self.model, self.field = model, field

    def forward(self, *ids):
        pair = dict(decoder_input_ids=ids[1]) if len(ids) == 2 else {}  # an encoder-decoder's
        return getattr(self.model(input_ids=ids[0], use_cache=False, **pair), self.field)


def _hf(config_class: str, model_class: str, field: str = "last_hidden_state", pair: bool = False, **cfg):
    def build():
        _torchvision_without_ops()
        import transformers

        config = getattr(transformers, config_class)(vocab_size=128, **cfg)
        model = getattr(transformers, model_class)._from_config(config)
        ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(0))
        return _Tensors(model, field), (ids, ids) if pair else (ids,)
    return build


def _timm(name: str, **kw):
    def build():
        _torchvision_without_ops()
        import timm

        model = timm.create_model(name, pretrained=False, num_classes=8, **kw)
        return model, ((2, 3, 32, 32),)
    return build


SMALL = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)
MODELS = {
    "bert": _hf("BertConfig", "BertModel", max_position_embeddings=32, **SMALL),
    "llama": _hf("LlamaConfig", "LlamaModel", num_key_value_heads=2, **SMALL),
    "gpt2": _hf("GPT2Config", "GPT2Model", n_embd=32, n_layer=2, n_head=2, n_positions=32),
    "t5": _hf("T5Config", "T5Model", pair=True, d_model=32, d_ff=64, d_kv=8, num_layers=2, num_heads=4),
    "mamba": _hf("MambaConfig", "MambaModel", hidden_size=32, num_hidden_layers=2, state_size=4, expand=2),
    "mixtral": _hf("MixtralConfig", "MixtralModel", num_key_value_heads=2, num_local_experts=4,
                   num_experts_per_tok=2, **SMALL),
    "resnet": _timm("resnet18"),
    "convnext": _timm("convnext_atto"),
    "vit": _timm("vit_tiny_patch16_224", img_size=32, patch_size=8),
    "efficientnet": _timm("efficientnet_b0"),
    "mobilenetv3": _timm("mobilenetv3_small_050"),
}


@functools.cache
def workload(name: str) -> Workload:
    module, inputs = MODELS[name]()
    return Workload.from_module(name, module.eval(), inputs)


def __getattr__(name: str) -> Workload:
    """The models as workloads by reference: `irlens compare --workloads scripts/lowering_gaps.py:resnet`."""
    if name in MODELS:
        return workload(name)
    raise AttributeError(name)


def gaps(wl: Workload, frontend: str, mode: str) -> dict:
    """Per graph of the program: the primitive view's ops, those the JAX lowering lacks, the
    unknown ones, and the ops no torch lowering runs."""
    from irlens.backends.inductor.lower import SUPPORTED as TORCH
    from irlens.backends.xla.lower import SUPPORTED as JAX

    inst = wl.instantiate("tiny")
    acq = get_frontend(frontend).acquire(inst, mode)
    program = program_for(acq, inst)
    ops: Counter = Counter()
    for step in program.steps:
        ops.update(n.op for n in step.graph(LEVEL).all_nodes())
    unknown = {f"{op} ({stage.name})" for stage in acq.stages.values() if stage.to_common
               for op in stage.common().unknown_ops()}  # every stage's, not only the program's
    return {"ops": ops, "jax": sorted(o for o in ops if o not in JAX and not o.startswith("unknown:")),
            "torch": sorted(o for o in ops if o not in TORCH and not o.startswith("unknown:")),
            "unknown": sorted(unknown)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--frontends", default="dynamo,thunder")
    p.add_argument("--modes", default="fwd,fwdbwd")
    args = p.parse_args()
    print(f"{platform.machine()}, {__import__('os').cpu_count()} cores, torch {torch.__version__}")
    missing: dict[str, Counter] = {"jax": Counter(), "torch": Counter(), "unknown": Counter()}
    for name in args.models.split(","):
        wl = workload(name)
        for frontend in args.frontends.split(","):
            for mode in args.modes.split(","):
                start = time.perf_counter()
                try:
                    found = gaps(wl, frontend, mode)
                except Exception as e:  # noqa: BLE001  (a model a frontend cannot take: say so, go on)
                    print(f"{name:<12} {frontend:<8} {mode:<6} not acquired: {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}"[:200])
                    continue
                for key in missing:
                    missing[key].update(found[key])
                print(f"{name:<12} {frontend:<8} {mode:<6} {sum(found['ops'].values()):>5} nodes "
                      f"{len(found['ops']):>3} ops  jax lacks: {', '.join(found['jax']) or '-'}; "
                      f"torch lacks: {', '.join(found['torch']) or '-'}; unknown: {', '.join(found['unknown']) or '-'}"
                      f"  ({time.perf_counter() - start:.0f} s)")
    for key, counts in missing.items():
        print(f"{key}: {', '.join(f'{op} ({n} programs)' for op, n in counts.most_common()) or 'none'}")


if __name__ == "__main__":
    main()
