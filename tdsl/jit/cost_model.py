"""What a call of a kernel costs on each target, predicted from its tiled IR.

``target="auto"`` compiles natively when the native code is predicted to run faster
than the numpy target (:func:`tdsl.jit.compiler._choose`).  The prediction is linear
in a few counts read off the tiled module (:func:`features`):

- ``calls``: the NumPy calls the numpy target makes (each op of a group, once per
  tile of the group; a matmul's prologue and epilogue count as ops too; an op it
  computes with many calls, ``erf``, as that many, :data:`NUMPY_CALLS`: the
  numpy target's cost hook), or for native code the same count of ops and tiles;
- ``work``: the elements all ops compute (the sum of their result sizes; ``erf`` on
  the numpy target again as many times as its calls);
- ``heavy``: the elements of transcendental ops (``exp``, ``log``, ``tanh``,
  ``sin``, ``erf``, ``power``, ...), which cost a polynomial each (``softmax_matmul``:
  an ``exp`` per score);
- ``flops``: the matmuls' multiply-adds;
- ``across``: the elements reduced along an axis that is not the last (a column
  sum), which the targets walk differently from rows.

Constants are no ops here: the numpy target passes them to the ops that use them.

Each target's time is ``c . (1, calls, work, heavy, flops, across)`` with its own
coefficients (:data:`COEFFICIENTS`, in seconds per unit).  They are fitted, not
chosen: ``python benchmarks/auto_cost.py fit`` times a set of programs at sizes from
64 to 4M elements on both targets, fits each target's coefficients to the medians
by least squares on relative error (no coefficient negative), and writes them
here; ``python benchmarks/auto_cost.py evaluate`` checks the choice on programs it
was not fitted on.  The coefficients depend on the machine: these are this
project's machine's (a 2-core AMD EPYC without AVX-512), and on another the choice
may be a little off, never wrong in its results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from tdsl.dialects.structured import tensor_shape

HEAVY_OPS = frozenset(
    f"tensordsl.{name}"
    for name in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sinh", "cosh",
        "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh",
        "arctanh", "erf", "power", "sigmoid", "softmax", "log_softmax", "logaddexp",
        "logaddexp2", "logsumexp", "gelu", "silu", "softplus", "hypot", "cbrt",
    )
)  # fmt: skip
"""Ops whose elements cost a transcendental function each (``softmax`` an ``exp``)."""

MATMUL_OPS = frozenset({"tensordsl.matmul", "tensordsl.softmax_matmul"})
"""Ops whose multiply-adds count as ``flops`` (result elements times the left operand's
last dim)."""

SCORE_OPS = frozenset({"tensordsl.softmax_matmul"})
"""Ops with an ``exp`` per element of their first operand (the scores), not of their
result."""

FREE_OPS = frozenset({"tensordsl.constant"})

NUMPY_CALLS = {"tensordsl.erf": 571}
"""The numpy target's cost hook: ops it computes with many NumPy calls, to how many
(``tdsl.scalar_numpy.tdsl_erf``: 79 series steps of 4 calls, 120 continued-fraction
steps of 2, and 15 more), each over all the op's elements.  Every other op is one."""


@dataclass(frozen=True)
class Features:
    """The counts the model is linear in (see the module's documentation)."""

    calls: float
    work: float
    heavy: float
    flops: float
    across: float

    def vector(self) -> tuple[float, ...]:
        """``(1, calls, work, heavy, flops, across)``: the model's terms."""
        return (1.0, *astuple(self))


TERMS = ("overhead", *(f.name for f in fields(Features)))
"""The names of the coefficients, in :meth:`Features.vector`'s order."""


def _elements(op: Operation) -> int:
    types = [r.type for r in op.results if isinstance(r.type, TensorType)]
    return sum(math.prod(t.get_shape()) for t in types)


def _flops(op: Operation) -> int:
    lhs = op.operands[0].type
    if not isinstance(lhs, TensorType) or not lhs.get_shape():
        return 0
    return _elements(op) * lhs.get_shape()[-1]


def features(tiled: ModuleOp, target: str) -> Features:
    """The counts of ``tiled`` (a module at the ``tiled`` stage) for ``target``
    (``numpy``: with :data:`NUMPY_CALLS`)."""
    from tdsl.dialects.kernel import TileOp
    from tdsl.dialects.structured import ReductionOp

    calls = work = heavy = flops = across = 0
    for tile in tiled.walk():
        if not isinstance(tile, TileOp):
            continue
        space, sizes = tile.space_value, tile.tiles_value
        tiles = math.prod(-(-s // max(1, t)) for s, t in zip(space, sizes, strict=True))
        for op in tile.body.walk():
            if not op.name.startswith("tensordsl.") or not op.results or op.name in FREE_OPS:
                continue
            # the body's types are a tile's: every count is per tile
            n = _elements(op) * tiles
            weight = NUMPY_CALLS.get(op.name, 1) if target == "numpy" else 1
            calls += tiles * weight
            work += n * weight
            if op.name in HEAVY_OPS:
                heavy += n
            if op.name in SCORE_OPS:
                heavy += math.prod(tensor_shape(op.operands[0])) * tiles
            if op.name in MATMUL_OPS:
                flops += _flops(op) * tiles
            if isinstance(op, ReductionOp):
                rank = len(tensor_shape(op.input))
                if any(a != rank - 1 for a in op.reduced_axes()):
                    across += math.prod(tensor_shape(op.input)) * tiles
    return Features(calls, work, heavy, flops, across)


# fitted by benchmarks/auto_cost.py (begin)
COEFFICIENTS: Mapping[str, Mapping[str, float]] = {
    "numpy": {"overhead": 8.969e-07, "calls": 1.597e-06, "work": 1.839e-10, "heavy": 1.248e-09, "flops": 1.238e-11, "across": 2.831e-10},
    "native": {"overhead": 7.17e-06, "calls": 5.3e-07, "work": 8.224e-11, "heavy": 4.693e-10, "flops": 1.258e-11, "across": 2.169e-11},
}  # fmt: skip
# fitted by benchmarks/auto_cost.py (end)


def predict(
    f: Features, target: str, coefficients: Mapping[str, Mapping[str, float]] | None = None
) -> float:
    """The predicted seconds of a call on ``target`` (``numpy`` or ``native``), by
    ``coefficients`` (:data:`COEFFICIENTS` when None)."""
    c = (COEFFICIENTS if coefficients is None else coefficients)[target]
    return sum(c.get(name, 0.0) * x for name, x in zip(TERMS, f.vector(), strict=True))
