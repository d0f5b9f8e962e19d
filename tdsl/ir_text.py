r"""Where operations of IR text stand in it, for errors that point at their line.

- :class:`LocatingParser`, an xDSL ``Parser`` that remembers where in the text
  each operation was parsed, so that a verifier error can point at its line;
- :func:`find_verify_failure`, which finds the operation a ``VerifyException``
  came from (xDSL's exception does not say);
- :func:`clearer`, clearer messages for xDSL parse errors that point nowhere useful
  (an undefined value, reported at the end of the input; a region left open);
- :class:`OpLocator`, an operation's place: its span in the text or its ``loc``.

``tdsl-opt`` and ``tdsl-run`` render these errors (:mod:`tdsl.tools.diagnostics`);
``tdsl.compile_ir`` raises them as located ``TdslIRError``\ s.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyDenseElement,
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IndexType,
    IntegerType,
    ModuleOp,
    RankedStructure,
)
from xdsl.ir import Operation, SSAValue
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span

from tdsl.errors import SourceLocation, TdslError, span_location

# --------------------------------------------------------------------------- #
# Clearer parse errors
# --------------------------------------------------------------------------- #


class _Parsed(Protocol):
    """What a :class:`LocatingParser` knows after it failed."""

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


# --------------------------------------------------------------------------- #
# Remembering where operations were parsed
# --------------------------------------------------------------------------- #


_BETWEEN_TOKENS = re.compile(r'"?(?:\s|//[^\n]*)*')
"""What may stand between an op's name and the token after it: the generic form's closing
quote, white space and comments."""


_DENSE_COUNT_ERRORS = ("Shape mismatch in dense literal", "Expected at least one element")
"""The starts of xDSL's errors for a dense literal whose elements its type does not take."""


class LocatingParser(Parser):
    """An MLIR parser that records the span of each operation's name.

    ``op_spans`` maps every parsed operation to the span of its name (the
    ``tensordsl.add`` of ``%2 = tensordsl.add ...``, or the quoted name of a
    generic operation).  When building an operation raises a
    ``VerifyException`` while parsing (an attribute or type that does not
    verify), ``failure_span`` holds the name span of the innermost operation
    being parsed.
    """

    op_spans: dict[Operation, Span[str]]
    failure_span: Span[str] | None
    _name_stack: list[Span[str] | None]

    def __init__(self, ctx: Context, text: str, name: str) -> None:
        super().__init__(ctx, text, name)
        self.op_spans = {}
        self.failure_span = None
        self._name_stack = []
        self._dense_elements: list[list[tuple[AttrParser._TensorLiteralElement, int | None]]] = []

    @property
    def input(self) -> Input[str]:
        """The text being parsed."""
        text_input = self.lexer.input
        return text_input  # pyright: ignore[reportReturnType]

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as err:
            better = clearer(self, err)
            if better is not None:
                raise better from None
            raise

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        self._name_stack.append(None)
        try:
            op = super().parse_operation()
        except VerifyException:
            if self.failure_span is None:
                name_span = self._name_stack[-1]
                self.failure_span = name_span if name_span is not None else self._as_str(start)
            raise
        except (ParseError, TdslError, OverflowError, struct.error):
            raise  # (an integer xDSL packed unchecked: the reader locates it where it stood)
        except Exception as err:
            # xDSL's parsers raise a few plain exceptions (a dense value of an i65 or f80,
            # a memref.load with one index too many): one located error at the op
            span = self._name_stack[-1] or self._as_str(start)
            why = str(err) or type(err).__name__
            raise ParseError(span, f"'{span.text}' cannot be parsed: {why}") from None
        finally:
            name_span = self._name_stack.pop()
        self.op_spans[op] = name_span if name_span is not None else self._as_str(start)
        return op

    def _get_op_by_name(self, name: str) -> type[Operation]:
        # Called right after the name token was consumed: the name is the last
        # occurrence of ``name`` before the current token (inside quotes for the
        # generic form).
        text_input = self.input
        text, at = text_input.content, self.pos
        while (at := text.rfind(name, 0, at)) >= 0:
            # (not an occurrence in a comment the lexer skipped after the name)
            if _BETWEEN_TOKENS.fullmatch(text, at + len(name), self.pos):
                break
        name_span = Span(at, at + len(name), text_input) if at >= 0 else None
        if self._name_stack:
            self._name_stack[-1] = name_span
        if (
            name_span is not None
            and self.ctx.get_optional_op(name, dialect_stack=self._parser_state.dialect_stack)
            is None
            and not self.ctx.allow_unregistered
        ):
            self.raise_error(f"Operation {name} is not registered", name_span)
        return super()._get_op_by_name(name)

    def _as_str(self, span: Span[str] | Span[bytes]) -> Span[str]:
        return Span(span.start, span.end, self.input)

    # MLIR reads a hexadecimal integer in a float ``dense<...>`` as the float's bits, as
    # ``0x7FC00000 : f32`` is (and prints NaN and infinity so: ``dense<0x7FC00000>``);
    # xDSL 0.75 reads its value, 2143289344.0. Each hexadecimal element is noted here and
    # read as 0, and the attribute made again from the bits (or, in an integer dense,
    # from the integers)

    def parse_dense_int_or_fp_elements_attr(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        self._dense_elements.append([])
        start = self.pos
        try:
            attr = super().parse_dense_int_or_fp_elements_attr(type)
        except ParseError as err:
            # xDSL checks the elements against the type after reading the type, and
            # points at the token after it (often the next line): point at the literal
            if err.span.start < self.pos or not err.msg.startswith(_DENSE_COUNT_ERRORS):
                raise
            written = self.input.content[start : self.pos].rstrip()
            self.raise_error(err.msg, start, start + len(written))
        finally:
            elements = self._dense_elements.pop()
        if not any(bits is not None for _, bits in elements):
            return attr
        element = attr.get_element_type()
        if isinstance(element, AnyFloat):  # (as bytes: a nan keeps its payload and signal)
            data = b"".join(self._float_bytes(element, literal, bits) for literal, bits in elements)
            if len(elements) == 1:  # (a splat)
                data *= math.prod(attr.get_shape())
            return DenseIntOrFPElementsAttr(cast(Any, attr.type), BytesAttr(data))
        if not isinstance(element, IntegerType | IndexType):
            self.raise_error(f"a hexadecimal literal cannot be an element of {element}")
        values = [
            literal.value if bits is None else -bits if literal.is_negative else bits
            for literal, bits in elements
        ]
        if len(values) == 1:  # (a splat)
            values *= math.prod(attr.get_shape())
        return DenseIntOrFPElementsAttr.from_list(cast(Any, attr.type), values)

    def _float_bytes(
        self, element: AnyFloat, literal: AttrParser._TensorLiteralElement, bits: int | None
    ) -> bytes:
        """One element of a float dense: its bits as written, or its value packed."""
        if bits is None:
            return element.pack([literal.to_float(self)])
        if literal.is_negative:
            self.raise_error(
                "a hexadecimal float literal gives the float's bits, which hold its sign: it "
                "takes no '-'",
                literal.span,
            )
        if bits.bit_length() > element.bitwidth:
            self.raise_error("Hexadecimal float constant out of range for type", literal.span)
        return bits.to_bytes(element.compile_time_size, "little")

    def _parse_tensor_literal_element(self) -> AttrParser._TensorLiteralElement:
        literal = super()._parse_tensor_literal_element()
        bits = None
        if self._dense_elements:
            spelling = literal.span.text.lstrip("-").lstrip()
            if spelling[:2] in ("0x", "0X") and isinstance(literal.value, int):
                bits = abs(literal.value)
                literal.value = 0  # (read as its bits or its integer when the type is known)
            self._dense_elements[-1].append((literal, bits))
        return literal


# --------------------------------------------------------------------------- #
# Verifier errors
# --------------------------------------------------------------------------- #


def verify_module(module: ModuleOp) -> None:
    """Verify ``module``; an op verifier of xDSL's that raises a plain ``Exception``
    (``memref.load``'s for a wrong index count) raises a ``VerifyException`` too."""
    try:
        module.verify()
    except DiagnosticException:
        raise
    except Exception as err:
        raise VerifyException(str(err) or type(err).__name__) from None


def find_verify_failure(root: Operation) -> tuple[Operation, Exception] | None:
    """The first operation under ``root`` (innermost first) that does not verify.

    xDSL's ``VerifyException`` does not name the operation it came from, so this
    verifies every operation on its own, nested operations before their parent.
    Returns the operation and its error, or ``None`` when everything verifies.
    """
    for region in root.regions:
        for block in region.blocks:
            for op in block.ops:
                found = find_verify_failure(op)
                if found is not None:
                    return found
            if not block.ops:
                try:
                    block.verify()
                except Exception as err:  # (a VerifyException, or a plain one of xDSL's)
                    return root, err
    try:
        root.verify(verify_nested_ops=False)
    except Exception as err:
        return root, err
    return None


@dataclass(frozen=True)
class OpLocator:
    """Finds a source location for an operation.

    Operations parsed from the input text have their name's span; others (made
    by a frontend) may carry a ``loc("file":line:col)``.  ``line_offset`` shifts
    the lines of a ``--split-input-file`` chunk.
    """

    op_spans: dict[Operation, Span[str]]
    line_offset: int = 0
    input_name: str | None = None
    input_text: str | None = None

    def locate(self, op: Operation) -> SourceLocation | None:
        """The location of ``op`` itself, if it has one.

        An op a pass built (a ``kernel.fused`` group) that has neither a span in
        the input nor a file location is placed at the last op of its body
        that has one: a group is where its result is computed, as the pass
        gives it that op's ``loc``.
        """
        span = self.op_spans.get(op)
        if span is not None:
            return span_location(span, self.line_offset)
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return self.file_location(loc.filename.data, loc.line.data, loc.column.data)
        for region in op.regions:
            for block in region.blocks:
                for inner in reversed(list(block.ops)):
                    found = self.locate(inner)
                    if found is not None:
                        return found
        return None

    def nearest(self, op: Operation) -> tuple[Operation, SourceLocation] | None:
        """``op``'s location, else its nearest enclosing op's that has one, with that op."""
        at: Operation | None = op
        while at is not None:
            location = self.locate(at)
            if location is not None:
                return at, location
            at = at.parent_op()
        return None

    def file_location(self, file: str, line: int, column: int) -> SourceLocation:
        """``file:line:col`` with its source line (from the input text or the file, if it reads)."""
        source_line: str | None = None
        lines: list[str] | None = None
        if self.input_text is not None and file == self.input_name:
            lines = self.input_text.split("\n")
        else:
            try:
                with open(file, encoding="utf-8") as stream:
                    lines = stream.read().split("\n")
            except (OSError, UnicodeDecodeError):
                lines = None
        if lines is not None and 1 <= line <= len(lines):
            source_line = lines[line - 1]
        return SourceLocation(file, line, max(1, column), 1, source_line)


def op_message(op: Operation, message: str) -> str:
    """Prefix ``message`` with ``'op.name' op`` (the MLIR style) unless it names the op."""
    message = message.strip()
    if op.name in message:
        return message
    return f"'{op.name}' op {message}"


def first_line(message: str) -> tuple[str, str | None]:
    """A message's first line, and the rest (the lines xDSL's constraints add,
    "Underlying verification failure: ..."), which follow the source line as a note."""
    first, *more = message.strip().splitlines() or [""]
    rest = "\n".join(line for line in more if line.strip())
    return first, rest or None


@dataclass
class Names:
    """One scope's identifiers (a generated Python function's, a module's symbols): hands
    out unique names."""

    used: set[str] = field(default_factory=set[str])

    def reserve(self, *names: str) -> None:
        self.used.update(names)

    def fresh(self, hint: str) -> str:
        """``hint``, or ``hint_1``, ``hint_2``, ... if taken."""
        name, k = hint, 0
        while name in self.used:
            k += 1
            name = f"{hint}_{k}"
        self.used.add(name)
        return name

    def numbered(self, prefix: str) -> str:
        """The first free ``<prefix><n>``."""
        n = 0
        while f"{prefix}{n}" in self.used:
            n += 1
        return self.fresh(f"{prefix}{n}")


class UniqueNamesPrinter(Printer):
    """xDSL's printer, but that an SSA name is never printed twice in one scope, and a
    string with non-ASCII letters is printed as it is.

    xDSL 0.75 names the second value of hint ``x`` ``%x_1`` without looking whether
    hint ``x_1`` (its parser reads ``%x_1_1`` as that) printed ``%x_1`` already:
    arguments ``x, x_1, x_1_1`` printed ``%x, %x_1, %x_1``, which does not parse.
    Every name printed is marked used, and a hint skips the suffixes taken."""

    def print_string_literal(self, string: str) -> None:
        # (xDSL 0.75 writes non-ASCII as escaped bytes, `"e_\C3\A9.tdsl"`, which its
        # lexer does not read back: a printable string is written as it is)
        if not string.isprintable() or string.isascii():
            super().print_string_literal(string)
            return
        self.print_string('"' + string.replace("\\", "\\\\").replace('"', '\\"') + '"')

    def print_ssa_value(self, value: SSAValue) -> str:
        hint = value.name_hint
        if value in self._ssa_values or not hint:
            return super().print_ssa_value(value)
        names = self.ssa_names
        n = names.get(hint, 0)
        name = hint if n == 0 else f"{hint}_{n}"
        while n and name in names:
            n += 1
            name = f"{hint}_{n}"
        names[hint] = n + 1
        names.setdefault(name, 1)
        self._ssa_values[value] = name
        self.print_string(f"%{name}")
        return name
