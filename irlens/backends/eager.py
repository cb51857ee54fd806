"""`eager`: the workload's own torch module, run op by op. The baseline row of every comparison."""
from __future__ import annotations

import torch

from irlens.backends.base import BACKENDS, Backend, BackendRun, measure
from irlens.frontends.base import Availability
from irlens.workload import Instance, run_eager


class EagerBackend(Backend):
    name = "eager"
    frontend = None
    description = "eager PyTorch, op by op (the baseline; no compiler, no kernel records)"

    def availability(self, device: str) -> Availability:
        if device.startswith("cuda") and not torch.cuda.is_available():
            return Availability(False, "no CUDA device visible to torch")
        return Availability(True)

    def run(self, inst: Instance, mode: str) -> BackendRun:
        results, compile_s, run_us = measure(lambda: run_eager(inst.module, inst, mode), inst.device)
        return BackendRun(results=results, compile_s=compile_s, run_us=run_us, kernels=[])


BACKENDS.register(EagerBackend())
