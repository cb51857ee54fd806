"""A backend that is eager with its results changed on purpose: wrong by a chosen amount, to show a
verdict catches (or rightly lets through) what it should."""
from __future__ import annotations

from irlens.backends.base import Backend, Compiled
from irlens.frontends.base import Availability
from irlens.workloads.workload import run_eager


class PerturbedEager(Backend):
    """Eager, then `perturb(results)` changes its results in place."""

    frontend = None

    def availability(self, device: str) -> Availability:
        return Availability(True)

    def perturb(self, results: dict) -> None:
        raise NotImplementedError

    def compile(self, inst, mode):
        def step() -> dict:
            results = run_eager(inst.module, inst, mode)
            self.perturb(results)
            return results

        return Compiled(step)
