"""NumPy's basic indexing in the language: ``x[1:, ::-2]``, ``x[0]``, ``x[..., None]``.

The parser reads a subscript's items (:func:`parse_subscript`); the lowering writes it
as NumPy does (:func:`lower_subscript`): a ``tensordsl.slice`` of the windows the
slices and integers select, a ``squeeze`` of the axes an integer drops and an
``expand_dims`` of the axes ``None`` adds.  Indices are integer literals: every
shape is static.  An integer out of range is an error at the index, as NumPy's
``IndexError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.ir import Operation

from tdsl.dialects import tensordsl as td
from tdsl.errors import SourceLocation, TdslTypeError
from tdsl.frontend.ast import Expr, Index, Span, Subscript
from tdsl.frontend.lexer import TokenKind
from tdsl.frontend.values import TensorValue, Value

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


def _item(parser: _Parser) -> Index:
    first = parser.tok
    if parser.is_punct("..."):
        parser.advance()
        return Index("ellipsis", first.span)
    if first.kind is TokenKind.NAME and first.text.rpartition(".")[2] in _NEW_AXIS:
        parser.advance()
        return Index("newaxis", first.span)
    start = _int(parser)
    if not parser.is_punct(":"):
        if start is None:
            raise parser.error(
                f"expected an index, found {parser.tok.describe()}: an index is an integer, "
                "a slice `start:stop:step`, `...` or `None` (indexing by an array, a gather, "
                "is not in the language yet)"
            )
        return Index("int", first.span.to(parser.tokens[parser.pos - 1].span), start)
    parser.advance()
    stop = _int(parser)
    step = None
    if parser.is_punct(":"):
        parser.advance()
        step = _int(parser)
        if step == 0:
            raise parser.error("slice step cannot be zero", parser.tokens[parser.pos - 1].span)
    end = parser.tokens[parser.pos - 1].span
    return Index("slice", first.span.to(end), start, stop, step)


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
    value: Value,
    emit: Callable[[Operation, Span], TensorValue],
    where: Callable[[Span], SourceLocation],
) -> TensorValue:
    """``value[items]`` as NumPy indexes it: a slice, then a squeeze, then an expand_dims
    (each only when it does something)."""
    if not isinstance(value, TensorValue):
        raise TdslTypeError(
            "cannot index a number: a subscript needs a tensor",
            where(node.bracket_span),
        )
    shape = value.shape
    items = list(node.items)
    used = sum(1 for i in items if i.kind in ("slice", "int"))
    if used > len(shape):
        raise TdslTypeError(
            f"too many indices for a tensor of rank {len(shape)}: {used} were indexed",
            where(node.bracket_span),
        )
    full = Index("slice", node.bracket_span)
    rest = [full] * (len(shape) - used)
    at = next((k for k, i in enumerate(items) if i.kind == "ellipsis"), len(items))
    items[at : at + 1 if at < len(items) else at] = rest
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
            assert item.start is not None
            if not -n <= item.start < n:
                raise TdslTypeError(
                    f"index {item.start} is out of bounds for axis {axis} with size {n}",
                    where(item.span),
                )
            i = item.start % n
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


__all__ = ["lower_subscript", "parse_subscript"]
