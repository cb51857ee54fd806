"""minigpt (bench, bfloat16, fwdbwd) through Thunder + nvFuser: backward region nvFusion59, whose
first call took 5.1 s in nvFuser's execute

Written by scripts/nvfuser_minigpt_probe.py. The first execute of a definition is nvFuser's
segmentation, scheduling and kernel compile, then one run: `time python` this file to see it
alone.

Exit status: 0 the fusion ran, 2 it raised (its first line is printed); a crash ends the process.
"""
import base64
import math
import sys
import traceback

import torch
from nvfuser_direct import DataType, FusionDefinition  # noqa: F401  (the definition uses them)

def embedded(data, dtype, shape, stride=None, device="cpu"):
    """A tensor from its bytes (base64), exactly."""
    flat = torch.frombuffer(bytearray(base64.b64decode(data)), dtype=torch.uint8).view(dtype).clone()
    return _laid_out(flat, shape, stride, device)


def regenerated(seed, dtype, shape, mean, std, stride=None, device="cpu"):
    """A floating tensor drawn again: normal with the original's mean and standard deviation."""
    gen = torch.Generator().manual_seed(seed)
    flat = (torch.randn(_extent(shape, stride), generator=gen, dtype=torch.float64) * std + mean).to(dtype)
    return _laid_out(flat, shape, stride, device)


def integers(seed, dtype, shape, low, high, stride=None, device="cpu"):
    """An integer (or bool) tensor drawn again, uniformly in [low, high]."""
    gen = torch.Generator().manual_seed(seed)
    flat = torch.randint(low, high + 1, (_extent(shape, stride),), generator=gen).to(dtype)
    return _laid_out(flat, shape, stride, device)


def _laid_out(flat, shape, stride, device):
    """The elements moved to the device, then viewed with the shape and strides (a broadcast
    stride of 0 survives: moving the strided view would copy it dense)."""
    flat = flat.to(device)
    return flat.reshape(shape) if stride is None else flat.as_strided(shape, stride)


def _extent(shape, stride):
    """Elements behind a tensor of this shape and stride (all of them when it is contiguous)."""
    if stride is None:
        return math.prod(shape)
    return 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))



def unrecorded(why):
    raise RuntimeError("the flight recorder could not write this down: " + why)


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[8, 1024], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    tv1 = fd.define_tensor(shape=[1536], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    tv2 = fd.define_tensor(shape=[8, 1024, 1536], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv3 = fd.define_tensor(shape=[8, 1024, 1536], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv4 = fd.define_tensor(shape=[8, 1024, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False)
    tv5 = fd.define_tensor(shape=[8, 1024, 1536], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv6 = fd.define_tensor(shape=[8, 1024, 6144], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv46 = fd.ops.cast(tv5, dtype=DataType.Float)
    tv19 = fd.ops.expand(tv4, shape=[8, 1024, 1536])
    tv9 = fd.ops.broadcast(tv1, is_broadcast_dim=[True, True, False])
    tv10 = fd.ops.expand(tv9, shape=[8, 1024, 1536])
    tv12 = fd.ops.cast(tv10, dtype=DataType.Float)
    tv11 = fd.ops.cast(tv2, dtype=DataType.Float)
    tv15 = fd.ops.mul(tv12, tv11)
    tv20 = fd.ops.mul(tv19, tv15)
    tv48 = fd.ops.add(tv46, tv20)
    tv23 = fd.ops.neg(tv20)
    tv27 = fd.ops.sum(tv23, dims=[2], dtype=DataType.Float)
    tv29 = fd.ops.broadcast(tv27, is_broadcast_dim=[False, False, True])
    tv30 = fd.ops.cast(tv29, dtype=DataType.Float)
    tv35 = fd.ops.squeeze(tv30, dims=[2])
    tv40 = fd.ops.broadcast(tv35, is_broadcast_dim=[False, False, True])
    tv41 = fd.ops.cast(tv40, dtype=DataType.Float)
    tv43 = fd.ops.expand(tv41, shape=[8, 1024, 1536])
    tv45 = fd.ops.mul(0.000651042, tv43)
    tv14 = fd.ops.cast(tv3, dtype=DataType.Float)
    tv7 = fd.ops.broadcast(tv0, is_broadcast_dim=[False, False, True])
    tv8 = fd.ops.cast(tv7, dtype=DataType.Float)
    tv13 = fd.ops.expand(tv8, shape=[8, 1024, 1536])
    tv16 = fd.ops.sub(tv14, tv13)
    tv17 = fd.ops.mul(tv16, tv15)
    tv18 = fd.ops.sum(tv17, dims=[2], dtype=DataType.Float)
    tv21 = fd.ops.broadcast(tv18, is_broadcast_dim=[False, False, True])
    tv22 = fd.ops.cast(tv21, dtype=DataType.Float)
    tv25 = fd.ops.mul(-0.500000, tv22)
    tv24 = fd.ops.pow(tv4, 3.00000)
    tv26 = fd.ops.mul(tv25, tv24)
    tv28 = fd.ops.squeeze(tv26, dims=[2])
    tv33 = fd.ops.broadcast(tv28, is_broadcast_dim=[False, False, True])
    tv34 = fd.ops.cast(tv33, dtype=DataType.Float)
    tv37 = fd.ops.expand(tv34, shape=[8, 1024, 1536])
    tv39 = fd.ops.mul(2.00000, tv37)
    tv31 = fd.ops.broadcast(tv0, is_broadcast_dim=[False, False, True])
    tv32 = fd.ops.cast(tv31, dtype=DataType.Float)
    tv36 = fd.ops.expand(tv32, shape=[8, 1024, 1536])
    tv38 = fd.ops.sub(tv14, tv36)
    tv42 = fd.ops.mul(tv39, tv38)
    c201 = fd.ops.reciprocal(1536.00)
    tv44 = fd.ops.mul(tv42, c201)
    tv47 = fd.ops.add(tv45, tv44)
    tv50 = fd.ops.add(tv48, tv47)
    tv54 = fd.ops.cast(tv50, dtype=DataType.BFloat16)
    tv58 = fd.ops.reshape(tv54, new_shape=[8192, 1536])
    tv49 = fd.ops.mul(tv16, tv19)
    tv51 = fd.ops.mul(tv49, tv11)
    tv55 = fd.ops.sum(tv51, dims=[0, 1], dtype=DataType.Float)
    tv59 = fd.ops.cast(tv55, dtype=DataType.BFloat16)
    tv52 = fd.ops.cast(tv2, dtype=DataType.Float)
    tv56 = fd.ops.sum(tv52, dims=[0, 1], dtype=DataType.Float)
    tv60 = fd.ops.cast(tv56, dtype=DataType.BFloat16)
    tv53 = fd.ops.cast(tv6, dtype=DataType.Float)
    tv57 = fd.ops.sum(tv53, dims=[0, 1], dtype=DataType.Float)
    tv61 = fd.ops.cast(tv57, dtype=DataType.BFloat16)
    fd.add_output(tv54)
    fd.add_output(tv58)
    fd.add_output(tv59)
    fd.add_output(tv60)
    fd.add_output(tv61)


def make_inputs():
    return [
        regenerated(0, torch.float32, (8, 1024), 0.0007141961890236859, 0.03829166226108655, device='cuda:0'),
        regenerated(1, torch.bfloat16, (1536,), 1.0, 0.0, device='cuda:0'),
        regenerated(2, torch.bfloat16, (8, 1024, 1536), 3.271213045530202e-12, 1.5425015796239155e-09, device='cuda:0'),
        regenerated(3, torch.bfloat16, (8, 1024, 1536), 0.0007148338987311338, 1.5162450140836943, device='cuda:0'),
        regenerated(4, torch.float32, (8, 1024, 1), 0.6601145166350761, 0.012889231252767575, device='cuda:0'),
        regenerated(5, torch.bfloat16, (8, 1024, 1536), -1.2553271769675384e-14, 7.559211722716422e-09, device='cuda:0'),
        regenerated(6, torch.bfloat16, (8, 1024, 6144), 3.834849331788357e-12, 1.3370178694669138e-09, device='cuda:0'),
    ]


def main():
    with FusionDefinition() as fd:
        nvfuser_fusion(fd)
    inputs = make_inputs()
    try:
        outputs = fd.execute(inputs)
        torch.cuda.synchronize()
    except Exception as e:
        text = str(e).strip()
        print(f"exception: {type(e).__name__}: {text.splitlines()[0] if text else ''}", flush=True)
        traceback.print_exc()
        return 2
    print(f"ok: the fusion ran ({len(outputs)} outputs; its numerics are not checked here)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
