"""The ``tensordsl`` dialect: one op per function of the tdsl expression language.

Every op works on builtin ranked, static tensors (``tensor<4x8xf32>``,
``tensor<f64>``; zero-size dimensions are fine) whose element type is ``f16``,
``f32`` or ``f64``, ``i1`` (booleans), or ``i32``/``i64`` (signed integers) and ``ui8``
(unsigned), computed exactly and wrapping; the ops that take them say so, and their
bodies choose the unsigned ``arith`` ops (``divui``, ``cmpi ult``) for ``ui8``.
The semantics are NumPy's:

* binary element-wise ops broadcast their operands (``np.broadcast_shapes``);
  both operands share one element type, promotion is an explicit ``cast``;
* ``matmul`` follows ``np.matmul`` (1-D operands and batches included);
* axes may be negative and count from the end;
* ``softmax`` is the numerically stable ``exp(x - max) / sum(exp(x - max))``;
* sums, means and products of ``f16`` accumulate in ``f32`` and round once at
  the end (as ``np.mean`` does).

Every computing op implements the structured-op interface
(:mod:`tdsl.dialects.structured`): its loop space, indexing maps and iterator
types, its element-wise body in ``arith``/``math`` (the one statement of an
element-wise op's semantics: the interpreter and both targets derive from it),
its accumulation, and the small interfaces of what only some ops are
(:mod:`tdsl.dialects.op_interfaces`: a function of the language, a contraction,
a decomposition, a scan).  Most ops are a few lines on one of its base classes.

Each op builds from its operands alone (``AddOp(a, b)`` infers the broadcast
result type); a builder given operands it cannot take raises a
:class:`~tdsl.errors.TdslTypeError`, and the verifiers re-check everything a
parsed op claims.  The shape helpers raise :class:`ShapeError` (a
``TdslTypeError``), so the frontend can report a mismatch at the user's source
span before any IR exists.

The ops are defined one module per family (:mod:`.constant`, :mod:`.elementwise_unary`,
:mod:`.elementwise_math`, :mod:`.elementwise_binary`, :mod:`.powers`, :mod:`.compare_logical`,
:mod:`.bitwise`,
:mod:`.contraction`, :mod:`.normalize`, :mod:`.reductions`, :mod:`.arg_reductions`,
:mod:`.scans`,
:mod:`.views`, :mod:`.slicing`, :mod:`.reshape`, :mod:`.joins`, :mod:`.gather`); this
package re-exports them, and the dialect is made of the op classes those modules
define, so a new op is its class and no list.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from xdsl.ir import Dialect, Operation
from xdsl.irdl import IRDLOperation

from tdsl.dialects.structured import (
    NUMPY_DTYPES,
    BinaryOp,
    CompareOp,
    FloatTensorConstr,
    FloatType,
    LanguageFunction,
    LogicalOp,
    ReductionOp,
    RowLocalOp,
    ScanOp,
    ShapeError,
    UnaryOp,
    broadcast_shapes,
    element_type,
    fmt_shape,
    normalize_axis,
    numpy_dtype,
    reduce_shape,
    tensor_shape,
)
from tdsl.dialects.tensordsl import (
    arg_reductions,
    bitwise,
    compare_logical,
    constant,
    contraction,
    creation,
    elementwise_binary,
    elementwise_math,
    elementwise_unary,
    gather,
    joins,
    normalize,
    powers,
    reductions,
    reshape,
    scans,
    slicing,
    variance,
    views,
)

# the op classes (and the helpers) of every family, by their names: td.ExpOp
from tdsl.dialects.tensordsl.arg_reductions import *  # noqa: F403
from tdsl.dialects.tensordsl.arg_reductions import ARG_FUNCTIONS
from tdsl.dialects.tensordsl.bitwise import *  # noqa: F403
from tdsl.dialects.tensordsl.bitwise import INTEGER_ONLY, NO_FLOATS
from tdsl.dialects.tensordsl.compare_logical import *  # noqa: F403
from tdsl.dialects.tensordsl.compare_logical import ClassifyOp
from tdsl.dialects.tensordsl.constant import *  # noqa: F403
from tdsl.dialects.tensordsl.constant import (
    dense_from_numpy,
    dense_stored_once,
    dense_to_numpy,
    dense_to_text,
    is_one_value,
)
from tdsl.dialects.tensordsl.contraction import *  # noqa: F403
from tdsl.dialects.tensordsl.contraction import (
    check_permutation,
    matmul_shape,
    transpose_shape,
)
from tdsl.dialects.tensordsl.creation import *  # noqa: F403
from tdsl.dialects.tensordsl.creation import CREATION
from tdsl.dialects.tensordsl.elementwise_binary import *  # noqa: F403
from tdsl.dialects.tensordsl.elementwise_math import *  # noqa: F403
from tdsl.dialects.tensordsl.elementwise_unary import *  # noqa: F403
from tdsl.dialects.tensordsl.gather import *  # noqa: F403
from tdsl.dialects.tensordsl.joins import *  # noqa: F403
from tdsl.dialects.tensordsl.joins import JOIN_FUNCTIONS
from tdsl.dialects.tensordsl.normalize import *  # noqa: F403
from tdsl.dialects.tensordsl.normalize import softmax_array
from tdsl.dialects.tensordsl.powers import *  # noqa: F403
from tdsl.dialects.tensordsl.reductions import *  # noqa: F403
from tdsl.dialects.tensordsl.reductions import ChunkedReductionOp, LogicalReductionOp
from tdsl.dialects.tensordsl.reshape import *  # noqa: F403
from tdsl.dialects.tensordsl.reshape import Ravel
from tdsl.dialects.tensordsl.scans import *  # noqa: F403
from tdsl.dialects.tensordsl.slicing import *  # noqa: F403
from tdsl.dialects.tensordsl.variance import *  # noqa: F403
from tdsl.dialects.tensordsl.variance import VarianceOp
from tdsl.dialects.tensordsl.views import *  # noqa: F403
from tdsl.dialects.tensordsl.views import VIEW_FUNCTIONS, expand_dims_shape, squeeze_shape
from tdsl.dtypes import BOOL_DTYPE

FAMILY_MODULES: tuple[ModuleType, ...] = (
    constant,
    elementwise_unary,
    elementwise_math,
    elementwise_binary,
    powers,
    compare_logical,
    bitwise,
    contraction,
    normalize,
    reductions,
    variance,
    arg_reductions,
    scans,
    views,
    slicing,
    reshape,
    joins,
    gather,
    creation,
)
"""The modules of the op families, in the dialect's order (every module of this package:
a test checks that none is missing)."""


def _defined_ops() -> tuple[type[IRDLOperation], ...]:
    """Every op class the family modules define (a ``tensordsl.`` name), module by module
    in definition order: a new op is its class, and the dialect and the families below
    take it from here."""
    return tuple(
        v
        for module in FAMILY_MODULES
        for v in list(vars(module).values())
        if isinstance(v, type)
        and v.__module__ == module.__name__
        and isinstance(v.__dict__.get("name"), str)
        and v.__dict__["name"].startswith("tensordsl.")
        and issubclass(v, IRDLOperation)  # last: abc's subclass check is the costly one
    )


OPS = _defined_ops()
"""The ops of the dialect, family by family in definition order."""


def _family(base: type[Any], *, boolean: bool | None = None) -> tuple[Any, ...]:
    """The ops of ``OPS`` derived from ``base``; ``boolean`` keeps those taking booleans as
    they are (True) or not (False)."""
    return tuple(
        c
        for c in OPS
        if issubclass(c, base)
        and (boolean is None or (c.bool_inputs_as() == BOOL_DTYPE) == boolean)  # type: ignore[attr-defined]
    )


CLASSIFY_OPS: tuple[type[ClassifyOp], ...] = _family(ClassifyOp)
"""``isnan``, ``isinf``, ``isfinite``: floats in, booleans out."""
UNARY_OPS: tuple[type[UnaryOp], ...] = tuple(
    c for c in _family(UnaryOp, boolean=False) if c not in (*CLASSIFY_OPS, *INTEGER_ONLY)
)
"""Element-wise unary ops on floats, of the operand's type."""
COMPARISON_OPS: tuple[type[CompareOp], ...] = _family(CompareOp)
"""Comparisons: floats in, booleans out."""
BINARY_OPS: tuple[type[BinaryOp], ...] = tuple(
    c for c in _family(BinaryOp, boolean=False) if c not in (*COMPARISON_OPS, *INTEGER_ONLY)
)
"""Element-wise binary ops on floats."""
LOGICAL_OPS: tuple[type[Operation], ...] = (
    *_family(UnaryOp, boolean=True),
    *_family(BinaryOp, boolean=True),
)
"""Logical ops on booleans."""
LOGICAL_REDUCTION_OPS: tuple[type[LogicalReductionOp], ...] = _family(LogicalReductionOp)
"""``all`` and ``any``: booleans in, booleans out."""
REDUCTION_OPS: tuple[type[ReductionOp], ...] = tuple(
    c for c in _family(ReductionOp) if c not in LOGICAL_REDUCTION_OPS
)
"""Reductions of floats over an axis (or all axes)."""
ROW_LOCAL_OPS: tuple[type[RowLocalOp], ...] = _family(RowLocalOp)
"""Row-normalizing ops: each result element needs its whole row."""
SCAN_OPS: tuple[type[ScanOp], ...] = _family(ScanOp)
"""Scans: results along an axis, each combining the elements before it."""

TensorDSL = Dialect("tensordsl", list(OPS), [])

LANGUAGE_ONLY: tuple[type[LanguageFunction], ...] = (
    *VIEW_FUNCTIONS,
    *ARG_FUNCTIONS,
    Ravel,
    *JOIN_FUNCTIONS,
    *CREATION,
)
"""Functions of the language without an op of their own: the frontend writes them
with other ops (a ``transpose``, constants and comparisons)."""

# the op classes are public too: OPS lists them
__all__ = [
    "ARG_FUNCTIONS",
    "BINARY_OPS",
    "CLASSIFY_OPS",
    "COMPARISON_OPS",
    "FAMILY_MODULES",
    "INTEGER_ONLY",
    "LANGUAGE_ONLY",
    "LOGICAL_OPS",
    "LOGICAL_REDUCTION_OPS",
    "NO_FLOATS",
    "NUMPY_DTYPES",
    "OPS",
    "REDUCTION_OPS",
    "ROW_LOCAL_OPS",
    "SCAN_OPS",
    "UNARY_OPS",
    "BinaryOp",
    "ChunkedReductionOp",
    "CompareOp",
    "FloatTensorConstr",
    "FloatType",
    "LogicalOp",
    "ReductionOp",
    "RowLocalOp",
    "ScanOp",
    "ShapeError",
    "TensorDSL",
    "UnaryOp",
    "VarianceOp",
    "broadcast_shapes",
    "check_permutation",
    "dense_from_numpy",
    "dense_stored_once",
    "dense_to_numpy",
    "dense_to_text",
    "element_type",
    "expand_dims_shape",
    "fmt_shape",
    "is_one_value",
    "matmul_shape",
    "normalize_axis",
    "numpy_dtype",
    "reduce_shape",
    "softmax_array",
    "squeeze_shape",
    "tensor_shape",
    "transpose_shape",
]
