"""A small compare document built from real irlens.core.ir objects: two backends drawing different
kernel boundaries over a tinyhead-like graph, plus the rows a report must explain (eager,
unavailable, failed). Used until (and beside) real backend rows."""
from __future__ import annotations

from irlens.core.ir import Graph, Kernel, Node, TensorMeta


def _t(name, *shape):
    return TensorMeta(name, tuple(shape), "float32")


def _n(id, op, inputs, out, **attrs):
    return Node(id, op, list(inputs), [out], attrs)


def torch_graph() -> Graph:
    """softmax(x @ w.T + b) as AOTAutograd + decomposition would give it."""
    nodes = [
        _n("t", "permute", ["w"], _t("t", 64, 600), perm=[1, 0]),
        _n("mm", "matmul", ["x", "t"], _t("mm", 16, 600)),
        _n("add", "add", ["mm", "b"], _t("add", 16, 600)),
        _n("max", "amax", ["add"], _t("max", 16, 1), dims=[1], keepdim=True),
        _n("sub", "sub", ["add", "max"], _t("sub", 16, 600)),
        _n("exp", "exp", ["sub"], _t("exp", 16, 600)),
        _n("sum", "sum", ["exp"], _t("sum", 16, 1), dims=[1], keepdim=True),
        _n("div", "div", ["exp", "sum"], _t("div", 16, 600)),
    ]
    return Graph("tinyhead", "dynamo", "aot.forward", "primitive", [_t("w", 600, 64), _t("b", 600), _t("x", 16, 64)],
                 nodes, ["div"])


def jax_graph() -> Graph:
    nodes = [
        _n("a", "permute", ["w"], _t("a", 64, 600), perm=[1, 0]),
        _n("b", "matmul", ["x", "a"], _t("b", 16, 600)),
        _n("c", "broadcast", ["bias"], _t("c", 1, 600), shape=[1, 600], broadcast_dims=[1]),
        _n("d", "add", ["b", "c"], _t("d", 16, 600)),
        _n("e", "amax", ["d"], _t("e", 16), dims=[1], keepdim=False),
        _n("g", "broadcast", ["e"], _t("g", 16, 1), shape=[16, 1], broadcast_dims=[0]),
        _n("i", "sub", ["d", "g"], _t("i", 16, 600)),
        _n("j", "exp", ["i"], _t("j", 16, 600)),
        _n("k", "sum", ["j"], _t("k", 16), dims=[1], keepdim=False),
        _n("l", "broadcast", ["k"], _t("l", 16, 1), shape=[16, 1], broadcast_dims=[0]),
        _n("m", "div", ["j", "l"], _t("m", 16, 600)),
    ]
    return Graph("tinyhead", "jax", "jax.jaxpr", "primitive", [_t("bias", 600), _t("w", 600, 64), _t("x", 16, 64)],
                 nodes, ["m"])


def inductor_kernels() -> list[Kernel]:
    return [Kernel("inductor", "extern_kernels.mm", "matmul", ["mm"], "aot.forward", time_us=3.0, bytes=200_000),
            Kernel("inductor", "cpp_fused__softmax_add_0", "fused", ["add", "max", "sub", "exp", "sum", "div"],
                   "aot.forward", time_us=5.0, bytes=80_000, source='extern "C" void kernel(...) { /* C++ */ }')]


def xla_kernels() -> list[Kernel]:
    """XLA splits the softmax over two fusions; the second recomputes the bias add."""
    return [Kernel("xla", "dot.1", "matmul", ["a", "b"], "jax.jaxpr"),
            Kernel("xla", "fusion.1", "fused", ["c", "d", "e", "g"], "jax.jaxpr"),
            Kernel("xla", "fusion.2", "fused", ["i", "j", "k", "l", "m"], "jax.jaxpr", recompute=["d"])]


def synthetic_document() -> dict:
    tg, jg = torch_graph(), jax_graph()
    inductor, xla = inductor_kernels(), xla_kernels()
    errors = {"out0": 2.1e-7}

    def row(backend, frontend, status="ok", kernels=(), graphs=(), reason="", per_result=None):
        return {"workload": "tinyhead", "mode": "fwd", "frontend": frontend, "backend": backend, "status": status,
                "reason": reason, "max_rel_err": max((per_result or {}).values(), default=None), "tol": 1e-4,
                "compile_s": 1.5 if status == "ok" else None, "run_us": 42.0 if status == "ok" else None,
                "kernels": [k.to_json() for k in kernels], "per_result": per_result or {},
                "graphs": {g.stage: g.to_json() for g in graphs}}

    rows = [row("eager", None, per_result={"out0": 1.1e-7}),
            row("inductor", "dynamo", kernels=inductor, graphs=[tg], per_result=errors),
            row("xla", "jax", kernels=xla, graphs=[jg], per_result={"out0": 3.0e-4}, status="mismatch",
                reason="out0: rel err 3.00e-04 > tol 1e-04"),
            row("nvfuser", "thunder", status="unavailable", reason="nvFuser needs CUDA; no GPU here"),
            row("thunder+torchcompile", "thunder", status="failed", reason="run: RuntimeError: boom\nmore detail")]
    return {"device": "cpu", "device_name": "test CPU", "preset": "tiny",
            "versions": {"python": "3.11", "torch": "2.13.0"}, "rows": rows}
