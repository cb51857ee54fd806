"""`irlens dump llama3 --frontend joint --stage joint|forward|backward`: the joint-graph path's graphs.

Capture runs in this one process under a fake process group (FakeStore): collectives are
traced with their real shapes for any mesh (default DP4 x TP2 = 8 ranks) without other ranks
or a GPU; the values it would compute are meaningless, which a dump never looks at. Every pass
of the list runs, and a summary of each (nodes, collectives, bucket sizes, before and after)
goes to stderr, or into the JSON.
"""
from __future__ import annotations

import contextlib
import json
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.distributed as dist

from irlens.parallel.capture import CompiledStep, compile_joint
from irlens.parallel.train.data import TokenDataset
from irlens.parallel.parallelize.distributed import mesh_groups
from irlens.parallel.models.families import DEFAULT_PRESET, TrainStep
from irlens.parallel.parallelize.tensor_parallel import loss_context
from irlens.parallel.config import CompileConfig, ModelConfig, ParallelismConfig, TrainConfig, TrainingConfig
from irlens.parallel.train.loop import build_model

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


def capture_config(model: str = "llama3:debug", parallelism: ParallelismConfig | None = None,
                   training: TrainingConfig | None = None, compile: CompileConfig | None = None) -> TrainConfig:
    """The train step a dump captures, compiled, on the CPU: by default for a DP4 x TP2 mesh, one
    sequence per rank, no mixed precision; the parts given replace those. A model family without
    a preset takes the default preset."""
    model = model if ":" in model else f"{model}:{DEFAULT_PRESET}"
    training = training or TrainingConfig(batch_size=1, mixed_precision=False)
    return TrainConfig(model=ModelConfig(model), parallelism=parallelism or ParallelismConfig(dp_shard=4, tp=2),
                       training=replace(training, device="cpu"),
                       compile=replace(compile or CompileConfig(), mode="compiled"))


def capture(tc: TrainConfig) -> CompiledStep:
    """Capture and compile (not run) `tc`'s train step under a fake process group of its mesh's ranks."""
    family, cfg = tc.validate()
    device = torch.device("cpu")
    p, c = tc.parallelism, tc.compile
    with fake_process_group(p.dims.world_size):
        mesh = p.dims.build_mesh(device.type)
        module = build_model(family, cfg, tc, mesh, device)
        batch_size = tc.training.batch_size or cfg.batch_size
        tokens, labels = TokenDataset(cfg.vocab_size, cfg.seq_len, cfg.doc_len, batch_size).batch(0, 0)
        # compiled, never run (a fake process group): the passes' "may change numerics" is for training
        with loss_context(p.uses_loss_parallel), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "pass .* may change numerics", UserWarning)
            return compile_joint(TrainStep(module), (tokens, labels), c.joint_passes, c.passes, mesh_groups(mesh))


def capture_fake(*args, **parts) -> CompiledStep:
    """`capture` of `capture_config`'s TrainConfig for the same arguments."""
    return capture(capture_config(*args, **parts))


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


@dataclass(frozen=True)
class DumpRequest:
    """Which of the captured graphs `dump` shows, and how."""
    stages: tuple[str, ...] = ("joint",)
    view: str = "common"  # native: the FX graph as torch prints it; common: irlens's common view
    level: str = "composite"  # the common view's level
    format: str = "text"  # text or json
    out: str | None = None  # a folder: each stage to a file in it, else to stdout

    def __post_init__(self):
        unknown = [s for s in self.stages if s not in STAGES]
        if unknown:
            raise ValueError(f"unknown stage {unknown[0]!r} for the joint frontend; choose from: {', '.join(STAGES)}")


def dump(tc: TrainConfig, request: DumpRequest) -> None:
    """`irlens dump ... --frontend joint`: capture `tc`'s step; each pass's summary line to stderr,
    each stage asked for to stdout or a file."""
    step = capture(tc)
    for r in step.records:
        print(f"# {r.line()}", file=sys.stderr)
    for stage in request.stages:
        text = render(step, stage, request.view, request.format, request.level, tc.model.name)
        if request.out:
            ext = "json" if request.format == "json" else "txt"
            path = Path(request.out) / f"{tc.model.name.replace(':', '_')}.{stage}.{request.view}.{ext}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n")
            print(f"wrote {path}", file=sys.stderr)
        else:
            print(text)
