"""ThunderFX: Thunder behind Dynamo, for code `thunder.jit` cannot trace.

`thunder.dynamo.ThunderCompiler` is a Dynamo backend: Dynamo captures FX graphs (one per graph
break), ThunderFX's splitter cuts each into regions, `thunder.jit` takes each region whose
every node Thunder supports (`thunder_<k>`), and Inductor compiles the others (`inductor_<k>`),
recording why in `SplitReason`s. `ThunderFX` runs that with a recording subclass and reads the
regions back (`Region`): each one's FX graph, the jitted function of a Thunder region, a
fallback region's split reasons and the modules Inductor generated for it.

A Thunder region can still fail when it first runs (thunder.jit compiles lazily): its splitter
checks each op's meta function, not its gradient (timm's CNNs: "Failed to find a gradient
transform for bound symbol ltorch.adaptive_avg_pool2d"). Such a failure is caught, and the
compilation runs again with the ops the error names (the whole region where it names none)
hidden from Thunder: they become calls of a function Thunder has no mapping for, so the splitter
sends them to Inductor, and the summary gives irlens' reason for them instead of ThunderFX's.
An op Thunder has no gradient for is then kept from Thunder in every graph, and so from the start
where thunder.jit of the whole module failed for it (`auto`): a failed compilation costs nearly
as much as the one after it, the failing region (a CNN's pooling head) compiling last.
The regions before the failed one have run by then: the buffers they updated in place (a
train-mode BatchNorm's statistics) are put back before the next compilation runs the step again.
Nodes inside vmap are hidden so before the split (`vmapped`): ThunderFX's splitter fails on them.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch._functorch.config

from irlens.frontends.thunder.capture import first_line
from irlens.wording import plural

# A fallback region's backward compiles with its forward (not at the first backward), so that
# its modules are all made inside the backend's call (torch >= 2.12 has the switch).
_EAGER_BACKWARD = ({"force_non_lazy_backward_lowering": True}
                   if hasattr(torch._functorch.config, "force_non_lazy_backward_lowering") else {})
MAX_ATTEMPTS = 6  # compilations of one workload: each failed one hides at least one more node


@contextlib.contextmanager
def inductor_code(on_module: Callable[[str], None]):
    """Hand every module Inductor generates in the block to `on_module` (as `run_and_get_code`
    collects them, without its Dynamo reset, so it can run inside a Dynamo backend); an inner
    block takes its own."""
    from unittest import mock

    from torch._inductor.graph import GraphLowering

    with mock.patch.object(GraphLowering, "save_output_code", on_module):
        yield


class _ModulesPerCompile:
    """The modules Inductor generates, grouped per `torch._inductor.compile` call: a pre-grad
    custom pass (`marker()`) runs at the start of each call (and of each subgraph's), before
    any module, cache hit or not."""

    def __init__(self):
        self.groups: list[list[str]] = []
        self._new = True

    def marker(self):
        from torch._inductor.custom_graph_pass import CustomGraphPass

        class CompileStarts(CustomGraphPass):
            def __init__(self, log: _ModulesPerCompile):
                self.log = log

            def __call__(self, graph) -> None:
                self.log._new = True

            def uuid(self):  # it changes no graph: Inductor's caches stay usable
                return "irlens-compile-starts"

            def __reduce__(self):  # torch 2.11 pickles the pass into its cache key: there it is its uuid
                return str, (self.uuid(),)

        return CompileStarts(self)

    def patches(self) -> dict:
        patches = {"pre_grad_custom_pass": self.marker()}
        if hasattr(torch._inductor.config, "pre_grad_pass_timing"):  # torch >= 2.13: before the cache lookup
            patches["pre_grad_pass_timing"] = "early"
        return patches

    def module(self, code: str) -> None:
        if self._new:
            self.groups.append([])
            self._new = False
        self.groups[-1].append(code)


@dataclass
class Region:
    """One region of a Dynamo graph, as ThunderFX split it."""

    graph: int  # which Dynamo graph (0, then one more per graph break)
    name: str  # its submodule in the split graph: thunder_<k> | inductor_<k>
    module: torch.fx.GraphModule  # its FX graph: torch-level calls as Dynamo traced them
    jitted: Any = None  # a Thunder region's thunder.jit function
    reasons: list[str] = field(default_factory=list)  # why a fallback region is not Thunder's
    codes: list[str] | None = None  # a fallback region's Inductor modules (forward[, backward]); None: not attributed

    @property
    def thunder(self) -> bool:
        return self.name.startswith("thunder_")

    @property
    def key(self) -> str:
        return f"g{self.graph}.{self.name}"

    @property
    def stage_prefix(self) -> str:
        return f"thunderfx.{self.key}"

    def ops(self) -> int:
        return sum(n.op.startswith("call_") for n in self.module.graph.nodes)

    def summary(self) -> dict:
        out = {"region": self.key, "taken_by": "thunder" if self.thunder else "inductor", "ops": self.ops()}
        if not self.thunder:
            out["reasons"] = self.reasons
        return out


class RegionFailed(RuntimeError):
    """A Thunder region failed on its first call; `culprits` are its nodes to hide from Thunder."""

    def __init__(self, graph: int, culprits: dict[str, str], error: BaseException):
        super().__init__(first_line(error))
        self.graph, self.culprits, self.error = graph, culprits, error


def _hidden(target: Callable, op: str) -> Callable:
    """`target` as a function Thunder has no mapping for (its splitter sends the node to Inductor)."""
    call = getattr(torch.Tensor, target) if op == "call_method" else target

    def inductor_only(*args, **kwargs):
        return call(*args, **kwargs)

    inductor_only.irlens_hidden = (op, target)
    return inductor_only


def hide(gm: torch.fx.GraphModule, names: set[str]) -> None:
    for node in gm.graph.nodes:
        if node.name in names and node.op in ("call_function", "call_method"):
            node.target, node.op = _hidden(node.target, node.op), "call_function"
    gm.recompile()


def unhide(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The nodes `hide` changed, as Dynamo traced them (what the common view reads)."""
    for node in gm.graph.nodes:
        hidden = getattr(node.target, "irlens_hidden", None)
        if hidden is not None:
            node.op, node.target = hidden
    gm.recompile()
    return gm


_NO_GRADIENT = re.compile(r"gradient transform for bound symbol bsym=\S+ = (?:\w+\.)?(\w+)\(")


def no_gradient(error: BaseException | None) -> dict[str, str]:
    """{Thunder symbol: irlens' reason} for the symbol Thunder's autodiff says `error` found no
    gradient transform for (empty for any other error)."""
    m = _NO_GRADIENT.search(str(error)) if error is not None else None
    return {m.group(1): f"irlens: thunder.jit has no gradient for {m.group(1)} ({first_line(error)})"} if m else {}


def calling(gm: torch.fx.GraphModule, symbols: dict[str, str]) -> dict[str, str]:
    """{node name: reason} for the nodes of `gm` whose torch call Thunder maps to one of `symbols`."""
    from thunder.torch import _torch_to_thunder_function_map as thunder_symbols

    found = {}
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        target = getattr(torch.Tensor, node.target, None) if node.op == "call_method" else node.target
        name = getattr(thunder_symbols.get(target), "name", None)
        if name in symbols:
            found[node.name] = symbols[name]
    return found


def culprits(region: torch.fx.GraphModule, error: BaseException) -> dict[str, str]:
    """The region's nodes to hide after it failed with `error`, each with the reason: those
    calling the symbol Thunder's autodiff names, else every call of the region."""
    named = calling(region, no_gradient(error))
    if named:
        return named
    return {n.name: f"irlens: thunder.jit failed on the region it was in ({first_line(error)})"
            for n in region.graph.nodes if n.op in ("call_function", "call_method")}


def vmapped(gm: torch.fx.GraphModule) -> list[str]:
    """The nodes that make, take or return vmap's batched tensors (Mamba's selective scan). ThunderFX
    0.2.6 means to leave vmap regions to Inductor, but compares the nesting calls with the C
    functions while Dynamo's graphs call their Python wrappers, so its splitter reaches those
    nodes and fails on the batched example values."""
    from torch._C._functorch import is_batchedtensor

    def batched(node) -> bool:
        value = node.meta.get("example_value")
        values = value if isinstance(value, (tuple, list)) else [value]
        return any(isinstance(v, torch.Tensor) and is_batchedtensor(v) for v in values)

    return [n.name for n in gm.graph.nodes
            if n.op in ("call_function", "call_method") and (batched(n) or any(map(batched, n.all_input_nodes)))]


class _GuardedRegion(torch.nn.Module):
    """A Thunder region's jitted function; a failure (of its lazy compilation) is a RegionFailed.

    Its outputs get the strides Dynamo recorded for them: the Inductor region after it was compiled
    for those and asserts them, while nvFuser may return another layout of the same values (a
    transposed view's result written contiguously; seen on an H200 with a transformers Llama), and
    Thunder writes timm's LayerNorm2d (a layer norm between two permutes) contiguously where eager
    leaves it channels-last (CoAtNet's pooling head asserted it on an H200)."""

    def __init__(self, jitted, graph: int, region: torch.fx.GraphModule):
        super().__init__()
        self.jitted, self.graph, self.region = jitted, graph, region
        self.strides = output_strides(region)

    def forward(self, *args):
        try:
            result = self.jitted(*args)
        except Exception as e:
            raise RegionFailed(self.graph, culprits(self.region, e), e) from e
        if not isinstance(result, (tuple, list)):  # a region of one output returns it bare (split_module)
            return restride(result, self.strides[0]) if len(self.strides) == 1 else result
        if len(result) != len(self.strides):
            return result
        return type(result)(restride(t, stride) for t, stride in zip(result, self.strides))


def output_strides(region: torch.fx.GraphModule) -> list[tuple[int, ...] | None]:
    """The strides Dynamo's example values give each output of a region (None: not a tensor)."""
    output = next(n for n in reversed(region.graph.nodes) if n.op == "output")
    values = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    strides = []
    for v in values:
        example = v.meta.get("example_value", v.meta.get("val")) if isinstance(v, torch.fx.Node) else None
        strides.append(tuple(example.stride()) if isinstance(example, torch.Tensor) else None)
    return strides


def restride(t, stride: tuple[int, ...] | None):
    """`t` with `stride`, copied (differentiably) only where its own differs. A stride of 0 (Dynamo
    recorded an expanded output; its values repeat along that dimension) keeps index 0 there and
    expands it: a copy cannot write one element from many."""
    if not isinstance(t, torch.Tensor) or stride is None or len(stride) != t.dim() or t.stride() == stride:
        return t
    source = t
    for dim in (d for d, s in enumerate(stride) if s == 0 and t.shape[d] > 1):  # size 0 or 1: nothing repeats
        source = source.narrow(dim, 0, 1)
    out = torch.empty_strided(source.shape, stride, dtype=t.dtype, device=t.device).copy_(source)
    return out.expand(t.shape)


def _recording_compiler(thunder_options: dict, hidden: dict[tuple[int, str], str], no_gradient: dict[str, str]):
    from thunder.dynamo import ThunderCompiler

    class RecordingCompiler(ThunderCompiler):
        """ThunderCompiler that hides irlens' culprits from Thunder, keeps each graph's fallback
        Inductor modules (their backward compiled eagerly, so that they are all made here, in
        region order) and guards each Thunder region."""

        def __init__(self):
            super().__init__(**thunder_options)
            self.fallback_codes: list[list[list[str]]] = []  # per graph, per fallback region compiled

        def __call__(self, gm, sample_args):
            index = len(self.subgraph_infos)
            for name in vmapped(gm):
                hidden.setdefault((index, name), "irlens: inside vmap (ThunderFX's splitter cannot read its batched "
                                                 "tensors: 'tree_flatten of type Tensor is not supported')")
            for name, why in calling(gm, no_gradient).items():
                hidden.setdefault((index, name), why)
            hide(gm, {name for g, name in hidden if g == index})
            modules = _ModulesPerCompile()
            with inductor_code(modules.module), torch._functorch.config.patch(_EAGER_BACKWARD), \
                    torch._inductor.config.patch(modules.patches()):
                split = super().__call__(gm, sample_args)
            unhide(gm)
            self.fallback_codes.append(modules.groups)
            original = self.subgraph_infos[-1].original_split_graph_module.split_graph_module
            for node in split.graph.nodes:
                if node.op == "call_module" and node.target.startswith("thunder_"):
                    region = unhide(getattr(original, node.target.replace("thunder", "submod")))
                    guarded = _GuardedRegion(getattr(split, node.target), index, region)
                    split.delete_submodule(node.target)
                    split.add_submodule(node.target, guarded)
            return split

    return RecordingCompiler()


def _put_back(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    buffers = dict(module.named_buffers())
    with torch.no_grad():
        for name, value in state.items():
            buffers[name].copy_(value)


class ThunderFX:
    """One module compiled by ThunderFX with `thunder_options` (thunder.jit's, per region).
    `jit_error`: how thunder.jit of the whole module failed, where it did; an op it found no
    gradient for is kept from Thunder in every graph from the first compilation on."""

    def __init__(self, module: torch.nn.Module, jit_error: BaseException | None = None, **thunder_options):
        self.module, self.options = module, thunder_options
        self.compiler = None
        self.compiled = None
        self.hidden: dict[tuple[int, str], str] = {}  # (graph, node name) -> why irlens hid it from Thunder
        # Thunder symbol -> why irlens hides every call of it: a region compiling it would fail on its first call
        self.no_gradient: dict[str, str] = no_gradient(jit_error)
        self.thunder_codes: list[str] = []  # Inductor modules made outside the fallbacks (torchcompile regions)
        self.graph_breaks: dict = {}
        self.compilations = 0  # of the module: one more after each region that failed on its first call

    def calls(self, step: Callable[[Callable], Any]) -> Callable[[], Any]:
        """`lambda: step(compiled)`, whose first call compiles (see the module docstring)."""
        return lambda: self._first(step) if self.compiled is None else step(self.compiled)

    def _first(self, step):
        import torch._dynamo
        from torch._dynamo.utils import counters

        from irlens.frontends.dynamo.frontend import graph_break_notes

        error = None
        state = {name: b.detach().clone() for name, b in self.module.named_buffers()}
        for attempt in range(MAX_ATTEMPTS):
            if attempt:  # the regions before the failed one ran: their in-place updates (BatchNorm's) are undone
                _put_back(self.module, state)
            torch._dynamo.reset()
            counters.clear()
            self.compilations += 1
            compiler = _recording_compiler(self.options, self.hidden, self.no_gradient)
            compiled = torch.compile(self.module, backend=compiler, dynamic=False)
            codes: list[str] = []
            try:
                with inductor_code(codes.append):
                    result = step(compiled)
            except RegionFailed as e:
                error = e
                self.hidden.update({(e.graph, name): why for name, why in e.culprits.items()})
                self.no_gradient.update(no_gradient(e.error))  # its calls in the other graphs fail alike
                continue
            self.compiler, self.compiled, self.thunder_codes = compiler, compiled, codes
            self.graph_breaks = graph_break_notes(counters)
            return result
        raise RuntimeError(f"ThunderFX: a Thunder region still failed after {MAX_ATTEMPTS} compilations: {error}")

    @property
    def fallback_modules(self) -> list[list[str]]:
        """Per Dynamo graph, the modules Inductor generated for its fallback regions."""
        if self.compiler is None:
            return []
        return [[code for group in graph for code in group] for graph in self.compiler.fallback_codes]

    def regions(self) -> list[Region]:
        """Every region of every Dynamo graph, in the order the graphs run them."""
        if self.compiler is None:
            raise RuntimeError("ThunderFX: call it first")
        regions = []
        for index, info in enumerate(self.compiler.subgraph_infos):
            original = info.original_split_graph_module.split_graph_module
            jitted = iter(info.thunder_compiled_fns)
            mine = []
            for node in info.split_graph_module.graph.nodes:
                if node.op != "call_module":
                    continue
                submodule = "submod_" + node.target.split("_", 1)[1]  # the splitter's name before it compiled
                region = Region(index, node.target, unhide(getattr(original, submodule)))
                if region.thunder:
                    region.jitted = next(jitted)
                else:
                    region.reasons = self._reasons(index, region.module, info.split_reasons or [])
                mine.append(region)
            fallbacks, groups = [r for r in mine if not r.thunder], self.compiler.fallback_codes[index]
            if len(groups) == len(fallbacks):  # else (a region compiled to no module?) none is attributed
                for region, codes in zip(fallbacks, groups):
                    region.codes = codes
            regions += mine
        return regions

    def _reasons(self, graph: int, module: torch.fx.GraphModule, split_reasons: list) -> list[str]:
        """ThunderFX's split reasons for the region's nodes (irlens' own for the nodes it hid)."""
        reasons, mine = [], {}
        for node in module.graph.nodes:
            if (graph, node.name) in self.hidden:
                mine.setdefault(self.hidden[graph, node.name], []).append(node.name)
                continue
            for r in split_reasons:  # each names its node: "node with name: <name> and target: ..."
                if f"name: {node.name} and target" in (r.info or ""):
                    exception = f" ({r.exception.strip().splitlines()[0]})" if r.exception else ""
                    reasons.append(_ADDRESS.sub("", f"{r.reason_type.name.lower()}: {r.info}{exception}"))
        for why, names in mine.items():  # one line per reason irlens gave, naming its nodes
            shown = ", ".join(names[:4]) + (f", +{len(names) - 4} more" if len(names) > 4 else "")
            reasons.append(f"{why} [{plural(len(names), 'node')}: {shown}]")
        return list(dict.fromkeys(reasons)) or ["ThunderFX recorded no reason for its nodes"]


_ADDRESS = re.compile(r" at 0x[0-9a-f]+")  # a target's repr: the same reason reads the same in every run


def split_summary(regions: list[Region], graph_breaks: dict) -> dict:
    """What `notes["thunderfx"]` holds: the regions, and the counts a row's line gives."""
    return {"graphs": len({r.graph for r in regions}), "graph_breaks": graph_breaks.get("graph_breaks", 0),
            "thunder_regions": sum(r.thunder for r in regions),
            "inductor_regions": sum(not r.thunder for r in regions),
            "regions": [r.summary() for r in regions]}


def split_line(summary: dict) -> str:
    """One line: how many regions Thunder took, and why the others fell back."""
    taken, fell = summary["thunder_regions"], summary["inductor_regions"]
    total = taken + fell
    reasons = list(dict.fromkeys(reason for r in summary["regions"] for reason in r.get("reasons", [])))
    why = "; ".join(_clip(reason) for reason in reasons[:2]) + (f"; +{len(reasons) - 2} more" if len(reasons) > 2 else "")
    if taken == 0:
        return f"Thunder took no region: all {total} fell back to Inductor ({why})"
    if fell == 0:
        return f"Thunder took all {plural(total, 'region')}"
    return f"Thunder took {taken} of {plural(total, 'region')}; {fell} fell back to Inductor ({why})"


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def split_table(summary: dict, workload: str) -> str:
    """The `thunderfx.splits` stage: every region, who took it, and why a fallback is one."""
    regions = summary["thunder_regions"] + summary["inductor_regions"]
    lines = [f"ThunderFX split {workload} into {plural(regions, 'region')} over "
             f"{plural(summary['graphs'], 'Dynamo graph')} ({plural(summary['graph_breaks'], 'graph break')}).",
             split_line(summary), "", f"{'region':<16} {'taken by':<9} {'ops':>4}  why it fell back"]
    for r in summary["regions"]:
        reasons = r.get("reasons") or [""]
        lines.append(f"{r['region']:<16} {r['taken_by']:<9} {r['ops']:>4}  {reasons[0]}")
        lines += [f"{'':<33}{reason}" for reason in reasons[1:]]
    return "\n".join(lines)
