"""One MobileNetV3 block through thunder.jit with Thunder's default executors (nvFuser on CUDA), with
upstream code only (torch, timm, Thunder): timm's `mobilenetv3_large_100`, random weights, eval
mode, its BatchNorms' running statistics drawn (mean N(0, 0.1^2), variance U(0.5, 2), seed 2028,
as irlens's zoo does), block `blocks[4][0]` (an InvertedResidual with squeeze-excitation and
hard-swish), forward under no_grad, against the block in float64. Each variant changes one thing.

The zoo's timm_mobilenetv3 nvFuser forward on the H200 is off by 0.386 (eager's bf16 error 4.1e-03);
cut into pieces (../zoo-h200-bench/mobilenetv3_nvfuser_blocks.py) only the blocks of stages 4 and 5
are, the InvertedResiduals with squeeze-excitation and hard-swish.

    python docs/results/repro-thunder-nvfuser-se-block/repro.py      (output: repro-h200.txt)
"""
import copy

import torch

from irlens._compat import import_thunder, import_timm  # plain `import thunder` and `import timm`, here

thunder, timm = import_thunder(), import_timm()


def drawn_statistics(model):
    gen = torch.Generator().manual_seed(2028)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 1.5 + 0.5)
    return model


def no_inplace(block):
    for m in block.modules():
        if hasattr(m, "inplace"):
            m.inplace = False
    return block


def no_se(block):
    block.se = torch.nn.Identity()
    return block


def rel_err(x, ref):
    return ((x.double() - ref).norm() / ref.norm()).item()


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    with torch.no_grad():
        model = drawn_statistics(timm.create_model("mobilenetv3_large_100", pretrained=False)).eval()
        stem = torch.nn.Sequential(model.conv_stem, model.bn1, *model.blocks[:4]).to(device)
        x = stem(torch.randn(8, 3, 224, 224, device=device))  # the block's input: the model's own activations
        block = model.blocks[4][0]
        print(f"{device}: block {type(block).__name__}, input {tuple(x.shape)}, executors "
              f"{[e.name for e in thunder.get_default_executors()]}")
        variants = [("as is, bfloat16", lambda b: b, torch.bfloat16),
                    ("as is, float32", lambda b: b, torch.float32),
                    ("in-place activations off, bfloat16", no_inplace, torch.bfloat16),
                    ("squeeze-excitation removed, bfloat16", no_se, torch.bfloat16)]
        for name, change, dtype in variants:
            b = change(copy.deepcopy(block)).to(device)
            ref = copy.deepcopy(b).double()(x.double())
            b = b.to(dtype)
            eager, jitted = b(x.to(dtype)), thunder.jit(b)(x.to(dtype))
            print(f"{name:40s} eager {rel_err(eager, ref):.2e}  thunder.jit {rel_err(jitted, ref):.2e}")


if __name__ == "__main__":
    main()
