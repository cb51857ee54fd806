"""The FX adapter's name tables against the canonical ops' meanings.

Statically: every entry names a canonical op and has a converter. Numerically: OpInfo's
samples (every sample, not just the first: they vary the arguments: rounding modes, decimals,
alpha, dtypes, dims) traced to ATen by make_fx, normalized, and run by the float64 interpreter
at both levels must give eager torch's float64 values: a converter maps an argument, or the
call goes to torch's decomposition, never dropped. A fixed slice runs in CI; IRLENS_FULL_OPINFO=1
runs every op OpInfo has (float32; integer samples for bitwise ops)."""
from __future__ import annotations

import os

import pytest
import torch
from torch.utils._pytree import tree_flatten

from irlens.core import ops
from irlens.core.interpret import interpret
from irlens.frontends.dynamo import call, fx, names
from irlens.frontends.dynamo.converters.library import library_call

from tests.support.opinfo_samples import sample_function

op_db = pytest.importorskip("torch.testing._internal.common_methods_invocations").op_db


def test_every_table_entry_names_a_canonical_op_with_a_converter():
    for table in (names.TORCH_NAMES, names.ATEN_NAMES):
        for key, op in table.items():
            assert op in ops.OPS, key
            assert call.BY_KEY.get(key) or call.BY_OP.get(op), f"{key} -> {op}: no converter"
    for overload, op in names.FROM_ATEN.items():
        assert call.BY_OP[op] is library_call and ops.OPS[op].aten is overload


# custom-op namespaces a library registers when one of its modules is imported
LIBRARY_OPS = {"transformers": "transformers.integrations.moe"}


def test_every_aten_entry_is_an_op_torch_has():
    import importlib

    import torch._inductor.inductor_prims  # noqa: F401  (registers prims.prepare_softmax_online)

    for key in names.ATEN_NAMES:
        ns, name = key.split(".", 1)
        if ns in LIBRARY_OPS:
            try:
                importlib.import_module(LIBRARY_OPS[ns])
            except ImportError:
                continue  # the library is not installed: its ops cannot reach a graph either
        assert hasattr(getattr(torch.ops, ns), name), key


SLICE = (
    "add sub mul div true_divide floor_divide remainder fmod pow round clamp where sum mean var std prod amax "
    "argmax argmin cumsum softmax log_softmax matmul addmm baddbmm addbmm bmm reshape view permute transpose expand "
    "cat stack split chunk narrow select index_select gather scatter scatter_add index_add index_put "
    "take_along_dim masked_fill tril triu flip repeat diagonal nn.functional.gelu nn.functional.silu "
    "nn.functional.relu nn.functional.elu nn.functional.leaky_relu nn.functional.hardtanh "
    "nn.functional.layer_norm nn.functional.embedding nn.functional.linear nn.functional.cross_entropy "
    "nn.functional.nll_loss nn.functional.pad nn.functional.conv2d nn.functional.max_pool2d "
    "nn.functional.avg_pool2d nn.functional.group_norm topk sort any all bitwise_and bitwise_or bitwise_xor "
    "bitwise_not logical_and isnan lerp addcmul logsumexp nan_to_num polygamma special.zeta linalg.cholesky_ex "
    "max min flatten unflatten squeeze unsqueeze"
).split()
INTEGER = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "remainder", "floor_divide", "div"}
MAX_SAMPLES = 8


def _ops():
    if os.environ.get("IRLENS_FULL_OPINFO"):  # less the ops whose values are random or uninitialized
        return [o for o in op_db if torch.float32 in o.supported_dtypes("cpu")
                and not o.name.startswith(("empty", "new_empty"))]
    # complex variants are out of scope; circular padding writes through views in make_fx's trace
    chosen = [o for o in op_db if o.name in SLICE and o.variant_test_name not in ("complex", "circular")]
    assert {o.name for o in chosen} == set(SLICE)
    return chosen


def _cases(op):
    dtypes = [torch.float32] + ([torch.int64] if op.name in INTEGER else [])
    for dtype in dtypes:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        for i, sample in enumerate(op.sample_inputs("cpu", dtype)):
            if i == MAX_SAMPLES:
                break
            yield dtype, i, sample


def _close(a, b) -> bool:
    """Equal up to the reference's precision: float64 where the sample had floating inputs; a
    creation op (linspace, windows) computes in its own float32."""
    if not isinstance(b, torch.Tensor):
        return True
    if a.shape != b.shape:
        return False
    if b.is_floating_point() or b.is_complex():
        rtol, atol = (1e-7, 1e-9) if b.dtype in (torch.float64, torch.complex128) else (1e-5, 1e-6)
        return torch.allclose(a.to(b.dtype), b, rtol=rtol, atol=atol, equal_nan=True)
    return torch.equal(a.to(b.dtype), b)


@pytest.mark.parametrize("op", _ops(), ids=lambda o: f"{o.name}.{o.variant_test_name}".rstrip("."))
def test_aten_graphs_mean_what_eager_torch_computes(op):
    from torch.fx.experimental.proxy_tensor import make_fx

    checked = 0
    for dtype, i, sample in _cases(op):
        fn, slots, leaves = sample_function(op, sample)
        tensors = [leaves[k] for k in slots]
        wide = [t.double() if t.is_floating_point() else t for t in tensors]
        try:
            want = tree_flatten(fn(*wide))[0]
            if not all(_close(a, b) for a, b in zip(tree_flatten(fn(*wide))[0], want)):
                continue  # random: no two runs agree
            gm = make_fx(torch.func.functionalize(fn), tracing_mode="fake")(*tensors)  # functional, as AOT's
        except Exception:  # noqa: BLE001  (a sample eager or tracing refuses is not the adapter's)
            continue
        for level in ("composite", "primitive"):
            g = fx.fx_to_graph(gm, name=op.name, frontend="dynamo", stage="aten", level=level)
            if g.unknown_ops():  # not in the vocabulary: allowed, never a wrong meaning
                continue
            if any(n.op in ("rand", "randperm") for n in g.nodes):  # seeded eager RNG: no common stream
                continue
            got = interpret(g, wide)
            assert len(got) == len(want), (dtype, i, level)
            bad = [j for j, (a, b) in enumerate(zip(got, want)) if not _close(a, b)]
            assert not bad, f"{op.name} sample {i} ({dtype}, {level}): outputs {bad} differ\n{g.to_text()}"
            checked += 1
    if not os.environ.get("IRLENS_FULL_OPINFO"):
        assert checked, f"{op.name}: no sample was checked"


# Core ATen ops whose results are not tensors: sizes, strides, contiguity, a scalar read out of a tensor. The
# adapter folds them into literals (and a data-dependent one has no static value to fold).
NOT_TENSOR_VALUED = {
    "sym_size", "sym_numel", "sym_stride", "sym_storage_offset", "sym_is_contiguous", "_local_scalar_dense",
}


# Core ATen ops with no value to give: resize_ changes a tensor's storage in place, what it grows
# is uninitialized; functionalization leaves it in no graph irlens reads, and it stays unknown.
NO_VALUE = {"resize_"}


def _core_aten() -> dict[str, list]:
    core: dict[str, list] = {}
    # every ATen op the dispatcher knows (dir(torch.ops.aten) lists only the packets loaded so far)
    names = {n.split("::", 1)[1].split(".")[0] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    for name in sorted(names):
        packet = getattr(torch.ops.aten, name, None)
        for overload in getattr(packet, "overloads", lambda: [])():
            op = getattr(packet, overload)
            if torch.Tag.core in op.tags:
                core.setdefault(name, []).append(op)
    return core


def test_core_aten_opset_is_covered():
    """Every overload of PyTorch's Core ATen opset names a canonical op (or folds away)."""
    core = _core_aten()
    assert len(core) >= 150  # 160 in torch 2.13: the enumeration works
    missing = []
    for name, overloads in sorted(core.items()):
        key = f"aten.{name}"
        if name in NOT_TENSOR_VALUED | NO_VALUE or key in names.ALIASES or key in names.BOOKKEEPING:
            continue
        for op in overloads:
            if op not in names.FROM_ATEN and key not in names.ATEN_NAMES:
                missing.append(str(op))
    assert not missing, missing
