"""`irlens dump`: one stage of a frontend's IR (or of what a backend compiles through), native or
in the common view; with `--frontend joint`, the parallel path's joint graphs (irlens.parallel.dump)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from irlens import names
from irlens.cli.command import (EXIT_OK, add_device_option, add_dtype_option, add_frontend_settings, add_preset_option,
                                 apply_frontend_settings, backend_names, frontend_settings, guarded,
                                 output_folder)
from irlens.core.registry import UnknownName
from irlens.errors import NoNativePath, UsageError
from irlens.core.ir import LEVELS
from irlens.parallel import names as parallel_names

HELP = "print one stage of one frontend's IR, native or in the common view"
# options of the frontends and backends that the joint frontend does not take (and the frontends'
# settings), and the reverse
SINGLE_OPTIONS = ("backend", "mode", "backward", "preset", "dtype", "device")
JOINT_OPTIONS = ("dp_shard", "tp", "ep", "sequence_parallel", "loss_parallel", "mixed_precision", "flex", "joint_passes",
                 "passes")


def add_arguments(d) -> None:
    from irlens.cli.train import add_parallel_options

    d.add_argument("workload", nargs="?", help="a built-in workload (see `irlens list`) or path/to/file.py:NAME "
                                               "(with --frontend joint: llama3, deepseek_v3 or <family>:<preset>)")
    d.add_argument("--frontend", help=f"{', '.join(names.FRONTENDS)} (or joint for llama3/deepseek_v3): its IR stages; "
                                      f"give this or --backend")
    d.add_argument("--backend", help=f"{backend_names()}: the IRs it compiles through (fusion IR, generated code); "
                                     f"give this or --frontend")
    d.add_argument("--stage", help="which stage (default: the main one; see --stages)")
    d.add_argument("--stages", action="store_true", help="list the stages this frontend or backend keeps, then exit")
    d.add_argument("--mode", choices=["fwd", "fwdbwd"], default=None,
                   help="fwdbwd is the same as --backward; default: fwd")
    d.add_argument("--view", choices=["native", "common"], default=None,
                   help="default: native (--frontend joint: common)")
    d.add_argument("--level", choices=list(LEVELS), default="composite",
                   help="common view level: ops as written, or decomposed to primitives")
    d.add_argument("--backward", action="store_true", help="acquire forward+backward (adds backward stages)")
    add_preset_option(d, None)
    add_dtype_option(d)
    add_device_option(d, None)
    d.add_argument("--format", choices=["text", "json"], default="text", help="text, or JSON")
    d.add_argument("--out", type=output_folder, help="write to files in this folder (every stage unless --stage is given)")
    add_frontend_settings(d)
    add_parallel_options(d.add_argument_group("--frontend joint (the parallel path's graphs, captured for a mesh)"),
                         parallel_names.CAPTURE_DEFAULTS)
    d.set_defaults(**{name: None for name in JOINT_OPTIONS})  # None: not given (the joint dump has its defaults)


@guarded
def run(args) -> int:
    if args.frontend == "joint":
        return _joint(args)
    given = [name for name in JOINT_OPTIONS if getattr(args, name, None) is not None]
    if given:
        raise UsageError(f"--{given[0].replace('_', '-')} applies to --frontend joint only")
    if (args.frontend is None) == (args.backend is None):
        raise UsageError("give exactly one of --frontend (its IR stages) or --backend (the stages it compiles through)")
    if args.frontend is not None and args.frontend not in names.FRONTENDS:  # said before torch is imported
        raise UnknownName("frontend", args.frontend, [*names.FRONTENDS, "joint"])
    if not args.workload:
        raise UsageError("give a workload: a built-in (see `irlens list`) or path/to/file.py:NAME")
    apply_frontend_settings(args)

    from irlens.frontends.base import Acquisition, Unavailable
    from irlens.matrix.spec import check_device_present
    from irlens.workloads.builtin import resolve_workload
    from irlens.workloads.graphnet import file_stem, portable_name

    preset, device, view = args.preset or "tiny", args.device or "cpu", args.view or "native"
    check_device_present(device)
    workload = resolve_workload(args.workload)
    source = _source(args)
    avail = source.availability(device) if args.backend else source.availability()
    if not avail:
        raise Unavailable(f"{'backend' if args.backend else 'frontend'} {source.name} is unavailable here: {avail.reason}")
    mode = args.mode or ("fwdbwd" if args.backward else "fwd")
    inst = workload.instantiate(preset, args.dtype, device)
    verb = "compiling" if args.backend else "acquiring"
    print(f"irlens: {verb} {workload.name} ({preset}, {inst.dtype}, {mode}) with {source.name} ...", file=sys.stderr)
    try:
        if args.backend:
            acq = Acquisition(source.name, workload.name, mode, source.stages(inst, mode))
        else:
            acq = source.acquire(inst, mode)
    except NoNativePath as e:  # no JAX twin; Thunder can take none of it
        raise UsageError(str(e)) from None

    if args.stages:
        width = max([24, *map(len, acq.stages)])
        for s in acq.stages.values():
            print(f"{s.name:<{width}} {s.description}")
        for k, v in acq.notes.items():
            print(f"# {k}: {v}")
        return EXIT_OK

    chosen = [args.stage] if args.stage else ([_default_stage(source, acq, mode)] if not args.out else list(acq.stages))
    for name in chosen:
        try:
            stage = acq.stage(name)
        except UnknownName as e:
            hint = "" if mode == "fwdbwd" else " (backward stages need --backward)"
            raise UsageError(f"{e}{hint}") from None
        parts = _parts(source, acq, name, view)
        shown = [stage] if (args.stage or args.out) and name in parts else [acq.stage(p) for p in parts]
        text = _render_parts(acq, shown, parts, args, view)
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            level = f".{args.level}" if view == "common" else ""
            path = out / (f"{file_stem(portable_name(workload.name))}.{source.name}.{stage.name}.{view}{level}."
                          f"{'json' if args.format == 'json' else 'txt'}")
            path.write_text(text + "\n")
            print(f"wrote {path}", file=sys.stderr)
        else:
            print(text)
    return EXIT_OK


def _joint(args) -> int:
    """`irlens dump MODEL --frontend joint ...`: the parallel path's graphs, captured for the
    TrainConfig the joint options describe (the joint dump's defaults for what is not given)."""
    from irlens.cli.train import train_config
    from irlens.parallel.dump import STAGES, DumpRequest, capture_config, dump

    single = SINGLE_OPTIONS + tuple(dest for _, dest, _ in frontend_settings())
    given = [name for name in single if getattr(args, name, None) not in (None, False)]
    if given:
        raise UsageError(f"--{given[0]} does not apply to --frontend joint")
    if args.stages:
        for s, what in STAGES.items():
            print(f"{s:<10} {what}")
        return EXIT_OK
    stages = [args.stage] if args.stage else (list(STAGES) if args.out else ["joint"])
    try:
        request = DumpRequest(tuple(stages), args.view or "common", args.level, args.format, args.out)
        dump(train_config(args, capture_config(args.workload or "llama3:debug")), request)
    except (ValueError, KeyError) as e:  # a bad model, mesh, stage or pass list
        raise UsageError(str(e).strip("'\"")) from None
    return EXIT_OK


def _source(args):
    """The frontend or backend `irlens dump` shows the stages of."""
    from irlens.backends import get_backend
    from irlens.frontends import get_frontend

    return get_backend(args.backend) if args.backend else get_frontend(args.frontend)


def _default_stage(source, acq, mode: str) -> str:
    """A frontend's main stage; for a backend, the first stage under its `main_stage` prefix."""
    from irlens.backends import Backend

    if acq.default_stage is not None:
        return acq.default_stage
    if not isinstance(source, Backend):
        return source.default_stage(mode)
    return next((n for n in acq.stages if n.startswith(source.main_stage)), next(iter(acq.stages), ""))


def _parts(source, acq, name: str, view: str) -> list[str]:
    """The stages stage `name` stands for: where the frontend split the workload (graph breaks,
    ThunderFX's regions), that stage of every part; else [name]."""
    from irlens.frontends.base import Frontend

    return source.stage_parts(acq, name, view) if isinstance(source, Frontend) else [name]


def _render_parts(acq, shown: list, parts: list[str], args, view: str) -> str:
    """The stages `shown` of the `parts` one stage stands for: a whole stage as `_render_stage`
    shows it; parts each under a header naming it and saying which it is, or a JSON list."""
    if parts == [shown[0].name] or (args.format == "json" and len(shown) == 1):
        return _render_stage(acq, shown[0], args, view)
    if args.format == "json":
        return "[" + ",\n".join(_render_stage(acq, s, args, view) for s in shown) + "]"
    blocks = [f"# {s.name}: {s.description}\n{_render_stage(acq, s, args, view)}" for s in shown]
    if len(shown) < len(parts):  # one part, asked for by name
        blocks.insert(0, f"# one of {len(parts)} parts, each a --stage of its own: {', '.join(parts)} "
                         "(without --stage, every one is shown)")
    return "\n\n".join(blocks)


def _render_stage(acq, stage, args, view: str) -> str:
    if view == "native":
        if args.format == "json":
            return json.dumps({"name": acq.workload, "backend" if args.backend else "frontend": acq.frontend,
                               "stage": stage.name, "view": "native", "native": stage.native_text}, indent=1)
        return stage.native_text
    graph = stage.common(args.level)
    return graph.dumps() if args.format == "json" else graph.to_text()
