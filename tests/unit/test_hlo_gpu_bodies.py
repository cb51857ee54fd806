"""Bodies XLA's GPU passes rewrite, from HLO text written as those passes write it
(irlens/frontends/jax/hlo/gpu_bodies.py): float normalization's bf16 round trips in a max window,
an argmax and a sort comparator, and the stable-sort expander's tie-break on an iota. Each mapped
form is interpreted against a torch computation of the same thing; each near miss stays unknown."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from irlens.core.interpret import interpret
from irlens.frontends.jax.hlo.walk import hlo_to_graph


def _graph(text: str):
    import jaxlib._hlo as hlo_lib

    return hlo_to_graph(hlo_lib.hlo_module_from_text("HloModule m\n\n" + text), name="m")


def _unknown(g) -> list[str]:
    return [f"{n.op}: {n.attrs.get('reason')}" for n in g.nodes if n.is_unknown]


def _near_ties(shape, seed: int) -> torch.Tensor:
    """float32 values, half of them bf16 values and half a little above one (rounded, those are
    the bf16 value again)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g).bfloat16().float()
    return torch.where(torch.rand(*shape, generator=g) < 0.5, x, x * (1 + 2.0 ** -12)).double()


def _pairs(rows: int, pairs: int, seed: int) -> torch.Tensor:
    """[rows, 2 * pairs] positive float32 values: a bf16 value b, then b a little larger (b once
    rounded), per pair. Ordered as float32, each pair's second comes first; rounded, they tie."""
    b = (torch.rand(rows, pairs, generator=torch.Generator().manual_seed(seed)) + 0.5).bfloat16().float()
    return torch.stack([b, b * (1 + 2.0 ** -12)], dim=2).reshape(rows, 2 * pairs).double()


# float normalization's clone of a max body: each parameter rounded to bf16, the max rounded back
_MAX_BODY = """%max_rounded (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %a.bf16 = bf16[] convert(%a)
  %b.bf16 = bf16[] convert(%b)
  %max = bf16[] maximum(%a.bf16, %b.bf16)
  ROOT %max.f32 = f32[] convert(%max)
}
"""


def _pool(body: str, name: str = "max_rounded") -> str:
    return body + f"""
ENTRY %main (x: f32[2,6,6,3]) -> f32[2,3,3,3] {{
  %x = f32[2,6,6,3]{{3,2,1,0}} parameter(0)
  %low = bf16[] constant(-inf)
  %init = f32[] convert(%low)
  ROOT %pool = f32[2,3,3,3]{{3,2,1,0}} reduce-window(%x, %init),
    window={{size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}}, to_apply=%{name}
}}
"""


def test_a_window_body_rounding_through_bf16_is_the_bf16_window():
    """timm ResNet's bf16 max-pool as XLA runs it on a GPU: f32 operands, a body that rounds to
    bf16 and back. It is the max window of x rounded to bf16, converted up (also where x is not
    bf16: each step rounds)."""
    g = _graph(_pool(_MAX_BODY))
    assert not _unknown(g), _unknown(g)
    x = _near_ties((2, 6, 6, 3), 0)
    (got,) = interpret(g, [x])
    want = F.max_pool2d(x.float().bfloat16().permute(0, 3, 1, 2).double(), 3, 2, 1).permute(0, 2, 3, 1)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert not torch.equal(got, F.max_pool2d(x.permute(0, 3, 1, 2), 3, 2, 1).permute(0, 2, 3, 1))  # it rounds


def test_window_bodies_near_the_rounded_max_stay_unknown():
    """A parameter read also unrounded, a round trip through FP8 (not monotone: overflow is NaN),
    and an add of the rounded max to the wide parameter stay unknown."""
    wide_read = _MAX_BODY.replace("ROOT %max.f32 = f32[] convert(%max)",
                                  "%max.f32 = f32[] convert(%max)\n  ROOT %sum = f32[] add(%max.f32, %a)")
    fp8 = _MAX_BODY.replace("bf16[]", "f8e4m3fn[]")
    for body in (wide_read, fp8):
        (node,) = [n for n in _graph(_pool(body)).nodes if n.is_unknown]
        assert node.op == "unknown:reduce-window" and "window body" in node.attrs["reason"], node.attrs


# the stable-sort expander's comparator: cmp(a, b) == cmp(b, a) ? i_a < i_b : cmp(a, b)
def _comparator(dtype: str, direction: str, rounded: bool, tie: str = "LT") -> str:
    a, b = ("%a.bf16", "%b.bf16") if rounded else ("%a", "%b")
    rounding = "  %a.bf16 = bf16[] convert(%a)\n  %b.bf16 = bf16[] convert(%b)\n" if rounded else ""
    return f"""%cmp (a: {dtype}[], b: {dtype}[], i: s32[], j: s32[]) -> pred[] {{
  %a = {dtype}[] parameter(0)
  %b = {dtype}[] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
{rounding}  %cmp = pred[] compare({a}, {b}), direction={direction}
  %cmp.swapped = pred[] compare({b}, {a}), direction={direction}
  %same = pred[] compare(%cmp, %cmp.swapped), direction=EQ
  %tie = pred[] compare(%i, %j), direction={tie}
  ROOT %stable = pred[] select(%same, %tie, %cmp)
}}
"""


def _sort(comparator: str, dtype: str) -> str:
    return comparator + f"""
ENTRY %main (x: {dtype}[4,16]) -> ({dtype}[4,16], s32[4,16]) {{
  %x = {dtype}[4,16]{{1,0}} parameter(0)
  %iota = s32[4,16]{{1,0}} iota(), iota_dimension=1
  ROOT %sort = ({dtype}[4,16]{{1,0}}, s32[4,16]{{1,0}}) sort(%x, %iota), dimensions={{1}}, is_stable=false,
    to_apply=%cmp
}}
"""


def test_a_tie_break_on_an_iota_is_a_stable_sort():
    """jax's argsort of ints on a GPU (hf_mixtral's routing): the expander's tie-break on the iota
    makes it a stable sort even where is_stable is false; many equal keys."""
    g = _graph(_sort(_comparator("s32", "LT", rounded=False), "s32"))
    assert not _unknown(g), _unknown(g)
    x = torch.randint(0, 4, (4, 16), generator=torch.Generator().manual_seed(1))
    values, order = interpret(g, [x])
    want = torch.sort(x, dim=1, stable=True)
    assert torch.equal(values.long(), want.values) and torch.equal(order.long(), want.indices)


def test_a_comparator_rounding_through_bf16_sorts_by_the_rounded_keys():
    """A bf16 top-k's sort run in f32: descending by the keys rounded to bf16, ties (equal once
    rounded) in index order, the f32 values themselves permuted."""
    g = _graph(_sort(_comparator("f32", "GT", rounded=True), "f32"))
    assert not _unknown(g), _unknown(g)
    x = _pairs(4, 8, 2)
    values, order = interpret(g, [x])
    want = torch.sort(x.float().bfloat16(), dim=1, descending=True, stable=True).indices
    assert torch.equal(order.long(), want)
    torch.testing.assert_close(values, torch.gather(x, 1, want), rtol=0, atol=0)
    assert not torch.equal(order.long(), torch.sort(x, dim=1, descending=True, stable=True).indices)


def test_tie_breaks_that_are_not_the_index_order_stay_unknown():
    """Ties broken to the higher index, and a tie-break on an operand that is not an iota."""
    g = _graph(_sort(_comparator("s32", "LT", rounded=False, tie="GT"), "s32"))
    assert [n.op for n in g.nodes if n.is_unknown] == ["unknown:sort"]
    not_iota = _comparator("s32", "LT", rounded=False) + """
ENTRY %main (x: s32[16], y: s32[16]) -> (s32[16], s32[16]) {
  %x = s32[16]{0} parameter(0)
  %y = s32[16]{0} parameter(1)
  ROOT %sort = (s32[16]{0}, s32[16]{0}) sort(%x, %y), dimensions={0}, is_stable=false, to_apply=%cmp
}
"""
    assert [n.op for n in _graph(not_iota).nodes if n.is_unknown] == ["unknown:sort"]


# jax's argmax body after float normalization: the values rounded to bf16, the max rounded back
_ARGMAX = """%argmax (a: f32[], i: s32[], b: f32[], j: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %i = s32[] parameter(1)
  %b = f32[] parameter(2)
  %j = s32[] parameter(3)
  %a.bf16 = bf16[] convert(%a)
  %b.bf16 = bf16[] convert(%b)
  %gt = pred[] compare(%a.bf16, %b.bf16), direction=GT
  %nan = pred[] compare(%a.bf16, %a.bf16), direction=NE
  %pick = pred[] or(%gt, %nan)
  %eq = pred[] compare(%a.bf16, %b.bf16), direction=EQ
  %lower = pred[] compare(%i, %j), direction=LT
  %tie = pred[] and(%eq, %lower)
  %pick.index = pred[] or(%pick, %tie)
  %max = bf16[] select(%pick, %a.bf16, %b.bf16)
  %index = s32[] select(%pick.index, %i, %j)
  %max.f32 = f32[] convert(%max)
  ROOT %out = (f32[], s32[]) tuple(%max.f32, %index)
}

ENTRY %main (x: f32[6,10]) -> (f32[6], s32[6]) {
  %x = f32[6,10]{1,0} parameter(0)
  %iota = s32[6,10]{1,0} iota(), iota_dimension=1
  %low = bf16[] constant(-inf)
  %init = f32[] convert(%low)
  %zero = s32[] constant(0)
  ROOT %r = (f32[6]{0}, s32[6]{0}) reduce(%x, %iota, %init, %zero), dimensions={1}, to_apply=%argmax
}
"""


def test_an_argmax_rounding_through_bf16_is_the_argmax_of_the_rounded_values():
    """The max-pool index of a bf16 ResNet's fwd+bwd as XLA runs it on a GPU: the max and the
    first index of the values rounded to bf16 (two values equal once rounded: the first wins)."""
    g = _graph(_ARGMAX)
    assert not _unknown(g), _unknown(g)
    x = _pairs(6, 5, 3)
    best, where = interpret(g, [x])
    rounded = x.float().bfloat16().double()
    torch.testing.assert_close(best, rounded.amax(1), rtol=0, atol=0)
    assert torch.equal(where.long(), torch.argmax(rounded, 1))  # torch's argmax: the first maximum
    assert not torch.equal(where.long(), torch.argmax(x, 1))


def test_argmax_bodies_near_the_rounded_one_stay_unknown():
    """Ties to the higher index, and an init other than -inf, stay unknown."""
    for text in (_ARGMAX.replace("compare(%i, %j), direction=LT", "compare(%i, %j), direction=GT"),
                 _ARGMAX.replace("constant(-inf)", "constant(0)")):
        assert [n.op for n in _graph(text).nodes if n.is_unknown] == ["unknown:reduce"]


# the form the clone takes once simplified (jax 0.10's XLA on the CPU writes it): computed in f32,
# each float result rounded through bf16
_MAX_ROUNDED_RESULT = """%max_rounded (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %max = f32[] maximum(%a, %b)
  %max.bf16 = bf16[] convert(%max)
  ROOT %max.f32 = f32[] convert(%max.bf16)
}
"""


def test_a_window_body_rounding_its_result_is_the_window_rounded():
    """max(r(a), r(b)) = r(max(a, b)) for rounding r (monotone): the f32 max window rounded to
    bf16 and back, whatever x holds. An add rounded so stays unknown (each step rounds a sum)."""
    g = _graph(_pool(_MAX_ROUNDED_RESULT))
    assert not _unknown(g), _unknown(g)
    x = _near_ties((2, 6, 6, 3), 4)
    (got,) = interpret(g, [x])
    want = F.max_pool2d(x.permute(0, 3, 1, 2), 3, 2, 1).permute(0, 2, 3, 1).float().bfloat16().double()
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    added = _MAX_ROUNDED_RESULT.replace("maximum(%a, %b)", "add(%a, %b)")
    assert [n.op for n in _graph(_pool(added)).nodes if n.is_unknown] == ["unknown:reduce-window"]


def _argmax_rounded_result(widened: bool) -> str:
    body = _ARGMAX[:_ARGMAX.index("ENTRY")]
    for narrow, wide in (("%a.bf16", "%a"), ("%b.bf16", "%b")):
        body = body.replace(narrow, wide)
    body = "\n".join(line for line in body.splitlines() if "= bf16[] convert(%" not in line or "%max" in line)
    body = body.replace("%max = bf16[] select", "%max.wide = f32[] select").replace(
        "%max.f32 = f32[] convert(%max)", "%max = bf16[] convert(%max.wide)\n  %max.f32 = f32[] convert(%max)")
    x = "%x = bf16[6,10]{1,0} parameter(0)\n  %xf = f32[6,10]{1,0} convert(%x)" if widened else \
        "%xf = f32[6,10]{1,0} parameter(0)"
    return body + f"""
ENTRY %main (x: {"bf16" if widened else "f32"}[6,10]) -> (f32[6], s32[6]) {{
  {x}
  %iota = s32[6,10]{{1,0}} iota(), iota_dimension=1
  %init = f32[] constant(-inf)
  %zero = s32[] constant(0)
  ROOT %r = (f32[6]{{0}}, s32[6]{{0}}) reduce(%xf, %iota, %init, %zero), dimensions={{1}}, to_apply=%argmax
}}
"""


def test_an_argmax_rounding_its_result_is_the_argmax_of_values_bf16_holds():
    """jax's argmax computed in f32 with the max rounded through bf16: on values converted up from
    bf16 the rounding changes nothing (it is the argmax); on other f32 values which element wins
    depends on the reduction order, so it stays unknown."""
    g = _graph(_argmax_rounded_result(widened=True))
    assert not _unknown(g), _unknown(g)
    x = _pairs(6, 5, 5).float().bfloat16()
    best, where = interpret(g, [x])
    torch.testing.assert_close(best, x.double().amax(1), rtol=0, atol=0)
    assert torch.equal(where.long(), torch.argmax(x.double(), 1))
    assert [n.op for n in _graph(_argmax_rounded_result(widened=False)).nodes if n.is_unknown] == ["unknown:reduce"]


# XLA's GPU top-k of bf16 values as an s32 sort (the captured module, metadata left out): each value
# read as f32 bits, made order-preserving as a signed int, its low 16 bits the index (flipped: the
# lower index wins a tie); after the descending sort the low bits give the index back and the high
# bits the value. The bitcasts between f32 and s32 are plain `bitcast`s after its passes.
_PACKED_TOP_K = """%gt (a: s32[], b: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GT
}

%pack (x: bf16[8,32]) -> s32[8,32] {
  %x = bf16[8,32]{1,0} parameter(0)
  %f = f32[8,32]{1,0} convert(%x)
  %bits = s32[8,32]{1,0} bitcast(%f)
  %max = s32[8,32]{1,0} broadcast(s32[] constant(2147483647)), dimensions={}
  %magnitude = s32[8,32]{1,0} and(%bits, %max)
  %c31 = s32[8,32]{1,0} broadcast(s32[] constant(31)), dimensions={}
  %sign = s32[8,32]{1,0} shift-right-arithmetic(%bits, %c31)
  %ordered = s32[8,32]{1,0} xor(%magnitude, %sign)
  %low = s32[8,32]{1,0} broadcast(s32[] constant(65535)), dimensions={}
  %room = s32[8,32]{1,0} or(%ordered, %low)
  %iota = s32[8,32]{1,0} iota(), iota_dimension=1
  ROOT %packed = s32[8,32]{1,0} xor(%room, %iota)
}

%unpack (sorted: s32[8,32]) -> (s32[8,4], bf16[8,4]) {
  %sorted = s32[8,32]{1,0} parameter(0)
  %top = s32[8,4]{1,0} slice(%sorted), slice={[0:8], [0:4]}
  %low = s32[8,4]{1,0} broadcast(s32[] constant(65535)), dimensions={}
  %flipped = s32[8,4]{1,0} xor(%top, %low)
  %index = s32[8,4]{1,0} and(%flipped, %low)
  %max = s32[8,4]{1,0} broadcast(s32[] constant(2147483647)), dimensions={}
  %magnitude = s32[8,4]{1,0} and(%top, %max)
  %c31 = s32[8,4]{1,0} broadcast(s32[] constant(31)), dimensions={}
  %sign = s32[8,4]{1,0} shift-right-arithmetic(%top, %c31)
  %ordered = s32[8,4]{1,0} xor(%magnitude, %sign)
  %mask = s32[8,4]{1,0} broadcast(s32[] constant(-65536)), dimensions={}
  %high = s32[8,4]{1,0} and(%ordered, %mask)
  %f = f32[8,4]{1,0} bitcast(%high)
  %value = bf16[8,4]{1,0} convert(%f)
  ROOT %t = (s32[8,4]{1,0}, bf16[8,4]{1,0}) tuple(%index, %value)
}

ENTRY %main (x: bf16[8,32]) -> (bf16[8,4], s32[8,4]) {
  %x = bf16[8,32]{1,0} parameter(0)
  %packed = s32[8,32]{1,0} fusion(%x), kind=kLoop, calls=%pack
  %sorted = s32[8,32]{1,0} sort(%packed), dimensions={1}, to_apply=%gt
  %both = (s32[8,4]{1,0}, bf16[8,4]{1,0}) fusion(%sorted), kind=kLoop, calls=%unpack
  %value = bf16[8,4]{1,0} get-tuple-element(%both), index=1
  %index = s32[8,4]{1,0} get-tuple-element(%both), index=0
  ROOT %r = (bf16[8,4]{1,0}, s32[8,4]{1,0}) tuple(%value, %index)
}
"""


def test_a_packed_bf16_top_k_reads_its_bitcasts_bits():
    """A bitcast from f32 to s32 reinterprets the bits (it was read as a reshape, and the float64
    interpretation then met a bitwise and on floats): the top 4 of bf16 values with ties and both
    signs, the lower index first among ties, as a stable descending sort gives them."""
    g = _graph(_PACKED_TOP_K)
    assert not _unknown(g) and "bitcast" in g.op_counts(), _unknown(g)
    gen = torch.Generator().manual_seed(0)
    x = (torch.randint(-6, 7, (8, 32), generator=gen) / 4).bfloat16()  # few levels: many ties
    x = torch.where(x == 0, torch.tensor(0.5, dtype=torch.bfloat16), x)  # no zeros: XLA orders -0 below +0
    values, index = interpret(g, [x.double()])
    want_values, want_index = torch.sort(x.float(), dim=1, descending=True, stable=True)
    torch.testing.assert_close(values, want_values[:, :4].double(), rtol=0, atol=0)
    assert torch.equal(index.long(), want_index[:, :4])


def test_bitcasts_it_cannot_read_exactly_stay_unknown():
    """Between element types of different widths; of a literal to another type (its bits, not its value)."""
    g = _graph("""ENTRY %main (x: f32[2,4]) -> s16[2,8] {
  %x = f32[2,4]{1,0} parameter(0)
  ROOT %y = s16[2,8]{1,0} bitcast(%x)
}
""")
    assert [n.attrs["reason"] for n in g.nodes if n.is_unknown] == \
        ["a bitcast from float32 to int16, element types of different widths"]
    g = _graph("""ENTRY %main (x: f32[]) -> s32[] {
  %x = f32[] parameter(0)
  %one = f32[] constant(1)
  %bits = s32[] bitcast(%one)
  %y = s32[] bitcast(%x)
  ROOT %t = s32[] add(%bits, %y)
}
""")
    assert [n.attrs["reason"] for n in g.nodes if n.is_unknown] == \
        ["a bitcast of a literal from float32 to int32 (its bits, not its value)"]


# XLA's CPU float normalization of a bf16 scatter-add (jax's `x.at[i].add(u)`): the scatter runs in
# f32, on operands converted up (the updates' then bitcast to the scatter's shape), its combiner
# adding in f32 and rounding the sum through bf16
_SCATTER_ROUNDED = """%add_rounded (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %sum = f32[] add(%a, %b)
  %sum.bf16 = bf16[] convert(%sum)
  ROOT %sum.f32 = f32[] convert(%sum.bf16)
}

%updates_up (u: bf16[4]) -> f32[4,1] {
  %u = bf16[4]{0} parameter(0)
  %up = f32[4]{0} convert(%u)
  ROOT %shaped = f32[4,1]{1,0} bitcast(%up)
}

ENTRY %main (x: OPERAND[10], i: s32[4,1], u: bf16[4]) -> f32[10] {
  %x = OPERAND[10]{0} parameter(0)
  %xf = f32[10]{0} convert(%x)
  %i = s32[4,1]{1,0} parameter(1)
  %u = bf16[4]{0} parameter(2)
  %uf = f32[4,1]{1,0} fusion(%u), kind=kLoop, calls=%updates_up
  ROOT %s = f32[10]{0} scatter(%xf, %i, %uf), update_window_dims={1}, inserted_window_dims={},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add_rounded
}
"""


def test_a_scatter_combiner_rounding_through_bf16_is_the_bf16_scatter():
    """On the CPU a bf16 scatter-add is an f32 scatter whose adds round through bf16: on operands
    and updates converted up from bf16 (through a bitcast too), the bf16 scatter-add, converted up.
    An f32 operand (not a bf16 value converted up) keeps it unknown."""
    g = _graph(_SCATTER_ROUNDED.replace("OPERAND", "bf16"))
    assert not _unknown(g), _unknown(g)
    assert [n.outputs[0].dtype for n in g.nodes if n.op == "index_add"] == ["bfloat16"]  # adds in bf16
    x = torch.randn(10, generator=torch.Generator().manual_seed(6)).bfloat16().double()
    u = torch.tensor([0.5, -1.25, 2.0, 0.75], dtype=torch.float64)
    i = torch.tensor([[1], [3], [7], [9]], dtype=torch.int32)
    (got,) = interpret(g, [x, i, u])
    want = x.clone().index_put_((i[:, 0].long(),), u, accumulate=True)  # the reference interprets in float64
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    zeros = _graph(_SCATTER_ROUNDED.replace("OPERAND", "bf16").replace(  # into zeros: bf16 holds them
        "%xf = f32[10]{0} convert(%x)", "%zero = f32[] constant(0)\n  %xf = f32[10]{0} broadcast(%zero), dimensions={}"))
    assert not _unknown(zeros), _unknown(zeros)
    (got,) = interpret(zeros, [x, i, u])
    torch.testing.assert_close(got, torch.zeros(10, dtype=torch.float64).index_put_((i[:, 0].long(),), u), rtol=0, atol=0)
    for operand in ("negate(%x)", "broadcast(%third), dimensions={}"):  # f32 values bf16 does not hold
        wide = _graph(_SCATTER_ROUNDED.replace("OPERAND", "f32").replace(
            "%xf = f32[10]{0} convert(%x)", f"%third = f32[] constant(0.333)\n  %xf = f32[10]{{0}} {operand}"))
        assert [n.op for n in wide.nodes if n.is_unknown] == ["unknown:scatter"], operand


# XLA's CPU bf16 scatter-add of one whole window as a map of the combiner (its add rounded through bf16)
_MAP_ROUNDED = """%add_rounded (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %sum = BODY
  %sum.bf16 = bf16[] convert(%sum)
  ROOT %sum.f32 = f32[] convert(%sum.bf16)
}

ENTRY %main (x: f32[3,2], y: f32[3,2]) -> f32[3,2] {
  %x = f32[3,2]{1,0} parameter(0)
  %y = f32[3,2]{1,0} parameter(1)
  ROOT %m = f32[3,2]{1,0} map(%x, %y), dimensions={0,1}, to_apply=%add_rounded
}
"""


def test_a_map_is_its_body_on_the_whole_operands():
    """map(x, y) of `f32(bf16(x + y))` is that formula on the tensors; a body of an op that is not
    elementwise (a comparison's direction, say) stays unknown."""
    g = _graph(_MAP_ROUNDED.replace("BODY", "f32[] add(%a, %b)"))
    assert not _unknown(g), _unknown(g)
    assert [n.op for n in g.nodes] == ["add", "convert", "convert"]
    assert [n.outputs[0].dtype for n in g.nodes] == ["float32", "bfloat16", "float32"]
    x, y = _near_ties((3, 2), 7), _near_ties((3, 2), 8)
    (got,) = interpret(g, [x, y])
    torch.testing.assert_close(got, (x + y).float().bfloat16().double(), rtol=0, atol=0)
    shifted = _graph(_MAP_ROUNDED.replace("BODY", "f32[] add(%a, %one)").replace(
        "  %sum = ", "  %one = f32[] constant(1.5)\n  %sum = "))  # a scalar constant in the body
    assert not _unknown(shifted), _unknown(shifted)
    torch.testing.assert_close(interpret(shifted, [x, y])[0], (x + 1.5).float().bfloat16().double(), rtol=0, atol=0)
    less = _graph(_MAP_ROUNDED.replace("BODY", "pred[] compare(%a, %b), direction=LT"))
    constants = _graph(_MAP_ROUNDED.replace("BODY", "f32[] add(%one, %one)").replace(
        "  %sum = ", "  %one = f32[] constant(1.5)\n  %sum = "))  # computes on constants alone
    assert [n.op for g in (less, constants) for n in g.nodes if n.is_unknown] == ["unknown:map"] * 2
