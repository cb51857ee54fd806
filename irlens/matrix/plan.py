"""Planning a matrix: every bad argument is found here, before anything runs.

A `Plan` is the resolved matrix: its workloads (by the key a worker process resolves them
with), backends, modes, device, preset, dtype and float32 precision policy, and for the cross
grid the frontends whose graphs the backends execute. `Plan.cells()` lists what runs, one complete
`CellSpec` (irlens.matrix.spec) per row.
"""
from __future__ import annotations

from dataclasses import dataclass

from irlens.backends import BACKENDS, Backend, get_backend
from irlens.matrix.spec import CellSpec, check_device_present, validate_coordinates
from irlens.workloads.builtin import expand_workload, resolve_workload, workload_names
from irlens.core.precision import DEFAULT as DEFAULT_PRECISION
from irlens.workloads.user_code import absolute_reference, reference_of
from irlens.workloads.workload import MODES, WORKLOADS, MissingLibrary, Workload


@dataclass
class Plan:
    """A validated matrix: what `irlens.matrix.run_plan` runs."""

    workloads: dict[str, Workload]  # key -> workload
    backends: dict[str, Backend]  # key -> backend
    modes: list[str]
    device: str
    preset: str
    dtype: str | None
    device_timing: bool = False  # also measure kernels' device time (CUDA; `irlens bench`)
    # (workload name, mode, backend) of the cells to run, where not all of the product are
    # (`irlens bench --rerun`); None: all of them
    only: frozenset[tuple[str, str, str]] | None = None
    frontends: list[str] | None = None  # the cross grid's acquiring frontends; None: a compare matrix
    precision: str = DEFAULT_PRECISION  # the float32 policy every process of the run computes under (irlens.core.precision)

    @property
    def kind(self) -> str:
        return "compare" if self.frontends is None else "cross"

    @property
    def isolatable(self) -> bool:
        """Whether a worker process can resolve every workload."""
        return not any(k.startswith("<object>:") for k in self.workloads)

    def cells(self, timeout_s: float | None = None) -> list[CellSpec]:
        """In document order: workload, mode, (frontend,) backend; each (its workload and backend by
        their keys) with the plan's device, preset, dtype, precision and device timing, and `timeout_s`."""
        def spec(w: str, m: str, b: str, f: str | None = None) -> CellSpec:
            return CellSpec(w, b, m, self.dtype, self.device, self.preset, f, self.precision, timeout_s,
                            self.device_timing)

        if self.frontends is not None:
            return [spec(w, m, b, f) for w in self.workloads for m in self.modes for f in self.frontends
                    for b in self.backends]
        return [spec(w, m, b) for w in self.workloads for m in self.modes for b in self.backends
                if self.only is None or (self.workloads[w].name, m, self.backends[b].name) in self.only]


def split(names: list[str] | str | None) -> list[str] | None:
    """Accept ["a", "b"], ["a,b"] and "a,b" (a CLI may pass any)."""
    if names is None:
        return None
    if isinstance(names, str):
        names = [names]
    return [n.strip() for item in names for n in item.split(",") if n.strip()]


def workload_key(item: str | Workload) -> str:
    """How a worker finds the workload: its name or reference; `<object>:NAME` when there is none
    (a Workload built where no other process can import it; such a plan runs only in-process)."""
    if isinstance(item, Workload):
        return reference_of(item, WORKLOADS) or f"<object>:{item.name}"
    return absolute_reference(item)


def plan_matrix(workloads=None, backends=None, modes=None, device: str = "cpu", preset: str = "tiny",
                dtype: str | None = None, device_timing: bool = False, precision: str = DEFAULT_PRECISION) -> Plan:
    """Resolve and validate every argument; raises a UsageError (UnknownName, BadReference, ...)
    on a bad one. `workloads`: names, references or Workloads (default: every built-in);
    `backends`: names or references (default: every registered one)."""
    modes = split(modes) or list(MODES)
    validate_coordinates(modes, device, preset, (dtype,), precision)
    check_device_present(device)
    resolved = {}
    for item in _workload_items(workloads):
        wl = item if isinstance(item, Workload) else resolve_workload(item)
        wl.cfg(preset)  # raises if this workload has no such preset
        if wl.missing():  # a library it needs is not installed (the zoo's transformers, timm)
            raise MissingLibrary(wl.missing())
        resolved[workload_key(item)] = wl
    chosen = {absolute_reference(b): get_backend(b) for b in dict.fromkeys(split(backends) or BACKENDS.names())}
    return Plan(resolved, chosen, modes, device, preset, dtype, device_timing, precision=precision)


def _workload_items(workloads) -> list[str | Workload]:
    if workloads is None:
        return workload_names()
    if isinstance(workloads, (str, Workload)):
        workloads = [workloads]
    items = []
    for item in workloads:
        items += [item] if isinstance(item, Workload) else [n for name in split(item) for n in expand_workload(name)]
    return items
