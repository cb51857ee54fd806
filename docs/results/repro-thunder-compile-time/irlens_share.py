"""How much of a Thunder fwd+bwd cell's compile is irlens's own: cProfile over irlens's
`thunder+torchcompile` backend (ThunderFX, as the zoo runs the transformers models) on a RoBERTa of
N layers at a width of 32, CPU, float32. Prints the first step's time, the time spent in irlens's own
functions (tottime of every function under irlens/), Thunder's dce pass and gather_tags.

    python docs/results/repro-thunder-compile-time/irlens_share.py 12
"""
import cProfile
import os
import pstats
import sys
import time

os.environ["IRLENS_THUNDER_CAPTURE"] = "thunderfx"

import torch  # noqa: E402

import irlens  # noqa: E402
from irlens.backends import get_backend  # noqa: E402
from irlens.matrix.backend_run import run_backend  # noqa: E402
from irlens.workloads.zoo.hf import build  # noqa: E402

layers = int(sys.argv[1]) if len(sys.argv) > 1 else 12
config = {"vocab_size": 128, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": layers,
          "num_attention_heads": 4, "max_position_embeddings": 64, "hidden_dropout_prob": 0.0,
          "attention_probs_dropout_prob": 0.0, "pad_token_id": 1}
torch.manual_seed(0)
ids = torch.randint(2, 128, (2, 16))
workload = irlens.Workload.from_module("roberta", build("roberta", "base")({"config": config}),
                                       (ids, torch.ones(2, 16, dtype=torch.int64)))
inst = workload.instantiate("tiny", None, "cpu")
backend = get_backend("thunder+torchcompile")
profile = cProfile.Profile()
start = time.perf_counter()
profile.enable()
run = run_backend(backend, inst, "fwdbwd")
profile.disable()
total = time.perf_counter() - start
stats = pstats.Stats(profile).stats
root = os.path.dirname(irlens.__file__)
own = sum(tt for (f, _, _), (_, _, tt, _, _) in stats.items() if f.startswith(root))
dce = [(nc, ct) for (f, _, n), (_, nc, _, ct, _) in stats.items() if n == "dce" and f.endswith("transform_common.py")]
tags = [(nc, tt) for (f, _, n), (_, nc, tt, _, _) in stats.items() if n == "gather_tags" and f.endswith("symbol.py")]
print(f"{layers} layers, under cProfile: the cell's run {total:.0f} s (its compile {run.compile_s:.0f} s); "
      f"irlens's own functions {own:.1f} s; thunder's dce {dce[0][1]:.0f} s in {dce[0][0]} calls; "
      f"gather_tags {tags[0][1]:.0f} s in {tags[0][0]} calls")
