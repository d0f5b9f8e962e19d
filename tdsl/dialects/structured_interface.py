"""The interfaces themselves: :class:`StructuredOpInterface` (the loop space, indexing
maps, types and computation every computing op states), :class:`Reduction` (the
accumulator state of an op with reduction dims and its regions), :class:`PartialOps`
(the partial ops Dask runs) and :class:`HasConstantValue`, with :func:`structured` and
:func:`reduction_of`, which consumers ask instead of looking at op classes.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.builder import (
    Builder,  # pyright: ignore[reportPrivateUsage]
)
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap

from tdsl.dialects.structured_loops import Accumulator, Combiner, IteratorType, Workspace
from tdsl.dialects.structured_types import convert_scalar, element_type, numpy_dtype
from tdsl.errors import SourceLocation, TdslIRError


def as_array(value: Any, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    return np.asarray(value, dtype=dtype)


class StructuredOpInterface(abc.ABC):
    """The interface every op that tdsl fuses and tiles implements (see
    :mod:`tdsl.dialects.structured`).

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

    def is_view(self) -> bool:
        """Whether the result is a view of the first operand, its elements rearranged
        (``transpose``) or as they are (a cast to the same type), so that nothing is
        computed: the scratch plan gives it no buffer and keeps its operand alive while
        it is read; each target says how it views (the numpy target's ``VIEWS``)."""
        return False

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
        return as_array(acc, numpy_dtype(cast(Operation, self).results[0].type))

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


_IMPLEMENTS: dict[tuple[type, type], bool] = {}
"""Per op class and interface, whether the class implements it (an ``isinstance`` of an
ABC costs a call into ``abc`` each time; planners ask it of every op, often)."""


def _implements(op: Operation, interface: type) -> bool:
    key = (type(op), interface)
    found = _IMPLEMENTS.get(key)
    if found is None:
        found = _IMPLEMENTS[key] = issubclass(key[0], interface)
    return found


def structured(op: Operation) -> StructuredOpInterface | None:
    """``op`` as a structured op, or None when it does not implement the interface."""
    return cast(StructuredOpInterface, op) if _implements(op, StructuredOpInterface) else None


def is_constant(op: Operation) -> bool:
    """Whether ``op`` stands for a constant array (:class:`HasConstantValue`), without
    making the array as :func:`~tdsl.dialects.structured_bodies.constant_value` does."""
    return _implements(op, HasConstantValue)


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
