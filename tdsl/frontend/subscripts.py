"""NumPy's indexing in the language: basic (``x[1:, ::-2]``, ``x[0]``, ``x[..., None]``) and
advanced (``x[t]``, ``x[1:3, t]``, ``x[i, :, j]``, a gather);
and the tuples and lists of expressions a join takes (``concatenate((a, b))``).

The parser reads a subscript's items (:func:`parse_subscript`); the lowering writes it
as NumPy does (:func:`lower_subscript`): a ``tensordsl.slice`` of the windows the
slices and integers select, a ``squeeze`` of the axes an integer drops and an
``expand_dims`` of the axes ``None`` adds.  Indices are integer literals: every
shape is static.  An integer out of range is an error at the index, as NumPy's
``IndexError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.ir import Operation

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import INDEX_TYPES, INT_TYPES, is_unsigned
from tdsl.errors import SourceLocation, TdslTypeError, internal_error
from tdsl.frontend.ast import Expr, Index, Span, Subscript, TupleExpr
from tdsl.frontend.lexer import Token, TokenKind
from tdsl.frontend.values import LiteralValue, TensorValue, TupleValue, Value, WeakValue

if TYPE_CHECKING:
    from tdsl.frontend.parser import _Parser

_NEW_AXIS = frozenset({"None", "newaxis"})
"""Names of a new axis in a subscript (``np.newaxis`` is ``newaxis``)."""


def _int(parser: _Parser) -> int | None:
    """An optional integer literal, with a leading ``-``."""
    tok = parser.tok
    negative = parser.is_punct("-")
    if negative:
        tok = parser.peek()
    if tok.kind is not TokenKind.NUMBER:
        if negative:
            raise parser.error(f"expected an integer after `-`, found {tok.describe()}", tok.span)
        return None
    if not tok.text.isdigit():
        raise parser.error(
            f"an index is an integer, not `{tok.text}`: every index of a subscript is a "
            "static integer",
            tok.span,
        )
    if negative:
        parser.advance()
    parser.advance()
    return -int(tok.text) if negative else int(tok.text)


def _starts_int(parser: _Parser) -> bool:
    """Whether an integer literal (``3``, ``-1``) starts here and ends the item: a number
    followed by ``:``, ``,`` or ``]``."""
    at = 1 if parser.is_punct("-") else 0
    tok, after = parser.peek(at), parser.peek(at + 1)
    if at == 0:
        tok, after = parser.tok, parser.peek()
    ends = after.kind is TokenKind.PUNCT and after.text in (":", ",", "]")
    return tok.kind is TokenKind.NUMBER and ends


def _item(parser: _Parser) -> Index:
    first = parser.tok
    if parser.is_punct("..."):
        parser.advance()
        return Index("ellipsis", first.span)
    if first.kind is TokenKind.NAME and first.text.rpartition(".")[2] in _NEW_AXIS:
        parser.advance()
        return Index("newaxis", first.span)
    if not parser.is_punct(":") and not _starts_int(parser):  # an integer array: a gather
        if parser.is_punct("]") or parser.is_punct(","):
            raise parser.error(
                f"expected an index, found {parser.tok.describe()}: an index is an integer, "
                "a slice `start:stop:step`, `...`, `None` or an integer array"
            )
        array = parser.parse_expr()
        if parser.is_punct(":"):
            raise _bound_error(parser, array.span)
        return Index("array", array.span, array=array)
    start = _int(parser)
    if not parser.is_punct(":"):
        if start is None:  # pragma: no cover - _starts_int said an integer starts here
            raise parser.error(f"expected an index, found {parser.tok.describe()}")
        return Index("int", first.span.to(parser.tokens[parser.pos - 1].span), start)
    parser.advance()
    stop = _bound(parser)
    step = None
    if parser.is_punct(":"):
        parser.advance()
        step = _bound(parser)
        if step == 0:
            raise parser.error("slice step cannot be zero", parser.tokens[parser.pos - 1].span)
    end = parser.tokens[parser.pos - 1].span
    return Index("slice", first.span.to(end), start, stop, step)


def _bound(parser: _Parser) -> int | None:
    """A slice's stop or step: an optional integer literal; a name or arithmetic there
    (``x[:n]``, ``x[1 + 1:]``) is an error at it."""
    start = parser.pos
    value = _int(parser)
    if any(parser.is_punct(p) for p in (":", ",", "]")):
        return value
    first = parser.tokens[start]
    if first.kind in (TokenKind.NAME, TokenKind.NUMBER) or first.text in ("(", "-"):
        parser.pos = start
        span = parser.parse_expr().span
        if first.kind is not TokenKind.NUMBER or span != first.span:
            # (one number, then something else: the caller's error)
            raise _bound_error(parser, span)
        parser.pos = start
        value = _int(parser)
    return value


def _bound_error(parser: _Parser, span: Span) -> Exception:
    """The error of a slice bound that is an expression, not an integer literal."""
    return parser.error(
        "a slice's start, stop and step are integer literals (`x[1:-1:2]`): every shape "
        "is static, so they cannot be names or arithmetic; write the number",
        span,
    )


def parse_bracketed(parser: _Parser) -> Expr:
    """``(expr)``, a tuple ``(a, b)`` or ``(a,)``, or a list ``[a, b]``, the parser at the
    opening bracket."""
    open_tok = parser.advance()
    parser.enter(open_tok)
    close = ")" if open_tok.text == "(" else "]"
    if parser.is_punct(close):
        what = "tuple `()`" if close == ")" else "list `[]`"
        raise parser.error(f"an empty {what} is not a value", open_tok.span)
    inner = parser.parse_expr()
    if close == "]" or parser.is_punct(","):
        inner = _sequence(parser, open_tok, inner, close)
    else:
        parser.expect_punct(")", f"to close the `(` at {open_tok.span.line}:{open_tok.span.column}")
    parser.depth -= 1
    return inner


def _sequence(parser: _Parser, open_tok: Token, first: Expr, close: str) -> TupleExpr:
    """The rest of a tuple or a list after its first item, up to and including
    ``close``."""
    items = [first]
    while not parser.is_punct(close):
        parser.expect_punct(
            ",",
            f"or `{close}` in the {'tuple' if close == ')' else 'list'} opened at "
            f"{open_tok.span.line}:{open_tok.span.column}",
        )
        if parser.is_punct(close):
            break
        items.append(parser.parse_expr())
    end = parser.advance()
    return TupleExpr(tuple(items), open_tok.span.to(end.span))


def parse_subscript(parser: _Parser, value: Expr) -> Subscript:
    """``value[item, ...]``, the parser at the ``[``."""
    open_tok = parser.advance()
    parser.enter(open_tok)
    items: list[Index] = []
    while not parser.is_punct("]"):
        items.append(_item(parser))
        if not parser.is_punct("]"):
            parser.expect_punct(
                ",",
                f"or `]` in the subscript opened at {open_tok.span.line}:{open_tok.span.column}",
            )
    close = parser.advance()
    parser.depth -= 1
    if not items:
        raise parser.error(
            "an empty subscript `[]`: give an index per axis", open_tok.span.to(close.span)
        )
    ellipses = [i for i in items if i.kind == "ellipsis"]
    if len(ellipses) > 1:
        raise parser.error("a subscript can only have a single ellipsis (`...`)", ellipses[1].span)
    return Subscript(value, tuple(items), value.span.to(close.span), open_tok.span.to(close.span))


def lower_subscript(
    node: Subscript,
    values: Sequence[Value],
    emit: Callable[[Operation, Span], TensorValue],
    where: Callable[[Span], SourceLocation],
) -> TensorValue:
    """``value[items]`` as NumPy indexes it: a slice, then a squeeze, then an expand_dims
    (each only when it does something); by an integer array, a ``take``."""
    value, *arrays = values
    if isinstance(value, TupleValue):
        return _pick(node, value, where)
    if not isinstance(value, TensorValue):
        raise TdslTypeError(
            "cannot index a number: a subscript needs a tensor",
            where(node.bracket_span),
        )
    if arrays:
        return _gather(node, value, arrays, emit, where)
    shape = value.shape
    items = _expanded(node, len(shape), where)
    windows: list[slice] = []
    dropped: list[int] = []
    new_axes: list[int] = []
    out_rank = 0
    for item in items:
        if item.kind == "newaxis":
            new_axes.append(out_rank)
            out_rank += 1
            continue
        axis, n = len(windows), shape[len(windows)]
        if item.kind == "int":
            i = _int_index(item, n, axis, where)
            windows.append(slice(i, i + 1))
            dropped.append(axis)
        else:
            windows.append(slice(item.start, item.stop, item.step))
            out_rank += 1
    result = value
    slice_op = td.SliceOp.of(value.value, windows)
    if td.tensor_shape(slice_op.result) != shape or any(s != 1 for s in slice_op.window()[1]):
        result = emit(slice_op, node.bracket_span)
    else:
        slice_op.erase()
    if dropped:
        result = emit(td.SqueezeOp(result.value, dropped), node.bracket_span)
    if new_axes:
        result = emit(td.ExpandDimsOp(result.value, new_axes), node.bracket_span)
    return result


def _expanded(node: Subscript, rank: int, where: Callable[[Span], SourceLocation]) -> list[Index]:
    """The subscript's items with ``...`` (or, without one, the end) standing for whole
    slices of the axes no item names; more items than ``rank`` axes is NumPy's error."""
    items = list(node.items)
    used = sum(1 for i in items if i.kind not in ("ellipsis", "newaxis"))
    if used > rank:
        raise TdslTypeError(
            f"too many indices for a tensor of rank {rank}: {used} were indexed",
            where(node.bracket_span),
        )
    at = next((k for k, i in enumerate(items) if i.kind == "ellipsis"), len(items))
    items[at : at + 1 if at < len(items) else at] = [Index("slice", node.bracket_span)] * (
        rank - used
    )
    return items


def _int_index(item: Index, n: int, axis: int, where: Callable[[Span], SourceLocation]) -> int:
    """The integer index ``item`` of an axis of ``n``, wrapped; out of range, NumPy's
    ``IndexError`` at the index."""
    if item.start is None:
        raise internal_error(
            "frontend: an integer index without its value", location=where(item.span)
        )
    if not -n <= item.start < n:
        raise TdslTypeError(
            f"index {item.start} is out of bounds for axis {axis} with size {n}",
            where(item.span),
        )
    return item.start % n


def _gather(
    node: Subscript,
    value: TensorValue,
    arrays: Sequence[Value],
    emit: Callable[[Operation, Span], TensorValue],
    where: Callable[[Span], SourceLocation],
) -> TensorValue:
    """NumPy's advanced indexing: ``a[idx]``, ``a[:, idx]``, ``a[i, j]``, ``a[1:3, idx]``,
    ``a[0, idx]``, ``a[idx, None]``.  The integer arrays, and with them the integers
    (NumPy counts an integer beside an array as a 0-d index array), are the advanced
    indices; slices first cut the other axes (a ``tensordsl.slice``), then the advanced
    axes are gathered: a ``take`` along one axis, or along several adjacent axes merged
    (:func:`_gather_adjacent`).  Their broadcast dims stand where the first advanced index
    stands when the advanced indices are adjacent, else first (the advanced axes moved to
    the front by a ``transpose``); ``None`` adds its axis last (an ``expand_dims``)."""
    rank = len(value.shape)
    items = _expanded(node, rank, where)
    axes = [i for i in items if i.kind != "newaxis"]  # one item per axis
    advanced = [k for k, i in enumerate(axes) if i.kind in ("array", "int")]
    # (adjacent as written: a `...` between two arrays separates them, even of no axes)
    positions = [k for k, i in enumerate(node.items) if i.kind in ("array", "int")]
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    found = iter(arrays)
    indices = [_advanced_index(axes[k], value.shape[k], found, k, emit, where) for k in advanced]
    cut = value
    if any(i.kind == "slice" and (i.start, i.stop, i.step or 1) != (None, None, 1) for i in axes):
        windows = [
            slice(i.start, i.stop, i.step) if i.kind == "slice" else slice(None) for i in axes
        ]
        cut = emit(td.SliceOp.of(value.value, windows), node.bracket_span)
    rest = [k for k in range(rank) if k not in advanced]
    if not adjacent and [*advanced, *rest] != list(range(rank)):  # the advanced axes first
        cut = emit(td.TransposeOp(cut.value, [*advanced, *rest]), node.bracket_span)
    axis = advanced[0] if adjacent else 0
    if len(indices) == 1:
        result = emit(td.TakeOp(cut.value, indices[0].value, axis), node.bracket_span)
    else:
        result = _gather_adjacent(node, cut, indices, axis, emit, where, advanced)
    new_axes = _new_axes(
        items, rank=len(result.shape) - (len(cut.shape) - len(indices)), adjacent=adjacent
    )
    if new_axes:
        result = emit(td.ExpandDimsOp(result.value, new_axes), node.bracket_span)
    return result


def _advanced_index(
    item: Index,
    n: int,
    arrays: Iterator[Value],
    axis: int,
    emit: Callable[[Operation, Span], TensorValue],
    where: Callable[[Span], SourceLocation],
) -> TensorValue:
    """The index tensor of an advanced item along an axis of ``n``: its integer array
    (``int64`` for ``uint8``, as NumPy gathers by it), or its integer as a 0-d one."""
    if item.kind == "int":
        i = _int_index(item, n, axis, where)
        constant = td.dense_from_numpy(np.array(i), INT_TYPES["i64"])
        return emit(td.ConstantOp(constant), item.span)
    index = next(arrays)
    if isinstance(index, WeakValue) and index.integer and not index.boolean:  # a Python int
        index = TensorValue(index.value, (), INT_TYPES["i64"])
    if isinstance(index, LiteralValue):
        raise TdslTypeError(
            "an index is an integer literal written in the subscript (`x[2]`: every shape "
            "is static) or an integer array (a gather), not a number bound to a name: "
            "write the number",
            where(item.span),
        )
    if not isinstance(index, TensorValue) or index.element not in INDEX_TYPES:
        raise TdslTypeError(
            "an array index is a tensor of int32, int64 or uint8 (a gather); floats and "
            "booleans are not indices",
            where(item.span),
        )
    if is_unsigned(index.element):  # NumPy gathers by uint8 too: exactly, as int64
        index = emit(td.CastOp(index.value, INT_TYPES["i64"]), item.span)
    return index


def _new_axes(items: Sequence[Index], rank: int, adjacent: bool) -> list[int]:
    """The result's axes that the subscript's ``None`` items add, its advanced indices'
    broadcast dims ``rank`` of them at the first advanced item (``adjacent``) or first."""
    out, new_axes, placed = (0 if adjacent else rank), [], not adjacent
    for item in items:
        if item.kind == "newaxis":
            new_axes.append(out)
            out += 1
        elif item.kind == "slice":
            out += 1
        elif not placed:
            out += rank
            placed = True
    return new_axes


def _gather_adjacent(
    node: Subscript,
    value: TensorValue,
    indices: Sequence[TensorValue],
    axis: int,
    emit: Callable[[Operation, Span], TensorValue],
    where: Callable[[Span], SourceLocation],
    named: Sequence[int] = (),
) -> TensorValue:
    """``a[i, j]`` over the adjacent axes ``axis, axis + 1, ...``: each index checked and
    wrapped along its own axis (a ``take`` of the positions ``0 .. n - 1`` of that axis,
    so an index out of range is NumPy's ``IndexError``, naming that axis: the axis of
    the subscripted tensor ``named`` gives, where a transpose moved them), combined
    into a row-major flat index (broadcasting, as NumPy's index arrays do), and a
    ``take`` of ``a`` with those axes merged."""
    span = node.bracket_span
    shapes = [i.shape for i in indices]
    try:
        combined: tuple[int, ...] = ()
        for shape in shapes:
            combined = td.broadcast_shapes(combined, shape)
    except td.ShapeError:
        shown = " ".join(str(tuple(s)) for s in shapes)
        raise TdslTypeError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shown}",
            where(span),
        ) from None
    rank, extents = len(value.shape), value.shape[axis : axis + len(indices)]
    flat: TensorValue | None = None
    for k, (index, n) in enumerate(zip(indices, extents, strict=True)):
        at = named[k] if named else axis + k
        positions = np.arange(n, dtype=np.int64).reshape([n if d == at else 1 for d in range(rank)])
        table = emit(td.ConstantOp(td.dense_from_numpy(positions, INT_TYPES["i64"])), span)
        wrapped = emit(td.TakeOp(table.value, index.value, at), span)
        wrapped = emit(td.ReshapeOp(wrapped.value, index.shape), span)
        if flat is not None:
            stride = emit(td.ConstantOp(td.dense_from_numpy(np.array(n), INT_TYPES["i64"])), span)
            scaled = emit(td.MulOp(flat.value, stride.value), span)
            wrapped = emit(td.AddOp(scaled.value, wrapped.value), span)
        flat = wrapped
    if flat is None:
        raise internal_error("frontend: a gather of no index arrays", location=where(span))
    merged = (*value.shape[:axis], math.prod(extents), *value.shape[axis + len(indices) :])
    source = emit(td.ReshapeOp(value.value, merged), span)
    return emit(td.TakeOp(source.value, flat.value, axis), span)


def _pick(
    node: Subscript, value: TupleValue, where: Callable[[Span], SourceLocation]
) -> TensorValue:
    """``parts[i]``: one item of a tuple, by an integer index (Python's rules)."""
    n = len(value.items)
    (item,) = node.items if len(node.items) == 1 else (None,)
    if item is None or item.kind != "int" or item.start is None:
        raise TdslTypeError(
            "a tuple takes one integer index (`parts[1]`)", where(node.bracket_span)
        )
    if not -n <= item.start < n:
        raise TdslTypeError(
            f"tuple index {item.start} out of range: the tuple has {n} items",
            where(item.span),
        )
    picked = value.items[item.start % n]
    if not isinstance(picked, TensorValue):
        raise TdslTypeError("the item is a number, not a tensor", where(item.span))
    return picked


__all__ = ["lower_subscript", "parse_bracketed", "parse_subscript"]
