"""The source text each op came from, by the location the frontend gave the op.

The frontend locates an op at the start of a call (``relu(B)`` at the ``r``),
at the operator of a binary operation (``x @ w`` at the ``@``), or at a name or
literal it converts; a location keeps only a line and a column.
:func:`source_snippets` maps each such position back to the text of the whole
node, so a picture of the IR can label ``tensordsl.matmul`` with ``x @ w1``.
"""

from __future__ import annotations

from tdsl.errors import TdslError
from tdsl.frontend.ast import (
    BinOp,
    Call,
    Expr,
    Expression,
    Invert,
    Name,
    Neg,
    Number,
    Subscript,
    TupleExpr,
    walk,
)
from tdsl.frontend.parser import parse


def source_snippets(text: str, filename: str = "<expr>") -> dict[tuple[int, int], str]:
    """(line, column) of each node's op location -> the node's source text.

    Empty when ``text`` is not tdsl source (an MLIR file, say).  Outer nodes
    win where two nodes share a position.
    """
    try:
        tree = parse(text, filename)
    except TdslError:
        return {}
    roots: list[Expr] = []
    if isinstance(tree, Expression):
        roots.append(tree.body)
    else:
        for kernel in tree.kernels:
            roots.extend(assign.value for assign in kernel.body)
            roots.extend(kernel.ret.values)
    found: dict[tuple[int, int], str] = {}
    for root in roots:
        for node in walk(root):
            match node:
                case BinOp(span=span, op_span=at):
                    pass
                case Call(span=span) | Neg(span=span) | Invert(span=span):
                    at = span
                case Name(span=span) | Number(span=span) | TupleExpr(span=span):
                    at = span
                case Subscript(span=span, bracket_span=at):
                    pass
            found.setdefault((at.line, at.column), " ".join(text[span.start : span.end].split()))
    return found


__all__ = ["source_snippets"]
