"""irlens repro, one nvFuser fusion region: cross_entropy fwdbwd bfloat16 on cuda through nvfuser
(preset tiny); forward region nvFusion0 (the 1th to run)

Made by: irlens repro /work/main/examples/cross_entropy.py:cross_entropy --backend nvfuser
--mode fwdbwd --dtype bfloat16 --device cuda --preset tiny --reduce

When irlens ran it: exception: RuntimeError: INTERNAL ASSERT FAILED at /workspace/Fuser/csrc/runtime/fusion_kernel_runtime.cpp:476, please report a bug with repro script to NVFuser at https://github.com/NVIDIA/Fuser/issues..

What it is: the FusionDefinition Thunder's nvFuser executor built for this region, as nvFuser
prints it, with the region's inputs (recorded just before it ran; large ones regenerated from a
seed). In a run of the whole cell it started and never finished.

The whole cell: exception: RuntimeError: INTERNAL ASSERT FAILED at
/workspace/Fuser/csrc/runtime/fusion_kernel_runtime.cpp:476, please report a bug with repro
script to NVFuser at https://github.com/NVIDIA/Fuser/issues..

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
    tv0 = fd.define_tensor(shape=[256, 1000], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[256], contiguity=[True], dtype=DataType.Int, is_cpu=False)
    tv2 = fd.ops.ne(tv1, -100)
    tv3 = fd.ops.cast(tv1, dtype=DataType.Float)
    c8 = fd.define_scalar(0.00000, dtype=DataType.BFloat16)
    tv4 = fd.ops.where(tv2, tv3, c8)
    tv5 = fd.ops.broadcast(tv4, is_broadcast_dim=[False, True])
    tv6 = fd.ops.cast(tv5, dtype=DataType.Float)
    tv7 = fd.ops.take_along_axis(tv0, tv6, dim=1)
    tv8 = fd.ops.squeeze(tv7, dims=[1])
    tv18 = fd.ops.cast(tv8, dtype=DataType.Float)
    tv9 = fd.ops.max(tv0, dims=[1])
    tv19 = fd.ops.cast(tv9, dtype=DataType.Float)
    tv20 = fd.ops.sub(tv18, tv19)
    tv12 = fd.ops.cast(tv0, dtype=DataType.Float)
    tv10 = fd.ops.broadcast(tv9, is_broadcast_dim=[False, True])
    tv11 = fd.ops.cast(tv10, dtype=DataType.BFloat16)
    tv13 = fd.ops.cast(tv11, dtype=DataType.Float)
    tv14 = fd.ops.sub(tv12, tv13)
    tv15 = fd.ops.exp(tv14)
    tv16 = fd.ops.sum(tv15, dims=[1], dtype=DataType.Float)
    tv17 = fd.ops.log(tv16)
    tv21 = fd.ops.sub(tv20, tv17)
    tv22 = fd.ops.neg(tv21)
    tv23 = fd.ops.where(tv2, tv22, c8)
    tv27 = fd.ops.sum(tv23, dims=[0], dtype=DataType.Float)
    tv24 = fd.ops.cast(tv2, dtype=DataType.Int)
    tv25 = fd.ops.sum(tv24, dims=[0], dtype=DataType.Int)
    tv26 = fd.ops.cast(tv25, dtype=DataType.Float)
    tv28 = fd.ops.div(tv27, tv26)
    fd.add_output(tv28)
    fd.add_output(tv9)
    fd.add_output(tv17)
    fd.add_output(tv26)


def make_inputs():
    return [
        regenerated(0, torch.bfloat16, (256, 1000), -0.0058645508667686955, 0.5816724501863934, device='cuda:0'),
        embedded('4AAAAAAAAADEAgAAAAAAAK4DAAAAAAAAHwIAAAAAAAA9AwAAAAAAAIQCAAAAAAAAdAMAAAAAAABsAwAAAAAAAHYAAAAAAAAAKwIAAAAAAAAwAwAAAAAAABYBAAAAAAAAaQAAAAAAAABIAgAAAAAAANQAAAAAAAAAyQIAAAAAAABCAAAAAAAAAJEAAAAAAAAAxwAAAAAAAABaAwAAAAAAABgBAAAAAAAAHQAAAAAAAACjAwAAAAAAAAcCAAAAAAAARgEAAAAAAABIAQAAAAAAAJ4DAAAAAAAAcgEAAAAAAAAcAAAAAAAAAMMCAAAAAAAAcQIAAAAAAAA+AwAAAAAAAMICAAAAAAAA+wEAAAAAAACzAQAAAAAAAOoBAAAAAAAAMAMAAAAAAAAYAAAAAAAAAF4BAAAAAAAAeAIAAAAAAACAAAAAAAAAAHYDAAAAAAAAEAAAAAAAAAA4AAAAAAAAAB4CAAAAAAAAuAEAAAAAAADWAwAAAAAAAGACAAAAAAAA5gMAAAAAAAA5AQAAAAAAAOMAAAAAAAAAdwAAAAAAAAA+AAAAAAAAAK4AAAAAAAAAUAEAAAAAAADbAAAAAAAAAMUDAAAAAAAALwMAAAAAAAAlAwAAAAAAACwDAAAAAAAAPgEAAAAAAAD5AQAAAAAAAGcCAAAAAAAAMgMAAAAAAABGAgAAAAAAAMICAAAAAAAABQIAAAAAAAAhAwAAAAAAAMgBAAAAAAAA2gEAAAAAAAChAgAAAAAAAA4CAAAAAAAA1wMAAAAAAAA8AwAAAAAAADQDAAAAAAAAZAAAAAAAAAAtAAAAAAAAAEsAAAAAAAAAlgMAAAAAAAB2AQAAAAAAAJADAAAAAAAAHgMAAAAAAADUAAAAAAAAAIECAAAAAAAA5gEAAAAAAACmAAAAAAAAACcCAAAAAAAATgIAAAAAAAAYAwAAAAAAADsDAAAAAAAAZwIAAAAAAACZAQAAAAAAAH0DAAAAAAAAIAEAAAAAAAB/AgAAAAAAALQDAAAAAAAAuAAAAAAAAACWAQAAAAAAAFUBAAAAAAAAewAAAAAAAABmAgAAAAAAAMQCAAAAAAAAyQIAAAAAAAAlAwAAAAAAAC0BAAAAAAAA9gEAAAAAAADTAAAAAAAAACUDAAAAAAAA6QIAAAAAAADrAAAAAAAAACMAAAAAAAAA4wIAAAAAAAA5AgAAAAAAANQBAAAAAAAAsAEAAAAAAADxAgAAAAAAAJEBAAAAAAAAzwIAAAAAAAC0AQAAAAAAAJoCAAAAAAAANAMAAAAAAABPAwAAAAAAACIAAAAAAAAAKgMAAAAAAAAKAAAAAAAAAJADAAAAAAAARgAAAAAAAACzAwAAAAAAAMQCAAAAAAAA3QEAAAAAAAAKAQAAAAAAAJ0DAAAAAAAAbwAAAAAAAADAAwAAAAAAAAQDAAAAAAAAWgIAAAAAAAAIAwAAAAAAAM0BAAAAAAAAFAMAAAAAAAD0AAAAAAAAADsCAAAAAAAAPgEAAAAAAADnAAAAAAAAAIUBAAAAAAAAAQMAAAAAAACwAQAAAAAAADcBAAAAAAAA7QAAAAAAAAA7AgAAAAAAAMwDAAAAAAAAFgEAAAAAAABgAAAAAAAAAI8CAAAAAAAANwIAAAAAAADiAAAAAAAAAKQDAAAAAAAAtwMAAAAAAADCAAAAAAAAAFICAAAAAAAAzQEAAAAAAAAcAwAAAAAAADUDAAAAAAAARAMAAAAAAABVAgAAAAAAAKICAAAAAAAAAAAAAAAAAABwAAAAAAAAAOIAAAAAAAAAngIAAAAAAACAAAAAAAAAAFUBAAAAAAAAUwMAAAAAAADzAAAAAAAAANMAAAAAAAAAwAMAAAAAAAAeAAAAAAAAAL8AAAAAAAAAYAIAAAAAAADdAAAAAAAAAGEAAAAAAAAAMQIAAAAAAACDAgAAAAAAAMcDAAAAAAAAFQMAAAAAAADIAQAAAAAAAM8CAAAAAAAA8wEAAAAAAAAcAAAAAAAAAB8AAAAAAAAA3wMAAAAAAAB2AgAAAAAAAE0BAAAAAAAAAAIAAAAAAACvAgAAAAAAANQBAAAAAAAA9QIAAAAAAAD6AgAAAAAAAI0CAAAAAAAAngEAAAAAAACdAwAAAAAAAMYCAAAAAAAAngEAAAAAAACfAQAAAAAAACsAAAAAAAAAygMAAAAAAAAwAQAAAAAAAI0DAAAAAAAA3gAAAAAAAADPAQAAAAAAALIDAAAAAAAAEwIAAAAAAAByAgAAAAAAALYCAAAAAAAAwAAAAAAAAADhAgAAAAAAALIAAAAAAAAAtgMAAAAAAAAOAwAAAAAAAAEAAAAAAAAAqQIAAAAAAAA6AgAAAAAAAFsCAAAAAAAAdAMAAAAAAACcAwAAAAAAAGICAAAAAAAAiQIAAAAAAAA5AgAAAAAAAD4DAAAAAAAAAgMAAAAAAAAaAwAAAAAAALcDAAAAAAAAqgMAAAAAAADQAQAAAAAAAKoDAAAAAAAAWAIAAAAAAAB5AAAAAAAAAEsBAAAAAAAA2gIAAAAAAABuAwAAAAAAAJ8BAAAAAAAAXQIAAAAAAABqAgAAAAAAAA0CAAAAAAAAggMAAAAAAAArAgAAAAAAAA4BAAAAAAAA2wMAAAAAAABoAwAAAAAAAAgDAAAAAAAAdwEAAAAAAADBAQAAAAAAAIgDAAAAAAAA1wIAAAAAAABxAgAAAAAAAF8CAAAAAAAArgAAAAAAAAA=', torch.int64, (256,), device='cuda:0'),
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
