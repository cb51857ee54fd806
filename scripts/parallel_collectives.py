"""What a train step communicates: every collective of the captured forward and backward graphs
by mesh dimension, kind and dtype, with its count and bytes, under a fake process group on the
CPU (no GPUs: the shapes are real, the values meaningless).

    python scripts/parallel_collectives.py --model llama3:1B --n-layers 2 --batch-size 8 --dp-shard 2 --tp 2 \\
        --mixed-precision

Bytes are each collective's full buffer (the gathered output, the reduced input, the all-reduced or
all-to-all'd tensor); with --n-layers the per-layer share scales to the preset's depth by hand.
"""
from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import replace

from irlens.parallel.config import CompileConfig, ParallelismConfig, TrainingConfig
from irlens.parallel.dump import capture, capture_config
from irlens.parallel.passes.summary import collective_kind


def table(step) -> str:
    names = {group: dim for dim, group in step.groups.items()}
    rows: dict = defaultdict(lambda: [0, 0])
    for stage in ("forward", "backward"):
        for node in step.graphs[stage].graph.nodes:
            kind = collective_kind(node)
            if kind in (None, "wait"):
                continue
            group = next((names[a] for a in node.args if isinstance(a, str) and a in names), "?")
            val = node.args[0].meta["val"] if kind == "reduce_scatter" else node.meta["val"]
            val = val[0] if isinstance(val, (list, tuple)) else val
            rows[(stage, group, kind, str(val.dtype).removeprefix("torch."))][0] += 1
            rows[(stage, group, kind, str(val.dtype).removeprefix("torch."))][1] += val.numel() * val.element_size()
    lines = ["| graph | mesh dim | collective | dtype | count | MiB |", "|---|---|---|---|---|---|"]
    lines += [f"| {s} | {g} | {k} | {d} | {n} | {b / 2**20:.1f} |" for (s, g, k, d), (n, b) in sorted(rows.items())]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="llama3:debug")
    p.add_argument("--dp-shard", type=int, default=2)
    p.add_argument("--tp", type=int, default=2)
    p.add_argument("--ep", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--n-layers", type=int)
    p.add_argument("--sequence-parallel", default=True, action=argparse.BooleanOptionalAction)
    p.add_argument("--loss-parallel", default=True, action=argparse.BooleanOptionalAction)
    p.add_argument("--mixed-precision", action="store_true", help="bf16 compute, as irlens train on cuda")
    p.add_argument("--reduce-dtype", default="float32")
    p.add_argument("--joint-passes", nargs="*", default=[])
    p.add_argument("--passes", nargs="*", default=[])
    a = p.parse_args()
    tc = capture_config(a.model, ParallelismConfig(a.dp_shard, a.tp, a.ep, a.sequence_parallel, a.loss_parallel),
                        TrainingConfig(batch_size=a.batch_size, mixed_precision=a.mixed_precision,
                                       reduce_dtype=a.reduce_dtype),
                        CompileConfig(joint_passes=a.joint_passes, passes=a.passes))
    print(table(capture(replace(tc, model=replace(tc.model, n_layers=a.n_layers)))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
