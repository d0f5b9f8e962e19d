"""Clearer messages for xDSL parse errors that point nowhere useful: an undefined value,
reported at the end of the input, and a region left open, reported with an empty
message past the end."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from xdsl.ir import Operation
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input, Span


class _Parsed(Protocol):
    """What a :class:`~tdsl.tools.diagnostics.LocatingParser` knows after it failed."""

    @property
    def input(self) -> Input[str]: ...

    op_spans: dict[Operation, Span[str]]
    forward_ssa_references: Mapping[str, Mapping[Any, Any]]


def clearer(parser: _Parsed, err: ParseError) -> ParseError | None:
    """A clearer error for ``err``, raised by ``parser``, or None to keep it."""
    text = parser.input.content
    # xDSL reports undefined values at the end of the input; point at a use.
    if err.msg.startswith("values used but not defined") and (use := _first_use(parser)):
        name, span = use
        return ParseError(span, f"use of undefined value '%{name}'")
    if err.msg.strip() == "in block definition" and not text[err.span.start :].strip():
        end = max(len(text.rstrip()) - 1, 0)  # (at the input's last character)
        message = "the input ends inside a region: a closing `}` is missing"
        return ParseError(Span(end, end + 1, parser.input), message)
    return None


def _first_use(parser: _Parsed) -> tuple[str, Span[str]] | None:
    """The first use in the text of a value used but never defined, with its name."""
    text = parser.input.content
    best: tuple[str, Span[str]] | None = None
    for name, references in parser.forward_ssa_references.items():
        pattern = re.compile("%" + re.escape(name) + r"(?![\w$.\-])")
        for value in references.values():
            for use in value.uses:
                op_span = parser.op_spans.get(use.operation)
                if op_span is None:
                    continue
                match = pattern.search(text, parser.input.get_start_of_line(op_span.start))
                if match is None:
                    continue
                span = Span(match.start(), match.end(), parser.input)
                if best is None or span.start < best[1].start:
                    best = (name, span)
    return best


__all__ = ["clearer"]
