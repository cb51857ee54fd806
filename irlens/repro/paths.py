"""How a standalone file runs each backend's path, and how the reducer runs a candidate graph.

One `ReproPath` per backend (`PATHS`, by backend name). A torch path is source that defines
`compile_fn(fn)`: the file hands it the model code (eager: `fn` itself; inductor:
`torch.compile`; Thunder's executors: `thunder.jit` with that fusion executor first, or
ThunderFX where thunder.jit fails, as `irlens.backends.thunder.backend` runs it). The xla path is
`jax.jit` of the JAX program written out as source (`irlens.repro.jax_source`).

The reducer shrinks a graph of the common view acquired by `frontend` (Dynamo's ATen graphs
for the torch paths, the jaxpr for xla) and runs each candidate by `lowering`:
  source   the candidate's own standalone code (`irlens.backends.inductor.lower` builds its module, Dynamo's
           capture of that is the code) under the path's `compile_fn`: the reduced file runs
           exactly what the reducer tested;
  nvfuser  `irlens.backends.thunder.lower`: fusion regions as nvFuser FusionDefinitions, the rest as torch;
  jax      `irlens.backends.xla.lower`: the candidate as a jitted JAX function.

A backend named by reference (`path/to/file.py:NAME`, a test's deliberately broken one) brings
its own path as its attribute `repro_path`; nothing else needs registering.
"""
from __future__ import annotations

from dataclasses import dataclass

from irlens.errors import UsageError
from irlens.core.registry import Registry

# thunder <= 0.2.6 registers torch.Tensor's named-tensor methods, which torch 2.13 removed
# (irlens/_compat.py): a file that imports thunder defines raising stand-ins first.
THUNDER_IMPORT = '''\
def import_thunder():
    # lightning-thunder <= 0.2.6 registers the named-tensor methods torch 2.13 removed
    for name in ("align_as", "align_to", "has_names", "refine_names", "rename"):
        if not hasattr(torch.Tensor, name):
            def removed(self, *args, _name=name, **kwargs):
                raise NotImplementedError(f"torch.Tensor.{_name} was removed in this torch version")
            removed.__name__ = removed.__qualname__ = name
            setattr(torch.Tensor, name, removed)
    import thunder
    return thunder
'''


def _thunder_source(executor: str) -> str:
    """compile_fn as irlens's Thunder backends capture (`irlens.frontends.thunder.capture`), by the
    same environment variable read when the file runs: thunder.jit, ThunderFX (upstream's
    `ThunderCompiler`, the same executors), or by default thunder.jit and, where its first forward
    call fails (tracing, compiling or running it), ThunderFX. A Dynamo graph's code may call ops as
    thunder.jit cannot (`F.linear(x, weight=w)`: Thunder's linear takes its weight by position only)
    where the cell ran through ThunderFX; the file then takes the cell's path, not another. Where it
    differs: irlens also turns to ThunderFX when the backward of thunder.jit's step fails; irlens's
    ThunderFX keeps from Thunder the ops it has no gradient for and a region that fails on its first
    call (the file runs upstream's as it is); and where both captures fail the nvfuser backend runs
    the common view's lowering, the file ThunderFX."""
    return "import os\nimport sys\n\n\n" + THUNDER_IMPORT + f'''

CAPTURE = os.environ.get("IRLENS_THUNDER_CAPTURE") or "auto"  # as irlens: auto, jit or thunderfx


def compile_fn(fn):
    thunder = import_thunder()
    fusion = thunder.get_executor({executor!r})
    others = [ex for ex in thunder.get_default_executors() if ex.name not in ("torchcompile", "nvfuser")]
    executors = [fusion, *others]

    def thunderfx():
        from thunder.dynamo import ThunderCompiler
        from torch.fx._lazy_graph_module import _force_skip_lazy_graph_module

        compiled = torch.compile(fn, backend=ThunderCompiler(executors=executors), dynamic=False)

        def call(*args):
            # over a plain function ThunderFX jits its regions' graph modules before FX has written
            # their code (lazily), and Thunder's interpreter fails inside FX's code generation
            with _force_skip_lazy_graph_module():
                return compiled(*args)

        return call

    if CAPTURE not in ("auto", "jit", "thunderfx"):
        raise ValueError(f"IRLENS_THUNDER_CAPTURE={{CAPTURE!r}}: choose from auto, jit, thunderfx")
    if CAPTURE == "thunderfx":
        return thunderfx()
    jitted = thunder.jit(fn, executors=executors)
    if CAPTURE == "jit":
        return jitted
    chosen = []

    def auto(*args):
        if not chosen:
            try:
                out = jitted(*args)
            except Exception as e:  # any failure of thunder.jit's first call: ThunderFX, as irlens's backend
                first = (str(e).splitlines() or [""])[0][:160]
                print(f"capture: thunderfx (thunder.jit failed: {{type(e).__name__}}: {{first}})", file=sys.stderr)
                chosen.append(thunderfx())
                return chosen[0](*args)
            chosen.append(jitted)
            return out
        return chosen[0](*args)

    return auto
'''


@dataclass(frozen=True)
class ReproPath:
    name: str  # the backend's name
    kind: str  # torch | jax
    description: str  # for the file's header: what runs the model
    compile_source: str = ""  # torch: defines compile_fn(fn)
    frontend: str = "dynamo"  # whose common view the reducer shrinks
    lowering: str = "source"  # source | nvfuser | jax


PATHS: Registry[ReproPath] = Registry("repro path")
for _path in (
    ReproPath("eager", "torch", "eager PyTorch, op by op", "def compile_fn(fn):\n    return fn\n"),
    ReproPath("inductor", "torch", "torch.compile with Inductor",
              'def compile_fn(fn):\n    return torch.compile(fn, backend="inductor", dynamic=False)\n'),
    ReproPath("thunder+torchcompile", "torch",
              "thunder.jit with its torchcompile fusion executor first (ThunderFX where it fails)",
              _thunder_source("torchcompile")),
    ReproPath("nvfuser", "torch", "thunder.jit with its nvFuser executor first (ThunderFX where it fails)",
              _thunder_source("nvfuser"), lowering="nvfuser"),
    ReproPath("xla", "jax", "jax.jit of the JAX program (matmul precision highest, as the xla backend runs it)",
              frontend="jax", lowering="jax"),
):
    PATHS.register(_path)


def repro_path(backend) -> ReproPath:
    """The path of a backend (a registered one by name; one named by reference by its `repro_path`)."""
    own = getattr(backend, "repro_path", None)
    return own if own is not None else PATHS.get(backend.name)


def find_backend(name_or_ref: str):
    """(the backend, its path): a registered backend by name, or one by reference
    (`irlens.backends.get_backend`: UnknownName lists the choices, BadReference says why not).
    A backend with no path of its own is bad input too."""
    from irlens.backends import get_backend

    backend = get_backend(name_or_ref)
    if getattr(backend, "repro_path", None) is None and backend.name not in PATHS:
        raise UsageError(f"irlens repro has no path for backend {backend.name!r} (it runs {', '.join(PATHS.names())}); "
                         f"a backend of your own gives one as its attribute `repro_path` (irlens.repro.paths.ReproPath)")
    return backend, repro_path(backend)


def uses_thunder(path: ReproPath) -> bool:
    return "import_thunder()" in path.compile_source
