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

from tdsl.dialects.op_interfaces import (
    CarriedLoop,
    Contraction,
    Decomposable,
    LanguageFunction,
    Param,
    ParamKind,
    Scan,
    SweepDecomposable,
)
from tdsl.dialects.structured_axis import ReductionOp, RowLocalOp, ScanOp, row_stat_shape
from tdsl.dialects.structured_bodies import (
    Body,
    body_of,
    checked_decomposition,
    constant_value,
    element_body,
)
from tdsl.dialects.structured_elementwise import (
    BinaryOp,
    CompareOp,
    ElementwiseOp,
    LogicalOp,
    UnaryOp,
    identity_map,
    ufunc_bool_dtype,
)
from tdsl.dialects.structured_interface import (
    HasConstantValue,
    PartialOps,
    Reduction,
    StructuredOpInterface,
    is_constant,
    reduction_of,
    structured,
)
from tdsl.dialects.structured_loops import (
    Accumulator,
    Combiner,
    IteratorType,
    OperandWorkspace,
    ScalarOpBuilder,
    Workspace,
    broadcast_dims,
    dims_map,
    map_dims,
)
from tdsl.dialects.structured_types import (
    BOOL,
    ELEMENT_TYPES,
    FLOAT_TYPES,
    INDEX_TYPES,
    INT_SCALAR_OPS,
    INT_TYPES,
    NUMPY_DTYPES,
    UI8,
    BoolTensorConstr,
    ElementConstr,
    FloatElementConstr,
    FloatTensorConstr,
    FloatType,
    IntegralTensorConstr,
    IntTensorConstr,
    NumericTensorConstr,
    ShapeError,
    StaticShapeConstr,
    TensorConstr,
    broadcast_shapes,
    cmpi,
    convert_scalar,
    element_dtype,
    element_of,
    element_type,
    fmt_shape,
    int_op,
    is_bool,
    is_int,
    is_unsigned,
    normalize_axis,
    numpy_dtype,
    operand_value,
    reduce_shape,
    scalar_constant,
    tensor_shape,
    tensor_type,
)

__all__ = [
    "BOOL",
    "ELEMENT_TYPES",
    "FLOAT_TYPES",
    "INDEX_TYPES",
    "INT_SCALAR_OPS",
    "INT_TYPES",
    "NUMPY_DTYPES",
    "UI8",
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
    "IntTensorConstr",
    "IntegralTensorConstr",
    "IteratorType",
    "LanguageFunction",
    "LogicalOp",
    "NumericTensorConstr",
    "OperandWorkspace",
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
    "SweepDecomposable",
    "TensorConstr",
    "UnaryOp",
    "Workspace",
    "body_of",
    "broadcast_dims",
    "broadcast_shapes",
    "checked_decomposition",
    "cmpi",
    "constant_value",
    "convert_scalar",
    "dims_map",
    "element_body",
    "element_dtype",
    "element_of",
    "element_type",
    "fmt_shape",
    "identity_map",
    "int_op",
    "is_bool",
    "is_constant",
    "is_int",
    "is_unsigned",
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
