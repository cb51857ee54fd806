"""The H200 page's nvFuser forward rows that ran through irlens's nvFuser lowering of Dynamo's
graph (`via dynamo`: Thunder took neither timm_coatnet nor timm_maxvit) run again through that path
alone, at the bench size in bfloat16, against their float64 references: before the lowering summed
half-precision values in float32 (`irlens/core/ops/reduction.py`) both failed with nvFuser's
`compiled_kernel.cpp:187` assert. Run from the repository root on a GPU with nvFuser:

    python docs/results/zoo-h200-bench/nvfuser_lowering_cells.py [model ...]
"""
import sys

import irlens  # noqa: F401  (its import shim for timm in this environment)
from irlens.matrix.cross import cell
from irlens.matrix.references import compute_reference
from irlens.matrix.spec import CellSpec
from irlens.workloads.builtin import get_workload

for name in sys.argv[1:] or ["timm_coatnet", "timm_maxvit"]:
    reference = compute_reference(get_workload(name), "fwd", "cuda", "bench", "bfloat16")
    row = cell(CellSpec(name, "nvfuser", "fwd", "bfloat16", "cuda", "bench", frontend="dynamo"), reference).to_json()
    err = "-" if row["max_rel_err"] is None else f"{row['max_rel_err']:.2e}"
    print(f"{name} fwd, dynamo -> nvfuser lowering: {row['status']}, max rel err {err} (tol {row['tol']}); "
          f"{(row['reason'] or '').splitlines()[0][:200] if row['reason'] else ''}", flush=True)
