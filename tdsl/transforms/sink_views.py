"""``tdsl-sink-views``: move windows onto the operands of what they window.

A ``tensordsl.slice`` is read in place between groups, so its operand is a value held
whole (see :class:`~tdsl.dialects.op_interfaces.StridedView`).  A window of an
element-wise result would hold that result whole for the window alone; these patterns
window the operands instead, so that the element-wise op computes only the window,
in the group that reads it:

- ``slice(f(a, b))`` -> ``f(slice(a), slice(b))`` for an element-wise ``f`` whose
  every use is a slice (each computes its own window: ``y[:, 1:] - y[:, :-1]`` of
  ``y = exp(x)`` computes ``exp`` twice per element, in one group, and holds nothing).
  An operand that broadcasts along an axis keeps that axis whole (extent 1).
  Not where an operand of ``f``'s shape is the result of an op that is not
  element-wise (a matmul's product): that operand is held whole all the same, and
  ``f`` is best computed once, as its group's epilogue.  (Sunk, a GPT-2 block's
  ``(x @ w + b)[:, k]`` windows, its q, k and v per head, took their bias in 24 more
  groups, two materialized values per head.)
- ``slice(slice(x))`` -> ``slice(x)``: one window;
- ``reshape(f(a, b))`` -> ``f(reshape(a), reshape(b))`` likewise, where every operand
  of ``f`` has its result's shape (or none: a 0-d operand stays as it is);
- ``reshape(reshape(x))`` -> ``reshape(x)``, and a reshape to the operand's own shape
  is the operand;
- a window of a join that lies within one of its operands is a window of that operand
  (``concatenate((a, b))[:n]`` of an ``a`` of extent ``n`` is ``a``);
- ``take(f(a, b), t)`` -> ``f(take(a, t), take(b, t))`` likewise (a gather is no
  view, but it reads its operand whole: ``exp(w)[t]`` computes ``exp`` of the rows
  gathered only).

A sink copies ``f`` once per view, with the element-wise ops it reads through views
sunk before: at most :data:`DUPLICATES` ops in all (``x = x[1:] - x[:-1]`` repeated
would copy 2**n); beyond, ``f`` is computed once and held whole between groups.

``tdsl-fuse`` applies them before it plans, so windows of arguments are all that
remain in the common case; the pass runs them alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tdsl.dialects.structured import structured, tensor_shape
from tdsl.dialects.structured_elementwise import ElementwiseOp
from tdsl.dialects.tensordsl import ConcatenateOp, ReshapeOp, SliceOp, TakeOp


def _operand_window(
    view: SliceOp, operand: SSAValue
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """The window of an element-wise op's ``operand`` that ``view`` of its result reads
    (offsets, strides, sizes), or None when it is the whole operand."""
    offsets, strides = view.window()
    sizes = tensor_shape(view.result)
    shape = tensor_shape(operand)
    lead = len(offsets) - len(shape)
    window: list[tuple[int, int, int]] = []
    for axis, n in enumerate(shape):
        o, s, k = offsets[lead + axis], strides[lead + axis], sizes[lead + axis]
        full = tensor_shape(view.input)[lead + axis]
        window.append((0, 1, 1) if n == 1 and full != 1 else (o, s, k))
    if all(w == (0, 1, n) for w, n in zip(window, shape, strict=True)):
        return None
    return tuple(w[0] for w in window), tuple(w[1] for w in window), tuple(w[2] for w in window)


DUPLICATES = 64
"""The most element-wise ops one sink may copy (an op with ``n`` views of its result is
copied ``n`` times, with the element-wise ops it reads through other sunk views)."""


def _cone(op: Operation) -> int:
    """The element-wise ops ``op`` reads through element-wise ops and views, counted per
    path (as sinking copies them), up to ``DUPLICATES + 1``."""
    count, stack = 0, [op]
    while stack and count <= DUPLICATES:
        top = stack.pop()
        count += isinstance(top, ElementwiseOp)
        for v in top.operands:
            if isinstance(v.owner, ElementwiseOp | SliceOp | ReshapeOp | TakeOp):
                stack.append(v.owner)
    return count


def _sink(
    op: SliceOp | ReshapeOp | TakeOp,
    rewriter: PatternRewriter,
    view_of: Callable[[SSAValue], Operation | None],
) -> None:
    """Replace view ``op`` of an element-wise result whose every use is such a view by
    that op on the views ``view_of`` makes of its operands (None: the operand as is)."""
    producer = op.input.owner
    if not isinstance(producer, ElementwiseOp) or not isinstance(producer, Operation):
        return
    if len(producer.results) != 1:
        return
    if not all(isinstance(use.operation, type(op)) for use in producer.results[0].uses):
        return
    full = tensor_shape(producer.results[0])
    if any(
        tensor_shape(v) == full
        and isinstance(v.owner, Operation)
        and structured(v.owner) is not None
        and not isinstance(v.owner, ElementwiseOp)
        for v in producer.operands
    ):
        return  # held whole all the same: ``f`` is its group's epilogue, computed once
    uses = producer.results[0].uses.get_length()
    if uses > 1 and uses * _cone(producer) > DUPLICATES:
        return  # held whole: each view would copy the ops it reads (``x[1:] - x[:-1]``
        # ten times over would copy 2**10 of them)
    operands: list[SSAValue] = []
    for v in producer.operands:
        inner = view_of(v)
        if inner is None:
            operands.append(v)
            continue
        inner.location = op.location
        rewriter.insert(inner)
        operands.append(inner.results[0])
    rewriter.replace(op, producer.retyped(operands))
    if not producer.results[0].uses:
        rewriter.erase(producer)


def _sink_whole(
    op: ReshapeOp | TakeOp, rewriter: PatternRewriter, make: Callable[[SSAValue], Operation]
) -> None:
    """:func:`_sink` where every operand of the element-wise producer is whole (its
    result's shape), each made anew by ``make``, or 0-d (kept as it is)."""
    producer = op.input.owner
    full = tensor_shape(op.input)
    if not full:
        return  # a 0-d result's operands are all 0-d: none would be made anew
    if isinstance(producer, Operation) and all(
        tensor_shape(v) in (full, ()) for v in producer.operands
    ):
        _sink(op, rewriter, lambda v: make(v) if tensor_shape(v) else None)


def _fold(op: Operation, inner: Operation, folded: Operation, rewriter: PatternRewriter) -> None:
    """Replace view ``op`` of view ``inner`` by the one view ``folded``."""
    folded.location = op.location
    folded.results[0].name_hint = op.results[0].name_hint
    rewriter.replace(op, folded)
    if not inner.results[0].uses:
        rewriter.erase(inner)


@dataclass
class SinkIntoElementwise(RewritePattern):
    """``slice(f(a, b))`` -> ``f(slice(a), slice(b))`` when every use of ``f`` is a slice."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        def window(v: SSAValue) -> Operation | None:
            found = _operand_window(op, v)
            return None if found is None else SliceOp(v, *found)

        _sink(op, rewriter, window)


@dataclass
class SinkReshapeIntoElementwise(RewritePattern):
    """``reshape(f(a, b))`` -> ``f(reshape(a), reshape(b))`` when every use of ``f`` is a
    reshape and its operands are whole (its result's shape) or 0-d."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        _sink_whole(op, rewriter, lambda v: ReshapeOp(v, tensor_shape(op.result)))


@dataclass
class SinkTakeIntoElementwise(RewritePattern):
    """``take(f(a, b), t)`` -> ``f(take(a, t), take(b, t))`` when every use of ``f`` is a
    gather and its operands are whole (its result's shape) or 0-d: the gather reads the
    operands, and ``f`` computes only the rows gathered (``exp(w)[t]``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TakeOp, rewriter: PatternRewriter) -> None:
        _sink_whole(op, rewriter, lambda v: TakeOp(v, op.indices, op.axis_value))


@dataclass
class FoldReshape(RewritePattern):
    """``reshape(reshape(x))`` -> ``reshape(x)``; a reshape to its operand's shape is its
    operand."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if tensor_shape(op.input) == tensor_shape(op.result):
            rewriter.replace(op, [], [op.input])
            return
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp):
            return
        _fold(op, inner, ReshapeOp(inner.input, tensor_shape(op.result)), rewriter)


@dataclass
class FoldSliceOfSlice(RewritePattern):
    """``slice(slice(x))`` -> ``slice(x)``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, SliceOp):
            return
        (o1, s1), (o2, s2) = inner.window(), op.window()
        offsets = tuple(a + b * s for a, b, s in zip(o1, o2, s1, strict=True))
        strides = tuple(a * b for a, b in zip(s1, s2, strict=True))
        sizes = tensor_shape(op.result)
        offsets = tuple(o if k else 0 for o, k in zip(offsets, sizes, strict=True))
        strides = tuple(s if k else 1 for s, k in zip(strides, sizes, strict=True))
        _fold(op, inner, SliceOp(inner.input, offsets, strides, sizes), rewriter)


@dataclass
class FoldSliceOfConcatenate(RewritePattern):
    """A window of a ``concatenate`` within one operand -> a window of that operand."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        join = op.input.owner
        if not isinstance(join, ConcatenateOp):
            return
        axis = join.axis_value
        offsets, strides = op.window()
        k = tensor_shape(op.result)[axis]
        if k == 0:
            return
        first, last = offsets[axis], offsets[axis] + (k - 1) * strides[axis]
        low, high = min(first, last), max(first, last)
        for start, v in zip(join.offsets(), join.inputs, strict=True):
            if start <= low and high < start + tensor_shape(v)[axis]:
                moved = tuple(o - start if a == axis else o for a, o in enumerate(offsets))
                _fold(op, join, SliceOp(v, moved, strides, tensor_shape(op.result)), rewriter)
                return


SINK_VIEW_PATTERNS: tuple[RewritePattern, ...] = (
    FoldSliceOfConcatenate(),
    FoldSliceOfSlice(),
    FoldReshape(),
    SinkIntoElementwise(),
    SinkReshapeIntoElementwise(),
    SinkTakeIntoElementwise(),
)
"""The patterns of ``tdsl-sink-views``."""


def sink_views(module: ModuleOp) -> None:
    """Apply :data:`SINK_VIEW_PATTERNS` to ``module`` until none applies."""
    if not any(isinstance(op, SliceOp | ReshapeOp | TakeOp) for op in module.walk()):
        return
    PatternRewriteWalker(
        GreedyRewritePatternApplier(list(SINK_VIEW_PATTERNS)), apply_recursively=True
    ).rewrite_module(module)


@dataclass(frozen=True)
class SinkViewsPass(ModulePass):
    """Move windows (``tensordsl.slice``) and reshapes onto the operands of element-wise
    ops."""

    name = "tdsl-sink-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sink_views(op)


__all__ = ["SINK_VIEW_PATTERNS", "SinkViewsPass", "sink_views"]
