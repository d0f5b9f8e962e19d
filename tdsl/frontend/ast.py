"""The abstract syntax tree of the tdsl expression language.

Every node carries the :class:`Span` of the text it came from, so that every
later error (an unknown name, a shape mismatch) can point at its culprit.  The
two roots are :class:`Expression` (a bare expression such as
``relu(A) + B``) and :class:`Program` (the kernels of a ``.tdsl`` file); both
hold the :class:`Source` they were parsed from.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from tdsl.errors import SourceLocation


@dataclass(frozen=True)
class Span:
    """A half-open range ``[start, end)`` of character offsets into a source text.

    ``line`` and ``column`` (both 1-based) locate ``start``.
    """

    start: int
    end: int
    line: int
    column: int

    def to(self, other: Span) -> Span:
        """The span from the start of ``self`` to the end of ``other``."""
        return Span(self.start, max(self.end, other.end), self.line, self.column)


@dataclass(frozen=True, eq=False)
class Source:
    """A named source text, able to turn spans into :class:`SourceLocation`."""

    text: str
    filename: str = "<expr>"
    lines: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        # Split on "\n" only, as the lexer counts lines that way.
        object.__setattr__(self, "lines", tuple(self.text.split("\n")))

    def location(self, span: Span) -> SourceLocation:
        """The location of ``span``; the caret is clipped to the end of its first line."""
        line_text = self.lines[span.line - 1] if 0 < span.line <= len(self.lines) else ""
        line_text = line_text.rstrip("\r").removeprefix("\ufeff")  # (the lexer skips it)
        if not line_text.strip() and span.start >= len(self.text.rstrip()):
            # the end of the input (a `(` left open): after its last line that is not
            # blank, which shows, not on the empty line after it
            last = max((i for i, t in enumerate(self.lines) if t.strip()), default=None)
            if last is not None and last + 1 < span.line:
                line_text = self.lines[last].rstrip("\r")
                column = len(line_text) + 1
                return SourceLocation(self.filename, last + 1, column, 1, line_text)
        room = max(1, len(line_text) - span.column + 1)
        length = max(1, min(span.end - span.start, room))
        return SourceLocation(self.filename, span.line, span.column, length, line_text)


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Number:
    """A numeric literal such as ``2``, ``2.5``, ``.5`` or ``1e-3``: an ``int`` when
    written as an integer, else a ``float``."""

    value: int | float
    text: str
    span: Span


@dataclass(frozen=True)
class Name:
    """A reference to a kernel argument, a binding, or an expression input."""

    id: str
    span: Span


@dataclass(frozen=True)
class Neg:
    """Unary minus ``-operand``."""

    operand: Expr
    span: Span


@dataclass(frozen=True)
class Invert:
    """Logical not ``~operand`` of a boolean."""

    operand: Expr
    span: Span


@dataclass(frozen=True)
class BinOp:
    """A binary operator ``lhs op rhs``: ``+ - * / % ** @``, a comparison ``< <= == != >=
    >`` or a logical ``& |``.

    ``op_span`` is the span of the operator token, where shape errors point.
    """

    op: str
    lhs: Expr
    rhs: Expr
    span: Span
    op_span: Span


@dataclass(frozen=True)
class Keyword:
    """A keyword argument ``name=value`` of a call; ``value`` is an int, a float, a bool,
    None, a tuple of ints (``axis=(0, 2)``) or a string (``einsum``'s subscripts)."""

    name: str
    value: int | float | bool | tuple[int, ...] | str | None
    span: Span


@dataclass(frozen=True)
class Call:
    """A call ``func(arg, ..., keyword=value, ...)``; ``func_span`` covers the name."""

    func: str
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...]
    span: Span
    func_span: Span


@dataclass(frozen=True)
class Index:
    """One item of a subscript: a slice ``start:stop:step`` (a part left out is None),
    an integer (``start``), ``...``, ``None`` (a new axis), or an integer array (``array``,
    a gather)."""

    kind: Literal["slice", "int", "ellipsis", "newaxis", "array"]
    span: Span
    start: int | None = None
    stop: int | None = None
    step: int | None = None
    array: Expr | None = None


@dataclass(frozen=True)
class Subscript:
    """NumPy's basic indexing ``value[items]`` with static indices; ``bracket_span``
    covers the brackets."""

    value: Expr
    items: tuple[Index, ...]
    span: Span
    bracket_span: Span


@dataclass(frozen=True)
class TupleExpr:
    """A tuple ``(a, b)`` or a list ``[a, b]`` of expressions: the operands of a join
    (``concatenate((a, b), axis=1)``)."""

    items: tuple[Expr, ...]
    span: Span


Expr = Number | Name | Neg | Invert | BinOp | Call | Subscript | TupleExpr


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``expr``, in source order."""
    match expr:
        case Neg(operand=operand) | Invert(operand=operand):
            return (operand,)
        case Subscript(value=value, items=items):
            return (value, *(i.array for i in items if i.array is not None))
        case BinOp(lhs=lhs, rhs=rhs):
            return (lhs, rhs)
        case Call(args=args) | TupleExpr(items=args):
            return args
        case Number() | Name():
            return ()


def walk(expr: Expr) -> Iterator[Expr]:
    """All nodes of ``expr`` in pre-order (source order), without recursion."""
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


# --------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class Param:
    """A kernel argument ``name: dtype[d0, d1, ...]`` (a dtype of the language), or a
    weak scalar ``name: float`` or ``name: int`` (``dtype`` ``float`` or ``int``, 0-d)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    span: Span


@dataclass(frozen=True)
class Assign:
    """A binding ``target = value`` in a kernel body, or an unpacking
    ``a, b = split(x, 2)`` of a tuple (``more`` holds the targets after the first)."""

    target: str
    value: Expr
    span: Span
    target_span: Span
    more: tuple[tuple[str, Span], ...] = ()

    @property
    def targets(self) -> tuple[tuple[str, Span], ...]:
        """Every target with its span, in order."""
        return ((self.target, self.target_span), *self.more)


@dataclass(frozen=True)
class Return:
    """The final ``return value, ...`` of a kernel body."""

    values: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class Kernel:
    """``def name(params):`` followed by an indented body of bindings and a return."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Assign, ...]
    ret: Return
    span: Span
    name_span: Span


@dataclass(frozen=True)
class Program:
    """The kernels of a ``.tdsl`` file, in order."""

    kernels: tuple[Kernel, ...]
    source: Source


@dataclass(frozen=True)
class Expression:
    """A bare expression; its inputs are the names it uses."""

    body: Expr
    source: Source


Node = Expr | Keyword | Param | Assign | Return | Kernel

__all__ = [
    "Assign",
    "BinOp",
    "Call",
    "Expr",
    "Expression",
    "Invert",
    "Kernel",
    "Keyword",
    "Name",
    "Neg",
    "Node",
    "Number",
    "Param",
    "Program",
    "Return",
    "Source",
    "Span",
    "children",
    "walk",
]
