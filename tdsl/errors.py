"""The errors tdsl raises.

Every error a user can cause derives from :class:`TdslError`.  An error that
points into source text carries a :class:`SourceLocation`; ``str(err)`` then
renders the compiler way::

    kernel.tdsl:2:12: error: unknown function `sofmax`; did you mean `softmax`?
        h = sofmax(x)
            ^^^^^^
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Generator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.utils.lexer import Span


@dataclass(frozen=True)
class SourceLocation:
    """A span in a source text: 1-based line and column, ``length`` columns wide."""

    file: str
    line: int
    column: int
    length: int = 1
    source_line: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def span_location(span: Span[str] | Span[bytes], line_offset: int = 0) -> SourceLocation:
    """The :class:`SourceLocation` of ``span``, its line shifted by ``line_offset``.

    ``span.line_offset`` is already counted by ``span.get_location()``.  The caret
    length is clamped to the first line of the span.
    """
    loc = span.get_location()
    text_input = span.input
    line_start = text_input.get_start_of_line(span.start)
    line_end = text_input.get_end_of_line(span.start)
    raw = text_input.content[line_start:line_end]
    source_line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    source_line = source_line.removesuffix("\r")
    length = max(1, min(span.end, line_end) - span.start)
    return SourceLocation(
        file=loc.file,
        line=loc.line + line_offset,
        column=loc.col,
        length=length,
        source_line=source_line,
    )


def format_diagnostic(
    message: str,
    location: SourceLocation | None,
    *,
    severity: str = "error",
    note: str | None = None,
) -> str:
    """Render ``file:line:col: severity: message``, the source line and a caret."""
    if location is None:
        text = f"{severity}: {message}"
    else:
        text = f"{location}: {severity}: {message}"
        if location.source_line is not None:
            line = location.source_line.rstrip("\r\n").expandtabs(1)
            caret = " " * (location.column - 1) + "^" * max(1, location.length)
            text += f"\n{line}\n{caret}"
    if note:
        text += f"\nnote: {note}"
    return text


def plural(n: int, noun: str) -> str:
    """``1 element``, ``2 elements``: a count in a message."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


class TdslError(Exception):
    """Base class of every error tdsl reports to a user."""

    message: str
    location: SourceLocation | None
    note: str | None
    op: object | None
    """The IR operation the error is about, if any: a driver that knows where
    the op was in its input can place an error that has no location itself."""

    def __init__(
        self,
        message: str,
        location: SourceLocation | None = None,
        *,
        note: str | None = None,
        op: object | None = None,
    ) -> None:
        self.message = message
        self.location = location
        self.note = note
        self.op = op
        super().__init__(self.render())

    def render(self, location: SourceLocation | None = None) -> str:
        """The diagnostic text, at ``location`` when given, else at the error's own."""
        return format_diagnostic(self.message, location or self.location, note=self.note)

    @property
    def line(self) -> int | None:
        return None if self.location is None else self.location.line

    @property
    def column(self) -> int | None:
        return None if self.location is None else self.location.column


class TdslIndexError(TdslError, IndexError):
    """An index out of range: a gather (``take``, ``a[idx]``) given an index outside its
    axis, on any target (also an :class:`IndexError`, as NumPy raises)."""


class TdslZeroDivisionError(TdslError, ZeroDivisionError):
    """Python's arithmetic on a Python number divided by a zero literal (``s // 0`` of a
    Python-number argument ``s`` in a traced function), which Python refuses at every
    call (also a :class:`ZeroDivisionError`, as Python raises)."""


def index_error(index: int, axis: int, extent: int, where: str = "") -> TdslIndexError:
    """The error of a gather that met ``index`` on an ``axis`` of ``extent``, as NumPy
    words it, at ``where`` (the gather's ``file:line:col`` in the source, if known)."""
    file, _, rest = where.rpartition(":")
    file, _, line = file.rpartition(":")
    location = None
    if file and line.isdigit() and rest.isdigit():
        location = SourceLocation(file, int(line), int(rest))
    message = f"index {index} is out of bounds for axis {axis} with size {extent}"
    return TdslIndexError(message, location)


def in_source(err: TdslError, filename: str, text: str) -> TdslError:
    """``err``, found when a kernel ran, with its line of ``text`` (the source compiled
    as ``filename``) and a caret under the expression there, where it is at a line of
    that source and has none (the IR's ``loc(...)`` keeps no source text); else ``err``."""
    place = with_source_line(err.location, filename, text)
    if place is err.location or place is None:
        return err
    return type(err)(err.message, place, note=err.note, op=err.op)


def with_source_line(loc: SourceLocation | None, filename: str, text: str) -> SourceLocation | None:
    """``loc`` with its line of ``text`` (the source compiled as ``filename``) and the
    length of the expression there, where it is at such a line without one; else ``loc``."""
    if loc is None or loc.source_line is not None or loc.file != filename:
        return loc
    lines = text.splitlines()
    if not 1 <= loc.line <= len(lines) or not 1 <= loc.column <= len(lines[loc.line - 1]):
        return loc
    line = lines[loc.line - 1]
    return replace(loc, length=_expression_length(line, loc.column - 1), source_line=line)


def _expression_length(line: str, start: int) -> int:
    """The columns of the call or subscript that starts at ``line[start]``: a name, then
    each bracketed part after it (``take(x, i, axis=0)``, ``x[i, 1:]``); at least 1."""
    end = start
    while end < len(line) and (line[end].isalnum() or line[end] in "_."):
        end += 1
    while end < len(line) and line[end] in "([":
        depth = 0
        for k in range(end, len(line)):
            depth += (line[k] in "([{") - (line[k] in ")]}")
            if depth == 0:
                end = k + 1
                break
        else:
            break  # (unbalanced on this line: the name alone)
    return max(1, end - start)


class TdslSyntaxError(TdslError):
    """The text does not follow the grammar of the expression language."""


class TdslNameError(TdslError):
    """An unknown function or variable name, or a missing input shape."""


class TdslTypeError(TdslError):
    """A shape, rank, axis or dtype mismatch."""


class TdslIRError(TdslError):
    """IR that does not parse or verify."""


def internal_error(
    what: str, op: object | None = None, location: SourceLocation | None = None
) -> TdslIRError:
    """A broken internal invariant (a compiler bug, or IR that no pass of tdsl builds), as
    an error a driver can report and locate at ``op`` (or at ``location`` in source
    text): never a bare ``assert``, which vanishes under ``python -O`` and reaches a user
    without a location.  ``what`` says where (a pass or a role) and what was expected."""
    return TdslIRError(f"internal error: {what}", location, op=op)


def unprintable_op(root: Any) -> tuple[Any, str] | None:
    """The innermost op under ``root`` (an xDSL operation) whose printer fails, and why:
    an enum property out of the range its printer knows, which xDSL's verifiers accept
    (``llvm.fcmp`` with predicate 64) and on which its printers and conversions fail
    with plain exceptions.  None when every op prints.  (What locates such a failure.)"""
    from io import StringIO

    from xdsl.printer import Printer

    ops = [op for op in root.walk() if op is not root]
    for op in sorted(ops, key=lambda o: len(o.regions) > 0):  # the innermost first
        try:
            Printer(stream=StringIO()).print_op(op)
        except Exception as bad:
            why = f"{type(bad).__name__}: {bad}" if str(bad) else type(bad).__name__
            return op, f"'{op.name}' has a property out of its range (its printer fails: {why})"
    return None


class TdslBudgetError(TdslError):
    """A computation that cannot be scheduled within the memory budget."""


class TdslOptionError(TdslError):
    """A bad option given to a pass, a target or the JIT (or a bad argument to one of the
    library's stage functions: :func:`check_argument`)."""


def check_argument(value: object, kind: type | tuple[type, ...], what: str) -> None:
    """A :class:`TdslOptionError` where ``value`` (``what``, such as "the module given
    to `fuse`") is not of ``kind``, naming the type given."""
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        names = " or ".join(k.__name__ for k in kinds)
        given = f"{type(value).__name__} ({value!r:.60})"
        raise TdslOptionError(f"{what} must be a {names}, not a {given}")


class TdslNativeError(TdslError):
    """Native code cannot be built or run here (no llvmlite, an unsupported CPU or op)."""


class TdslCallError(TdslError):
    """A compiled kernel was called with missing, unexpected or ill-shaped arguments."""


class TdslWarning(UserWarning):
    """Base class of the warnings tdsl gives (the code still runs)."""


class TdslBudgetWarning(TdslWarning):
    """No fusion plan fits the memory budget: the plan of least memory runs, and the
    warning (and the fusion report) says what it needs."""


class TdslLoopsBudgetWarning(TdslBudgetWarning):
    """The native loops of a group need more scratch than its plan records under the
    memory budget: they take scan and reduction dims whole where they cannot run the
    plan's passes over a dim it cuts (with a matmul, say).  The code still runs, using more memory than the budget; ``target="auto"`` runs the numpy
    target instead, which keeps the plan."""


class TdslCacheWarning(TdslWarning):
    """A compiled kernel could not be written to the JIT's cache on disk (it still runs)."""


_COLLECTING: ContextVar[tuple[tuple[list[TdslWarning], tuple[type[TdslWarning], ...]], ...]] = (
    ContextVar("tdsl_collecting_warnings", default=())
)


def warn(warning: TdslWarning, stacklevel: int | None = 2) -> None:
    """Give ``warning`` as :func:`warnings.warn` does, and add it to the lists of the
    :func:`collecting_warnings` blocks this thread (or task) is in, innermost first, up
    to the first that holds it back (the blocks outside it never see it, as the
    caller does not).  Unlike ``warnings.catch_warnings``, collecting changes no
    process-wide filter: a compile in one thread neither sees nor swallows another
    thread's warnings.  ``stacklevel=None`` gives it at the innermost frame outside
    tdsl: the user's call, however deep in tdsl the warning is found."""
    for seen, hold in reversed(_COLLECTING.get()):
        seen.append(warning)
        if isinstance(warning, hold):
            return
    if stacklevel is None:
        here = os.path.dirname(os.path.abspath(__file__))
        frame, stacklevel = sys._getframe(1), 1  # pyright: ignore[reportPrivateUsage]
        while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            here
        ):
            frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(warning, stacklevel=stacklevel + 1)


@contextlib.contextmanager
def collecting_warnings(
    hold: tuple[type[TdslWarning], ...] = (),
) -> Generator[list[TdslWarning]]:
    """The tdsl warnings :func:`warn` gives in this thread (or task) inside the block,
    whatever the warning filters say; those of the classes ``hold`` are not given."""
    seen: list[TdslWarning] = []
    token = _COLLECTING.set((*_COLLECTING.get(), (seen, hold)))
    try:
        yield seen
    finally:
        _COLLECTING.reset(token)


__all__ = [
    "SourceLocation",
    "TdslBudgetError",
    "TdslBudgetWarning",
    "TdslCacheWarning",
    "TdslCallError",
    "TdslError",
    "TdslIRError",
    "TdslIndexError",
    "TdslLoopsBudgetWarning",
    "TdslNameError",
    "TdslNativeError",
    "TdslOptionError",
    "TdslSyntaxError",
    "TdslTypeError",
    "TdslWarning",
    "TdslZeroDivisionError",
    "check_argument",
    "collecting_warnings",
    "format_diagnostic",
    "in_source",
    "index_error",
    "internal_error",
    "plural",
    "span_location",
    "warn",
    "with_source_line",
]
