"""`irlens list`: workloads, frontends and backends, and whether each is available here."""
from __future__ import annotations

import json

from irlens.cli.command import EXIT_OK, guarded

HELP = "workloads, frontends and backends, and whether each is available here"


def add_arguments(p) -> None:
    p.add_argument("--format", choices=["text", "json"], default="text", help="a table, or JSON")
    p.add_argument("--configs", action="store_true",
                   help="the named run configurations instead (irlens bench|zoo|compare --config NAME)")


@guarded
def run(args) -> int:
    if args.configs:
        from irlens.cli.configs.plan import listing

        print(listing(args.format == "json"))
        return EXIT_OK
    from irlens.backends import BACKENDS
    from irlens.frontends import FRONTENDS
    from irlens.workloads.builtin import get_workload, workload_names

    workloads = [{"name": w.name, "description": w.description, "presets": list(w.presets),
                  "jax_twin": w.jax is not None, "tags": list(w.tags), "available": not w.missing(),
                  "reason": w.missing()} for w in map(get_workload, workload_names(corpus=None))]
    frontends = []
    for f in FRONTENDS.values():
        a = f.availability()
        frontends.append({"name": f.name, "available": a.ok, "reason": a.reason, "description": f.description})
    frontends.append(joint_frontend())
    backends = []
    for b in BACKENDS.values():
        per_device = {}
        for dev in ("cpu", "cuda"):
            a = b.availability(dev) if dev in b.devices else None
            per_device[dev] = ({"available": False, "reason": f"{b.name} does not run on {dev}"} if a is None
                               else {"available": a.ok, "reason": a.reason})
        # where its own frontend cannot take a workload, a backend with a lowering runs Dynamo's graphs
        via = b.via if b.lower is not None and b.frontend not in (None, b.via) else None
        backends.append({"name": b.name, "frontend": b.frontend, "description": b.description, "via": via,
                         **per_device})
    if args.format == "json":
        print(json.dumps({"workloads": workloads, "frontends": frontends, "backends": backends}, indent=1))
        return EXIT_OK

    print("workloads:")
    for w in workloads:
        twin = "" if w["jax_twin"] else "  (no JAX twin: xla runs it via dynamo)"
        state = "" if w["available"] else f"  [unavailable: {w['reason']}]"
        print(f"  {w['name']:<18} {w['description']}{twin}{state}")
    print("frontends:")
    for f in frontends:
        state = "available" if f["available"] else f"unavailable: {f['reason']}"
        print(f"  {f['name']:<18} {state}" + (f" ({f['note']})" if f.get("note") else ""))
    print("backends:")
    for b in backends:
        cells = []
        for dev in ("cpu", "cuda"):
            cells.append(f"{dev}: " + ("available" if b[dev]["available"] else f"unavailable ({b[dev]['reason']})"))
        via = (f"\n  {'':<22} where {b['frontend']} cannot take a workload: {b['name']} (via {b['via']}), "
               f"{b['via']}'s graphs through the common view's lowering") if b["via"] else ""
        print(f"  {b['name']:<22} " + "; ".join(cells) + via)
    return EXIT_OK


def joint_frontend() -> dict:
    """The parallel path's joint graphs, which `irlens dump MODEL --frontend joint` shows: not a
    Frontend of the registry (its models are the parallel path's, not workloads), listed beside them."""
    import torch.distributed as dist

    ok = dist.is_available()
    return {"name": "joint", "available": ok, "reason": "" if ok else "torch was built without torch.distributed",
            "description": "the joint forward+backward graph of the parallel training path (DTensor, SimpleFSDP + TP), "
                           "captured with aot_export_joint_with_descriptors under a fake process group",
            "note": "irlens dump only, of the parallel path's models llama3 and deepseek_v3: "
                    "irlens dump llama3 --frontend joint"}
