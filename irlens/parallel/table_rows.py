"""The rows of the parallel path's results tables (scripts/parallel_table.py), typed: a Row is the
mesh it runs at, its way (eager, or compiled with its passes), the settings it changes and its
batch. Without torch, as names.py, so that the named configurations (irlens.cli.configs) declare
their rows as values and `irlens list` still answers without importing it.

A row's `name` is its label in the tables (`dp2tp2/async_tp_full_inductor+no_sp+layers16@4`) and
what the script's --rows takes back (its parse is the script's: no parser in parallel/).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from irlens.parallel.names import EXECUTIONS, GRAPH_PASSES, JOINT_PASSES


@dataclass(frozen=True)
class Way:
    """How a row's step runs: eager or compiled with its joint and graph passes, with FlexAttention or not."""

    name: str
    mode: str = "eager"
    joint: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    flex: bool = False

    def __post_init__(self):
        # what irlens train would refuse, refused where the way is declared
        unknown = [p for p in self.joint if p not in JOINT_PASSES] + [p for p in self.passes if p not in GRAPH_PASSES]
        if self.mode not in EXECUTIONS:
            raise ValueError(f"way {self.name!r}: unknown mode {self.mode!r}; choose from: {', '.join(EXECUTIONS)}")
        if unknown:
            raise ValueError(f"way {self.name!r}: unknown passes {', '.join(unknown)}")
        if self.mode == "eager" and (self.joint or self.passes):
            raise ValueError(f"way {self.name!r}: passes apply to compiled ways only")


def compiled(name: str, *passes: str, joint: tuple[str, ...] = (), flex: bool = False) -> Way:
    return Way(name, "compiled", joint, passes, flex)


DECOMPOSED = ("inductor_decomposition",)
FULL_INDUCTOR_PASSES = ("autobucketing_reordering", "full_inductor_compilation")
FLEX_REGIONAL = ("transformer_block_bucketing", "regional_inductor")

EAGER = Way("eager")
COMPILED = compiled("compiled")
AUTOBUCKETING = compiled("autobucketing", "autobucketing_reordering")
SAC_RESHARD_BLOCK_BUCKETING = compiled("sac_reshard_block_bucketing", "transformer_block_bucketing", joint=(
    "selective_activation_checkpoint", "fsdp_reshard_after_forward"))
# one GPU: no collective to bucket
FULL_INDUCTOR = compiled("full_inductor", "full_inductor_compilation", joint=DECOMPOSED)
FULL_INDUCTOR_CUDAGRAPH = compiled("full_inductor_cudagraph", "full_inductor_compilation", "cudagraph",
                                   joint=DECOMPOSED)
SAC_FULL_INDUCTOR_CUDAGRAPH = compiled("sac_full_inductor_cudagraph", "full_inductor_compilation", "cudagraph",
                                       joint=(*DECOMPOSED, "selective_activation_checkpoint"))
AUTOBUCKETING_FULL_INDUCTOR = compiled("autobucketing_full_inductor", *FULL_INDUCTOR_PASSES, joint=DECOMPOSED)
AUTOBUCKETING_FULL_INDUCTOR_CUDAGRAPH = compiled("autobucketing_full_inductor_cudagraph", *FULL_INDUCTOR_PASSES,
                                                 "cudagraph", joint=DECOMPOSED)
# tensor parallelism with sequence parallelism (the default): the TP collectives micro-pipelined
ASYNC_TP_FULL_INDUCTOR = compiled("async_tp_full_inductor", "async_tensor_parallel", *FULL_INDUCTOR_PASSES,
                                  joint=DECOMPOSED)
ASYNC_TP_FULL_INDUCTOR_CUDAGRAPH = compiled("async_tp_full_inductor_cudagraph", "async_tensor_parallel",
                                            *FULL_INDUCTOR_PASSES, "cudagraph", joint=DECOMPOSED)
FLEX_EAGER = Way("flex_eager", flex=True)
FLEX_BLOCK_BUCKETING_REGIONAL = compiled("flex_block_bucketing_regional", *FLEX_REGIONAL, flex=True)
FLEX_BLOCK_BUCKETING_REGIONAL_CUDAGRAPH = compiled("flex_block_bucketing_regional_cudagraph", *FLEX_REGIONAL,
                                                   "cudagraph", flex=True)
# by name, in the order a table without --rows runs them
WAYS: dict[str, Way] = {w.name: w for w in (
    EAGER, COMPILED, AUTOBUCKETING, SAC_RESHARD_BLOCK_BUCKETING, FULL_INDUCTOR, FULL_INDUCTOR_CUDAGRAPH,
    SAC_FULL_INDUCTOR_CUDAGRAPH, AUTOBUCKETING_FULL_INDUCTOR, AUTOBUCKETING_FULL_INDUCTOR_CUDAGRAPH,
    ASYNC_TP_FULL_INDUCTOR, ASYNC_TP_FULL_INDUCTOR_CUDAGRAPH, FLEX_EAGER, FLEX_BLOCK_BUCKETING_REGIONAL,
    FLEX_BLOCK_BUCKETING_REGIONAL_CUDAGRAPH)}


@dataclass(frozen=True)
class Mesh:
    """The degrees a row runs at; one left None is the table's (its --dp-shard, --tp, --ep)."""

    dp_shard: int | None = None
    tp: int | None = None
    ep: int | None = None

    def __post_init__(self):
        if any(d is not None and d < 1 for d in self.degrees().values()):
            raise ValueError(f"mesh {self.name}: a degree is < 1")

    def degrees(self) -> dict[str, int]:
        """The degrees given, as ParallelismConfig names them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @property
    def name(self) -> str:
        """`dp2tp2ep2` (`dp` for dp_shard); empty where it gives none."""
        return "".join(f"{k.removesuffix('_shard')}{d}" for k, d in self.degrees().items())


# a modifier's word in a row's name and the Row fields it sets (in the order names write them)
MODIFIERS: dict[str, dict[str, object]] = {
    # tensor parallelism with all-reduces, norms on the whole sequence
    "no_sp": {"sequence_parallel": False},
    # gradients reduce-scattered in bf16 (default float32)
    "bf16_reduce": {"bf16_reduce": True},
}
LAYERS_WORD = "layers"  # `layersN`: the model's first N layers


@dataclass(frozen=True)
class Row:
    """One row of a table: `way` at `mesh`, the settings it changes (else the table's), its batch
    size (sequences per data-parallel rank; None: the table's)."""

    way: Way
    mesh: Mesh = Mesh()
    sequence_parallel: bool = True
    bf16_reduce: bool = False
    n_layers: int | None = None
    batch: int | None = None

    def __post_init__(self):
        for what, n in (("layers", self.n_layers), ("batch", self.batch)):
            if n is not None and n < 1:
                raise ValueError(f"{what} {n} is not >= 1")

    @property
    def modifiers(self) -> list[str]:
        words = [w for w, sets in MODIFIERS.items() if all(getattr(self, k) == v for k, v in sets.items())]
        return words + ([f"{LAYERS_WORD}{self.n_layers}"] if self.n_layers is not None else [])

    @property
    def name(self) -> str:
        """`[MESH/]WAY[+MODIFIER...][@BATCH]`: the row's label, one name per row."""
        mesh = f"{self.mesh.name}/" if self.mesh.name else ""
        batch = f"@{self.batch}" if self.batch is not None else ""
        return mesh + "+".join([self.way.name, *self.modifiers]) + batch
