"""timm's tiny CoAtNet (the zoo's timm_coatnet at the tiny preset's size) as given, and with its
SiLU(inplace=True) activations made out-of-place: Thunder's fwd+bwd through ThunderFX is wrong on
the first and right on the second, so its mismatch is Thunder's in-place activation gradient
(docs/results/repro-thunder-inplace-op), not the stride assertion fixed in 7ab8a07. On the CPU:

    irlens compare --workloads docs/results/zoo-h200-bench/coatnet_inplace_silu.py:coat_inplace,\
docs/results/zoo-h200-bench/coatnet_inplace_silu.py:coat_outofplace \
      --backends eager,thunder+torchcompile --mode fwdbwd --thunder-capture thunderfx

(output: coatnet_inplace_silu-cpu.txt)"""
import timm
import torch

import irlens


def coatnet(inplace: bool) -> irlens.Workload:
    torch.manual_seed(0)
    module = timm.create_model("test_coatnet", img_size=32, pretrained=False).eval()
    for m in module.modules():
        if hasattr(m, "inplace"):
            m.inplace = m.inplace and inplace
    name = f"coat_{'inplace' if inplace else 'outofplace'}"
    return irlens.Workload.from_module(name, module, example_inputs=((2, 3, 32, 32),),
                                       description=f"timm test_coatnet, SiLUs {'in-place' if inplace else 'out-of-place'}")


coat_inplace = coatnet(True)
coat_outofplace = coatnet(False)
