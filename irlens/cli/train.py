"""`irlens train`: the joint-graph parallel training path. The command line becomes one
irlens.parallel.train.TrainConfig; the options the joint dump shares (mesh, precision, attention,
passes) are added here for both commands."""
from __future__ import annotations

import argparse
import json
import sys

from irlens.cli.command import EXIT_OK, EXIT_USAGE, guarded, options
from irlens.errors import UsageError

HELP = "the joint-graph parallel training path (irlens train --help)"


def _switch(value: bool | None) -> str:
    return {True: "on", False: "off", None: "on cuda only"}[value]


def add_parallel_options(parser, d) -> None:
    """What `irlens train` and `irlens dump --frontend joint` both take, with the defaults of `d`
    (a TrainConfig) named in the help."""
    from irlens.parallel.passes import GRAPH_PASSES, JOINT_PASSES

    parser.add_argument("--dp-shard", type=int, default=d.dp_shard, help=f"SimpleFSDP degree (default: {d.dp_shard})")
    parser.add_argument("--tp", type=int, default=d.tp, help=f"tensor-parallel degree (default: {d.tp})")
    parser.add_argument("--ep", type=int, default=d.ep,
                        help=f"expert-parallel degree (MoE models; its ranks are dp-shard ranks: must divide "
                             f"--dp-shard) (default: {d.ep})")
    parser.add_argument("--sequence-parallel", default=d.sequence_parallel, action=argparse.BooleanOptionalAction,
                        help="with --tp: norms and residual adds over 1/tp of the sequence, all-gather/reduce-scatter "
                             f"around the column/row-wise pairs instead of all-reduces (default: "
                             f"{_switch(d.sequence_parallel)})")
    parser.add_argument("--loss-parallel", default=d.loss_parallel, action=argparse.BooleanOptionalAction,
                        help="with --tp: cross-entropy over the vocabulary-sharded logits instead of gathering them "
                             f"(default: {_switch(d.loss_parallel)})")
    parser.add_argument("--mixed-precision", default=d.mixed_precision, action=argparse.BooleanOptionalAction,
                        help=f"bf16 compute (default: {_switch(d.mixed_precision)})")
    parser.add_argument("--flex", action="store_true", help="FlexAttention with a block-causal mask")
    parser.add_argument("--joint-passes", nargs="*", default=[], metavar="PASS",
                        help=f"joint-graph passes: {', '.join(JOINT_PASSES)}")
    parser.add_argument("--passes", nargs="*", default=[], metavar="PASS",
                        help=f"forward/backward passes, in order: {', '.join(GRAPH_PASSES)}")


def add_arguments(t) -> None:
    from irlens.parallel import train
    from irlens.parallel.deepseek_v3 import PRESETS as DEEPSEEK_PRESETS
    from irlens.parallel.llama3 import PRESETS as LLAMA3_PRESETS

    t.description = train.__doc__.split("\n\n")[0]
    d = train.TrainConfig()
    t.add_argument("--model", default=d.model,
                   help=f"llama3:<preset> ({', '.join(LLAMA3_PRESETS)}) or deepseek_v3:<preset> "
                        f"({', '.join(DEEPSEEK_PRESETS)})")
    add_parallel_options(t, d)
    t.add_argument("--steps", type=int, default=d.steps, help="training steps")
    t.add_argument("--mode", choices=train.EXECUTIONS, default=d.mode,
                   help="eager: the DTensor model op by op; compiled: the joint graph, its passes, compiled")
    t.add_argument("--device", choices=("cpu", "cuda"), default=d.device,
                   help="cpu: gloo ranks; cuda: NCCL, one GPU per rank")
    t.add_argument("--batch-size", type=int, default=d.batch_size,
                   help="sequences per data-parallel rank (default: the preset's; 8 for llama3:1B, 1 for llama3:8B)")
    t.add_argument("--seq-len", type=int, default=None, help="default: the preset's")
    t.add_argument("--n-layers", type=int, default=None,
                   help="default: the preset's (e.g. llama3:8B --n-layers 4 fits one H100)")
    t.add_argument("--lr", type=float, default=d.lr, help="AdamW learning rate")
    t.add_argument("--seed", type=int, default=d.seed, help="seed of the weights and the token data")
    t.add_argument("--checkpoint", default=None, metavar="DIR", help="save here after the last step")
    t.add_argument("--resume", action="store_true", help="start from the checkpoint in --checkpoint")
    t.add_argument("--reduce-dtype", choices=tuple(train.REDUCE_DTYPES), default=d.reduce_dtype,
                   help="dtype of the gradient reduce-scatter over dp ranks (default float32)")
    t.add_argument("--profile", nargs="?", const="irlens-profile", default=None, metavar="DIR",
                   help="profile the last --profile-steps steps: traces (Perfetto) to DIR (default "
                        "irlens-profile), the step time's breakdown printed and in the summary")
    t.add_argument("--profile-steps", type=int, default=d.profile_steps, metavar="N",
                   help="with --profile: how many of the last steps are profiled")


@guarded
def run(args) -> int:
    import torch.distributed as dist

    from irlens.parallel.distributed import shutdown
    from irlens.parallel.train import TrainConfig, run_training

    try:
        summary = run_training(options(TrainConfig, args))
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
