"""A torch callable as plain source: the FX graph Dynamo captures of it, written out as code.

Dynamo's graph holds torch-level calls only (`torch.nn.functional.layer_norm`,
`torch._C._nn.linear`, tensor methods), with every tensor it reads as a parameter (with
inlined nn modules, the module's parameters and buffers too). Its code therefore runs with
`torch` alone, and the same code is what `torch.compile` (Dynamo traces it again) and
`thunder.jit` (its interpreter follows it) take in a standalone file. A tensor the graph reads
as an attribute (a constant) becomes one more parameter.

The captured function is checked before it is handed out: run from its own source in a
namespace of its own, it must compute what the callable computed (up to the dtype's
run-to-run noise: a GPU scatter adds in any order).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from irlens.repro.tensors import CONST_PREFIX
from irlens.wording import article, plural

# Names FX-generated code may use unqualified, and how a file defines them.
_PREAMBLE = {
    "torch": "import torch",
    "inf": "from math import inf",
    "nan": "from math import nan",
    "device": "from torch import device",
    "NoneType": "NoneType = type(None)",
    "fx_pytree": "import torch.fx._pytree as fx_pytree",
    "pytree": "import torch.utils._pytree as pytree",
}


class NotExpressible(RuntimeError):
    """The callable cannot be written as one standalone function; the message says why."""


@dataclass
class TorchFunction:
    name: str
    source: str  # `def name(...)` returning a tuple
    args: list[str]  # the value each parameter takes, by key
    imports: list[str]  # lines the source needs (beyond `import torch`)
    constants: dict[str, torch.Tensor] = field(default_factory=dict)  # key -> value of each `const:` arg

    def constant_values(self) -> dict[str, torch.Tensor]:
        """The values of its `const:` args, on the CPU (a file's values)."""
        return {k: v.detach().cpu() for k, v in self.constants.items()}

    def or_same(self, other: "TorchFunction") -> "TorchFunction":
        """`self` where `other` is the same code under another name (one function serves both), else `other`."""
        renamed = other.source.replace(f"def {other.name}(", f"def {self.name}(", 1)
        return self if renamed == self.source and other.args == self.args else other


def capture(fn: Callable, args: Sequence, name: str, keys: Callable[[list], list[str]], grad: bool = False
            ) -> tuple[TorchFunction, tuple]:
    """Dynamo's graph of `fn(*args)` as a function `name`, and what `fn` returned.

    `keys(example_inputs)` names each tensor Dynamo's graph takes (the caller knows its values);
    constants the graph reads as attributes are named `const:<name>.<attribute>` (their values in
    the function's `constants`: a float32 and a float64 capture differ in them). With `grad`, the call
    records autograd (the graph is the same; a fwdbwd cell is captured as it runs)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    graphs: list[tuple[torch.fx.GraphModule, list]] = []

    def keep(gm, example_inputs):
        graphs.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    counters.clear()
    try:
        with torch.set_grad_enabled(grad):
            returned = torch.compile(fn, backend=keep, dynamic=False, fullgraph=False)(*args)
    finally:
        breaks = sum(counters["graph_break"].values())
        torch._dynamo.reset()
    if len(graphs) != 1:
        raise NotExpressible(f"Dynamo captured {plural(len(graphs), 'graph')} ({plural(breaks, 'graph break')}); a "
                             "standalone file "
                             "holds one")
    gm, example_inputs = graphs[0]
    constants = _constants_as_parameters(gm)
    constant_keys = {f"{CONST_PREFIX}{name}.{c}": v for c, v in constants.items()}
    arg_keys = keys(example_inputs) + list(constant_keys)
    source, imports = graph_source(gm, name)
    function = TorchFunction(name, source, arg_keys, imports, constant_keys)
    check_same(function, [*example_inputs, *constants.values()], returned)
    return function, _as_tuple(returned)


def _constants_as_parameters(gm: torch.fx.GraphModule) -> dict[str, torch.Tensor]:
    """Each attribute the graph reads becomes a parameter (after the others); returns their values."""
    graph = gm.graph
    last = [n for n in graph.nodes if n.op == "placeholder"]
    values = {}
    for node in [n for n in graph.nodes if n.op == "get_attr"]:
        value = gm
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            raise NotExpressible(f"the graph reads {node.target}, {article(type(value).__name__)}, not a tensor")
        where = last[-1].next if last else next(iter(graph.nodes))
        with graph.inserting_before(where):
            placeholder = graph.placeholder(str(node.target).replace(".", "_"))
        last.append(placeholder)
        node.replace_all_uses_with(placeholder)
        graph.erase_node(node)
        values[str(node.target)] = value.detach()
    gm.recompile()
    return values


def graph_source(gm: torch.fx.GraphModule, name: str) -> tuple[str, list[str]]:
    """An fx graph's code as a function `name` (its placeholders its parameters), and the import
    lines that code needs; the graph's placeholders lose their type annotations."""
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            node.type = None  # no `: torch.nn.parameter.Parameter` annotations: the signature stays readable
    code = gm.graph.python_code(root_module="self")
    imports = []
    for global_name, value in code.globals.items():
        if global_name in _PREAMBLE:
            if global_name != "torch" and global_name in code.src:
                imports.append(_PREAMBLE[global_name])
            continue
        imports.append(_import_line(global_name, value))
    src = code.src.strip("\n")
    head = "def forward(self, " if "def forward(self, " in src else "def forward(self"
    if not src.startswith(head):
        raise NotExpressible("unexpected FX code: " + src.splitlines()[0])
    return f"def {name}(" + src[len(head):].lstrip() + "\n", sorted(set(imports))


def _import_line(global_name: str, value) -> str:
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module.split(".")[0] in ("irlens", "__main__"):
        raise NotExpressible(f"the graph calls {global_name} ({value!r}), which a standalone file cannot import")
    if "." in qualname:
        return f"from {module} import {qualname.split('.')[0]} as _{global_name}_owner; {global_name} = _{global_name}_owner.{qualname.split('.', 1)[1]}"
    return f"from {module} import {qualname} as {global_name}" if qualname != global_name else f"from {module} import {qualname}"


def load(function: TorchFunction) -> Callable:
    """The function from its source, in a namespace of its own (as a standalone file has it)."""
    namespace: dict = {"torch": torch, "math": math}
    exec("\n".join(function.imports) + "\n" + function.source, namespace)
    return namespace[function.name]


def check_same(function: TorchFunction, inputs: list, returned) -> None:
    """NotExpressible where `function`, run from its own source on `inputs`, does not return `returned`."""
    with torch.no_grad():
        ours = _as_tuple(load(function)(*[t.detach() if isinstance(t, torch.Tensor) else t for t in inputs]))
    theirs = _as_tuple(returned)
    if len(ours) != len(theirs) or not all(map(_same, ours, theirs)):
        raise NotExpressible(f"the code of {function.name}, run from its source, does not return what the "
                             "callable returned (outputs reordered, merged or computed elsewhere)")


def _same(a, b) -> bool:
    """The same result, up to the run-to-run noise of the dtype (atomics in a GPU scatter)."""
    from irlens.numerics.verdicts import TOLERANCES, rel_err

    if a is None or b is None:
        return a is None and b is None
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    tol = TOLERANCES.get(str(a.dtype).removeprefix("torch."), TOLERANCES["float32"])["fwd"]
    return rel_err(a.detach(), b.detach()) <= tol


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)
