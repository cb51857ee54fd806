"""`irlens train`: the joint-graph parallel training path. The command line becomes one
irlens.parallel.config.TrainConfig, each option going to its part (`PARTS`); the options the joint
dump shares (mesh, precision, attention, passes) are added here for both commands, their names and
defaults from irlens.parallel.names (so that --help imports no torch)."""
from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import sys

from irlens.cli.command import EXIT_OK, EXIT_USAGE, guarded, output_folder, positive_float, positive_int
from irlens.cli.frontend_settings import source_of
from irlens.errors import UsageError
from irlens.parallel import names

HELP = "the joint-graph parallel training path (irlens train --help)"


def _switch(value: bool | None) -> str:
    return {True: "on", False: "off", None: "on cuda only"}[value]


# each part of the TrainConfig: its field -> the option (its dest) that sets it
PARTS = {
    "model": {"name": "model", "seq_len": "seq_len", "n_layers": "n_layers", "flex": "flex"},
    "parallelism": {f: f for f in ("dp_shard", "tp", "ep", "sequence_parallel", "loss_parallel")},
    "training": {f: f for f in ("steps", "batch_size", "seed", "device", "mixed_precision", "reduce_dtype")},
    "optimizer": {"lr": "lr"},
    "compile": {f: f for f in ("mode", "joint_passes", "passes")},
    "checkpoint": {"folder": "checkpoint", "resume": "resume"},
    "profiling": {"folder": "profile", "steps": "profile_steps"},
}


def train_config(args, base=None):
    """`base` (a TrainConfig; default: its defaults) with each option of `args` that was given (not
    None) set in its part."""
    from irlens.parallel.config import TrainConfig

    base = base or TrainConfig()
    parts = {}
    for part, fields in PARTS.items():
        given = {f: getattr(args, dest) for f, dest in fields.items() if getattr(args, dest, None) is not None}
        parts[part] = dataclasses.replace(getattr(base, part), **given)
    return dataclasses.replace(base, **parts)


def add_parallel_options(parser, d: dict) -> None:
    """What `irlens train` and `irlens dump --frontend joint` both take, with the defaults of `d`
    (a TrainConfig's parts, as irlens.parallel.names declares them) named in the help."""
    p, t = d["parallelism"], d["training"]
    parser.add_argument("--dp-shard", type=positive_int, default=p["dp_shard"],
                        help=f"SimpleFSDP degree (default: {p['dp_shard']})")
    parser.add_argument("--tp", type=positive_int, default=p["tp"], help=f"tensor-parallel degree (default: {p['tp']})")
    parser.add_argument("--ep", type=positive_int, default=p["ep"],
                        help=f"expert-parallel degree (MoE models; its ranks are dp-shard ranks: must divide "
                             f"--dp-shard) (default: {p['ep']})")
    parser.add_argument("--sequence-parallel", default=p["sequence_parallel"], action=argparse.BooleanOptionalAction,
                        help="with --tp: norms and residual adds over 1/tp of the sequence, all-gather/reduce-scatter "
                             f"around the column/row-wise pairs instead of all-reduces (default: "
                             f"{_switch(p['sequence_parallel'])})")
    parser.add_argument("--loss-parallel", default=p["loss_parallel"], action=argparse.BooleanOptionalAction,
                        help="with --tp: cross-entropy over the vocabulary-sharded logits instead of gathering them "
                             f"(default: {_switch(p['loss_parallel'])})")
    parser.add_argument("--mixed-precision", default=t["mixed_precision"], action=argparse.BooleanOptionalAction,
                        help=f"bf16 compute (default: {_switch(t['mixed_precision'])})")
    parser.add_argument("--flex", action="store_true", help="FlexAttention with a block-causal mask")
    parser.add_argument("--joint-passes", nargs="*", default=[], metavar="PASS",
                        help=f"joint-graph passes: {', '.join(names.JOINT_PASSES)}")
    parser.add_argument("--passes", nargs="*", default=[], metavar="PASS",
                        help=f"forward/backward passes, in order: {', '.join(names.GRAPH_PASSES)}")


def description() -> str:
    """The first paragraph of irlens.parallel.train.loop's docstring, read from its source: importing
    the module imports torch."""
    return ast.get_docstring(ast.parse(source_of("irlens.parallel.train.loop").read_text())).split("\n\n")[0]


def add_arguments(t) -> None:
    t.description = description()
    d = names.TRAIN_DEFAULTS
    t.add_argument("--model", default=d["model"]["name"],
                   help=" or ".join(f"{family}:<preset> ({', '.join(presets)})"
                                    for family, presets in names.MODEL_PRESETS.items()))
    add_parallel_options(t, d)
    training = d["training"]
    t.add_argument("--steps", type=positive_int, default=training["steps"], help="training steps")
    t.add_argument("--mode", choices=names.EXECUTIONS, default=d["compile"]["mode"],
                   help="eager: the DTensor model op by op; compiled: the joint graph, its passes, compiled")
    t.add_argument("--device", choices=("cpu", "cuda"), default=training["device"],
                   help="cpu: gloo ranks; cuda: NCCL, one GPU per rank")
    t.add_argument("--batch-size", type=positive_int, default=training["batch_size"],
                   help="sequences per data-parallel rank (default: the preset's; 8 for llama3:1B, 1 for llama3:8B)")
    t.add_argument("--seq-len", type=positive_int, default=None, help="default: the preset's")
    t.add_argument("--n-layers", type=positive_int, default=None,
                   help="default: the preset's (e.g. llama3:8B --n-layers 4 fits one H100)")
    t.add_argument("--lr", type=positive_float, default=d["optimizer"]["lr"], help="AdamW learning rate")
    t.add_argument("--seed", type=int, default=training["seed"], help="seed of the weights and the token data")
    t.add_argument("--checkpoint", type=output_folder, default=None, metavar="DIR", help="save here after the last step")
    t.add_argument("--resume", action="store_true", help="start from the checkpoint in --checkpoint")
    t.add_argument("--reduce-dtype", choices=names.REDUCE_DTYPES, default=training["reduce_dtype"],
                   help="dtype of the gradient reduce-scatter over dp ranks (default float32)")
    t.add_argument("--profile", type=output_folder, nargs="?", const="irlens-profile", default=None, metavar="DIR",
                   help="profile the last --profile-steps steps: traces (Perfetto) to DIR (default "
                        "irlens-profile), the step time's breakdown printed and in the summary")
    t.add_argument("--profile-steps", type=positive_int, default=d["profiling"]["steps"], metavar="N",
                   help="with --profile: how many of the last steps are profiled")


@guarded
def run(args) -> int:
    import torch.distributed as dist

    from irlens.matrix.spec import check_device_present
    from irlens.parallel.parallelize.distributed import shutdown
    from irlens.parallel.train.loop import run_training

    check_device_present(args.device)
    try:
        summary = run_training(train_config(args))
    except (ValueError, KeyError) as e:  # a bad model, mesh or pass list
        raise UsageError(str(e).strip("'\"")) from None
    rank0 = not dist.is_initialized() or dist.get_rank() == 0
    if rank0:  # last: the one JSON line results are collected from
        print(json.dumps(summary), flush=True)
    shutdown()  # under torchrun: this process's group
    if summary["status"] == "not run":  # something asked for cannot run here: exit 2, as for bad input
        if rank0:
            print(f"irlens train: not run: {summary['reason']}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    return EXIT_OK
