"""`irlens dump llama3 --frontend joint --stage joint|forward|backward`: the joint-graph path's graphs.

Capture runs in this one process under a fake process group (FakeStore): collectives are
traced with their real shapes for any mesh (default DP4 x TP2 = 8 ranks) without other ranks
or a GPU; the values it would compute are meaningless, which a dump never looks at. Every pass
of the list runs, and a summary of each (nodes, collectives, bucket sizes, before and after)
goes to stderr, or into the JSON.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from irlens.parallel.capture import CompiledStep, compile_joint
from irlens.parallel.data import TokenDataset
from irlens.parallel.distributed import ParallelDims, mesh_groups
from irlens.parallel.models import DEFAULT_PRESET, TrainStep
from irlens.parallel.passes import GRAPH_PASSES, JOINT_PASSES
from irlens.parallel.tensor_parallel import loss_context

STAGES = {
    "joint": "the joint forward+backward graph after the joint passes (aot_export_joint_with_descriptors)",
    "forward": "the partitioned forward graph after the forward graph passes",
    "backward": "the partitioned backward graph after the backward graph passes",
}


@contextlib.contextmanager
def fake_process_group(world_size: int):
    """A process group of `world_size` ranks, this process being rank 0, that communicates nothing."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        raise RuntimeError("a process group is already initialized; fake capture needs its own")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        yield
    finally:
        dist.destroy_process_group()


def capture_fake(model: str = "llama3:debug", dp_shard: int = 4, tp: int = 2, flex: bool = False,
                 joint_passes: list[str] = (), passes: list[str] = (), batch_size: int = 1, ep: int = 1,
                 sequence_parallel: bool = True, mixed_precision: bool = False, **overrides) -> CompiledStep:
    """Capture and compile (not run) the train step for a dp_shard x tp mesh (ep of the dp ranks
    expert-parallel) on the CPU; `overrides` are further TrainConfig fields (seq_len, n_layers, ...)."""
    from irlens.parallel.train import TrainConfig, build_model

    tc = TrainConfig(model=model, dp_shard=dp_shard, tp=tp, ep=ep, flex=flex, joint_passes=list(joint_passes),
                     passes=list(passes), mode="compiled", batch_size=batch_size, sequence_parallel=sequence_parallel,
                     mixed_precision=mixed_precision, **overrides)
    family, cfg = tc.validate()
    device = torch.device("cpu")
    with fake_process_group(ParallelDims(dp_shard, tp, ep).world_size):
        mesh = tc.dims.build_mesh(device.type)
        model_ = build_model(family, cfg, tc, mesh, device)
        tokens, labels = TokenDataset(cfg.vocab_size, cfg.seq_len, cfg.doc_len, batch_size).batch(0, 0)
        with loss_context(tc.uses_loss_parallel):
            return compile_joint(TrainStep(model_), (tokens, labels), tc.joint_passes, tc.passes, mesh_groups(mesh))


def add_dump_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("workload", nargs="?", default="llama3:debug",
                        help="llama3, deepseek_v3 or <family>:<preset> (default preset debug)")
    parser.add_argument("--frontend", default="joint", choices=["joint"], help="the joint graph's frontend")
    parser.add_argument("--stage", default=None, help=f"{', '.join(STAGES)} (default joint; with --out: all)")
    parser.add_argument("--stages", action="store_true", help="list the stages, then exit")
    parser.add_argument("--view", choices=["native", "common"], default="common",
                        help="the FX graph as torch prints it, or irlens's common view")
    parser.add_argument("--level", choices=["composite", "primitive"], default="composite", help="common view level")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="text, or JSON")
    parser.add_argument("--out", help="write every stage (or --stage) to files in this folder")
    return add_joint_options(parser)


def add_joint_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options only the joint frontend has (for the irlens CLI's dump parser to add)."""
    parser.add_argument("--dp-shard", type=int, default=4, help="SimpleFSDP degree of the mesh (default: 4)")
    parser.add_argument("--tp", type=int, default=2, help="tensor-parallel degree of the mesh (default: 2)")
    parser.add_argument("--ep", type=int, default=1,
                        help="expert parallelism (deepseek_v3), of the dp-shard ranks (default: 1)")
    parser.add_argument("--sequence-parallel", default=True, action=argparse.BooleanOptionalAction,
                        help="with --tp: sequence parallelism (default: on, as irlens train)")
    parser.add_argument("--loss-parallel", default=True, action=argparse.BooleanOptionalAction,
                        help="with --tp: the loss over vocabulary-sharded logits (default: on, as irlens train)")
    parser.add_argument("--mixed-precision", default=False, action=argparse.BooleanOptionalAction,
                        help="bf16 compute, as irlens train on cuda (default: off, as on the cpu)")
    parser.add_argument("--flex", action="store_true", help="FlexAttention with a block-causal mask")
    parser.add_argument("--joint-passes", nargs="*", default=[], metavar="PASS",
                        help="joint-graph passes: " + ", ".join(JOINT_PASSES))
    parser.add_argument("--passes", nargs="*", default=[], metavar="PASS",
                        help="forward/backward passes, in order: " + ", ".join(GRAPH_PASSES))
    return parser


def _model_name(workload: str) -> str:
    return workload if ":" in workload else f"{workload}:{DEFAULT_PRESET}"


def render(step: CompiledStep, stage: str, view: str, fmt: str, level: str, name: str) -> str:
    gm = step.graphs[stage]
    if view == "native":
        if fmt == "json":
            return json.dumps({"stage": stage, "code": gm.print_readable(print_output=False),
                               "passes": [r.to_json() for r in step.records]}, indent=1)
        return gm.print_readable(print_output=False)
    from irlens.frontends.dynamo.fx import fx_to_graph

    graph = fx_to_graph(gm, name=name, frontend="joint", stage=f"joint.{stage}", level=level)
    if fmt == "json":
        # default=str: the DeviceMesh/process-group inputs of DTensor graphs are opaque script objects
        return json.dumps({**graph.to_json(), "passes": [r.to_json() for r in step.records]}, indent=1, default=str)
    return graph.to_text()


def dump_main(argv: list[str] | argparse.Namespace) -> int:
    """Entry point of `irlens dump ... --frontend joint`: argv, or the namespace the irlens CLI parsed
    (options it does not define take this parser's defaults)."""
    defaults = add_dump_arguments(argparse.ArgumentParser(prog="irlens dump", description=__doc__.split("\n\n")[0]))
    if isinstance(argv, argparse.Namespace):
        args = argparse.Namespace(**{**vars(defaults.parse_args([])), **{k: v for k, v in vars(argv).items() if v is not None}})
    else:
        args = defaults.parse_args(argv)
    if args.stages:
        for s, what in STAGES.items():
            print(f"{s:<10} {what}")
        return 0
    stages = [args.stage] if args.stage else (list(STAGES) if args.out else ["joint"])
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r} for the joint frontend; choose from: {', '.join(STAGES)}")
    model = _model_name(args.workload)
    step = capture_fake(model, args.dp_shard, args.tp, args.flex, args.joint_passes, args.passes, ep=args.ep,
                        sequence_parallel=args.sequence_parallel, mixed_precision=args.mixed_precision,
                        loss_parallel=args.loss_parallel)
    for r in step.records:
        print(f"# {r.line()}", file=sys.stderr)
    for stage in stages:
        text = render(step, stage, args.view, args.format, args.level, model)
        if args.out:
            path = Path(args.out) / f"{model.replace(':', '_')}.{stage}.{args.view}.{'json' if args.format == 'json' else 'txt'}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n")
            print(f"wrote {path}", file=sys.stderr)
        else:
            print(text)
    return 0
