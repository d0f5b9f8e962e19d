"""What a call of a kernel costs on each target, predicted from its tiled IR.

``target="auto"`` compiles natively when the native code is predicted to run faster
than the numpy target (:func:`tdsl.jit.compiler._choose`).  The prediction is linear
in a few counts read off the tiled module (:func:`features`):

- ``calls``: the element-wise NumPy calls the numpy target makes, once per tile of
  their group (a matmul's prologue and epilogue count too), or for native code the
  loop nests of the same ops and tiles;
- ``reductions``: the same for reductions and scans (a NumPy ``reduce`` or ``einsum``
  call costs several times an element-wise one);
- ``products``: the same for matmuls (a BLAS call);
- ``work``: the elements all ops compute (the sum of their result sizes, each op's
  once per NumPy call it makes on the numpy target);
- ``heavy``: the elements of transcendental ops (``exp``, ``log``, ``tanh``, ``sin``,
  ``erf``, ``power``, ...), each weighted by what that function costs per element on
  the target against its ``exp`` (:data:`HEAVY_COST`: NumPy's SIMD ``sin`` is cheap
  where native code's is not);
- ``flops``: the matmuls' multiply-adds;
- ``across``: the elements reduced along an axis that is not the last (a column
  sum), which the targets walk differently from rows.

Constants are no ops here: the numpy target passes them to the ops that use them.

The targets' cost hooks are two tables: :data:`NUMPY_CALLS`, the NumPy calls the
numpy target makes for an op it computes with several (``softmax``: a ``max`` and a
``sum`` reduction and three element-wise calls; ``erf``: 101), and
:data:`HEAVY_COST`, each transcendental function's cost per element on each target;
the native target's loops plan adds a third after it is recorded: where it calls BLAS
more often than the tile op's tiles say, ``auto`` adds :data:`LOOPS_BLAS_CALL` a call.

Each target's time is ``c . (1, calls, reductions, products, work, heavy, flops,
across)`` with its own coefficients (:data:`COEFFICIENTS`, in seconds per unit).
They are fitted, not chosen: ``python benchmarks/auto_cost.py fit`` times each
function of :data:`HEAVY_COST` on 65,536 elements (in cache) on both targets, times a
set of programs at sizes from 64 to 4M elements on both targets, fits each target's
coefficients to the medians by least squares on relative error (no coefficient
negative), and writes both tables here; ``python benchmarks/auto_cost.py evaluate``
checks the choice on programs it was not fitted on.  The figures depend on the
machine: these are this project's machine's (a 2-core Intel Xeon with AVX-512, fitted
on 2026-12-06; ``docs/benchmarks.md`` has the evaluations), and on another the choice
may be a little off, never wrong in its results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from tdsl.dialects.kernel import TileOp
from tdsl.dialects.structured import ReductionOp, ScanOp, tensor_shape

HEAVY_OPS = frozenset(
    f"tensordsl.{name}"
    for name in (
        "exp", "exp2", "cbrt", "expm1", "log", "log2", "log10", "log1p", "tanh", "sinh", "cosh", "sin",
        "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh",
        "arctanh", "erf", "power", "sigmoid", "softmax", "log_softmax", "logaddexp",
        "logsumexp", "hypot",
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

NUMPY_CALLS: Mapping[str, tuple[int, int]] = {
    "tensordsl.erf": (101, 0),
    "tensordsl.softmax": (3, 2),
    "tensordsl.log_softmax": (4, 2),
    "tensordsl.logsumexp": (5, 2),
    "tensordsl.layernorm": (6, 2),
    "tensordsl.mean": (1, 1),
    "tensordsl.sigmoid": (7, 0),
    "tensordsl.clip": (8, 0),
    "tensordsl.where": (2, 0),
}
"""The numpy target's cost hook: ops it computes with several NumPy calls, to how
many element-wise calls and how many reductions, each over all the op's elements
(``erf``: ``tdsl.scalar_numpy.tdsl_erf``'s three polynomials by Horner's rule, 10,
13 and 17 steps of 2 calls, and 19 more; ``logsumexp``: its two helpers' ``max``,
``clip``, subtract, ``exp``, ``sum``, ``log`` and add; ``softmax``: ``max``, subtract,
``exp``, ``sum``, divide).  Any other op is one call: a reduction (:class:`ReductionOp`) or
scan one reduction, a matmul one product, anything else one element-wise call.
``tests/unit/jit/test_cost_model.py`` checks them against the code the numpy target
generates."""


@dataclass(frozen=True)
class Features:
    """The counts the model is linear in (see the module's documentation)."""

    calls: float
    reductions: float
    products: float
    work: float
    heavy: float
    flops: float
    across: float

    def vector(self) -> tuple[float, ...]:
        """``(1, calls, reductions, products, work, heavy, flops, across)``: the
        model's terms."""
        return (1.0, *astuple(self))


TERMS = ("overhead", *(f.name for f in fields(Features)))
"""The names of the coefficients, in :meth:`Features.vector`'s order."""


def _elements(op: Operation) -> int:
    return sum(math.prod(tensor_shape(r)) for r in op.results if isinstance(r.type, TensorType))


def _flops(op: Operation) -> int:
    lhs = op.operands[0].type
    if not isinstance(lhs, TensorType) or not lhs.get_shape():
        return 0
    return _elements(op) * lhs.get_shape()[-1]


def _calls(op: Operation, target: str) -> tuple[int, int, int]:
    """The element-wise calls, reductions and products ``op`` makes on ``target``."""
    if target == "numpy" and op.name in NUMPY_CALLS:
        return (*NUMPY_CALLS[op.name], 0)
    if op.name in MATMUL_OPS:
        return (0, 0, 1)
    if isinstance(op, ReductionOp | ScanOp):
        return (0, 1, 0)
    return (1, 0, 0)


def features(tiled: ModuleOp, target: str) -> Features:
    """The counts of ``tiled`` (a module at the ``tiled`` stage) for ``target``
    (``numpy`` or ``native``: their hooks :data:`NUMPY_CALLS` and :data:`HEAVY_COST`)."""
    cost = HEAVY_COST.get(target, {})
    calls = reductions = products = work = heavy = flops = across = 0.0
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
            ew, red, prod = _calls(op, target)
            calls += tiles * ew
            reductions += tiles * red
            products += tiles * prod
            work += n * max(1, ew + red)
            if op.name in HEAVY_OPS:
                heavy += n * cost.get(op.name, 1.0)
            if op.name in SCORE_OPS:
                scores = math.prod(tensor_shape(op.operands[0])) * tiles
                heavy += scores * cost.get("tensordsl.exp", 1.0)
            if op.name in MATMUL_OPS:
                flops += _flops(op) * tiles
            if isinstance(op, ReductionOp):
                rank = len(tensor_shape(op.input))
                if any(a != rank - 1 for a in op.reduced_axes()):
                    across += math.prod(tensor_shape(op.input)) * tiles
    return Features(calls, reductions, products, work, heavy, flops, across)


# HEAVY_COST: per target, a transcendental op's cost per element against the target's
# `exp` (an op not listed: 1; the numpy target's ops in NUMPY_CALLS: 0, their calls
# count them); COEFFICIENTS: per target, seconds per unit of each of TERMS (all from
# one fit on the Intel machine, 2026-12-06, the HEAVY functions timed on 65,536 elements)
# fitted by benchmarks/auto_cost.py (begin)
HEAVY_COST: Mapping[str, Mapping[str, float]] = {
    "numpy": {"tensordsl.exp": 1.0, "tensordsl.expm1": 0.686, "tensordsl.log": 0.915, "tensordsl.log2": 0.453, "tensordsl.log10": 0.468, "tensordsl.log1p": 1.16, "tensordsl.tanh": 0.604, "tensordsl.sinh": 0.924, "tensordsl.cosh": 0.886, "tensordsl.sin": 1.48, "tensordsl.cos": 1.57, "tensordsl.tan": 0.987, "tensordsl.arcsin": 1.05, "tensordsl.arccos": 1.23, "tensordsl.arctan": 0.996, "tensordsl.arcsinh": 2.23, "tensordsl.arctanh": 1.67, "tensordsl.erf": 0.0, "tensordsl.sigmoid": 0.0, "tensordsl.arccosh": 1.72, "tensordsl.power": 1.54, "tensordsl.arctan2": 1.4, "tensordsl.hypot": 12.3, "tensordsl.logaddexp": 51.7},
    "native": {"tensordsl.exp": 1.0, "tensordsl.expm1": 0.912, "tensordsl.log": 1.48, "tensordsl.log2": 14.2, "tensordsl.log10": 28.0, "tensordsl.log1p": 2.12, "tensordsl.tanh": 1.9, "tensordsl.sinh": 3.4, "tensordsl.cosh": 3.76, "tensordsl.sin": 5.33, "tensordsl.cos": 5.39, "tensordsl.tan": 46.7, "tensordsl.arcsin": 40.8, "tensordsl.arccos": 43.5, "tensordsl.arctan": 53.2, "tensordsl.arcsinh": 101.0, "tensordsl.arctanh": 114.0, "tensordsl.erf": 11.2, "tensordsl.sigmoid": 1.73, "tensordsl.arccosh": 87.5, "tensordsl.power": 16.7, "tensordsl.arctan2": 95.1, "tensordsl.hypot": 12.0, "tensordsl.logaddexp": 6.16},
}  # fmt: skip
COEFFICIENTS: Mapping[str, Mapping[str, float]] = {
    "numpy": {"overhead": 2.511e-07, "calls": 6.133e-07, "reductions": 1.283e-06, "products": 1.698e-06, "work": 1.805e-10, "heavy": 1.321e-10, "flops": 8.548e-12, "across": 1.147e-10},
    "native": {"overhead": 1.439e-06, "calls": 1.732e-07, "reductions": 0.0, "products": 1.311e-06, "work": 6.93e-11, "heavy": 1.281e-10, "flops": 8.665e-12, "across": 4.767e-11},
}  # fmt: skip
# fitted by benchmarks/auto_cost.py (end)


LOOPS_BLAS_CALL = 5.8e-7
"""Seconds a BLAS call of the native loops costs besides its multiply-adds: where their
plan (``tdsl-plan-loops``) calls BLAS more often than the tile op's tiles would (the
``products`` the model counts), ``auto`` adds this for each call more.  The median of
``python benchmarks/auto_cost.py calls`` (each program's time over its calls, on one
thread: 0.25-0.92 us, median 0.58 and 0.59 in two runs on the 2-vCPU AMD EPYC,
2026-12-07); a rough figure, like ``tdsl.backend.llvm.loops_split.BLAS_CALL_ELEMENTS``
the loops plan by."""


def predict(
    f: Features, target: str, coefficients: Mapping[str, Mapping[str, float]] | None = None
) -> float:
    """The predicted seconds of a call on ``target`` (``numpy`` or ``native``), by
    ``coefficients`` (:data:`COEFFICIENTS` when None)."""
    c = (COEFFICIENTS if coefficients is None else coefficients)[target]
    return sum(c.get(name, 0.0) * x for name, x in zip(TERMS, f.vector(), strict=True))
