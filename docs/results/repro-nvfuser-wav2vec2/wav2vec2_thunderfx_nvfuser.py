"""wav2vec 2.0 base (random weights, the zoo's bench size: batch 4, 4 s of 16 kHz audio) in bf16,
forward and backward through ThunderFX with nvFuser in front of Thunder's other default executors,
as `irlens zoo --backends nvfuser` runs hf_wav2vec2. Upstream code only: transformers, Thunder,
nvFuser. On an H200 (torch 2.11.0+cu130, thunder 0.2.6, nvfuser 0.2.36) the backward raised
nvFuser's INTERNAL ASSERT "Vectorized dim for producer has to be from an inner most position".

    python wav2vec2_thunderfx_nvfuser.py [FOLDER]

FOLDER: ThunderFX writes a reproducer per Thunder region there (save_reproducer_to_folder), and
each is run (up to a time limit) to find the regions that fail alone."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import torch
import thunder
from thunder.dynamo import ThunderCompiler
from transformers import AutoModel, Wav2Vec2Config


def main(folder: Path | None) -> int:
    config = Wav2Vec2Config(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                            hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
                            layerdrop=0.0, mask_time_prob=0.0)
    torch.manual_seed(0)
    model = AutoModel.from_config(config).to("cuda", torch.bfloat16)  # train mode, as from_config gives it
    audio = torch.randn(4, 16000 * 4, device="cuda", dtype=torch.bfloat16)
    projection = torch.randn(768, 4, device="cuda", dtype=torch.bfloat16) / 768 ** 0.5
    executors = [thunder.get_executor("nvfuser"),
                 *[ex for ex in thunder.get_default_executors() if ex.name not in ("nvfuser", "torchcompile")]]
    backend = ThunderCompiler(executors=executors)
    compiled = torch.compile(model, backend=backend)
    start, failed = time.perf_counter(), False
    try:
        hidden = compiled(input_values=audio).last_hidden_state
        ((hidden @ projection) ** 2).mean().backward()
        torch.cuda.synchronize()
        print(f"fwd+bwd ok in {time.perf_counter() - start:.0f} s")
    except Exception as e:  # noqa: BLE001  (the point of the script: which error, printed)
        failed = True
        lines = str(e).splitlines()
        print(f"fwd+bwd failed after {time.perf_counter() - start:.0f} s: {type(e).__name__}: {lines[0] if lines else ''}")
        print("\n".join(line for line in lines if line.startswith(("Error from", "Expected", "Exception raised"))))
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        backend.save_reproducer_to_folder(folder)
        scripts = sorted(folder.glob("*.py"))
        print(f"{len(scripts)} reproducers in {folder}")
        deadline = time.monotonic() + float(sys.argv[2]) if len(sys.argv) > 2 else None
        for script in scripts:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left < 10:
                print(f"{script.name}: not run (time limit)")
                continue
            try:
                run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=left)
            except subprocess.TimeoutExpired:
                print(f"{script.name}: timed out")
                continue
            said = [line for line in (run.stdout + run.stderr).splitlines() if "Expected" in line or "Error" in line]
            print(f"{script.name}: rc={run.returncode} {said[0][:300] if said else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
