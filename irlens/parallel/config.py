"""What one training run is: a TrainConfig of parts, as torchtitan's JobConfig is (model,
parallelism, training, optimizer, compile, checkpoint, profiling).

irlens.cli builds it from the command line (nothing here parses flags); the ranks a run spawns
get the dataclass itself, and a run in a worker process (scripts/parallel_table.py) gets its JSON
(`to_json`, read back typed by `from_json`). Each part is read by the code that needs it: the
mesh by the distributed setup, the passes by the capture, the precision by SimpleFSDP.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch

from irlens.core.json_values import read_record
from irlens.parallel.parallelize.distributed import ParallelDims
from irlens.parallel.models.families import ModelFamily, resolve
from irlens.parallel.models.llama3.parallelize import check_divisible
from irlens.parallel.names import EXECUTIONS
from irlens.parallel.passes.catalog import validate_passes
from irlens.parallel.parallelize.simple_fsdp import MixedPrecision

# gradient reduction dtypes: float32 (the default, as torchtitan's mixed_precision_reduce) sums
# bf16-computed gradients without rounding each partial sum; bfloat16 halves the bytes moved
REDUCE_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


class _Part:
    """A part of the TrainConfig: written as a JSON object of its fields, read back typed."""

    @classmethod
    def from_json(cls, d: Any, where: str) -> Any:
        return read_record(cls, d, where)


@dataclass
class ModelConfig(_Part):
    name: str = "llama3:debug"  # <family>:<preset>
    seq_len: int | None = None  # default: the preset's
    n_layers: int | None = None  # default: the preset's
    flex: bool = False  # FlexAttention with a block-causal mask


@dataclass
class ParallelismConfig(_Part):
    dp_shard: int = 1
    tp: int = 1
    ep: int = 1  # expert parallelism: its ranks are dp_shard ranks
    sequence_parallel: bool = True  # with tp > 1: norms and residuals over 1/tp of the sequence
    loss_parallel: bool = True  # with tp > 1: the loss over vocabulary-sharded logits (no logits gather)

    @property
    def dims(self) -> ParallelDims:
        return ParallelDims(self.dp_shard, self.tp, self.ep)

    @property
    def uses_loss_parallel(self) -> bool:
        return self.tp > 1 and self.loss_parallel


@dataclass
class TrainingConfig(_Part):
    steps: int = 10
    batch_size: int | None = None  # sequences per data-parallel rank; default: the preset's
    seed: int = 0  # of the weights and the token data
    device: str = "cpu"  # cpu: gloo ranks; cuda: NCCL, one GPU per rank
    mixed_precision: bool | None = None  # bf16 compute; default: on cuda only
    reduce_dtype: str = "float32"  # the dtype gradients are reduce-scattered (summed over dp ranks) in

    def uses_mixed_precision(self, device: torch.device) -> bool:
        return self.mixed_precision if self.mixed_precision is not None else device.type == "cuda"

    def precision(self, device: torch.device) -> MixedPrecision:
        """bf16 compute with mixed precision; gradients reduced in `reduce_dtype` (float32: the
        parameters' own dtype, so no cast without mixed precision)."""
        reduce = REDUCE_DTYPES[self.reduce_dtype]
        if self.uses_mixed_precision(device):
            return MixedPrecision(torch.bfloat16, reduce)
        return MixedPrecision(None, None if reduce == torch.float32 else reduce)


@dataclass
class OptimizerConfig(_Part):
    lr: float = 3e-4  # AdamW's learning rate


@dataclass
class CompileConfig(_Part):
    mode: str = "eager"  # EXECUTIONS
    joint_passes: list[str] = field(default_factory=list)  # on the joint graph (passes.JOINT_PASSES)
    passes: list[str] = field(default_factory=list)  # on the forward and backward graphs, in order (GRAPH_PASSES)


@dataclass
class CheckpointConfig(_Part):
    folder: str | None = None  # saved here after the last step
    resume: bool = False  # start from the checkpoint in `folder`


@dataclass
class ProfilingConfig(_Part):
    folder: str | None = None  # traces and the breakdown of the last `steps` steps
    steps: int = 2


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    parallelism: ParallelismConfig = field(default_factory=ParallelismConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    compile: CompileConfig = field(default_factory=CompileConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    profiling: ProfilingConfig = field(default_factory=ProfilingConfig)

    def validate(self) -> tuple[ModelFamily, Any]:
        """Every user error, raised before any rank starts (in the words of `irlens train`'s options)."""
        m, p, t, c = self.model, self.parallelism, self.training, self.compile
        if c.mode not in EXECUTIONS:
            raise ValueError(f"unknown --mode {c.mode!r}; choose from: {', '.join(EXECUTIONS)}")
        if t.device not in ("cpu", "cuda"):
            raise ValueError(f"unknown --device {t.device!r}; choose from: cpu, cuda")
        if c.mode == "eager" and (c.joint_passes or c.passes):
            raise ValueError("--joint-passes and --passes apply to --mode compiled only")
        if m.flex and t.device == "cpu":
            raise ValueError("--flex trains on --device cuda only: torch's FlexAttention has no backward on the CPU")
        if self.checkpoint.resume and not self.checkpoint.folder:
            raise ValueError("--resume needs --checkpoint DIR")
        if t.steps < 1 or (t.batch_size is not None and t.batch_size < 1) or self.profiling.steps < 1:
            raise ValueError("--steps, --batch-size and --profile-steps must be >= 1")
        if t.reduce_dtype not in REDUCE_DTYPES:
            raise ValueError(f"unknown --reduce-dtype {t.reduce_dtype!r}; choose from: {', '.join(REDUCE_DTYPES)}")
        validate_passes(c.joint_passes, c.passes, tp=p.tp, sequence_parallel=p.sequence_parallel)
        p.dims  # its own checks: degrees >= 1, ep divides dp_shard
        family, cfg = resolve(m.name, flex=m.flex, seq_len=m.seq_len, n_layers=m.n_layers)
        if p.tp > 1:
            check_divisible(cfg, p.tp, p.sequence_parallel)
        if p.ep > 1 and family.expert_parallel is None:
            raise ValueError(f"--ep {p.ep}: model family {family.name} has no experts to shard")
        if p.ep > 1 and cfg.n_experts % p.ep:
            raise ValueError(f"--ep {p.ep} does not divide the model's {cfg.n_experts} experts")
        return family, cfg

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "the train config") -> "TrainConfig":
        return read_record(cls, d, where)
