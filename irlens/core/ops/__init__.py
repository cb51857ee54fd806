"""The canonical op vocabulary of the common view: each op declared once, with its rules beside it.

An op lives in the module of its family: its name, category, operand and attribute schema,
float64 meaning, and the rules registered for it (a composite's decomposition, lowerings to
JAX and nvFuser). `irlens.core.ops.core` says how to declare one; `python -m irlens.core.ops` lists them.

    elementwise  special  fft          arithmetic, comparisons, special functions, complex parts
    reduction                          sums, extrema, scans, arg-reductions, mean/var, selections
    linalg  spatial  window            matmul, factorizations and solves; convolution, pooling;
                                       XLA's reduce-window and select-and-scatter
    movement  indexing  creation       views and copies, casts; gathers and scatters; full, iota
    activation  attention  loss        composites (with rules): gelu ..., softmax, sdpa,
    normalization  nn                  cross_entropy, layer/batch/group norm, linear, embedding
    collectives                        the parallel path's functional collectives
    control                            while loops and conditionals: bodies and branches are graphs
                                       (Node.subgraphs)

Conventions every declaration follows, so graphs compare and execute alike:
- Node.inputs are value names or scalar literals (0.5 in 0.5 * x), in the declared operand
  order; an absent optional operand is None. Every other argument is an attr.
- Dims are non-negative: `dims` (list, None = all) for reductions, `dim` for one axis.
- Shapes, permutations and slice bounds are lists of ints (`shape`, `perm`, `start/limit/step`).
- Dtypes are canonical names (`float32`, `int64`, `bool`; irlens.core.ir.canonical_dtype).
- `primitive` graphs hold only PRIMITIVE_CATEGORIES; composites are expanded by
  `irlens.core.decompose` with their declared rules.

Adapters hold only name tables and argument normalization; every node they emit passes
`conform`: one off its op's schema becomes `unknown:<native>` (in strict mode, as the test
suite runs, it raises).
"""
from __future__ import annotations

from irlens.core.ops.core import (  # noqa: F401  (the public API)
    CAST,
    CATEGORIES,
    COLLECTIVE,
    COMPOSITE,
    COMPUTE_CATEGORIES,
    CREATION,
    DATA_MOVEMENT,
    ELEMENTWISE,
    MATMUL,
    OPS,
    OTHER,
    PRIMITIVE_CATEGORIES,
    REDUCTION,
    Attr,
    IndexBound,
    IndexOf,
    Op,
    SchemaError,
    category,
    check_vocabulary,
    composite,
    conform,
    declare,
    decomposition,
    index_bounds,
    is_compute,
    is_primitive,
    lowering,
    meaning,
    node_problem,
)
from irlens.core.ops import (  # noqa: F401,E402  (each declares its ops)
    activation, attention, collectives, control, creation, elementwise, fft, indexing, linalg, loss, movement, nn,
    normalization, reduction, spatial, special, window)
from irlens.core.ops.core import check_declarations as _check_declarations  # noqa: E402

_check_declarations()


def describe() -> str:
    """The vocabulary as text: one line per op, by family."""
    lines = []
    for family in sorted({op.family for op in OPS.values()}):
        lines.append(f"# {family}")
        for op in sorted((o for o in OPS.values() if o.family == family), key=lambda o: o.name):
            rules = [r for r, has in (("decomposition", op.decomposition), ("jax", "jax" in op.lowerings),
                                      ("nvfuser", "nvfuser" in op.lowerings)) if has]
            lines.append(f"{op.signature():<70} [{op.category}]{'  ' + ', '.join(rules) if rules else ''}")
            if op.doc:
                lines.append(f"    {op.doc}")
    return "\n".join(lines)
