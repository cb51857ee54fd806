"""`irlens`: the command line. Thin: parse, call the library, print, pick the exit status.

Exit status: 0 success; 1 a run went wrong (a mismatch, a failed backend); 2 bad input
(unknown workload/frontend/stage/backend, a bad option), always with a message that says
what is valid. No traceback reaches the user unless IRLENS_DEBUG=1.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from irlens.ir import LEVELS

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


def _err(msg: str) -> None:
    print(f"irlens: error: {msg}", file=sys.stderr)


# --- shared lookups --------------------------------------------------------------------------

def resolve_workload(ref: str):
    """A built-in name, or `path/to/file.py:NAME` for a user's own workload."""
    from irlens.registry import UnknownName

    if ":" in ref and ref.split(":", 1)[0].endswith(".py"):
        from irlens.user_workload import load_workload_ref

        try:
            return load_workload_ref(ref)
        except ValueError as e:  # BadReference: missing file, missing name, not a Workload
            raise UsageError(str(e)) from None
    from irlens.workload import get_workload

    try:
        return get_workload(ref)
    except UnknownName as e:
        raise UsageError(f"{e} (or give a user workload as path/to/file.py:NAME)") from None


# --- irlens list ---------------------------------------------------------------------------

def cmd_list(args) -> int:
    from irlens.backends import BACKENDS
    from irlens.frontends import FRONTENDS
    from irlens.workload import WORKLOADS, workload_names

    workload_names()  # registers the built-ins
    import irlens.backends  # noqa: F401
    import irlens.frontends  # noqa: F401

    workloads = [{"name": w.name, "description": w.description, "presets": list(w.presets),
                  "jax_twin": w.jax is not None} for w in WORKLOADS]
    frontends = []
    for f in FRONTENDS:
        a = f.availability()
        frontends.append({"name": f.name, "available": a.ok, "reason": a.reason, "description": f.description})
    backends = []
    for b in BACKENDS:
        per_device = {}
        for dev in ("cpu", "cuda"):
            a = b.availability(dev) if dev in b.devices else None
            per_device[dev] = ({"available": False, "reason": f"{b.name} does not run on {dev}"} if a is None
                               else {"available": a.ok, "reason": a.reason})
        backends.append({"name": b.name, "frontend": b.frontend, "description": b.description, **per_device})
    if args.format == "json":
        print(json.dumps({"workloads": workloads, "frontends": frontends, "backends": backends}, indent=1))
        return EXIT_OK

    print("workloads:")
    for w in workloads:
        twin = "" if w["jax_twin"] else "  (no JAX twin)"
        print(f"  {w['name']:<18} {w['description']}{twin}")
    print("frontends:")
    for f in frontends:
        state = "available" if f["available"] else f"unavailable: {f['reason']}"
        print(f"  {f['name']:<18} {state}")
    print("backends:")
    for b in backends:
        cells = []
        for dev in ("cpu", "cuda"):
            cells.append(f"{dev}: " + ("available" if b[dev]["available"] else f"unavailable ({b[dev]['reason']})"))
        print(f"  {b['name']:<22} " + "; ".join(cells))
    return EXIT_OK


# --- irlens dump ---------------------------------------------------------------------------

def cmd_dump(args) -> int:
    if (args.frontend is None) == (args.backend is None):
        raise UsageError("give exactly one of --frontend (its IR stages) or --backend (the stages it compiles through)")

    from irlens.registry import UnknownName
    from irlens.workload import NoJaxTwin

    workload = resolve_workload(args.workload)
    source = _dump_source(args)
    avail = source.availability(args.device) if args.backend else source.availability()
    if not avail:
        _err(f"{'backend' if args.backend else 'frontend'} {source.name} is unavailable here: {avail.reason}")
        return EXIT_USAGE
    mode = args.mode or ("fwdbwd" if args.backward else "fwd")
    try:
        inst = workload.instantiate(args.preset, args.dtype, args.device)
    except ValueError as e:
        raise UsageError(str(e)) from None
    verb = "compiling" if args.backend else "acquiring"
    print(f"irlens: {verb} {workload.name} ({args.preset}, {inst.dtype}, {mode}) with {source.name} ...",
          file=sys.stderr)
    try:
        if args.backend:
            from irlens.frontends.base import Acquisition

            acq = Acquisition(source.name, workload.name, mode, source.stages(inst, mode))
        else:
            acq = source.acquire(inst, mode)
    except NoJaxTwin as e:
        raise UsageError(str(e)) from None

    if args.stages:
        for s in acq.stages.values():
            print(f"{s.name:<24} {s.description}")
        for k, v in acq.notes.items():
            print(f"# {k}: {v}")
        return EXIT_OK

    names = [args.stage] if args.stage else ([_default_stage(source, acq, mode)] if not args.out else list(acq.stages))
    for name in names:
        try:
            stage = acq.stage(name)
        except UnknownName as e:
            hint = "" if mode == "fwdbwd" else " (backward stages need --backward)"
            raise UsageError(f"{e}{hint}") from None
        text = _render_stage(acq, stage, args)
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            level = f".{args.level}" if args.view == "common" else ""
            path = out / f"{workload.name}.{source.name}.{stage.name}.{args.view}{level}.{'json' if args.format == 'json' else 'txt'}"
            path.write_text(text + "\n")
            print(f"wrote {path}", file=sys.stderr)
        else:
            print(text)
    return EXIT_OK


def _dump_source(args):
    """The frontend or backend `irlens dump` shows the stages of."""
    from irlens.backends import get_backend
    from irlens.frontends import get_frontend
    from irlens.registry import UnknownName

    try:
        return get_backend(args.backend) if args.backend else get_frontend(args.frontend)
    except UnknownName as e:
        raise UsageError(str(e) if args.backend else f"{e}, joint") from None


def _default_stage(source, acq, mode: str) -> str:
    """A frontend's main stage; for a backend, the first stage under its `main_stage` prefix."""
    from irlens.backends.base import Backend

    if not isinstance(source, Backend):
        return source.default_stage(mode)
    return next((n for n in acq.stages if n.startswith(source.main_stage)), next(iter(acq.stages), ""))


def _render_stage(acq, stage, args) -> str:
    if args.view == "native":
        if args.format == "json":
            return json.dumps({"name": acq.workload, "backend" if args.backend else "frontend": acq.frontend,
                               "stage": stage.name,
                               "view": "native", "native": stage.native_text}, indent=1)
        return stage.native_text
    graph = stage.common(args.level)
    return graph.dumps() if args.format == "json" else graph.to_text()


# --- irlens compare / train (implemented in their own modules) --------------------------------

def cmd_compare(args) -> int:
    if getattr(args, "cross", False):
        from irlens.cross import cross_main

        return cross_main(args)
    from irlens.compare import compare_main

    return compare_main(args)


def cmd_bench(args) -> int:
    from irlens.bench import bench_main

    return bench_main(args)


def cmd_report(args) -> int:
    from irlens.report import report_main

    return report_main(args)


def cmd_explain(args) -> int:
    from irlens.explain import explain_main

    return explain_main(args)


def cmd_repro(args) -> int:
    from irlens.repro.cli import run

    return run(args)


def cmd_train(argv: list[str]) -> int:
    from irlens.parallel.train import train_main

    try:
        return train_main(argv)
    except (ValueError, KeyError) as e:  # a bad model, mesh or pass list
        raise UsageError(str(e).strip("'\"")) from None


def cmd_joint_dump(argv: list[str]) -> int:
    """`irlens dump MODEL --frontend joint ...`: the parallel path's own dump and its options."""
    from irlens.parallel.dump import dump_main

    try:
        return dump_main(argv)
    except (ValueError, KeyError) as e:
        raise UsageError(str(e).strip("'\"")) from None


def _asks_for_joint(argv: list[str]) -> bool:
    return any(a == "--frontend=joint" or (a == "--frontend" and argv[i + 1:i + 2] == ["joint"])
               for i, a in enumerate(argv))


# --- parser ------------------------------------------------------------------------------------

def _csv(text: str) -> list[str]:
    return [t for t in (s.strip() for s in text.split(",")) if t]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="irlens", description="One workload through Dynamo, Thunder and JAX: IRs, fusions, numerics and timings.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ls = sub.add_parser("list", help="workloads, frontends and backends, and whether each is available here")
    ls.add_argument("--format", choices=["text", "json"], default="text")
    ls.set_defaults(func=cmd_list)

    d = sub.add_parser("dump", help="print one stage of one frontend's IR, native or in the common view")
    d.add_argument("workload", help="a built-in workload (see `irlens list`) or path/to/file.py:NAME")
    d.add_argument("--frontend", help="dynamo, thunder, jax (or joint for llama3/deepseek_v3)")
    d.add_argument("--backend", help="inductor, thunder+torchcompile, nvfuser, xla: the IRs it compiles through "
                                     "(fusion IR, generated code); give this or --frontend")
    d.add_argument("--stage", help="which stage (default: the main one; see --stages)")
    d.add_argument("--stages", action="store_true", help="list the stages this frontend or backend keeps, then exit")
    d.add_argument("--mode", choices=["fwd", "fwdbwd"], default=None, help="fwdbwd is the same as --backward")
    d.add_argument("--view", choices=["native", "common"], default="native")
    d.add_argument("--level", choices=list(LEVELS), default="composite", help="common view level")
    d.add_argument("--backward", action="store_true", help="acquire forward+backward (adds backward stages)")
    d.add_argument("--preset", default="tiny", help="shape preset: tiny (CPU) or bench (GPU)")
    d.add_argument("--dtype", default=None, help="float32 (default), bfloat16, float16, float64")
    d.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    d.add_argument("--format", choices=["text", "json"], default="text")
    d.add_argument("--out", help="write to files in this folder (every stage unless --stage is given)")
    d.set_defaults(func=cmd_dump)

    c = sub.add_parser("compare", help="run workloads through every backend; check numerics; list kernels")
    c.add_argument("--workloads", type=_csv, default=None, help="comma-separated (default: all built-ins)")
    c.add_argument("--backends", type=_csv, default=None, help="comma-separated (default: all)")
    c.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    c.add_argument("--mode", dest="modes", type=_csv, default=["fwd", "fwdbwd"], help="fwd, fwdbwd or both")
    c.add_argument("--preset", default="tiny")
    c.add_argument("--dtype", default=None)
    c.add_argument("--json", default=None, help="write the full results to this file")
    c.add_argument("--timeout", type=float, default=300.0, help="seconds per cell before it counts as failed")
    c.add_argument("--jobs", type=int, default=1, help="cells run in parallel")
    c.add_argument("--cross", action="store_true",
                   help="the frontend x backend grid: graphs acquired by dynamo/thunder/jax, executed by inductor/nvfuser/xla")
    c.set_defaults(func=cmd_compare)

    b = sub.add_parser("bench", help="the matrix on a GPU: device time per row beside measured bandwidth/flop ceilings")
    b.add_argument("--workloads", type=_csv, default=None, help="comma-separated (default: all built-ins)")
    b.add_argument("--backends", type=_csv, default=None, help="default: eager,inductor,nvfuser,xla")
    b.add_argument("--mode", dest="modes", type=_csv, default=["fwd", "fwdbwd"])
    b.add_argument("--dtypes", type=_csv, default=None, help="default: bfloat16,float32")
    b.add_argument("--preset", default="bench")
    b.add_argument("--json", default=None, help="write the results document here")
    b.add_argument("--md", default=None, help="write the results page (Markdown + SVG plots) here")
    b.add_argument("--timeout", type=float, default=600.0, help="seconds per cell")
    b.add_argument("--jobs", type=int, default=1, help="cells compiled in parallel (device timings never overlap)")
    b.add_argument("--budget-s", type=float, default=None,
                   help="stop starting cells after this many seconds; the rest are rows saying they did not run")
    b.add_argument("--gpus", type=_csv, default=None,
                   help="GPU indices (e.g. 0,1,2,3): the dtype x mode parts of the matrix are shared out over "
                        "them, one child run per GPU measuring its own ceilings; default: the one GPU torch picks")
    b.add_argument("--rerun", default=None, metavar="RESULTS_JSON",
                   help="run again only the rows of this earlier bench document that are not ok (and that the "
                        "other options name), and write it with those rows replaced")
    b.set_defaults(func=cmd_bench)

    r = sub.add_parser("report", help="HTML + Markdown report contrasting what each backend fused and what it cost")
    r.add_argument("--from", dest="from_", nargs="*", default=[], metavar="RESULTS_JSON",
                   help="compare/bench result files (default: run the CPU tiny matrix now)")
    r.add_argument("--out", default="irlens-report", help="output folder (default: irlens-report)")
    r.add_argument("--workloads", type=_csv, default=None, help="for the matrix run without --from")
    r.add_argument("--backends", type=_csv, default=None, help="for the matrix run without --from")
    r.add_argument("--mode", dest="modes", type=_csv, default=["fwd", "fwdbwd"])
    r.set_defaults(func=cmd_report)

    e = sub.add_parser("explain", help="annotate one kernel: ops fused, reads/writes, reductions, source")
    e.add_argument("workload", help="a built-in workload or path/to/file.py:NAME")
    e.add_argument("--backend", required=True)
    e.add_argument("--mode", default="fwd", choices=["fwd", "fwdbwd"])
    e.add_argument("--kernel", default=None, help="kernel name or index (default: list them, explain the largest)")
    e.add_argument("--preset", default="tiny")
    e.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    e.add_argument("--dtype", default=None)
    e.set_defaults(func=cmd_explain)

    rp = sub.add_parser("repro", help="a standalone reproducer of one cell; --reduce: the smallest graph that "
                                      "still fails; --slow: timed, with its dominant kernel")
    from irlens.repro.cli import add_arguments

    add_arguments(rp)
    rp.set_defaults(func=cmd_repro)

    # `train` owns its options (irlens.parallel.train); main() hands it the rest of argv.
    sub.add_parser("train", help="the joint-graph parallel training path (irlens train --help)", add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    try:
        # `train` and the joint dump own their options (irlens.parallel); they get the rest of argv.
        if argv[:1] == ["train"]:
            return _guarded(cmd_train, argv[1:])
        if argv[:1] == ["dump"] and _asks_for_joint(argv):
            return _guarded(cmd_joint_dump, argv[1:])
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse already printed the message; keep its status (2 for errors)
        return int(e.code or 0)
    return _guarded(args.func, args)


def _guarded(func, arg) -> int:
    """Run a command; bad input is one line and exit 2, anything else one line and exit 1."""
    try:
        return func(arg)
    except UsageError as e:
        _err(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except Exception as e:  # noqa: BLE001  (one line for the user; IRLENS_DEBUG=1 for the traceback)
        if os.environ.get("IRLENS_DEBUG"):
            raise
        from irlens.frontends.base import Unavailable
        from irlens.registry import UnknownName

        if isinstance(e, (UnknownName, Unavailable)):
            _err(str(e))
            return EXIT_USAGE
        _err(f"{type(e).__name__}: {e} (set IRLENS_DEBUG=1 for the traceback)")
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
