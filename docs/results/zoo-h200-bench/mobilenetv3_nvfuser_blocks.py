"""Where in MobileNetV3 the nvFuser row's forward goes wrong: the zoo's timm_mobilenetv3 (bench size,
bfloat16, CUDA) cut into its stem, each block and its head; each piece jitted alone by Thunder with
the nvfuser backend's executors (irlens.backends, as the zoo's row is), fed eager's output of the
piece before, and judged as the zoo judges: its relative error against the piece in float64 beside
eager's own bfloat16 error.

The row (H200 page): out0 rel err 0.386 against eager's 4.1e-03; its repro file reproduces it, and
the common view's own nvFuser lowering of the same graphs is ok (`irlens repro --reduce`):
the fault is on Thunder's path to nvFuser.

    python docs/results/zoo-h200-bench/mobilenetv3_nvfuser_blocks.py            # the GPU's case
    python docs/results/zoo-h200-bench/mobilenetv3_nvfuser_blocks.py --cpu      # tiny, float32, CPU, the
                                                                                # torch.compile executor
(output: mobilenetv3_nvfuser_blocks-h200.txt)
"""
import copy
import sys

import torch

from irlens._compat import import_thunder
from irlens.backends import BACKENDS
from irlens.workloads.builtin import get_workload


class Head(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model.forward_head(x)


def pieces(model):
    yield "stem", torch.nn.Sequential(model.conv_stem, model.bn1)
    for i, stage in enumerate(model.blocks):
        for j, block in enumerate(stage):
            yield f"blocks.{i}.{j} {type(block).__name__}", block
    yield "head", Head(model)


def rel_err(x, ref):
    return ((x.double() - ref).norm() / ref.norm()).item()


def main(cpu: bool) -> None:
    thunder = import_thunder()
    preset, dtype, device, backend = ("tiny", "float32", "cpu", "thunder+torchcompile") if cpu else \
        ("bench", "bfloat16", "cuda", "nvfuser")
    inst = get_workload("timm_mobilenetv3").instantiate(preset, dtype, device)
    executors = BACKENDS.get(backend).executors(thunder)
    print(f"timm_mobilenetv3 {preset} {dtype} on {device}, {backend}: executors {[e.name for e in executors]}")
    x = inst.inputs[0]
    with torch.no_grad():
        for name, piece in pieces(inst.module):
            ref = copy.deepcopy(piece).double()(x.double().clone())
            eager = piece(x.clone())
            jitted = thunder.jit(piece, executors=executors)(x.clone())
            e, j = rel_err(eager, ref), rel_err(jitted, ref)
            flag = "  <-- past 3 x eager's + 4e-3" if j > 3 * e + (4e-3 if dtype == "bfloat16" else 1e-5) else ""
            print(f"{name:34s} eager {e:.2e}  {backend} {j:.2e}{flag}")
            x = eager
        pieces_ok = x
        model, x = inst.module, inst.inputs[0]
        ref = copy.deepcopy(model).double()(x.double())
        e, j = rel_err(model(x), ref), rel_err(thunder.jit(model, executors=executors)(x), ref)
        print(f"{'the whole model, jitted whole':34s} eager {e:.2e}  {backend} {j:.2e}")
        print(f"{'the pieces chained (eager)':34s} eager {rel_err(pieces_ok, ref):.2e}")


if __name__ == "__main__":
    main("--cpu" in sys.argv[1:])
