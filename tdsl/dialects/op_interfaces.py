"""Small op interfaces: what some structured ops are besides structured.

Every op tdsl fuses and tiles implements
:class:`~tdsl.dialects.structured.StructuredOpInterface` (its loop space, types and
computation, and its partial results when it reduces).  What only some ops are is
one small interface each, which an op mixes in when it is that, and a consumer asks
with ``isinstance``:

* :class:`LanguageFunction`: the op is a function (or an operator) of the
  expression language; the frontend's function table, ``tdsl.lang`` and the
  reference pages are made of these ops.
* :class:`Contraction`: the op is a matrix product with ``np.matmul``'s
  semantics (MLIR Linalg's contraction); the planners read it whole from
  memory, never recompute it and keep its dims whole, and the native target may
  call BLAS for it.
* :class:`Decomposable`: the op (one with a ``normalize`` dim, ``softmax``) has a
  decomposition into ops without one, which runs rows longer than a tile.
* :class:`SweepDecomposable`: the op (a reduction with a tuple accumulator,
  ``logsumexp``) is also plain reductions in sweeps, which the native loops run.
* :class:`Scan`: the op tiles some loop dims itself, carrying a state from tile
  to tile (``cumsum``), as MLIR's ``TilingInterface`` lets an op.
* :class:`StridedView`: the op is not structured: it is a window of its operand
  (a slice) that every target reads in place, between groups.

The base classes of :mod:`tdsl.dialects.structured` mix in what their ops are
(:class:`~tdsl.dialects.structured.UnaryOp` and the other function families are
:class:`LanguageFunction`, :class:`~tdsl.dialects.structured.RowLocalOp` is
:class:`Decomposable`, :class:`~tdsl.dialects.structured.ScanOp` is :class:`Scan`),
so an op of those families declares none of them itself.

This module depends on no other tdsl module (:mod:`tdsl.dialects.structured` builds
on it), so its types come from there for type checkers only.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

if TYPE_CHECKING:
    from tdsl.dialects.structured import StructuredOpInterface


# ---------------------------------------------------------------------------
# The expression language's functions
# ---------------------------------------------------------------------------

ParamKind = Literal[
    "axis",
    "axes",
    "perm",
    "bool",
    "float",
    "int_axis",
    "int_axes",
    "new_axes",
    "new_shape",
    "sections",
    "subscripts",
    "shape",
    "size",
    "int",
    "number",
    "dtype",
]


@dataclass(frozen=True)
class Param:
    """A keyword parameter of an op's function in the expression language.

    ``kind`` says what values it takes: ``axis`` an integer axis of the first
    argument (negative counts from the end; None too when that is the default,
    meaning every axis), ``axes`` the same or a tuple of such axes (the language
    reduces over each, see :mod:`tdsl.frontend.axes`), ``perm`` a tuple ordering all the
    axes of the first argument (None: reversed), ``bool`` true or false,
    ``float`` a number, ``int_axis`` one axis of the first argument,
    ``int_axes`` one or a tuple of them (each once), ``new_axes`` one or a
    tuple of axes of the result (``expand_dims``), ``subscripts`` a string given
    first, before the tensors (``einsum``'s), ``shape`` one extent or a tuple of
    them, ``size`` an extent, ``int`` an integer, ``number`` an int or a float
    (kept as given: NumPy's creation functions make integers of ints),
    ``dtype`` a dtype's name (``np.float32``, ``f32``, ``"float32"``).  The op's constructor takes
    it under the same name (``int_axis`` and ``int_axes`` made non-negative, a
    tuple for ``int_axes``).  A ``required`` parameter has no default.
    """

    name: str
    kind: ParamKind
    default: int | float | bool | None
    required: bool = False

    def spelled(self) -> str:
        """``axis=-1``, ``keepdims=False``, ``eps=1e-05``, or a required ``axis``: as the
        signature shows it."""
        return self.name if self.required else f"{self.name}={self.default!r}"


class LanguageFunction(abc.ABC):  # noqa: B024 (every member has a default)
    """An op the expression language spells: a function (``exp(x)``), an operator
    (``a + b``), or both (``a ** b`` and ``power(a, b)``).

    The frontend's function table (:data:`tdsl.frontend.ir_gen.FUNCTIONS`) is made of
    the ops of the tensordsl dialect that implement it and give a :attr:`FUNCTION`, so
    adding such an op adds the function; ``tdsl.tools.gen_reference`` writes
    ``tdsl/lang/functions.py`` and the reference pages from the same table.  An op the language
    does not spell (``tensordsl.cast``, which the frontend inserts) does not implement
    it.  Mix it into an ``IRDLOperation`` class that implements the structured-op
    interface; the function families' base classes already do.
    """

    FUNCTION: ClassVar[str | None] = None
    """Its name as a function of the expression language (``exp`` for ``exp(x)``); None
    for an op the language spells only as an operator (``+``)."""
    OPERATOR: ClassVar[str | None] = None
    """The binary operator spelling it (``+``), for element-wise binary ops."""
    ARITY: ClassVar[int] = 1
    """How many tensor arguments its function takes (at most, with :attr:`MIN_ARITY`)."""
    MIN_ARITY: ClassVar[int | None] = None
    """The fewest tensor arguments its function takes, when fewer than :attr:`ARITY`."""
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    """Its function's keyword parameters, in order, with their defaults."""
    POSITIONAL: ClassVar[int] = 1
    """How many of :attr:`PARAMS` a call may also give by position, after the tensor
    arguments, as NumPy's function takes them (``np.sum(x, 0)``: the axis)."""
    SEQUENCE: ClassVar[bool] = False
    """Whether its function takes its tensors as one tuple or list, as NumPy's joins do
    (``concatenate((a, b), axis=1)``)."""
    SEVERAL: ClassVar[bool] = False
    """Whether its function gives several tensors, as NumPy's splits do
    (``q, k, v = split(x, 3, axis=-1)``)."""

    @classmethod
    def bool_inputs_as(cls) -> np.dtype[Any] | None:
        """How the op takes boolean operands, as NumPy's counterpart does: the float dtype
        the frontend converts them to first (``exp`` of booleans is float16 in NumPy),
        ``bool`` when the op takes them as they are (``&``, ``where``), or None when
        NumPy's result would be an integer or an error (``sum`` of booleans): the
        frontend then refuses them and suggests a conversion."""
        return None

    @classmethod
    def int_inputs_as(cls, dtype: np.dtype[Any]) -> np.dtype[Any] | None:
        """How the op takes integer operands of ``dtype``, as NumPy's counterpart does:
        ``dtype`` itself when the op computes integers exactly (``+``, ``//``, ``max``),
        another dtype the frontend converts them to first (``float64`` for ``exp``,
        ``/`` and ``mean`` of ``int32``; ``int64`` for ``sum`` of ``int32``), or None
        when the op takes no integers: the frontend refuses them.  By default an op
        that takes booleans as they are (a view, ``where``, a join) takes integers as
        they are too."""
        return dtype if cls.bool_inputs_as() == np.dtype(np.bool_) else None

    @classmethod
    def signature(cls) -> str:
        """``softmax(x, axis=-1)``: the function as error messages show it."""
        args = ["x"] if cls.ARITY == 1 else ["a", "b", "c", "d"][: cls.ARITY]
        return f"{cls.FUNCTION}({', '.join([*args, *(p.spelled() for p in cls.PARAMS)])})"

    @classmethod
    def from_call(cls, operands: Sequence[SSAValue], params: Mapping[str, object]) -> Operation:
        """The op for ``FUNCTION(*operands, **params)`` (every parameter given, checked
        against its kind).  Raises :class:`~tdsl.dialects.structured.ShapeError` for
        operands it does not accept.  By default the constructor, with the parameters as
        keywords."""
        return cast(Any, cls)(*operands, **params)


# ---------------------------------------------------------------------------
# Contractions
# ---------------------------------------------------------------------------


class Contraction(abc.ABC):  # noqa: B024 (every member has a default)
    """A matrix product with ``np.matmul``'s semantics on its two operands (MLIR Linalg's
    contraction): 2-D operands multiply as matrices, a 1-D left (right) operand is a row
    (column) vector, leading batch dims broadcast; its loops are parallel except the one
    ``reduction`` dim it sums over.

    Being one tells the planners that the op is costly per element and best computed
    in few large calls (BLAS):

    * ``tdsl-fuse`` reads its :meth:`materialized_operands` from memory and plans for it
      never being recomputed (:meth:`recomputable`; also the tile schedule,
      :func:`tdsl.dialects.kernel_plan.schedule`);
    * tiling cuts its :meth:`prefer_whole_dims` last
      (:mod:`tdsl.transforms.iteration_space`), and the numpy target runs it once on whole
      arrays where its operands allow (:mod:`tdsl.backend.numpy.blocking`);
    * the native target may call BLAS's gemm for it (:mod:`tdsl.backend.llvm.lower_to_loops`).

    Mix it into an ``IRDLOperation`` class that implements the structured-op interface
    (its reduction members say how partial products accumulate).  The defaults fit a
    matrix product whose right operand is read whole.
    """

    def materialized_operands(self) -> tuple[int, ...]:
        """The operands that must be read from memory, whole along their non-tiled dims:
        a group input or a view of one, never a value computed in the same group.  By
        default the right operand (a matmul's columns are read many times over)."""
        return (1,)

    def recomputable(self) -> bool:
        """Whether a later pass over a reduction may compute the op again instead of
        keeping its result.  False by default: a contraction costs a product of its
        extents, so the planners keep its result rather than recompute it."""
        return False

    def prefer_whole_dims(self) -> tuple[int, ...]:
        """The loop dims tiling should cut last: those it sums over (read by an operand,
        not by the result) and the columns (the right operand's last dim, when the result
        runs along it).  From :meth:`~tdsl.dialects.structured.StructuredOpInterface.indexing_maps`."""
        s = cast("StructuredOpInterface", self)
        lhs, rhs, out = ([_dim(e) for e in m.results] for m in s.indexing_maps())
        whole = {d for d in (*lhs, *rhs) if d is not None and d not in out}  # summed over
        columns = rhs[-1] if rhs else None
        if columns is not None and columns in out:
            whole.add(columns)
        return tuple(sorted(whole))


def _dim(expr: object) -> int | None:
    """The loop dim an indexing map's result reads, None for a constant (a broadcast)."""
    return expr.position if isinstance(expr, AffineDimExpr) else None


# ---------------------------------------------------------------------------
# Decompositions
# ---------------------------------------------------------------------------


class Decomposable(abc.ABC):
    """An op that is also a composition of other ops: an op with a ``normalize`` dim
    (``softmax``, ``layernorm``) is reductions with ``keepdims`` and broadcasting
    element-wise ops, none of which has one.

    A row that fits a tile runs the op whole; ``tdsl-tile``
    (:mod:`tdsl.transforms.tile`) runs a row longer than the memory budget as the
    decomposition, over column tiles, one pass per reduction, and the reference
    interpreter (:mod:`tdsl.interpreters.scalar`) computes the op as it.  Both take it
    through :func:`~tdsl.dialects.structured.checked_decomposition`, which checks the
    contract below.  :class:`~tdsl.dialects.structured.RowLocalOp` implements it.
    """

    @abc.abstractmethod
    def decompose(self) -> tuple[list[Operation], SSAValue] | None:
        """The same computation in ops without a ``normalize`` dim, not yet inserted, and
        the value replacing the (one) result; None for an instance with nothing to
        decompose.

        The new ops read this op's operands and each other's results: insert them
        (``Rewriter.replace_op``) or erase them, or the operands keep uses nothing
        inserts."""

    def decomposes(self) -> bool:
        """Whether :meth:`decompose` gives a decomposition, without building it (True by
        default: an op whose instances decompose only sometimes says which)."""
        return True

    def decompose_with_user(self) -> tuple[Operation, Operation] | None:
        """A decomposition that takes the op's one user with it, tried before
        :meth:`decompose`: the user, and the op (not yet inserted) that replaces both, on
        the op's operands and the user's others.  None (the default) when there is none.
        ``softmax``'s: a ``matmul`` contracting along its axis becomes ``softmax_matmul``,
        whose key dim tiles with an online softmax."""
        return None


class SweepDecomposable(abc.ABC):
    """A reduction whose one-pass state is also plain reductions over the same elements,
    one after the other: ``logsumexp`` is the maximum, then the sum of ``exp(x - max)``.

    A target that takes a reduction dim whole may compute the op that way: the native
    loops do (two reductions LLVM vectorizes, where the online state is a serial chain
    of ``exp`` and selects, one element at a time).  The planners, the NumPy target and
    Dask keep the one-pass op, which tiles its reduction dims in one pass.  The
    decomposition is checked as :class:`Decomposable`'s is
    (:func:`~tdsl.dialects.structured.checked_decomposition` with ``sweeps``).
    """

    @abc.abstractmethod
    def decompose_sweeps(self) -> tuple[list[Operation], SSAValue] | None:
        """The op as plain reductions and element-wise ops, not yet inserted, and the
        value replacing its result; None where it has none (a reduction of no elements,
        whose maximum has no identity)."""

    def decomposes_in_sweeps(self) -> bool:
        """Whether :meth:`decompose_sweeps` gives a decomposition, without building it."""
        return True


# ---------------------------------------------------------------------------
# An op's own tiling: loop dims whose tiles carry a state, in order
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CarriedLoop:
    """One loop dim an op tiles itself (see :meth:`Scan.carried_loops`): its tiles run in
    order, each starting from a state the tile before left, one value per row (the op's
    result tile with ``dim`` of extent 1)."""

    dim: int
    """The op's loop dim."""
    start: float
    """The state before the first tile (a scan's identity)."""
    dtype: np.dtype[Any]
    """The state's dtype."""


class Scan(abc.ABC):
    """An op that tiles some of its loop dims itself, as MLIR's ``TilingInterface`` lets
    an op: tiles along such a dim run in order, and each threads a state of one value per
    row to the next.  A scan (``cumsum``) is one: its results run along its axis, each
    combining the elements before it, so it tiles along its axis like a reduction, in
    order, and a row of any length runs in linear time within the budget.

    The planners read :meth:`carried_loops`, not op classes: ``tdsl-tile`` may cut such a
    dim like a reduction dim (its iterator kind is ``scan``), the schedule
    (:mod:`tdsl.dialects.kernel_plan`) runs its tiles in order in a pass whose results
    are ready per tile, and the scratch plan keeps the state in a buffer for the pass
    (set to ``start`` when it begins).  Each target computes a tile from the state:
    the interpreter with :meth:`evaluate_scan`, the native loops and the reference
    interpreter with :meth:`scalar_scan`, the numpy target with its registered scan
    lowering (an op of another dialect may bring its own as a ``lower_numpy_scan``
    method).  :class:`~tdsl.dialects.structured.ScanOp` implements it from a ufunc's
    ``accumulate``.
    """

    @abc.abstractmethod
    def carried_loops(self) -> tuple[CarriedLoop, ...]:
        """The loop dims the op tiles itself, each with the state's start and dtype (at
        most one of them may be cut at a time)."""

    @abc.abstractmethod
    def evaluate_scan(
        self, carry: np.ndarray[Any, Any] | None, *args: np.ndarray[Any, Any]
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The result of one tile from ``carry`` (None: the first tile), and the carry
        after it (the result's last elements along the carried dim, kept as extent 1)."""

    @abc.abstractmethod
    def scalar_scan(self, b: Builder, carry: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        """Build the next running value from ``carry`` and one point's operand elements, on
        scalars of the carried loop's dtype; the result element is that value."""


# ---------------------------------------------------------------------------
# A window of a value, read in place between groups
# ---------------------------------------------------------------------------


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The element strides of a C-contiguous array of ``shape``: the layout of every
    value a group computes, and what a :class:`StridedView` reads unless told otherwise."""
    out: list[int] = []
    step = 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


class StridedView(abc.ABC):
    """An op whose one result reads its one operand's elements in place: a window
    (``x[1:, ::2]``: an offset plus a stride per axis) or a reshape of a layout that
    allows one.  Such an op computes nothing and is not structured: fusion leaves it
    between groups, where each target reads the operand in place (the numpy target
    indexes or reshapes it, the native target passes a pointer into the operand's
    buffer with the result's strides, Dask slices or reshapes the Dask array), and the
    groups it feeds read the result as an input.  So the operand is a value held whole
    (an argument, a constant, a group's result); the ``tdsl-sink-views`` patterns move
    views of element-wise results onto their operands first, so that nothing is held
    for a view alone.
    """

    @abc.abstractmethod
    def evaluate_view(self, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The result on ``array`` (a NumPy view of it where NumPy makes one)."""

    @abc.abstractmethod
    def layout(
        self, shape: Sequence[int], strides: Sequence[int]
    ) -> tuple[int, tuple[int, ...]] | None:
        """The result on an operand of ``shape`` laid out with element ``strides``: the
        element offset of its first element and its element strides, or None when no
        strides can (a reshape of some windows): a target then copies the operand
        row-major first."""


__all__ = [
    "CarriedLoop",
    "Contraction",
    "Decomposable",
    "LanguageFunction",
    "Param",
    "ParamKind",
    "Scan",
    "StridedView",
    "SweepDecomposable",
    "row_major_strides",
]
