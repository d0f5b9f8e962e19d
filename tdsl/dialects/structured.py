"""The structured-op interface: what an op says about itself so tdsl can fuse, tile, run and emit it.

Every computing op of ``tensordsl`` implements :class:`StructuredOpInterface`,
and an op of any other dialect that implements it takes part in the pipeline
exactly like a tensordsl op: ``tdsl-fuse`` groups it, ``tdsl-tile`` tiles it,
the interpreter runs it and the NumPy target emits it.  No pass looks at op
classes; they read only this interface (the models are MLIR Linalg's indexing
maps and iterator types, and its ``TilingInterface``).

An op describes

* its **loop space**: :meth:`~StructuredOpInterface.loop_extents`, one extent
  per loop dimension, and :meth:`~StructuredOpInterface.iterator_types`, the
  kind of each (:class:`IteratorType`: ``parallel``, ``reduction``,
  ``normalize`` for the axis of a row-normalizing op such as ``softmax``, or
  ``scan`` for the axis of a scan such as ``cumsum``);
* an **indexing map** per operand and per result
  (:meth:`~StructuredOpInterface.indexing_maps`): an affine map from the loop
  dims to the value's dims.  A broadcast dim (extent 1 against a larger loop
  extent) maps to the constant ``0``, the encoding ``kernel.tile`` uses too;
* its **types**: :meth:`~StructuredOpInterface.infer_result_types` gives the
  result types for operand types, which is how ``tdsl-tile`` re-types a body
  on tile-sized slices (:meth:`~StructuredOpInterface.retyped`);
* how it **computes**: an element-wise op states it once, element by element
  in ``arith``/``math`` scalar ops (:meth:`~StructuredOpInterface.scalar_body`,
  built through :func:`element_body`, which widens ``f16``); the interpreter
  (:mod:`tdsl.interpreters.body`), the numpy target's default lowering and the
  native loops all derive from that body.  Ops with ``reduction`` or
  ``normalize`` dims still compute whole arrays themselves for the interpreter
  (:meth:`~StructuredOpInterface.evaluate`).  The dialect holds no NumPy code:
  the numpy target owns its lowerings (:mod:`tdsl.backend.numpy.lowerings`),
  derived from the body or registered by op class.  The scratch a NumPy
  lowering needs is declared by :meth:`~StructuredOpInterface.numpy_workspace`,
  so that the one scratch model (which ``kernel.tile`` records and verifies)
  counts it whichever target runs;
* for an op with ``reduction`` dims, how partial results over tiles of those
  dims **accumulate** (:meth:`~StructuredOpInterface.combiner`,
  ``*_partial``, ``*_finalize`` and :meth:`~StructuredOpInterface.scalar_combine`):
  a reduction tiles like any op, with a loop-carried accumulator;
* for an op with a ``normalize`` dim, its **decomposition** into reductions
  and element-wise ops: the passes over the row and their accumulators.  A
  row that fits a tile runs the op whole; a row longer than the memory budget
  runs the decomposition over column tiles, one pass per reduction;
* for an op with a ``scan`` dim, how a tile **carries** its running values
  to the next: a scan tiles along its axis like a reduction, in order, and its
  results run along it, so a row of any length runs in linear time within the
  budget.

What only some ops are is one small interface each, in
:mod:`tdsl.dialects.op_interfaces` (re-exported here), which an op mixes in
when it is that and a consumer asks with ``isinstance``:
:class:`~tdsl.dialects.op_interfaces.LanguageFunction` (a function or operator
of the expression language: ``FUNCTION``, ``OPERATOR``, ``ARITY``, ``PARAMS``),
:class:`~tdsl.dialects.op_interfaces.Contraction` (a matrix product, which the
planners keep whole and never recompute, and the native target may send to
BLAS), :class:`~tdsl.dialects.op_interfaces.Decomposable` (the decomposition
above: ``decompose``) and :class:`~tdsl.dialects.op_interfaces.Scan` (the
carried tiling above: ``carried_loops``, ``evaluate_scan``, ``scalar_scan``).
An op implements only what it is: ``tensordsl.cast`` is structured and
nothing else, ``tensordsl.matmul`` a language function and a contraction.

Base classes give the defaults, so a new op is usually one small class:
:class:`UnaryOp` (a scalar op or body), :class:`BinaryOp` (with
NumPy broadcasting), :class:`ReductionOp` (a ufunc's ``reduce`` and its
combining op), :class:`RowLocalOp` (a decomposition) and :class:`ScanOp` (a
ufunc's ``accumulate``).  See
``docs/adding-an-op.md``.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.builder import (
    Builder,
    _current_builder,  # pyright: ignore[reportPrivateUsage]
)
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayOfConstraint,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttrConstraint,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnitAttr,
    f16,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap
from xdsl.irdl import (
    AtLeast,
    EqAttrConstraint,
    IRDLOperation,
    MessageConstraint,
    VarConstraint,
    base,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects.op_interfaces import (
    CarriedLoop,
    Contraction,
    Decomposable,
    LanguageFunction,
    Param,
    ParamKind,
    Scan,
)
from tdsl.dtypes import BOOL_DTYPE, DTYPES, FLOAT_DTYPES, wide_accumulator
from tdsl.errors import SourceLocation, TdslIRError, TdslTypeError

# ---------------------------------------------------------------------------
# Element types and shapes
# ---------------------------------------------------------------------------

FloatType = Float16Type | Float32Type | Float64Type
"""The element types tdsl computes in."""

BOOL: IntegerType = IntegerType(1)
"""The element type of booleans (``i1``), what comparisons produce."""

FLOAT_TYPES: dict[str, FloatType] = {"f16": f16, "f32": f32, "f64": f64}
"""Short name -> xDSL float element type."""

ELEMENT_TYPES: dict[str, Attribute] = {"bool": BOOL, **FLOAT_TYPES}
"""Short name -> xDSL element type (the NumPy side is :data:`tdsl.dtypes.DTYPES`)."""

NUMPY_DTYPES: dict[type[Attribute], np.dtype[Any]] = {
    type(element): FLOAT_DTYPES[name] for name, element in FLOAT_TYPES.items()
}
"""xDSL float element type class -> NumPy dtype."""

FloatElementConstr = MessageConstraint(
    base(Float16Type) | base(Float32Type) | base(Float64Type),
    "tensordsl computes on tensors of f16, f32 or f64",
)
BoolElementConstr = MessageConstraint(EqAttrConstraint(BOOL), "expected booleans (i1)")
ElementConstr = MessageConstraint(
    base(Float16Type) | base(Float32Type) | base(Float64Type) | EqAttrConstraint(BOOL),
    "tensordsl computes on tensors of i1 (booleans), f16, f32 or f64",
)
StaticShapeConstr = MessageConstraint(
    ArrayOfConstraint(IntAttrConstraint.get(AtLeast(0))),
    "tensordsl computes on tensors of static shape (no ? dimensions)",
)
FloatTensorConstr = TensorType.constr(FloatElementConstr, shape=StaticShapeConstr)
BoolTensorConstr = TensorType.constr(BoolElementConstr, shape=StaticShapeConstr)
TensorConstr = TensorType.constr(ElementConstr, shape=StaticShapeConstr)
"""A static tensor of any element type tdsl computes on (booleans or floats)."""


class ShapeError(TdslTypeError):
    """Operand shapes or an axis that an op cannot accept; the message says why."""


def fmt_shape(shape: Sequence[int]) -> str:
    """``(4, 8)`` as ``4x8``; a 0-d shape as ``[]``."""
    return "x".join(str(d) for d in shape) if shape else "[]"


def tensor_shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    """The static shape of a tensor-typed value or type."""
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return tuple([d.data for d in cast(TensorType[Attribute], t).shape.data])


def element_type(value: SSAValue | Attribute) -> Attribute:
    """The element type of a tensor-typed value or type."""
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return cast(TensorType[Attribute], t).get_element_type()


def numpy_dtype(element: Attribute) -> np.dtype[Any]:
    """The NumPy dtype of an element type (or of a tensor type's elements)."""
    if isinstance(element, TensorType):
        element = element_type(cast(Attribute, element))
    if element == BOOL:
        return BOOL_DTYPE
    return NUMPY_DTYPES[type(element)]


def element_dtype(element: Attribute) -> np.dtype[Any] | None:
    """The NumPy dtype of an element type tdsl computes on, else None."""
    if element == BOOL:
        return BOOL_DTYPE
    return NUMPY_DTYPES.get(type(element))


def element_of(dtype: np.dtype[Any]) -> Attribute:
    """The element type of a NumPy dtype (bool, float16, float32 or float64)."""
    for name, candidate in DTYPES.items():
        if candidate == dtype:
            return ELEMENT_TYPES[name]
    raise TdslTypeError(f"tdsl computes on bool, float16, float32 or float64, not {dtype}")


def is_bool(value: SSAValue | Attribute) -> bool:
    """Whether a tensor value (or tensor type) holds booleans."""
    return element_type(value) == BOOL


def tensor_type(element: Attribute, shape: Sequence[int]) -> TensorType[Attribute]:
    """``tensor<shape x element>``."""
    return TensorType(element, list(shape))


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The NumPy broadcast of two shapes, or :class:`ShapeError`."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out: list[int] = []
    for da, db in zip(pa, pb, strict=True):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            raise ShapeError(
                f"shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast "
                f"(dimension {da} vs {db})"
            )
    return tuple(out)


def normalize_axis(axis: int, rank: int) -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative, or :class:`ShapeError`."""
    if not -rank <= axis < rank:
        if rank == 0:
            raise ShapeError(f"axis {axis} is out of range for a 0-d tensor (it has no axes)")
        raise ShapeError(
            f"axis {axis} is out of range for rank {rank} (expected {-rank} <= axis < {rank})"
        )
    return axis % rank


def reduce_shape(shape: Sequence[int], axis: int | None, keepdims: bool) -> tuple[int, ...]:
    """The shape after reducing ``axis`` (``None``: all axes)."""
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    ax = normalize_axis(axis, len(shape))
    if keepdims:
        return tuple(1 if i == ax else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i != ax)


def operand_value(op_name: str, value: SSAValue | Operation) -> SSAValue:
    """``value`` as the SSA value of a tensor tdsl computes on (booleans or floats), or a
    :class:`TdslTypeError` for ``op_name``.

    Builders call it, so that a bad builder call is a tdsl error rather than a crash (the
    verifier then checks which element types the op takes).
    """
    try:
        ssa = SSAValue.get(value)
    except ValueError as err:
        raise TdslTypeError(f"'{op_name}' takes a single-result value: {err}") from None
    t: Attribute = ssa.type
    if not isinstance(t, TensorType) or element_dtype(element_type(cast(Attribute, t))) is None:
        raise TdslTypeError(
            f"'{op_name}' takes tensors of i1, f16, f32 or f64, not a value of type {t}"
        )
    return ssa


def expect_shape(op: Operation, expected: Sequence[int], actual: Attribute, what: str) -> None:
    """A verifier check that the tensor type ``actual`` (of a result) has shape ``expected``."""
    if tensor_shape(actual) != tuple(expected):
        raise VerifyException(
            f"'{op.name}' op {what} has type {actual}, expected shape {fmt_shape(expected)}"
        )


def same_element_types(op: Operation, types: Sequence[Attribute]) -> None:
    """A verifier check that the tensors of ``types`` share one element type."""
    elements = {element_type(t) for t in types}
    if len(elements) > 1:
        names = ", ".join(str(t) for t in types)
        raise VerifyException(
            f"'{op.name}' op operands and result must share one element type, got {names} "
            "(make promotion explicit with tensordsl.cast)"
        )


def shape_error(op: Operation, err: ShapeError, types: Sequence[Attribute]) -> VerifyException:
    """A verifier error naming the op, the problem and the operand types."""
    names = ", ".join(str(t) for t in types)
    return VerifyException(f"'{op.name}' op {err.message} ({names})")


# ---------------------------------------------------------------------------
# Loop spaces
# ---------------------------------------------------------------------------


class IteratorType(StrEnum):
    """The kind of a loop dimension."""

    PARALLEL = "parallel"
    """Every point is independent: tiles along it never meet."""
    REDUCTION = "reduction"
    """Combined away: results do not run along it; tiles along it accumulate."""
    NORMALIZE = "normalize"
    """Results run along it, but each depends on the whole row (softmax's axis): a tile
    along it takes the whole row, or the op is decomposed into passes over the row."""
    SCAN = "scan"
    """Results run along it, each combining the elements before it (``cumsum``'s axis):
    tiles along it run in order, carrying the running value of each row from one tile
    to the next (:class:`~tdsl.dialects.op_interfaces.Scan`)."""


def dims_map(num_loops: int, dims: Sequence[int | None]) -> AffineMap:
    """The map whose result ``j`` is ``d<dims[j]>``, or the constant 0 where ``dims[j]`` is None."""
    return _dims_map(num_loops, tuple(dims))


@functools.lru_cache(maxsize=1024)
def _dims_map(num_loops: int, dims: tuple[int | None, ...]) -> AffineMap:
    # ops ask for their maps again and again; an AffineMap is immutable
    return AffineMap(
        num_loops,
        0,
        tuple(AffineConstantExpr(0) if d is None else AffineDimExpr(d) for d in dims),
    )


def map_dims(amap: AffineMap | AffineMapAttr) -> tuple[int | None, ...]:
    """Per result of ``amap``: the loop dim it is, or None for the constant 0.

    Raises ``ValueError`` for any other expression (tdsl's maps are projections).
    """
    if isinstance(amap, AffineMapAttr):
        amap = amap.data
    out: list[int | None] = []
    for expr in amap.results:
        if isinstance(expr, AffineDimExpr):
            out.append(expr.position)
        elif isinstance(expr, AffineConstantExpr) and expr.value == 0:
            out.append(None)
        else:
            raise ValueError(f"unsupported tile map result {expr} in {amap}: expected d<i> or 0")
    return tuple(out)


def broadcast_dims(operand: Sequence[int], result: Sequence[int]) -> tuple[int | None, ...]:
    """The loop dims (the result's dims) an operand broadcast to ``result`` reads, right-aligned."""
    offset = len(result) - len(operand)
    return tuple(
        None if extent == 1 and result[offset + k] != 1 else offset + k
        for k, extent in enumerate(operand)
    )


@dataclass(frozen=True)
class Combiner:
    """How partial results over tiles of a reduction dim merge."""

    ufunc: str
    """The NumPy ufunc merging two partials (``add``, ``maximum``, ``minimum``, ``multiply``)."""
    identity: float
    """The partial of no elements (the accumulator's start)."""


@dataclass(frozen=True)
class Accumulator:
    """The state a reduction carries over its ``reduction`` dims: one component or several
    (a tuple accumulator), each an array of the result's shape.

    ``logsumexp`` carries a running maximum and a sum of exponentials rescaled to it;
    argmax would carry a value and an index, Welford's variance a count, a mean and a
    sum of squares.  Each component starts at its identity; the reduction's
    :meth:`~StructuredOpInterface.scalar_accumulate` takes one element into the state,
    :meth:`~StructuredOpInterface.scalar_merge` combines two states (the combiner region:
    partials over tiles), and :meth:`~StructuredOpInterface.scalar_finalize_state` makes
    the result element from it."""

    dtypes: tuple[np.dtype[Any], ...]
    """Each component's dtype."""
    identities: tuple[float, ...]
    """Each component's start: the state of no elements."""

    @property
    def size(self) -> int:
        """How many components the state has."""
        return len(self.dtypes)


# ---------------------------------------------------------------------------
# Scratch of a NumPy lowering
# ---------------------------------------------------------------------------


Workspace = tuple[tuple[int, ...], np.dtype[Any]]
"""A scratch buffer an op's NumPy lowering needs besides its results: shape and dtype."""

ScalarOpBuilder = Callable[..., Operation]
"""A scalar op class used as a builder: ``arith.AddfOp(a, b)``, ``math.ExpOp(x)``."""


# ---------------------------------------------------------------------------
# The interface
# ---------------------------------------------------------------------------


def _as_array(value: Any, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    return np.asarray(value, dtype=dtype)


class StructuredOpInterface(abc.ABC):
    """The interface every op that tdsl fuses and tiles implements (see the module docstring).

    Mix it into an ``IRDLOperation`` class.  The methods describe its iteration
    semantics, its types and how it computes, with the partial results of an op with
    ``reduction`` dims; class-level properties tell the targets how it may run.  What
    only some ops are is a small interface of :mod:`tdsl.dialects.op_interfaces`
    (:class:`LanguageFunction`, :class:`Contraction`, :class:`Decomposable`,
    :class:`Scan`), which an op mixes in when it is that.
    """

    IN_PLACE: ClassVar[bool] = False
    """Its NumPy lowering may write the result over an operand of the same shape and
    dtype that dies at it (element-wise ops)."""

    # -- iteration semantics -------------------------------------------------

    @abc.abstractmethod
    def loop_extents(self) -> tuple[int, ...]:
        """The extent of each loop dimension."""

    @abc.abstractmethod
    def iterator_types(self) -> tuple[IteratorType, ...]:
        """The kind of each loop dimension."""

    @abc.abstractmethod
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        """Per operand, then per result: the map from the loop dims to its dims."""

    # -- types ------------------------------------------------------------------

    @abc.abstractmethod
    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        """The result types for ``operand_types`` (the op's properties as they are).

        Raises :class:`ShapeError` for operand types the op cannot take.
        """

    def retyped(self, operands: Sequence[SSAValue]) -> Operation:
        """This op on ``operands``, with its result types inferred: how tiles re-type it."""
        op = cast(Operation, self)
        types = self.infer_result_types([v.type for v in operands])
        new = type(op).create(
            operands=list(operands),
            result_types=list(types),
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        new.location = op.location
        for old, res in zip(op.results, new.results, strict=True):
            res.name_hint = old.name_hint
        return new

    # -- computing ----------------------------------------------------------------

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        """The results on whole operand arrays (the interpreter): NumPy's semantics,
        results in the result dtypes, IEEE exceptions silent (inf and nan).

        Element-wise ops do not implement it: the interpreter derives their results from
        :meth:`scalar_body` (:mod:`tdsl.interpreters.body`).  Ops with ``reduction`` or
        ``normalize`` dims compute whole arrays here."""
        raise NotImplementedError(f"'{cast(Operation, self).name}' is evaluated from its body")

    def fuses_producer(self) -> Operation | None:
        """An operand's producer this op's NumPy lowering computes itself (the product a
        sum of products reads, as one ``einsum``), or None.

        The target then does not compute the producer, and passes its operands to
        :func:`~tdsl.backend.numpy.lowerings.lower_partial` in place of this op's.  It is
        only taken when the producer has this one use, in the same group and step.
        """
        return None

    def numpy_view(self) -> str | None:
        """For an op whose result is a view of its operand (``transpose``): the view
        as a template on ``{0}`` (``"{0}.T"``); None for an op that computes."""
        return None

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        """The buffers the numpy target's lowering of the op needs besides its results, for
        these tile shapes.

        Each lines up with the first result's tile (the NumPy target requires its dims to
        be the result's, right-aligned, or 1) or has the shape of an operand's tile (a
        reduction's element-wise step: ``logsumexp``'s ``exp``), and a smaller tile needs
        no more of them: ``tdsl-fuse`` bounds a group's scratch with those of whole values."""
        return ()

    F16_IN_F32: ClassVar[bool] = True
    """On ``f16`` operands the body runs on ``f32`` and its results round to ``f16`` once
    at the end (:func:`element_body`), as NumPy computes an ``f16`` ufunc.  False for an
    op whose result depends on ``f16`` itself (``nextafter``)."""

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """Build the element computation in ``arith``/``math`` (and ``tdslmath``) ops: the
        result elements from the operand elements, for an op whose loop dims are all
        ``parallel``.  This is the one statement of an element-wise op's semantics: the
        interpreter, the numpy target's default lowering and the native loops all derive
        from it.  Callers go through :func:`element_body`, which widens ``f16``, so a body
        sees ``f32`` scalars where the op computes on ``f16`` (build constants of the
        arguments' types).  Ops with ``reduction`` dims give :meth:`scalar_combine`, ops
        with ``normalize`` dims :meth:`~tdsl.dialects.op_interfaces.Decomposable.decompose`."""
        raise NotImplementedError(f"'{cast(Operation, self).name}' has no element-wise body")


class Reduction(abc.ABC):  # noqa: B024 (a one-component op overrides what it needs)
    """An op with ``reduction`` dims: how it accumulates over them (MLIR Linalg's
    reduction, with a tuple accumulator as ``linalg.reduce`` takes several inits).

    Its state (:meth:`accumulator`) is one array of the result's shape, or several (a
    tuple accumulator: ``logsumexp``'s maximum and rescaled sum, ``var``'s count, mean
    and squared deviations).  Each component starts at its identity; one point of the
    loop space is taken in with :meth:`scalar_accumulate`; two states (a tile's partial
    and the accumulator) merge with :meth:`combiner`'s ufunc or, for a tuple, the
    combiner region :meth:`scalar_merge`; the result comes from the final state
    (:meth:`scalar_finalize_state`; on arrays :meth:`finalize`).  An op with one
    component gives the single-value methods (:meth:`combiner`,
    :meth:`accumulator_dtype`, :meth:`scalar_combine`, :meth:`evaluate_partial`) and
    the tuple methods derive from them.

    Who reads it: the scratch plan (an accumulator and a partial buffer per component),
    the interpreters, the numpy target (a ufunc merge, or the registered merge of a
    tuple accumulator) and the native loops (one scratch memref per component).
    """

    # -- one accumulator: partial results over tiles, merged by a ufunc --------------

    def combiner(self) -> Combiner | None:
        """How partials over tiles of its ``reduction`` dims merge with one ufunc; None for a
        tuple accumulator, whose states merge with :meth:`scalar_merge`."""
        return None

    def accumulator_dtype(self) -> np.dtype[Any]:
        """The dtype partials and the accumulator hold (float32 for a float16 sum)."""
        return numpy_dtype(cast(Operation, self).results[0].type)

    def evaluate_partial(self, *args: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The partial result of whole operand arrays (in :meth:`accumulator_dtype`),
        before :meth:`finalize`: for a mean, the sum."""
        raise NotImplementedError(f"'{cast(Operation, self).name}' has no reduction")

    def finalize(self, acc: np.ndarray[Any, Any], count: int) -> np.ndarray[Any, Any]:
        """The result from the accumulated partials; ``count`` is the number of elements
        each result element combined (a mean divides by it)."""
        return _as_array(acc, numpy_dtype(cast(Operation, self).results[0].type))

    def finalizes(self) -> bool:
        """Whether :meth:`finalize` changes the accumulated values (a mean divides), beyond
        a conversion to the result dtype."""
        return False

    def scalar_combine(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        """Build the accumulator update for one point of the loop space (``acc + a * b``
        for a matmul), on scalars: ``acc`` of the accumulator's element type."""
        raise NotImplementedError(f"'{cast(Operation, self).name}' has no reduction")

    def scalar_finalize(self, b: Builder, acc: SSAValue, count: int) -> SSAValue:
        """Build the result element from the accumulated one (a cast by default)."""
        result = element_type(cast(Operation, self).results[0].type)
        return convert_scalar(b, acc, result)

    # -- reductions with a tuple accumulator ---------------------------------------
    #
    # The planners and targets read these; an op with one accumulator gives the methods
    # above instead (the defaults here derive from them).

    def accumulator(self) -> Accumulator:
        """The state its ``reduction`` dims carry.  By default one component:
        :meth:`accumulator_dtype`, starting at :meth:`combiner`'s identity."""
        combiner = self.combiner()
        if combiner is None:
            raise NotImplementedError(
                f"'{cast(Operation, self).name}' gives neither a combiner nor an accumulator"
            )
        return Accumulator((self.accumulator_dtype(),), (combiner.identity,))

    def scalar_accumulate(
        self, b: Builder, state: Sequence[SSAValue], args: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        """Build the state after one more point of the loop space (``args``: its operand
        elements), from ``state`` (one scalar per component).  By default
        :meth:`scalar_combine` on the one component."""
        return (self.scalar_combine(b, state[0], args),)

    def scalar_merge(
        self, b: Builder, state: Sequence[SSAValue], other: Sequence[SSAValue]
    ) -> tuple[SSAValue, ...]:
        """Build the state of two states' elements together (the combiner region: a tile's
        partial merged into the accumulator).  Ops with one component merge with
        :meth:`combiner`'s ufunc instead and need not give it."""
        raise NotImplementedError(f"'{cast(Operation, self).name}' merges with its combiner ufunc")

    def scalar_finalize_state(self, b: Builder, state: Sequence[SSAValue], count: int) -> SSAValue:
        """Build the result element from the final state (``count`` elements taken).  By
        default :meth:`scalar_finalize` of the one component."""
        return self.scalar_finalize(b, state[0], count)

    def evaluate_state(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        """The state of whole operand arrays, one array per component (the interpreter's
        partial of a tile).  By default :meth:`evaluate_partial`."""
        return (self.evaluate_partial(*args),)


class PartialOps(abc.ABC):
    """A reduction whose partial result over a block is itself made of ops: Dask's tree
    reductions compile each block's partial, each combination of partials and the final
    step as kernels (:mod:`tdsl.dask`).  For a reduction without it, Dask takes the
    reduced dims whole."""

    @abc.abstractmethod
    def partial_ops(self, operands: Sequence[SSAValue]) -> tuple[list[Operation], SSAValue]:
        """The partial result over one block of ``operands`` as ops (not yet inserted), and the
        value holding it.

        The partial is the reduction in :meth:`accumulator_dtype` with every reduced dim
        kept, as extent 1 (a mean's partial is a sum), made so that the same ops applied
        to partials concatenated along the reduced dims combine them.  :mod:`tdsl.dask`
        reduces across chunks this way, each block and each combination a compiled
        kernel.
        """

    @abc.abstractmethod
    def finalize_ops(self, acc: SSAValue, count: int) -> tuple[list[Operation], SSAValue]:
        """The result from combined partials ``acc`` (as :meth:`partial_ops` makes them) as ops
        not yet inserted, and the value holding it: :meth:`finalize` as ops (a mean divides
        by ``count``; each op converts to its result's element type).  The shape stays
        ``acc``'s, reduced dims of extent 1."""


class HasConstantValue(abc.ABC):
    """An op that stands for a constant array (``tensordsl.constant``): planners copy
    small ones into the groups using them and pass large ones in as inputs."""

    @abc.abstractmethod
    def constant_value(self) -> np.ndarray[Any, Any]:
        """The constant, as an array of the result's dtype and shape."""


def structured(op: Operation) -> StructuredOpInterface | None:
    """``op`` as a structured op, or None when it does not implement the interface."""
    return op if isinstance(op, StructuredOpInterface) else None


def reduction_of(op: Operation) -> Reduction:
    """``op`` as a :class:`Reduction`; a :class:`~tdsl.errors.TdslIRError` located at the op
    when it accumulates over ``reduction`` dims without implementing the interface."""
    if isinstance(op, Reduction):
        return op
    loc = op.location
    where = (
        SourceLocation(loc.filename.data, loc.line.data, max(1, loc.column.data))
        if isinstance(loc, FileLineColLoc)
        else None  # a driver places the error by its op in the input text
    )
    raise TdslIRError(
        f"'{op.name}' has reduction dims but does not implement the Reduction interface "
        "(give it a combiner, or an accumulator with its scalar regions)",
        where,
        op=op,
    )


def checked_decomposition(op: Operation) -> tuple[list[Operation], SSAValue] | None:
    """``op``'s :meth:`~tdsl.dialects.op_interfaces.Decomposable.decompose`, checked as it
    is made: None for an op without one, else its ops and the value replacing the result.

    The contract: the op has one result; the value has its type; the new ops read only
    the op's operands and values of new ops listed before them; none of them has a
    ``normalize`` dim left.  A decomposition that breaks it is a
    :class:`~tdsl.errors.TdslIRError` located at the op, not a failure in a later pass.
    """
    decomposed = op.decompose() if isinstance(op, Decomposable) else None
    if decomposed is None:
        return None
    ops, value = decomposed

    def broken(why: str) -> TdslIRError:
        loc = op.location
        where = (
            SourceLocation(loc.filename.data, loc.line.data, max(1, loc.column.data))
            if isinstance(loc, FileLineColLoc)
            else None  # a driver places the error by its op in the input text
        )
        return TdslIRError(f"'{op.name}': its decomposition {why}", where, op=op)

    if len(op.results) != 1:
        raise broken(f"replaces one result, but the op has {len(op.results)}")
    if value.type != op.results[0].type:
        raise broken(f"gives a value of type {value.type}, not the result's {op.results[0].type}")
    known: set[SSAValue] = set(op.operands)
    for new in ops:
        for k, operand in enumerate(new.operands):
            if operand not in known:
                raise broken(
                    f"reads operand {k} of '{new.name}' from outside it (only the op's "
                    "operands and earlier ops of the decomposition may be read)"
                )
        t = structured(new)
        if t is not None and IteratorType.NORMALIZE in t.iterator_types():
            raise broken(f"still holds the row-normalizing op '{new.name}'")
        known.update(new.results)
    if value not in known:
        raise broken("replaces the result by a value none of its ops computes")
    return ops, value


def constant_value(op: Operation) -> np.ndarray[Any, Any] | None:
    """The value of a constant op, or None for other ops."""
    return op.constant_value() if isinstance(op, HasConstantValue) else None


def convert_scalar(b: Builder, value: SSAValue, target: Attribute) -> SSAValue:
    """``value`` (a float or boolean scalar) converted to the float type ``target``
    (extf/truncf; a boolean becomes 0.0 or 1.0)."""
    source = value.type
    if source == target:
        return value
    if source == BOOL:
        return b.insert(arith.UIToFPOp(value, cast(FloatType, target))).result
    width = {Float16Type: 16, Float32Type: 32, Float64Type: 64}
    if width[type(source)] < width[type(target)]:  # pyright: ignore[reportArgumentType]
        return b.insert(arith.ExtFOp(value, target)).result
    return b.insert(arith.TruncFOp(value, target)).result


def scalar_constant(b: Builder, value: float, element: Attribute) -> SSAValue:
    """An ``arith.constant`` float scalar."""
    return b.insert(arith.ConstantOp(FloatAttr(value, cast(FloatType, element)))).result


def element_body(op: Operation, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
    """``op``'s :meth:`~StructuredOpInterface.scalar_body` on ``args`` (scalars of its operands'
    element types), the one place ``f16`` is widened: unless the op opts out
    (``F16_IN_F32``), ``f16`` arguments extend to ``f32``, the body runs on ``f32`` and
    each ``f16`` result rounds once at the end.  NumPy computes an ``f16`` ufunc the same
    way, so a body of one op gives NumPy's result, and a body of several ops (``logaddexp``)
    rounds once rather than after each step.  The interpreter, the numpy target's derived
    lowering and the native loops all build bodies through here."""
    s = structured(op)
    assert s is not None
    widen = s.F16_IN_F32 and any(isinstance(a.type, Float16Type) for a in args)
    if widen:
        args = [convert_scalar(b, a, f32) if isinstance(a.type, Float16Type) else a for a in args]
    results = s.scalar_body(b, args)
    if not widen:
        return results
    out: list[SSAValue] = []
    for value, result in zip(results, op.results, strict=True):
        element = element_type(result)
        out.append(convert_scalar(b, value, element) if value.type != element else value)
    return tuple(out)


@dataclass(frozen=True)
class Body:
    """An element-wise op's body built once into a block: its arguments (scalars of the
    operands' element types), its ops and the values it yields."""

    block: Block
    results: tuple[SSAValue, ...]

    def computing(self) -> list[Operation]:
        """The ops that compute (constants aside)."""
        return [o for o in self.block.ops if not isinstance(o, arith.ConstantOp)]

    def single(self) -> Operation | None:
        """The one op computing the result from the arguments, when the body is that op
        (behind the ``f16`` widening): NumPy's ufunc computes it with one rounding."""
        ops = self.computing()
        args = set(self.block.args)
        core = [
            o
            for o in ops
            if not (isinstance(o, arith.ExtFOp) and o.input in args)
            and not (isinstance(o, arith.TruncFOp) and o.result in self.results)
        ]
        if not core and len(ops) == 1:  # a conversion
            return ops[0]
        return core[0] if len(core) == 1 else None

    def slots(self) -> tuple[tuple[int | None, ...], tuple[np.dtype[Any], ...]]:
        """Where a NumPy evaluation of the body, one call per computing op, keeps each
        op's value: per op of :meth:`computing`, the index of its buffer (None for the
        result, written in place), and the dtype of each buffer.  A buffer is reused,
        by a value of its dtype, once every reader of its previous value has run."""
        ops = self.computing()
        last: dict[SSAValue, int] = {}
        for i, o in enumerate(ops):
            for v in o.operands:
                last[v] = i
        where: dict[SSAValue, int] = {}
        free: dict[np.dtype[Any], list[int]] = {}
        dtypes: list[np.dtype[Any]] = []
        assigned: list[int | None] = []
        for i, o in enumerate(ops):
            r = o.results[0]
            if r in self.results:
                assigned.append(None)
            else:
                dtype = element_dtype(r.type) or numpy_dtype(r.type)
                pool = free.setdefault(dtype, [])
                slot = pool.pop() if pool else len(dtypes)
                if slot == len(dtypes):
                    dtypes.append(dtype)
                where[r] = slot
                assigned.append(slot)
            # values read for the last time here (or never read) free their buffers
            for v in {*o.operands, r}:
                if v in where and last.get(v, i) <= i:
                    free.setdefault(dtypes[where[v]], []).append(where.pop(v))
        return tuple(assigned), tuple(dtypes)

    def workspaces(self, shape: tuple[int, ...]) -> tuple[Workspace, ...]:
        """The buffers a NumPy evaluation needs (:meth:`slots`), of the result's tile
        shape; none for a body of one op."""
        if self.single() is not None:
            return ()
        return tuple((shape, dtype) for dtype in self.slots()[1])


_BODIES: dict[tuple[Any, ...], Body] = {}


def body_of(op: Operation) -> Body:
    """``op``'s body (through :func:`element_body`), built once per op class, operand and
    result types and properties."""
    key = (
        type(op),
        tuple(op.operand_types),
        tuple(op.result_types),
        tuple(sorted(op.properties.items(), key=lambda item: item[0])),
    )
    found = _BODIES.get(key)
    if found is None:
        block = Block(arg_types=[element_type(v) for v in op.operands])
        b = Builder(InsertPoint.at_end(block))
        # built apart, even while a caller builds implicitly (as kernel.tile's builder can)
        saved, _current_builder.builder = _current_builder.builder, None
        try:
            results = element_body(op, b, block.args)
        finally:
            _current_builder.builder = saved
        if len(_BODIES) >= 4096:
            _BODIES.clear()
        found = _BODIES[key] = Body(block, tuple(results))
    return found


# ---------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def identity_map(rank: int) -> AffineMap:
    """The identity map of ``rank`` loop dims (shared: an AffineMap is immutable)."""
    return AffineMap.identity(rank)


def ufunc_bool_dtype(ufunc: str, arity: int) -> np.dtype[Any] | None:
    """The float dtype NumPy's ``ufunc`` computes on boolean operands, or None when the
    result is not a float (an integer, a boolean, an error)."""
    try:
        with np.errstate(all="ignore"):
            dtype = getattr(np, ufunc)(*([np.zeros(1, BOOL_DTYPE)] * arity)).dtype
    except TypeError:
        return None
    return dtype if dtype.kind == "f" else None


class ElementwiseOp(StructuredOpInterface, abc.ABC):
    """The loop space of an element-wise op with NumPy broadcasting: the result's dims,
    all parallel; each operand reads the result's dims it has (a broadcast dim maps to
    constant 0), the result all of them.  Unary, binary and ``where`` ops share it."""

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(cast(Operation, self).results[0])

    def iterator_types(self) -> tuple[IteratorType, ...]:
        return (IteratorType.PARALLEL,) * len(self.loop_extents())

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        out = self.loop_extents()
        return (
            *(
                dims_map(len(out), broadcast_dims(tensor_shape(v), out))
                for v in cast(Operation, self).operands
            ),
            identity_map(len(out)),
        )

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        """None where NumPy has the function (``NUMPY_UFUNC``: the numpy target calls it
        once); else one per intermediate value of the body, which the target's derived
        lowering computes one NumPy call at a time."""
        if getattr(self, "NUMPY_UFUNC", None) is not None:
            return ()
        return body_of(cast(Operation, self)).workspaces(result_shapes[0])


class UnaryOp(IRDLOperation, ElementwiseOp, LanguageFunction, abc.ABC):
    """Base of element-wise unary ops: the result has the operand's type.

    A subclass gives the ``math``/``arith`` op of its element computation
    (``SCALAR_OP``) or overrides :meth:`scalar_body`: that is its whole semantics.
    ``NUMPY_UFUNC`` names NumPy's counterpart, if any, which says how booleans
    promote (:meth:`bool_inputs_as`); it computes nothing.
    """

    NUMPY_UFUNC: ClassVar[str | None] = None
    """NumPy's ufunc of the same function (``"exp"``), if NumPy has one."""
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = None
    """The one-operand scalar op computing an element (``math.ExpOp``)."""

    T: ClassVar = VarConstraint("T", FloatTensorConstr)
    input = operand_def(T)
    result = result_def(T)

    assembly_format = "$input attr-dict `:` type($result)"
    traits = traits_def(Pure())
    IN_PLACE: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation) -> None:
        value = operand_value(self.name, input)
        super().__init__(operands=[value], result_types=[value.type])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        return (operand_types[0],)

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if self.SCALAR_OP is None:
            return super().scalar_body(b, args)
        return (b.insert(self.SCALAR_OP(args[0])).results[0],)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return None if cls.NUMPY_UFUNC is None else ufunc_bool_dtype(cls.NUMPY_UFUNC, 1)


class BinaryOp(IRDLOperation, ElementwiseOp, LanguageFunction, abc.ABC):
    """Base of element-wise binary ops with NumPy broadcasting.

    Both operands share one element type; the result has the broadcast shape.
    A subclass gives the two-operand scalar op of its element computation
    (``SCALAR_OP``) or overrides :meth:`scalar_body`; ``NUMPY_UFUNC`` names NumPy's
    counterpart, as for :class:`UnaryOp`.
    """

    NUMPY_UFUNC: ClassVar[str | None] = None
    SCALAR_OP: ClassVar[ScalarOpBuilder | None] = None
    ARITY: ClassVar[int] = 2

    # One element type is checked by verify_, which names both types (an IRDL
    # constraint variable would not name the op).
    lhs = operand_def(FloatTensorConstr)
    rhs = operand_def(FloatTensorConstr)
    result = result_def(FloatTensorConstr)

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )
    traits = traits_def(Pure())
    IN_PLACE: ClassVar[bool] = True

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> None:
        a, b = operand_value(self.name, lhs), operand_value(self.name, rhs)
        (result,) = self.infer_result_types([a.type, b.type])
        super().__init__(operands=[a, b], result_types=[result])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        a, b = operand_types
        if element_type(a) != element_type(b):
            raise ShapeError(
                f"operands have different element types {element_type(a)} and {element_type(b)}"
                " (make promotion explicit with tensordsl.cast)"
            )
        shape = broadcast_shapes(tensor_shape(a), tensor_shape(b))
        return (tensor_type(element_type(a), shape),)

    def verify_(self) -> None:
        same_element_types(self, (self.lhs.type, self.rhs.type, self.result.type))
        try:
            (expected,) = self.infer_result_types([self.lhs.type, self.rhs.type])
        except ShapeError as err:
            raise shape_error(self, err, (self.lhs.type, self.rhs.type)) from None
        expect_shape(self, tensor_shape(expected), self.result.type, "result")

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        if self.SCALAR_OP is None:
            return super().scalar_body(b, args)
        return (b.insert(self.SCALAR_OP(args[0], args[1])).results[0],)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return None if cls.NUMPY_UFUNC is None else ufunc_bool_dtype(cls.NUMPY_UFUNC, 2)


class CompareOp(BinaryOp, abc.ABC):
    """Base of element-wise comparisons, broadcasting: float operands of one element type,
    a boolean result (``nan`` compares false, except under ``!=``, as in NumPy).

    A subclass names its NumPy ufunc and its ``arith.cmpf`` predicate (``PREDICATE``).
    """

    PREDICATE: ClassVar[str]
    """The ``arith.cmpf`` predicate (ordered ones, ``une`` for ``!=``)."""

    lhs = operand_def(FloatTensorConstr)
    rhs = operand_def(FloatTensorConstr)
    result = result_def(BoolTensorConstr)
    IN_PLACE: ClassVar[bool] = False

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = super().infer_result_types(operand_types)
        return (tensor_type(BOOL, tensor_shape(t)),)

    def verify_(self) -> None:
        same_element_types(self, (self.lhs.type, self.rhs.type))
        try:
            (expected,) = self.infer_result_types([self.lhs.type, self.rhs.type])
        except ShapeError as err:
            raise shape_error(self, err, (self.lhs.type, self.rhs.type)) from None
        expect_shape(self, tensor_shape(expected), self.result.type, "result")

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        return (b.insert(arith.CmpfOp(args[0], args[1], self.PREDICATE)).result,)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return FLOAT_DTYPES["f16"]  # booleans compare as 0 and 1


class LogicalOp(BinaryOp, abc.ABC):
    """Base of element-wise logical ops on booleans, broadcasting (``&``, ``|``)."""

    lhs = operand_def(BoolTensorConstr)
    rhs = operand_def(BoolTensorConstr)
    result = result_def(BoolTensorConstr)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return BOOL_DTYPE


def _axis_attr(axis: int) -> IntegerAttr[I64]:
    return IntegerAttr(axis, i64)


class ReductionOp(IRDLOperation, StructuredOpInterface, Reduction, LanguageFunction, abc.ABC):
    """Base of reductions over one axis (or all axes when ``axis`` is absent).

    A subclass gives the NumPy ufunc whose ``reduce`` computes it
    (``NUMPY_UFUNC``), the partial of nothing (``IDENTITY``), the scalar op
    combining an accumulator with an element (``COMBINE_OP``), and whether a
    float16 input accumulates in float32 (``WIDE``); a mean also overrides the
    ``finalize`` methods.  The loop space is the operand's; the reduced dims
    are ``reduction`` dims.
    """

    NUMPY_UFUNC: ClassVar[str]
    IDENTITY: ClassVar[float]
    COMBINE_OP: ClassVar[ScalarOpBuilder]
    WIDE: ClassVar[bool] = False
    """float16 accumulates in float32 (sums, means and products; as NumPy's mean)."""
    REORDERS: ClassVar[bool] = False
    """Compiled code may combine the elements in another order than NumPy's (only sums
    and means: the native target marks their accumulator ``reassoc`` so that LLVM
    vectorizes them, with an error bound like pairwise summation's).  Other reductions
    combine in order and give NumPy's results, overflow, underflow and nan included."""
    NEEDS_ELEMENTS: ClassVar[bool] = False
    """Reducing nothing is an error (the reduction has no identity NumPy accepts)."""
    FUNCTION: ClassVar[str | None]
    """The name users know it by (``"sum"``): its function, and messages use it."""
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("axis", "axis", None),
        Param("keepdims", "bool", False),
    )

    E: ClassVar = VarConstraint("E", FloatElementConstr)
    input = operand_def(TensorType.constr(E, shape=StaticShapeConstr))
    result = result_def(TensorType.constr(E, shape=StaticShapeConstr))
    axis = opt_prop_def(IntegerAttr[I64])
    keepdims = opt_prop_def(UnitAttr)

    assembly_format = (
        "$input (`axis` `=` $axis^)? (`keepdims` $keepdims^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )
    traits = traits_def(Pure())

    def __init__(
        self, input: SSAValue | Operation, axis: int | None = None, keepdims: bool = False
    ) -> None:
        value = operand_value(self.name, input)
        shape = self.result_shape(tensor_shape(value), axis, keepdims)
        props: dict[str, Attribute] = {}
        if axis is not None:
            props["axis"] = _axis_attr(axis)
        if keepdims:
            props["keepdims"] = UnitAttr()
        super().__init__(
            operands=[value],
            result_types=[tensor_type(element_type(value), shape)],
            properties=props,
        )

    @property
    def axis_value(self) -> int | None:
        """The reduced axis, made non-negative; None means every axis."""
        if self.axis is None:
            return None
        return normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))

    @property
    def keepdims_value(self) -> bool:
        return self.keepdims is not None

    def reduced_axes(self) -> tuple[int, ...]:
        """The operand axes it reduces."""
        axis = self.axis_value
        return tuple(range(len(tensor_shape(self.input)))) if axis is None else (axis,)

    @classmethod
    def result_shape(
        cls, shape: Sequence[int], axis: int | None, keepdims: bool
    ) -> tuple[int, ...]:
        """The result shape, or :class:`ShapeError` (also for an empty ``max``, as NumPy)."""
        out = reduce_shape(shape, axis, keepdims)
        if cls.NEEDS_ELEMENTS:
            reduced = math.prod(shape) if axis is None else shape[normalize_axis(axis, len(shape))]
            if reduced == 0:
                where = "all axes" if axis is None else f"axis {axis}"
                raise ShapeError(
                    f"`{cls.FUNCTION}` over {where} of a {fmt_shape(shape)} tensor reduces "
                    "zero elements, and it has no identity"
                )
        return out

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        axis = None if self.axis is None else self.axis.value.data
        shape = self.result_shape(tensor_shape(t), axis, self.keepdims_value)
        return (tensor_type(element_type(t), shape),)

    def verify_(self) -> None:
        try:
            (expected,) = self.infer_result_types([self.input.type])
        except ShapeError as err:
            raise shape_error(self, err, (self.input.type,)) from None
        expect_shape(self, tensor_shape(expected), self.result.type, "result")

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.input)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        reduced = self.reduced_axes()
        return tuple(
            IteratorType.REDUCTION if i in reduced else IteratorType.PARALLEL
            for i in range(len(tensor_shape(self.input)))
        )

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = len(tensor_shape(self.input))
        reduced = self.reduced_axes()
        if self.keepdims_value:
            out = [None if i in reduced else i for i in range(rank)]
        else:
            out = [i for i in range(rank) if i not in reduced]
        return (identity_map(rank), dims_map(rank, out))

    # -- accumulation -------------------------------------------------------------

    def combiner(self) -> Combiner:
        return Combiner(self.NUMPY_UFUNC, self.IDENTITY)

    def accumulator_dtype(self) -> np.dtype[Any]:
        dtype = numpy_dtype(self.result.type)
        return wide_accumulator(dtype) if self.WIDE else dtype

    def evaluate_partial(self, *args: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        (x,) = args
        acc = self.accumulator_dtype()
        ufunc = getattr(np, self.NUMPY_UFUNC)
        axis = self.axis_value
        with np.errstate(all="ignore"):
            value = ufunc.reduce(
                x,
                axis=None if axis is None else axis,
                keepdims=self.keepdims_value,
                dtype=acc,
                **({"initial": self.IDENTITY} if not self.NEEDS_ELEMENTS else {}),
            )
        return _as_array(value, acc)

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        (x,) = args
        axes = self.reduced_axes()
        count = math.prod(x.shape[a] for a in axes)
        with np.errstate(all="ignore"):
            return (self.finalize(self.evaluate_partial(x), count),)

    def numpy_workspace(
        self,
        operand_shapes: Sequence[tuple[int, ...]],
        result_shapes: Sequence[tuple[int, ...]],
        constant_operands: Sequence[bool],
    ) -> tuple[Workspace, ...]:
        acc = self.accumulator_dtype()
        if acc == numpy_dtype(self.result.type):
            return ()
        return ((result_shapes[0], acc),)

    def scalar_combine(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        element = convert_scalar(b, args[0], acc.type)
        return b.insert(self.COMBINE_OP(acc, element)).results[0]

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """Over a 0-d operand the op reduces no dim, so its loop dims are all parallel:
        the reduction of one element, taken into the identity state (as NumPy's reduce
        starts from it: the sum of -0.0 is 0.0) and finalized (a mean divides by 1)."""
        if self.reduced_axes():
            return super().scalar_body(b, args)
        acc = self.accumulator()
        assert acc is not None
        start = [
            scalar_constant(b, x, element_of(dt))
            for x, dt in zip(acc.identities, acc.dtypes, strict=True)
        ]
        return (self.scalar_finalize_state(b, self.scalar_accumulate(b, start, args), 1),)


class RowLocalOp(IRDLOperation, StructuredOpInterface, Decomposable, LanguageFunction, abc.ABC):
    """Base of row-normalizing ops along ``axis`` (default -1): the result has the
    operand's type, and each element depends on the whole row along ``axis``.

    The axis is a ``normalize`` dim.  A subclass computes whole rows
    (:meth:`evaluate`; the numpy target registers its lowering) and gives its
    :meth:`decompose`.
    """

    FUNCTION: ClassVar[str | None]
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "axis", -1),)

    T: ClassVar = VarConstraint("T", FloatTensorConstr)
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(IntegerAttr[I64], default_value=IntegerAttr(-1, i64))

    traits = traits_def(Pure())
    IN_PLACE: ClassVar[bool] = True

    @property
    def axis_value(self) -> int:
        """The axis, made non-negative."""
        return normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        normalize_axis(self.axis.value.data, len(tensor_shape(t)))
        return (t,)

    def verify_(self) -> None:
        try:
            normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))
        except ShapeError as err:
            raise shape_error(self, err, (self.input.type,)) from None

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.input)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        axis = self.axis_value
        return tuple(
            IteratorType.NORMALIZE if i == axis else IteratorType.PARALLEL
            for i in range(len(tensor_shape(self.input)))
        )

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = len(tensor_shape(self.input))
        return (identity_map(rank), identity_map(rank))

    @abc.abstractmethod
    def decompose(self) -> tuple[list[Operation], SSAValue]: ...


def row_stat_shape(shape: Sequence[int], axis: int) -> tuple[int, ...]:
    """The shape of a per-row statistic: ``shape`` with ``axis`` reduced to 1."""
    return tuple(1 if i == axis else d for i, d in enumerate(shape))


class ScanOp(IRDLOperation, StructuredOpInterface, Scan, LanguageFunction, abc.ABC):
    """Base of scans along ``axis``, NumPy's ``cumsum`` and ``cumprod``: the result has
    the operand's type, and each element combines the elements of its row up to it.

    A subclass names the NumPy ufunc whose ``accumulate`` it is (``NUMPY_UFUNC``), its
    identity (``IDENTITY``) and the scalar op combining the running value with an element
    (``COMBINE_OP``).  The axis is a ``scan`` dim: a row longer than a tile runs over
    tiles in order, carrying each row's running value from one tile to the next; so a
    scan is linear in its row whatever the budget.

    As NumPy, ``axis`` absent (None) scans the flattened operand: that is the operand
    itself for 0-d (the result is 1-d) and 1-d operands; flattening a 2-d or larger one
    is a reshape, which tdsl cannot express yet, so it is refused.  The running value
    has the result's dtype, as NumPy's: a float16 ``cumsum`` rounds every partial sum to
    float16, and overflow, ``inf`` and ``nan`` propagate as in NumPy.
    """

    NUMPY_UFUNC: ClassVar[str]
    IDENTITY: ClassVar[float]
    COMBINE_OP: ClassVar[ScalarOpBuilder]
    FUNCTION: ClassVar[str | None]
    PARAMS: ClassVar[tuple[Param, ...]] = (Param("axis", "axis", None),)

    input = operand_def(FloatTensorConstr)
    result = result_def(FloatTensorConstr)
    axis = opt_prop_def(IntegerAttr[I64])

    assembly_format = "$input (`axis` `=` $axis^)? attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())
    IN_PLACE: ClassVar[bool] = True  # accumulates over its operand's buffer

    def __init__(self, input: SSAValue | Operation, axis: int | None = None) -> None:
        value = operand_value(self.name, input)
        shape = self.result_shape(tensor_shape(value), axis)
        props: dict[str, Attribute] = {}
        if axis is not None:
            props["axis"] = _axis_attr(axis)
        super().__init__(
            operands=[value],
            result_types=[tensor_type(element_type(value), shape)],
            properties=props,
        )

    @classmethod
    def result_shape(cls, shape: Sequence[int], axis: int | None) -> tuple[int, ...]:
        """The result shape, or :class:`ShapeError` (a flattening scan of a 2-d or larger
        operand)."""
        if axis is not None:
            normalize_axis(axis, len(shape))
            return tuple(shape)
        if len(shape) > 1:
            raise ShapeError(
                f"`{cls.FUNCTION}` without an axis scans the flattened tensor, and flattening "
                f"a {fmt_shape(shape)} tensor is a reshape, which tdsl cannot express yet: "
                f"pass an axis (`{cls.FUNCTION}(x, axis=-1)`), or scan a 1-d tensor"
            )
        return (math.prod(shape),) if not shape else tuple(shape)

    @property
    def axis_value(self) -> int:
        """The scanned axis of the result, made non-negative (0 without an axis)."""
        if self.axis is None:
            return 0
        return normalize_axis(self.axis.value.data, len(tensor_shape(self.input)))

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> tuple[Attribute, ...]:
        (t,) = operand_types
        axis = None if self.axis is None else self.axis.value.data
        return (tensor_type(element_type(t), self.result_shape(tensor_shape(t), axis)),)

    def verify_(self) -> None:
        try:
            (expected,) = self.infer_result_types([self.input.type])
        except ShapeError as err:
            raise shape_error(self, err, (self.input.type,)) from None
        expect_shape(self, tensor_shape(expected), self.result.type, "result")
        same_element_types(self, (self.input.type, self.result.type))

    def loop_extents(self) -> tuple[int, ...]:
        return tensor_shape(self.result)

    def iterator_types(self) -> tuple[IteratorType, ...]:
        axis = self.axis_value
        return tuple(
            IteratorType.SCAN if i == axis else IteratorType.PARALLEL
            for i in range(len(tensor_shape(self.result)))
        )

    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = len(tensor_shape(self.result))
        if not tensor_shape(self.input):  # a 0-d operand scanned as one element
            return (dims_map(rank, ()), identity_map(rank))
        return (identity_map(rank), identity_map(rank))

    # -- computing ------------------------------------------------------------------

    def _ufunc(self) -> Any:
        return getattr(np, self.NUMPY_UFUNC)

    def evaluate(self, *args: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
        (x,) = args
        dtype = numpy_dtype(self.result.type)
        x = np.asarray(x).reshape(tensor_shape(self.result))
        with np.errstate(all="ignore"):
            value = self._ufunc().accumulate(x, axis=self.axis_value, dtype=dtype)
        return (_as_array(value, dtype),)

    def scan_combiner(self) -> Combiner:
        """The ufunc whose ``accumulate`` it is, and the carry's start (its identity)."""
        return Combiner(self.NUMPY_UFUNC, self.IDENTITY)

    def scan_carry_dtype(self) -> np.dtype[Any]:
        """The dtype of the carry (the result's: NumPy's ``cumsum`` of float16 adds in
        float16, rounding every partial sum)."""
        return numpy_dtype(self.result.type)

    def carried_loops(self) -> tuple[CarriedLoop, ...]:
        """Its ``scan`` dim, starting from :meth:`scan_combiner`'s identity, in
        :meth:`scan_carry_dtype`."""
        combiner = self.scan_combiner()
        dtype = self.scan_carry_dtype()
        return tuple(
            CarriedLoop(d, combiner.identity, dtype)
            for d, kind in enumerate(self.iterator_types())
            if kind is IteratorType.SCAN
        )

    def evaluate_scan(
        self, carry: np.ndarray[Any, Any] | None, *args: np.ndarray[Any, Any]
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        (x,) = args
        k = self.axis_value
        dtype = self.scan_carry_dtype()
        shape = row_stat_shape(x.shape, k)
        if carry is None:
            carry = np.full(shape, self.IDENTITY, dtype=dtype)
        if x.shape[k] == 0:
            return np.empty(x.shape, dtype=dtype), carry
        y = np.array(x, dtype=dtype)
        first = (slice(None),) * k + (slice(0, 1),)
        with np.errstate(all="ignore"):
            y[first] = self._ufunc()(carry, y[first])
            value = self._ufunc().accumulate(y, axis=k, dtype=dtype)
        last = (slice(None),) * k + (slice(-1, None),)
        return value, np.array(value[last])

    def scalar_scan(self, b: Builder, carry: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        return b.insert(self.COMBINE_OP(carry, args[0])).results[0]

    def scalar_body(self, b: Builder, args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """A scan whose loop dims are all parallel (its axis has extent 1, or a 0-d
        operand): the first element of a row is the element itself, as NumPy's
        ``accumulate`` copies it (so ``cumsum`` of ``-0.0`` is ``-0.0``)."""
        return (args[0],)

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        return None  # NumPy's cumsum of booleans is an integer: refused, convert first


__all__ = [
    "BOOL",
    "ELEMENT_TYPES",
    "FLOAT_TYPES",
    "NUMPY_DTYPES",
    "Accumulator",
    "BinaryOp",
    "Body",
    "BoolTensorConstr",
    "CarriedLoop",
    "Combiner",
    "CompareOp",
    "Contraction",
    "Decomposable",
    "ElementConstr",
    "ElementwiseOp",
    "FloatElementConstr",
    "FloatTensorConstr",
    "FloatType",
    "HasConstantValue",
    "IteratorType",
    "LanguageFunction",
    "LogicalOp",
    "Param",
    "ParamKind",
    "PartialOps",
    "Reduction",
    "ReductionOp",
    "RowLocalOp",
    "ScalarOpBuilder",
    "Scan",
    "ScanOp",
    "ShapeError",
    "StaticShapeConstr",
    "StructuredOpInterface",
    "TensorConstr",
    "UnaryOp",
    "Workspace",
    "body_of",
    "broadcast_dims",
    "broadcast_shapes",
    "checked_decomposition",
    "constant_value",
    "convert_scalar",
    "dims_map",
    "element_body",
    "element_dtype",
    "element_of",
    "element_type",
    "fmt_shape",
    "identity_map",
    "is_bool",
    "map_dims",
    "normalize_axis",
    "numpy_dtype",
    "operand_value",
    "reduce_shape",
    "reduction_of",
    "row_stat_shape",
    "scalar_constant",
    "structured",
    "tensor_shape",
    "tensor_type",
    "ufunc_bool_dtype",
]
