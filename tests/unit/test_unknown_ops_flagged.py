"""An op the common view has no meaning for never looks explained: coverage counts it as
uncovered, the compare table names it, and the fusion map draws it flagged."""
from xml.etree import ElementTree

from irlens.core.ir import Graph, Kernel, Node, TensorMeta
from irlens.matrix import Document, Row
from irlens.matrix.cell import kernel_coverage
from irlens.matrix.records import KernelRecord
from irlens.matrix.table import format_table
from irlens.reporting.fusion_map import UNKNOWN_STROKE, build_fusion_map, render_svg


def _t(name, *shape):
    return TensorMeta(name, tuple(shape), "float32")


def graph() -> Graph:
    nodes = [Node("mul", "mul", ["x", "x"], [_t("mul", 4, 8)]),
             Node("weird", "unknown:aten.special_thing", ["mul"], [_t("weird", 4, 8)], native="aten.special_thing.default"),
             Node("exp", "exp", ["weird"], [_t("exp", 4, 8)])]
    return Graph("w", "dynamo", "aot.forward", "primitive", [_t("x", 4, 8)], nodes, ["exp"])


def test_an_unknown_node_no_kernel_covers_is_uncovered():
    g = graph()
    kernels = [Kernel("inductor", "k0", "fused", ["mul", "exp"], "aot.forward")]
    cov = kernel_coverage(kernels, [g])
    assert cov.uncovered == ["aot.forward:weird"]
    assert cov.unknown == ["aot.forward:weird (aten.special_thing.default)"]
    assert cov.compute_nodes == 3
    # covered by a kernel, it is no longer uncovered, but still listed as unknown
    cov = kernel_coverage([Kernel("inductor", "k0", "fused", ["mul", "weird", "exp"], "aot.forward")], [g])
    assert cov.uncovered == [] and len(cov.unknown) == 1


def test_an_unknown_custom_call_is_counted_by_its_target():
    call = Node("cc", "unknown:custom-call", ["x"], [_t("cc", 4, 8)], {"reason": "custom call __cudnn$fmha: no canonical op",
                                                                  "target": "__cudnn$fmha"}, native="custom-call")
    g = Graph("w", "jax", "xla.hlo", "primitive", [_t("x", 4, 8)], [call], ["cc"])
    kernels = [Kernel("xla", "cc", "library", ["cc"], "xla.hlo")]
    assert kernel_coverage(kernels, [g]).unknown == ["xla.hlo:cc (custom-call __cudnn$fmha)"]


def _row() -> Row:
    g = graph()
    kernels = [Kernel("inductor", "k0", "fused", ["mul", "exp"], "aot.forward")]
    return Row(workload="w", mode="fwd", backend="inductor", frontend="dynamo", status="ok", tol=1e-4,
               max_rel_err=1e-7, kernels=[KernelRecord.of(k) for k in kernels], kernel_count=1,
               graphs={g.stage: g}, coverage=kernel_coverage(kernels, [g]))


def test_the_compare_table_names_unknown_ops():
    text = format_table(Document("compare", [_row()], "cpu"))
    assert ("inductor (w/fwd): 1 node with no meaning in the common view, counted as uncovered: "
            "aten.special_thing.default") in text


def test_the_fusion_map_draws_unknown_ops_flagged():
    fmap = build_fusion_map("w", "fwd", [_row()])
    panel = fmap.columns[0].panels[0]
    weird = next(m for m in panel.nodes if m.id == "weird")
    assert weird.unknown and weird.compute and not weird.kernels
    assert "no meaning in the common view" in weird.label
    svg = ElementTree.fromstring(render_svg(fmap))
    ns = "{http://www.w3.org/2000/svg}"
    node = next(e for e in svg.iter(f"{ns}g") if e.get("data-node") == "weird")
    assert node.find(f"{ns}rect").get("stroke") == UNKNOWN_STROKE
    assert "1 unknown op (red: no meaning)" in render_svg(fmap)
