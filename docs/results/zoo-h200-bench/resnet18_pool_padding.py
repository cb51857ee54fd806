"""The zoo's timm_resnet18 at the tiny size, train mode, with its stem's max-pool padded (as timm
builds it) and unpadded: Thunder's fwd+bwd (its torch.compile executor) is NaN from the padded
pool's gradient decomposition (docs/results/repro-thunder-max-pool2d), and the BatchNorms after it
report running means "not updated": Thunder's relu is where(a > 0, a, 0) (thunder/torch/__init__.py,
0.2.6), so relu(NaN) is 0 where torch's is NaN, and the next BatchNorm sees zeros (its running mean
stays 0, its running variance becomes 0.9). Unpadded, every buffer matches (two bias gradients are
just past their float32 bound, 2.6e-05 against 2.4e-05: a mismatch, but no NaN). On the CPU:

    irlens compare --workloads docs/results/zoo-h200-bench/resnet18_pool_padding.py:r18_pad1,\
docs/results/zoo-h200-bench/resnet18_pool_padding.py:r18_pad0 \
      --backends eager,thunder+torchcompile --mode fwdbwd

(output: resnet18_pool_padding-cpu.txt)"""
import timm
import torch

import irlens
from irlens.workloads.zoo.timm_models import SMALL_RESNET  # the zoo's timm_resnet18 at the tiny preset


def resnet18(padding: int) -> irlens.Workload:
    torch.manual_seed(0)
    module = timm.create_model("resnet18", pretrained=False, **SMALL_RESNET).train()
    module.maxpool = torch.nn.MaxPool2d(3, 2, padding)
    return irlens.Workload.from_module(f"r18_pad{padding}", module, example_inputs=((4, 3, 32, 32),),
                                       description=f"timm resnet18, tiny, train mode, max-pool padding {padding}")


r18_pad1 = resnet18(1)
r18_pad0 = resnet18(0)
