"""mlir-opt's ``-verify-diagnostics`` checks, as ``tdsl-opt --verify-expected-errors``.

An input marks the errors it expects with comments, as in MLIR's test suites::

    %0 = kernel.tile(...) ... loops tiles [1, 8, 4] ...  // expected-error {{must be 16}}
    // expected-error@+1 {{does not store value 0}}
    %0 = kernel.tile(...)

``expected-error {{TEXT}}`` expects an error on its own line whose message contains
``TEXT``; ``@+N``/``@-N`` move the line by ``N``, ``@above``/``@below`` by one.  Each
error ``tdsl-opt`` reports must be expected on its line, and each expectation met:
then the run exits 0 and prints nothing of the errors; else each mismatch is an
error at its line.  (xDSL's own ``--verify-diagnostics`` only prints the error and
exits 0; ``tdsl-opt`` keeps that meaning too.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_ANNOTATION = re.compile(
    r"//\s*expected-error(?:@(?P<where>[+-]\d+|above|below))?\s*\{\{(?P<text>.*?)\}\}"
)
_REPORTED = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.*)$")


@dataclass(frozen=True)
class Expected:
    """One ``expected-error`` annotation: the line it expects an error on, and a part of
    the message."""

    line: int
    text: str
    at: int
    """The line of the annotation itself."""


def expectations(text: str, line_offset: int) -> list[Expected]:
    """The ``expected-error`` annotations of a chunk of input whose first line is line
    ``line_offset + 1`` of the file."""
    found: list[Expected] = []
    for index, source in enumerate(text.splitlines(), start=1):
        line = line_offset + index
        for match in _ANNOTATION.finditer(source):
            where = match.group("where")
            if where is None:
                target = line
            elif where == "above":
                target = line - 1
            elif where == "below":
                target = line + 1
            else:
                target = line + int(where)
            found.append(Expected(target, match.group("text"), line))
    return found


_MENTION = re.compile(r"//\s*expected-error")


def malformed(path: str, text: str, line_offset: int) -> list[str]:
    """Errors for the ``expected-error`` annotations of a chunk (first line ``line_offset
    + 1``) that are not well formed (no ``{{...}}``, a bad ``@`` offset) or point before
    the file's first line: each would otherwise be ignored, and its test pass."""
    out: list[str] = []
    for index, source in enumerate(text.splitlines(), start=1):
        line = line_offset + index
        good = {m.start() for m in _ANNOTATION.finditer(source)}
        for mention in _MENTION.finditer(source):
            column = mention.start() + 1
            if mention.start() not in good:
                out.append(
                    f"{path}:{line}:{column}: error: malformed annotation: write "
                    "`// expected-error {{TEXT}}` or `// expected-error@+N {{TEXT}}` "
                    "(also @-N, @above, @below)"
                )
        for e in expectations(source, line - 1):
            if e.line < 1:
                out.append(
                    f"{path}:{line}: error: the annotation expects an error on line {e.line}, "
                    "before the file's first line"
                )
    return out


def mismatches(path: str, expected: Sequence[Expected], reported: Sequence[str]) -> list[str]:
    """Errors for each reported error no annotation expects and each annotation no error
    met (each report is a diagnostic as ``tdsl-opt`` prints it)."""
    left = list(expected)
    out: list[str] = []
    for report in reported:
        first = report.splitlines()[0] if report else ""
        match = _REPORTED.match(first)
        line = int(match.group("line")) if match else None
        message = match.group("message") if match else first.removeprefix("error: ")
        hit = next((e for e in left if e.line == line and e.text in message), None)
        if hit is not None:
            left.remove(hit)
            continue
        where = f"{path}:{line}: " if line is not None else ""
        out.append(f"{where}error: unexpected error: {message}")
    for e in left:
        out.append(
            f'{path}:{e.at}: error: expected error "{e.text}" on line {e.line} was not produced'
        )
    return out


__all__ = ["Expected", "expectations", "mismatches"]
