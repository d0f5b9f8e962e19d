"""Compiler-style error reporting shared by ``tdsl-opt`` and ``tdsl-run``.

Every error a user can cause is printed as::

    model.mlir:3:8: error: 'tensordsl.add' op operands are not broadcast-compatible
      %2 = tensordsl.add %0, %1 : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
           ^^^^^^^^^^^^^

and ends the tool with exit status 1.  Anything else is a bug in tdsl: it is
reported as one ``internal error:`` line and exit status 2.  Setting the
environment variable ``TDSL_DEBUG=1`` lets the Python traceback through instead.

The pieces here:

- the parser that remembers where operations stand and the search for the one that
  does not verify, in :mod:`tdsl.ir_text` (``tdsl.compile_ir`` uses them too);
- the renderers :func:`format_parse_error`, :func:`format_op_error`, and
  :func:`run_tool`, the exit-status policy of both tools.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Callable
from io import StringIO
from typing import Any

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
)

from tdsl.errors import (
    TdslError,
    TdslWarning,
    format_diagnostic,
    span_location,
    unprintable_op,
)
from tdsl.ir_text import OpLocator, find_verify_failure, first_line, op_message

EXIT_USER_ERROR = 1
"""Exit status for an error in the input, the options or the pipeline."""

EXIT_INTERNAL_ERROR = 2
"""Exit status for a bug in tdsl (an exception nobody anticipated)."""

DEBUG_ENV_VAR = "TDSL_DEBUG"
"""When set to a non-empty value other than ``0``, internal errors show a traceback."""


class DriverError(Exception):
    """An error found by a command-line tool itself, already rendered for the user."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(text)


class DominanceError(DriverError):
    """A value used where it is not defined (which xDSL's verifier does not check): a
    verifier error, which ``--verify-diagnostics`` reports like the others."""


def debug_enabled() -> bool:
    """Whether ``TDSL_DEBUG`` asks for tracebacks of internal errors."""
    return os.environ.get(DEBUG_ENV_VAR, "") not in ("", "0")


# --------------------------------------------------------------------------- #
# Source positions
# --------------------------------------------------------------------------- #


def format_parse_error(err: ParseError, line_offset: int = 0) -> str:
    """Render a parser error as ``file:line:col: error: msg`` with the source line."""
    msg = err.msg.replace(  # (xDSL's lexer leaves this placeholder unfilled)
        "suffix identifier after {first_char}", "a name after `#` or `!` (a comment is `//`)"
    )
    text = format_diagnostic(msg, span_location(err.span, line_offset))
    if isinstance(err, MultipleSpansParseError):
        if err.ref_text:
            text += f"\nnote: {err.ref_text.strip()}"
        for ref_span, ref_msg in err.refs:
            text += "\n" + format_diagnostic(
                ref_msg or "see here", span_location(ref_span, line_offset), severity="note"
            )
    return text


def format_arg_spec_error(err: ArgSpecParseError) -> str:
    """Render a malformed pass pipeline or target specification.

    xDSL renders it as a header, ``pass-pipeline:1:14``, the pipeline text, a
    caret line and the message; this reorders it the compiler way.
    """
    lines = str(err).rstrip("\n").split("\n")
    if len(lines) >= 5 and re.fullmatch(r"[\w-]+:\d+:\d+", lines[1]):
        message = " ".join(line.strip() for line in lines[4:])
        return f"{lines[1]}: error: {message}\n{lines[2]}\n{lines[3].rstrip()}"
    return "error: " + "\n".join(lines)


def _short_op_text(op: Operation, max_lines: int = 12) -> str:
    from xdsl.printer import Printer

    stream = StringIO()
    try:
        Printer(stream=stream, print_generic_format=True).print_op(op)
    except Exception:
        return op.name
    lines = stream.getvalue().splitlines()
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], "  ..."]
    return "\n".join(lines)


def format_op_error(
    op: Operation, message: str, locator: OpLocator, *, note: str | None = None
) -> str:
    """Render an error about ``op`` at its source line.

    An operation made by a pass has no position in the input: the error then
    points at its nearest enclosing operation that has one, and shows the
    failing operation in generic form.
    """
    text_message = op_message(op, message)
    placed = locator.nearest(op)
    location = None if placed is None else placed[1]
    notes: list[str] = []
    if placed is None:
        notes += ["the failing operation is:", _short_op_text(op)]
    elif placed[0] is not op:
        notes.append(f"in the body of this '{placed[0].name}'; the failing operation is:")
        notes.append(_short_op_text(op))
    text = format_diagnostic(text_message, location)
    if note is not None:
        text += f"\nnote: {note}"
    if notes:
        text += f"\nnote: {notes[0]}"
        if len(notes) > 1:
            text += "\n" + "\n".join(notes[1:])
    return text


def find_huge_extent(root: Operation) -> tuple[Operation, str] | None:
    """The first op with a tensor operand or result whose extent is beyond int64 (which
    parses, and failed in the passes as an internal error), and what to say of it."""
    limit = 2**63 - 1
    for op in root.walk():
        for value in (*op.operands, *op.results):
            t = value.type
            if isinstance(t, TensorType) and any(d > limit for d in t.get_shape()):
                return op, f"'{op.name}' op has a tensor of type {t}: an extent beyond int64"
    return None


def attributes_to_properties(root: Operation) -> None:
    """Move each attribute an op declares as a property into its properties, as xDSL's
    generic parser does (its "properties retrocompatibility").  Some custom parsers leave
    them among the attributes (``llvm.func``'s ``passthrough``): the generic form then
    printed them in the attribute dictionary, and parsing that text again moved them,
    so the text did not print back the same."""
    for op in root.walk():
        if not isinstance(op, IRDLOperation):
            continue
        for name in type(op).get_irdl_definition().properties:
            if name in op.attributes and name not in op.properties:
                op.properties[name] = op.attributes.pop(name)


def find_use_before_def(root: Operation) -> tuple[Operation, int, str] | None:
    """The first operation using an operand that is not defined above it: the op, which
    operand, and what is wrong ("used before it is defined", or defined outside an
    ``IsolatedFromAbove`` op).

    xDSL 0.75's verifier does not check dominance, so ``%1 = op %1`` parses and
    verifies.  In a region of several blocks (the ``llvm`` stage's control flow) a value
    is visible in the blocks its block dominates (:func:`_dominators`); a block no path
    from the entry reaches sees every value of the region's other blocks (MLIR's verifier
    does not check such blocks).  An ``IsolatedFromAbove`` region sees nothing from outside it.
    """

    def visit_region(
        region: Region, visible: set[SSAValue], outside: set[SSAValue], isolated: str | None
    ) -> tuple[Operation, int, str] | None:
        blocks = list(region.blocks)
        if not blocks:
            return None
        if len(blocks) == 1:
            return visit(blocks[0], visible, outside, isolated)
        dominators = _dominators(blocks)
        for block in blocks:
            above = set(visible)
            for other in dominators.get(block, blocks):
                if other is not block:
                    above.update(other.args)
                    above.update(r for op in other.ops for r in op.results)
            found = visit(block, above, outside, isolated)
            if found is not None:
                return found
        return None

    def visit(
        block: Block, visible: set[SSAValue], outside: set[SSAValue], isolated: str | None
    ) -> tuple[Operation, int, str] | None:
        seen = visible | set(block.args)
        for op in block.ops:
            for index, operand in enumerate(op.operands):
                if operand in seen:
                    continue
                if isolated is not None and operand in outside:
                    return (
                        op,
                        index,
                        f"is defined outside the '{isolated}' op holding it, which is isolated "
                        "from above (pass the value in as an operand)",
                    )
                return op, index, "is used before it is defined"
            for region in op.regions:
                if op.has_trait(IsolatedFromAbove):
                    found = visit_region(region, set(), outside | seen, op.name)
                else:
                    found = visit_region(region, seen, outside, isolated)
                if found is not None:
                    return found
            seen.update(op.results)
        return None

    for region in root.regions:
        found = visit_region(region, set(), set(), None)
        if found is not None:
            return found
    return None


def _dominators(blocks: list[Block]) -> dict[Block, list[Block]]:
    """Each block the entry (the first) reaches, to the blocks that dominate it (itself
    included), by the successors of the blocks' last ops; unreached blocks are left out."""
    succs: dict[Block, list[Block]] = {
        b: list(b.last_op.successors) if b.last_op is not None else [] for b in blocks
    }
    reached, todo = {blocks[0]}, [blocks[0]]
    while todo:
        for s in succs[todo.pop()]:
            if s in succs and s not in reached:
                reached.add(s)
                todo.append(s)
    order = [b for b in blocks if b in reached]
    preds: dict[Block, list[Block]] = {b: [] for b in order}
    for b in order:
        for s in succs[b]:
            if s in preds:
                preds[s].append(b)
    dom: dict[Block, set[Block]] = {b: set(order) for b in order}
    dom[blocks[0]] = {blocks[0]}
    changed = True
    while changed:
        changed = False
        for b in order[1:]:
            new = set.intersection(*(dom[p] for p in preds[b])) | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return {b: [d for d in order if d in dom[b]] for b in order}


def emit_checked(emit: Callable[[ModuleOp], Any], module: ModuleOp, locator: OpLocator) -> Any:
    """``emit(module)`` (a target, or the passes); where it fails with a plain exception
    and an op of ``module`` does not print (an enum property out of the range its
    printer knows, which xDSL's verifiers accept: ``llvm.fcmp`` with predicate 64, on
    which the LLVM conversion fails too), a located error at that op."""
    try:
        return emit(module)
    except (TdslError, DiagnosticException, DriverError):
        raise
    except Exception as err:
        found = unprintable_op(module)
        if found is not None:
            raise DriverError(format_op_error(found[0], found[1], locator)) from err
        raise


def format_verify_error(
    err: DiagnosticException,
    module: Operation | None,
    locator: OpLocator,
    *,
    note: str | None = None,
) -> str:
    """Render a verifier error, pointing at the operation that does not verify."""
    found: tuple[Operation, Exception] | None = None
    if module is not None:
        try:
            found = find_verify_failure(module)
        except Exception:
            found = None
    if found is not None:
        op, op_err = found
        # (one line of error: the lines xDSL's constraints add, "Underlying verification
        # failure: ...", follow the source line as a note)
        first, details = first_line(str(op_err))
        joined = "\n".join(n for n in (details, note) if n) or None
        return format_op_error(op, first, locator, note=joined)
    return format_diagnostic(str(err).strip(), None, note=note)


# --------------------------------------------------------------------------- #
# The exit-status policy
# --------------------------------------------------------------------------- #


def user_error_text(err: BaseException, line_offset: int = 0) -> str | None:
    """The rendered message for an error a user can cause, or ``None`` for a bug."""
    if isinstance(err, DriverError):
        return err.text
    if isinstance(err, TdslError):
        return str(err)
    if isinstance(err, ParseError):
        return format_parse_error(err, line_offset)
    if isinstance(err, ArgSpecParseError):
        return format_arg_spec_error(err)
    if isinstance(err, DiagnosticException):
        return format_diagnostic(str(err).strip(), None)
    if isinstance(err, MemoryError):
        return format_diagnostic(
            "out of memory: the input needs more memory than this machine has "
            "(a tensor attribute or shape that is too large?)",
            None,
        )
    return None


def print_error(text: str) -> None:
    """Print a rendered diagnostic on stderr."""
    sys.stderr.write(text.rstrip("\n") + "\n")
    sys.stderr.flush()


def internal_error_text(err: BaseException) -> str:
    """One line describing an unexpected exception."""
    detail = str(err).strip().split("\n")[0]
    kind = type(err).__name__
    suffix = f" (set {DEBUG_ENV_VAR}=1 for a traceback)"
    return (
        f"internal error: {kind}: {detail}{suffix}" if detail else f"internal error: {kind}{suffix}"
    )


def run_tool(body: Callable[[], None]) -> None:
    """Run a tool's ``body`` and turn every failure into a message and an exit status.

    ``SystemExit`` (argparse usage errors, ``--help``) passes through.  User
    errors print their diagnostic and exit 1; anything else is an internal
    error: one line and exit 2, or the traceback when ``TDSL_DEBUG`` is set.
    """
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            body()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        print_error("error: interrupted")
        raise SystemExit(130) from None
    except BrokenPipeError:
        # The reader went away (``tdsl-opt ... | head``): not an error of ours.
        _silence_stdout()
        raise SystemExit(EXIT_USER_ERROR) from None
    except BaseException as err:
        text = user_error_text(err)
        if text is not None:
            print_error(text)
            raise SystemExit(EXIT_USER_ERROR) from None
        if debug_enabled():
            raise
        print_error(internal_error_text(err))
        raise SystemExit(EXIT_INTERNAL_ERROR) from None


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A tdsl warning as a compiler prints one (``warning: ...`` on stderr, no Python
    source line); other warnings as Python shows them."""
    if issubclass(category, TdslWarning):
        print_error(f"warning: {message}")
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
