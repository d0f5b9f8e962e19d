"""A traced function's compile errors and warnings, placed at the user's own lines.

A trace compiles a program it wrote (``<trace of f>``, see :meth:`tdsl.jit.trace.Traced.program`),
one line per NumPy call it recorded.  A pass that reports an op of it (a tiling that
does not fit the group, the native loops' budget warning) names that program's line,
which the user never wrote: :func:`at_user_lines` moves such an error or warning to the
line of the user's function that made the op, as the trace's own errors are, with the
program's line as the "traced line".
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Callable, Generator, Sequence

from tdsl.errors import SourceLocation, TdslError, TdslWarning, collecting_warnings
from tdsl.jit.trace_names import user_location


@contextlib.contextmanager
def at_user_lines(
    filename: str, lines: Sequence[str], places: Sequence[SourceLocation | None]
) -> Generator[None]:
    """Errors and tdsl warnings of the block at ``filename``'s line ``n`` (the program's
    ``lines[n - 2]``, after its ``def``) come at ``places[n - 2]`` instead, where known."""

    def place(line: int) -> tuple[SourceLocation, str] | None:
        return _place(line, lines, places)

    pattern = re.compile(re.escape(filename) + r":(\d+):(\d+)")
    with collecting_warnings(hold=(TdslWarning,)) as given:
        try:
            yield
        except TdslError as err:
            raise at_user_line(err, filename, lines, places) from None
        finally:
            for warning in given:
                warnings.warn_explicit(*_placed(warning, pattern, place))


def at_user_line(
    err: TdslError, filename: str, lines: Sequence[str], places: Sequence[SourceLocation | None]
) -> TdslError:
    """``err`` at the user's line where it is at a line of ``filename`` (the program of a
    trace: its lines ``lines``, traced at ``places``), else ``err`` itself."""
    found = None
    if err.location is not None and err.location.file == filename:
        found = _place(err.location.line, lines, places)
    if found is None:
        return err
    where, line = found
    return type(err)(
        f"{err.message} (in the traced line `{line}`)", where, note=err.note, op=err.op
    )


def _place(
    line: int, lines: Sequence[str], places: Sequence[SourceLocation | None]
) -> tuple[SourceLocation, str] | None:
    """The user's place of the program's line ``line`` (``lines[line - 2]``, after its
    ``def``) and that line, where known."""
    k = line - 2
    where = places[k] if 0 <= k < len(places) else None
    return None if where is None else (where, lines[k])


def _placed(
    warning: TdslWarning,
    pattern: re.Pattern[str],
    place: Callable[[int], tuple[SourceLocation, str] | None],
) -> tuple[TdslWarning, type[TdslWarning], str, int]:
    """``warning`` at the user's line its text names, else at the user's call of the
    traced function: the arguments of :func:`warnings.warn_explicit`."""
    text = str(warning)
    match = pattern.search(text)
    found = None if match is None else place(int(match.group(1)))
    if match is not None and found is not None:
        where, line = found
        text = f"{text[: match.start()]}{where}{text[match.end() :]}"
        warning = type(warning)(f"{text} (in the traced line `{line}`)")
    else:
        where = user_location()
    file, line_number = ("<trace>", 1) if where is None else (where.file, where.line)
    return warning, type(warning), file, line_number


__all__ = ["at_user_line", "at_user_lines"]
