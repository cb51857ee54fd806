"""The names and defaults `irlens train` and `irlens dump --frontend joint` offer, importable without
torch, so that their --help and a bad argument answer without importing it (as irlens.names does for
the other commands).

What is declared here is defined where it is used: the passes in their Registries
(passes/catalog.py), each family's presets in its model.py, the defaults in config.py's dataclasses
and dump.py's `capture_config`. tests/unit/test_parallel_names.py checks that both say the same, so
a pass, preset or default changed there and not here fails that test.
"""
from __future__ import annotations

# each model family (models/families.py's FAMILIES) and its presets (its model.py's PRESETS), in order
MODEL_PRESETS = {
    "llama3": ("debug", "tiny", "300M", "1B", "8B"),
    "deepseek_v3": ("debug", "tiny", "2B"),
}
DEFAULT_PRESET = "debug"  # of a family named without one

JOINT_PASSES = ("inductor_decomposition", "selective_activation_checkpoint", "fsdp_reshard_after_forward")
GRAPH_PASSES = ("async_tensor_parallel", "autobucketing_reordering", "transformer_block_bucketing",
                "regional_inductor", "full_inductor_compilation", "cudagraph")

EXECUTIONS = ("eager", "compiled")  # how the train step runs (--mode): op by op, or as a compiled joint graph
REDUCE_DTYPES = ("float32", "bfloat16")  # config.REDUCE_DTYPES's names: the dtypes gradients may be reduced in

# TrainConfig(), part by part, as dataclasses.asdict gives it: `irlens train`'s defaults
TRAIN_DEFAULTS = {
    "model": {"name": "llama3:debug", "seq_len": None, "n_layers": None, "flex": False},
    "parallelism": {"dp_shard": 1, "tp": 1, "ep": 1, "sequence_parallel": True, "loss_parallel": True},
    "training": {"steps": 10, "batch_size": None, "seed": 0, "device": "cpu", "mixed_precision": None,
                 "reduce_dtype": "float32"},
    "optimizer": {"lr": 3e-4},
    "compile": {"mode": "eager", "joint_passes": [], "passes": []},
    "checkpoint": {"folder": None, "resume": False},
    "profiling": {"folder": None, "steps": 2},
}
# capture_config()'s: the joint dump's defaults (a DP4 x TP2 mesh, one sequence per rank, no mixed
# precision, compiled), the rest as TRAIN_DEFAULTS
CAPTURE_DEFAULTS = {
    **TRAIN_DEFAULTS,
    "parallelism": {**TRAIN_DEFAULTS["parallelism"], "dp_shard": 4, "tp": 2},
    "training": {**TRAIN_DEFAULTS["training"], "batch_size": 1, "mixed_precision": False},
    "compile": {**TRAIN_DEFAULTS["compile"], "mode": "compiled"},
}
