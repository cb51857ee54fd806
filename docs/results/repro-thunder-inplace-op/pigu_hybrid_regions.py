"""Which ThunderFX region of GraphNet's others/pigu_hybrid gives Thunder's wrong gradients: the sample
through upstream's ThunderCompiler (torchcompile executor first, as irlens's thunder+torchcompile), each
Thunder region's inputs recorded on a second step, then each region alone, fwd+bwd on those inputs with
one seeded cotangent per output, through thunder.jit with three executor lists, against the region in
float64 (the largest gradient rel err of each). irlens only loads the sample (its weights drawn from the
sample's meta, as the cells run it).

    python docs/results/repro-thunder-inplace-op/pigu_hybrid_regions.py GRAPHNET/samples/others/pigu_hybrid
    python ... pigu_hybrid_regions.py GRAPHNET/samples/others/pigu_hybrid 7 8   # the code of graphs 7 and 8
(output: pigu_hybrid_regions-cpu.txt)
"""
import sys

import torch

from irlens._compat import import_thunder
from irlens.workloads.builtin import resolve_workload
from irlens.workloads.workload import mean_square_loss

torch._dynamo.config.use_lazy_graph_module = False
thunder = import_thunder()
from thunder.dynamo import ThunderCompiler  # noqa: E402
from thunder.executors.torch_compile import torch_compile_ex  # noqa: E402
from thunder.executors.torchex import ex as torch_ex  # noqa: E402

EXECUTORS = {"default": None, "torch only": [torch_ex],
             "torchcompile": [torch_compile_ex, *thunder.get_default_executors()]}


class Record(torch.nn.Module):
    """A compiled region that keeps the first inputs it is called with."""

    def __init__(self, key, fn, seen):
        super().__init__()
        self.key, self.fn, self.seen = key, fn, seen

    def forward(self, *args):
        self.seen.setdefault(self.key, [(a.detach().clone(), a.requires_grad) if isinstance(a, torch.Tensor)
                                        else (a, False) for a in args])
        return self.fn(*args)


def step(compiled, inst):
    inputs = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inst.inputs]
    mean_square_loss(compiled(*inputs)).backward()


def grads(fn, args, dtype):
    args = [a.detach().to(dtype).requires_grad_(wanted) if isinstance(a, torch.Tensor) and a.is_floating_point()
            else a for a, wanted in args]
    outs = fn(*args)
    outs = [o for o in (outs if isinstance(outs, (tuple, list)) else (outs,))
            if isinstance(o, torch.Tensor) and o.requires_grad]
    g = torch.Generator().manual_seed(0)
    cots = [torch.randn(o.shape, generator=g, dtype=torch.float64).to(dtype) for o in outs]
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    return torch.autograd.grad(outs, leaves, cots, allow_unused=True)


def worst(got, ref):
    return max(((a.double() - b).norm() / b.norm().clamp_min(1e-300)).item()
               for a, b in zip(got, ref) if a is not None and b is not None)


def main(sample: str, show: list[str]):
    inst = resolve_workload(f"graphnet:{sample}").instantiate()
    backend = ThunderCompiler(executors=EXECUTORS["torchcompile"])
    compiled = torch.compile(inst.module, backend=backend)
    step(compiled, inst)  # compiles
    seen = {}
    for gi, info in enumerate(backend.subgraph_infos):
        for name, fn in list(info.split_graph_module.named_children()):
            if name.startswith("thunder_"):
                setattr(info.split_graph_module, name, Record((gi, name), fn, seen))
    step(compiled, inst)
    print(f"thunder {thunder.__version__}, torch {torch.__version__}; {len(backend.subgraph_infos)} Dynamo graphs; "
          "each Thunder region alone: largest gradient rel err against float64")
    for (gi, name), args in sorted(seen.items()):
        region = getattr(backend.subgraph_infos[gi].original_split_graph_module.split_graph_module,
                         name.replace("thunder_", "submod_"))
        if show:
            if str(gi) in show:
                print(f"graph {gi} {name}:{region.code}")
            continue
        ref = grads(region, args, torch.float64)
        line = [f"graph {gi} {name}: {len(region.graph.nodes)} nodes; eager {worst(grads(region, args, torch.float32), ref):.1e}"]
        for label, ex in EXECUTORS.items():
            jitted = thunder.jit(region) if ex is None else thunder.jit(region, executors=ex)
            line.append(f"{label} {worst(grads(jitted, args, torch.float32), ref):.1e}")
        print("; ".join(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
