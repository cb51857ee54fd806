"""The frontend table, computed from real acquisitions (nothing in it is written by hand).

Per frontend: whether it takes PyTorch code (a probe workload with no JAX twin is acquired:
a frontend that needs the twin raises NoJaxTwin), the type of its main IR object, the stages
it captured, the node count of its forward common view per workload (composite / primitive),
and the backends whose kernels map onto its graphs.
"""
from __future__ import annotations

import re

from irlens.frontends.base import Availability
from irlens.reporting.blocks import Table
from irlens.workloads.workload import NoJaxTwin, Workload
from irlens.wording import plural

PROBE = Workload.from_module("probe", lambda x: x * 2.0, ((4,),), description="a torch-only probe (no JAX twin)")


def ir_type_name(obj) -> str:
    """The IR object's class as a reader knows it (GraphModule, not a per-instance local subclass)."""
    for cls in type(obj).__mro__:
        if "<locals>" not in cls.__qualname__ and cls is not object:
            return f"{cls.__module__.split('.')[0]} {cls.__qualname__}"
    return type(obj).__name__


def compress_stages(names: list[str]) -> list[str]:
    """thunder.trace[0], ..., thunder.trace[6] -> thunder.trace[0–6]."""
    out: dict[str, list[int]] = {}
    for name in names:
        m = re.fullmatch(r"(.*)\[(\d+)\]", name)
        base, index = (m.group(1), int(m.group(2))) if m else (name, None)
        out.setdefault(base, [])
        if index is not None:
            out[base].append(index)
    return [base if not idx else f"{base}[{min(idx)}–{max(idx)}]" if len(idx) > 1 else f"{base}[{idx[0]}]"
            for base, idx in out.items()]


def _accepts_torch(frontend, device: str) -> str:
    try:
        frontend.acquire(PROBE.instantiate("tiny", "float32", device), "fwd")
    except NoJaxTwin:
        return "no: it traces the workload's JAX twin"
    except Exception as e:  # noqa: BLE001  (the table says what went wrong instead of failing the report)
        return f"probe failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return "yes"


def frontend_table(workloads: list[Workload], mode: str = "fwdbwd", preset: str = "tiny", device: str = "cpu",
                   dtype: str | None = None) -> Table:
    """Acquire every workload with every available frontend in `mode` (its stages) and count the
    forward common view's nodes (the frontend's fwd default stage, present in both modes)."""
    from irlens.backends import BACKENDS
    from irlens.frontends import FRONTENDS

    header = ["frontend", "accepts PyTorch code?", "IR", "stages captured",
              *(f"ops: {w.name}" for w in workloads), "typical backend"]
    table = Table(header, [], numeric={4 + i for i in range(len(workloads))})
    for frontend in FRONTENDS.values():
        backends = ", ".join(b.name for b in BACKENDS.values() if b.frontend == frontend.name) or "-"
        try:
            available = frontend.availability()
        except Exception as e:  # noqa: BLE001  (one broken frontend must not cost the whole report)
            available = Availability(False, f"its availability check failed: {type(e).__name__}: {e}")
        if not available:
            table.rows.append([frontend.name, "-", "-", f"unavailable: {available.reason}",
                               *("-" for _ in workloads), backends])
            continue
        ir, stages, counts = "-", [], []
        for wl in workloads:
            try:
                acq = frontend.acquire(wl.instantiate(preset, dtype, device), mode)
                parts = [acq.stage(name) for name in acq.parts or [frontend.default_stage("fwd")]]
                ir = ir_type_name(parts[0].native)
                stages += [s for s in acq.stages if s not in stages]
                sizes = [sum(len(p.common(level).nodes) for p in parts) for level in ("composite", "primitive")]
                split = f" in {plural(len(parts), 'region')}" if acq.parts else ""
                counts.append(f"{sizes[0]} / {sizes[1]}{split}")
            except NoJaxTwin:
                counts.append("no JAX twin")
            except Exception as e:  # noqa: BLE001
                counts.append(f"failed: {type(e).__name__}")
        table.rows.append([frontend.name, _accepts_torch(frontend, device), ir, ", ".join(compress_stages(stages)) or "-",
                           *counts, backends])
    return table
