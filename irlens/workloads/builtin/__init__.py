"""The built-in workloads: importing a module registers its workloads (one line per file, at the
end). `resolve_workload` finds any workload: a built-in by name, a user's own by reference."""
from pathlib import Path

from irlens.workloads.user_code import resolve
from irlens.workloads.workload import CORPUS, WORKLOADS, ZOO, Workload


def get_workload(name: str) -> Workload:
    """A built-in workload; UnknownName lists them."""
    return WORKLOADS.get(name)


def workload_names(corpus: bool | None = False) -> list[str]:
    """The built-in workloads run when none is named (compare, bench, the per-workload tests);
    with `corpus=True`, the corpus of ordinary model code instead (those tagged `CORPUS`), held
    to its own tests; `None`: all of them, the zoo of real models included (tagged `ZOO`, in
    neither set: `irlens zoo` runs them, `irlens.workloads.zoo.zoo_names()`). All are registered:
    any of them can be named."""
    return [w.name for w in WORKLOADS.values()
            if corpus is None or (ZOO not in w.tags and (CORPUS in w.tags) == corpus)]


def resolve_workload(name_or_ref: str) -> Workload:
    """A built-in workload by name, a user's by `path/to/file.py:NAME`, or a GraphNet sample by
    `graphnet:PATH` (UnknownName, BadReference, BadSample)."""
    from irlens.workloads import graphnet

    if graphnet.is_graphnet(name_or_ref):
        return graphnet.sample_workload(name_or_ref)
    return resolve(name_or_ref, WORKLOADS, Workload, "declare one with irlens.Workload.from_module(...)")


def expand_workload(name_or_ref: str) -> list[str]:
    """The workload names a name stands for in a list of them: itself, or for `graphnet:FOLDER` of
    several samples each sample's `graphnet:PATH` (a single-workload command keeps the folder,
    which `resolve_workload` refuses, naming the count)."""
    from irlens.workloads import graphnet

    if not graphnet.is_graphnet(name_or_ref):
        return [name_or_ref]
    folder = Path(name_or_ref.removeprefix(graphnet.PREFIX))
    samples = graphnet.sample_dirs(folder) if folder.is_dir() else []
    return [f"{graphnet.PREFIX}{d.resolve()}" for d in samples] if len(samples) > 1 else [name_or_ref]


from irlens.workloads.builtin import gelu  # noqa: E402, F401
from irlens.workloads.builtin import tinyhead  # noqa: E402, F401
from irlens.workloads.builtin import attention  # noqa: E402, F401
from irlens.workloads.builtin import block  # noqa: E402, F401
from irlens.workloads.builtin import minigpt  # noqa: E402, F401
# the corpus of ordinary model code (tagged "corpus"; tests/integration/test_corpus.py)
from irlens.workloads.builtin import llama  # noqa: E402, F401
from irlens.workloads.builtin import lm  # noqa: E402, F401
from irlens.workloads.builtin import masked_attention  # noqa: E402, F401
from irlens.workloads.builtin import moe  # noqa: E402, F401
from irlens.workloads.builtin import mamba  # noqa: E402, F401
from irlens.workloads.builtin import prenorm  # noqa: E402, F401
# real models from transformers and timm (tagged "zoo"; an optional extra: `irlens zoo`, tests/integration/test_zoo.py)
from irlens.workloads import zoo  # noqa: E402, F401
