"""JAX frontend: the workload's JAX twin as a jaxpr, its gradient jaxpr, StableHLO and optimized HLO.

The traced function is `irlens.workloads.builtin.jax_run.results_fn` (the same one the xla backend
runs), applied to the torch module's weights: forward outputs in fwd mode, value_and_grad
over parameters and floating inputs in fwdbwd mode.

The folder owns the JAX frontend whole: the acquisition (here) and three adapters to the common
view. jaxpr/: its walk (walk.py), tables (names.py), handlers by family (elementwise.py,
shapes.py, structured.py; their registry eqn.py). hlo/: the walks of optimized HLO and StableHLO
(walk.py, stablehlo.py), the HLO text parser (text.py), tables (names.py), handlers by family
(elementwise.py, shapes.py, structured.py, gpu_calls.py; gpu_bodies.py: bodies XLA's GPU passes
rewrite). xla/: shared by all three, XLA's structured ops (forms.py, gather.py) and the op record
HLO's handlers register on (op.py: their registry and `convert`). lax.linalg: linalg.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from irlens.frontends.base import FRONTENDS, Acquisition, Availability, Frontend, Program, Stage, Unavailable
from irlens.frontends.jax.binding import jaxpr_program, lowered_programs
from irlens.core import precision
from irlens.workloads.workload import MODES, Instance, Workload


def jax_device(device: str):
    """irlens device name (cpu, cuda, cuda:1) -> the jax device; `Unavailable` if JAX has none."""
    import jax

    platform, _, index = device.partition(":")
    try:
        return jax.devices("gpu" if platform == "cuda" else platform)[int(index or 0)]
    except (RuntimeError, IndexError) as e:
        raise Unavailable(f"JAX has no {device} device here: {e}") from e


@dataclass
class JaxProgram:
    """A workload's JAX function for one mode, with its arguments and flat input/output names."""

    fn: Callable  # (params, inputs) -> {result name: array}
    args: tuple  # (params dict, inputs tuple), on the instance's device
    input_names: list[str]  # one per flattened argument leaf: parameter names, input<i>
    output_names: list[str]  # one per flattened result leaf: out0.., loss, grad:...


def jax_program(inst: Instance, mode: str) -> JaxProgram:
    import jax

    from irlens.workloads.builtin.jax_run import results_fn

    fn = results_fn(inst, mode)
    args = jax.device_put((inst.jax_params(), inst.jax_inputs()), jax_device(inst.device))
    leaves, _ = jax.tree_util.tree_flatten_with_path(args)
    out_shape = jax.eval_shape(fn, *args)
    outs, _ = jax.tree_util.tree_flatten_with_path(out_shape)
    return JaxProgram(fn, args, [_leaf_name(path) for path, _ in leaves], [_leaf_name(path[-1:]) for path, _ in outs])


# XLA's default precision on GPU is TF32-like. The twin is checked against torch (irlens.numerics.verdicts)
# and reproduced (irlens.repro) in full float32, so the comparison is between compilers, not precisions.
MATMUL_PRECISION = "highest"


def lower(program: JaxProgram):
    """`jax.jit(program.fn).lower(...)` at the run's float32 policy (irlens.core.precision: "highest"
    unless TF32 was asked for): what the xla backend compiles."""
    import jax

    with jax.default_matmul_precision(precision.jax_matmul_precision()):
        return jax.jit(program.fn).lower(*program.args)


def jaxpr_text(closed) -> str:
    """The jaxpr as JAX prints it. JAX's printer can fail where the jaxpr itself is sound (jax
    0.10's rule for mul reads an `out_dtype` param that `mul_p.bind(x, y)` leaves out): the
    stage is kept, its text says why it has none."""
    try:
        return str(closed)
    except Exception as e:  # noqa: BLE001  (a printing rule's bug, not the capture's)
        return f"(JAX could not print this jaxpr: {type(e).__name__}: {e})"


def kept_inputs(lowered, input_names: list[str]) -> list[str]:
    """The flattened arguments the lowered module (StableHLO, and the HLO compiled from it)
    still takes: jit drops the ones the function never reads (`keep_unused=False`), and records
    which it kept in the lowering's `kept_var_idx` (what `Lowered.in_avals` and the compiled
    executable read to pass the arguments)."""
    args = lowered._lowering.compile_args
    hoisted = len(lowered._lowering.const_args)
    if hoisted:  # jit passes constants as leading arguments: no workload value binds them
        raise ValueError(f"the lowered module takes {hoisted} hoisted constants as arguments; "
                         "irlens binds only the workload's inputs and parameters")
    return [input_names[i] for i in sorted(args["kept_var_idx"])]


def _leaf_name(path) -> str:
    """(SequenceKey(0), DictKey('proj.weight')) -> proj.weight; (SequenceKey(1), SequenceKey(2)) -> input2."""
    import jax
    from jax.tree_util import DictKey, SequenceKey

    last = path[-1]
    if isinstance(last, DictKey):
        return str(last.key)
    if isinstance(last, SequenceKey):
        return f"input{last.idx}"
    return jax.tree_util.keystr(path)


class JaxFrontend(Frontend):
    name = "jax"
    description = "JAX twin: make_jaxpr (forward, value_and_grad), StableHLO, XLA-optimized HLO"

    def availability(self) -> Availability:
        try:
            import jax  # noqa: F401
        except ImportError as e:
            return Availability(False, f"jax is not installed: {e}")
        return Availability(True)

    def default_stage(self, mode: str) -> str:
        return "jax.grad" if mode == "fwdbwd" else "jax.jaxpr"

    def refuses(self, workload: Workload) -> str | None:
        return None if workload.jax is not None else f"workload {workload.name!r} has no JAX twin"

    def program(self, acq: Acquisition, inst: Instance) -> Program:
        return jaxpr_program(acq)

    def stage_programs(self, acq: Acquisition, inst: Instance, program: Program) -> dict[str, Program]:
        return lowered_programs(acq, program)

    conformance_stages = ("jax.jaxpr", "jax.stablehlo", "jax.hlo")

    def acquire(self, inst: Instance, mode: str) -> Acquisition:
        import jax

        from irlens.frontends.jax.hlo.walk import hlo_to_graph
        from irlens.frontends.jax.hlo.stablehlo import stablehlo_to_graph
        from irlens.frontends.jax.jaxpr.walk import jaxpr_to_graph

        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose from: {', '.join(MODES)}")
        inst.jax_fn()  # raises NoJaxTwin for a workload without one
        stages: dict[str, Stage] = {}

        def jaxpr_stage(stage: str, description: str, program: JaxProgram, backward: bool) -> Stage:
            closed = jax.make_jaxpr(program.fn)(*program.args)
            def to_common(level: str):
                return jaxpr_to_graph(closed, name=inst.name, stage=stage, level=level, input_names=program.input_names)

            return Stage(stage, description, jaxpr_text(closed), to_common, closed, backward)

        forward = jax_program(inst, "fwd")
        stages["jax.jaxpr"] = jaxpr_stage("jax.jaxpr", "make_jaxpr of the forward", forward, False)
        program = forward
        if mode == "fwdbwd":
            program = jax_program(inst, "fwdbwd")
            stages["jax.grad"] = jaxpr_stage("jax.grad", "make_jaxpr of value_and_grad over params and floating inputs",
                                             program, True)

        what = "value_and_grad" if mode == "fwdbwd" else "forward"
        lowered = lower(program)
        module = lowered.compiler_ir("stablehlo")
        stages["jax.stablehlo"] = Stage(
            "jax.stablehlo", f"StableHLO of the jitted {what} function", lowered.as_text(),
            lambda level: stablehlo_to_graph(module, name=inst.name, level=level), module, mode == "fwdbwd")
        compiled = lowered.compile()
        hlo_module = compiled.runtime_executable().hlo_modules()[0]
        stages["jax.hlo"] = Stage(
            "jax.hlo", f"XLA-optimized HLO of the {what} function after compile() for {inst.device}", compiled.as_text(),
            lambda level: hlo_to_graph(hlo_module, name=inst.name, level=level), hlo_module, mode == "fwdbwd")
        notes = {"outputs": program.output_names, "inputs": program.input_names,
                 "lowered_inputs": kept_inputs(lowered, program.input_names)}
        return Acquisition(self.name, inst.name, mode, stages, notes)


FRONTENDS.register(JaxFrontend())
