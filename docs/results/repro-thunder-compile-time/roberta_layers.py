"""Thunder's compile time of a RoBERTa forward+backward grows faster than its layers (upstream code only).

ThunderFX (thunder.dynamo.ThunderCompiler) with the torch.compile executor first, Thunder's default
executors after it (irlens's `thunder+torchcompile`), on transformers' RobertaModel at a tiny width
(32; the compile time depends on the op count, not on the sizes), 2 x 16 tokens, on the CPU. For
each layer count: the first forward+backward (Dynamo, Thunder's tracing and transforms, the
executor's fusion pass and its Inductor compiles), and the share of that time inside
thunder.core.transform_common.dce (from cProfile, with the profiler's overhead; the zoo's
hf_roberta at the bench size has 12 layers).

    python roberta_layers.py 2 4 8
"""
import cProfile
import pstats
import sys
import time
import warnings

import torch

try:  # irlens's import shims for this environment's torch and torchvision, where it is installed
    from irlens._compat import import_thunder, import_torchvision
    import_thunder()
    import_torchvision()
except ImportError:
    pass

warnings.filterwarnings("ignore")


def first_step(layers: int, profile: bool) -> tuple[float, float | None]:
    import thunder
    import transformers
    from thunder.dynamo import ThunderCompiler

    config = transformers.RobertaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                                        num_attention_heads=4, max_position_embeddings=64, pad_token_id=1,
                                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = transformers.RobertaModel(config)
    ids = torch.randint(2, 128, (2, 16))
    executors = [thunder.get_executor("torchcompile"),
                 *[ex for ex in thunder.get_default_executors() if ex.name not in ("nvfuser", "torchcompile")]]
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=ThunderCompiler(executors=executors))
    prof = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if prof:
        prof.enable()
    compiled(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state.square().mean().backward()
    if prof:
        prof.disable()
    seconds = time.perf_counter() - start
    if not prof:
        return seconds, None
    stats = pstats.Stats(prof).stats
    total = max(ct for _, _, _, ct, _ in stats.values())  # the outermost call's
    dce = sum(ct for (f, _, name), (_, _, _, ct, _) in stats.items()
              if name == "dce" and f.endswith("thunder/core/transform_common.py"))
    return seconds, dce / total


if __name__ == "__main__":
    for n in [int(a) for a in sys.argv[1:]] or [2, 4, 8]:
        plain, _ = first_step(n, profile=False)
        profiled, share = first_step(n, profile=True)
        print(f"{n:2d} layers: first step {plain:6.1f} s; under cProfile {profiled:6.1f} s, "
              f"{100 * share:4.1f} % of it in thunder.core.transform_common.dce", flush=True)
