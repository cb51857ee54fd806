"""`compile_fn` of the standalone files that run Thunder's backends (their `ReproPath`,
irlens.backends.repro_path): the capture irlens runs, written into a file that imports thunder,
never irlens."""
from __future__ import annotations

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


def thunder_source(executor: str) -> str:
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
