"""Input and output of ``tdsl-opt``: :class:`OptIO` reads a file, standard input
(``-``) or a ``--expr`` expression as UTF-8 text, parses it chunk by chunk with its
frontend, and prints the resulting program with the chosen target (``mlir`` exactly,
``dot`` lazily loaded).
"""

from __future__ import annotations

import os
import re
import struct
import sys
from contextlib import nullcontext
from io import BytesIO, StringIO
from typing import IO, Any

# Only what every run needs is imported here: ``tdsl-opt`` starts as fast as
# ``xdsl-opt``.  Dialects load when the input uses them; the help, the dot
# target, fusion remarks and the frontend load when asked for.
from xdsl.dialects.builtin import ModuleOp
from xdsl.frontend.mlir import MLIRFrontend
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.target import Target

from tdsl.ir_text import LocatingParser, OpLocator
from tdsl.tools.diagnostics import (
    DominanceError,
    DriverError,
    attributes_to_properties,
    find_huge_extent,
    find_use_before_def,
    format_op_error,
)
from tdsl.tools.opt_args import TDSL_OUTPUT_TARGETS, OptArguments
from tdsl.universe import TDSL_DIALECTS

STDIN = "-"
"""The input file name that reads standard input, as in mlir-opt."""


def _decode_text(data: bytes, name: str) -> str:
    """``data`` as UTF-8 text; binary input is a user error."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        read = data.decode("utf-8", "replace")  # (as far as it reads)
        at = len(data[: err.start].decode("utf-8", "replace"))
        raise _not_text(name, read, at, f"invalid UTF-8 byte 0x{data[err.start]:02x}") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise _not_text(name, text.replace("\x00", " "), nul, "a NUL byte")
    return text


def _not_text(name: str, text: str, at: int, what: str) -> DriverError:
    """ "Not a text file" at offset ``at`` of ``text``: its line and column, the line, a
    caret."""
    start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
    row, column = text.count("\n", 0, at) + 1, at - start + 1
    line = text[start : len(text) if end < 0 else end]
    return DriverError(
        f"{name}:{row}:{column}: error: not a text file ({what})\n{line}\n{' ' * (column - 1)}^"
    )


def unterminated_string(text: str) -> int | None:
    """The offset of the first ``"`` in MLIR ``text`` whose string does not end on its
    line (outside ``//`` comments), else None.  (xDSL's lexer tries such a string in a
    number of ways that doubles with each character after the quote: a minute at 30.)"""
    offset = 0
    for line in text.split("\n"):
        opened, k = None, 0
        while k < len(line):
            c = line[k]
            if opened is None and line.startswith("//", k):
                break
            if c == '"':
                opened = k if opened is None else None
            elif c == "\\" and opened is not None:
                k += 1  # (an escaped character)
            k += 1
        if opened is not None:
            return offset + opened
        offset += len(line) + 1
    return None


def exact_mlir_target() -> type[Target]:
    """The ``mlir`` target, which prints floats exactly (loaded when first used)."""
    from tdsl.tools.mlir_target import ExactMLIRTarget

    return ExactMLIRTarget


_NUMBER = re.compile(
    r"(?<![\w.#%@^])[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)(?![\w.])"
)
"""A decimal number token of MLIR text (not part of a name, a hex literal or a value)."""


def last_out_of_range(text: str, before: int, floats: bool) -> tuple[int, int] | None:
    """Where (start, end) in ``text`` the last number before offset ``before`` stands that
    no type tdsl parses holds: a float beyond f16's range (``floats``; f16 is the
    narrowest), or an integer beyond i32's (the narrowest integer type), or None."""
    for match in reversed(list(_NUMBER.finditer(text, 0, before))):
        token = match.group()
        is_float = any(c in token for c in ".eE")
        if floats and is_float and abs(float(token)) > 65504:
            return match.span()
        if not floats and not is_float and not -(2**31) <= int(token) < 2**32:
            return match.span()
    return None


def out_of_range(err: struct.error | OverflowError, where: str = "") -> str:
    """What xDSL's packing of a dense literal's number (never checked against its type)
    means: a number (``where`` it stands) out of range for its element type, and what
    the type holds."""
    if "float" in str(err):
        return (
            f"a float{where} is out of range for its type ({err}): f16 holds up to 65504, "
            'f32 up to about 3.4e38 (write infinity as its bytes: dense<"0x007C"> in f16, '
            'dense<"0x0000807F"> in f32)'
        )
    return (
        f"an integer{where} is out of range for its type ({err}): i32 holds up to "
        f"{2**31 - 1}, i64 up to {2**63 - 1}"
    )


class OptIO(OptArguments):
    """Reading ``tdsl-opt``'s input (a file, standard input or ``--expr``, as text) and
    printing its output with the chosen target."""

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == STDIN:
            return sys.stdin.buffer, "mlir"
        return super().get_input_stream()

    def get_input_name(self) -> str:
        name: str | None = self.args.input_file
        return "stdin" if name in (None, STDIN) else name

    def _timed(self, name: str) -> Any:
        """A context timing its body as phase ``name`` under ``--time-passes``."""
        return self._times.phase(name) if self._times is not None else nullcontext()

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        with self._timed("input"):
            return self._prepare_input()

    def _prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        """Read the whole input, check it is non-empty text, and split it into chunks."""
        if self.args.expr is not None:
            if self.args.input_file is not None:
                raise DriverError("error: give either an input file or --expr, not both")
            return [(BytesIO(b""), 0)], "mlir"
        if self.args.shape:
            raise DriverError("error: --shape is only meaningful together with --expr")
        name = self.get_input_name()
        try:
            stream, extension = self.get_input_stream()
            try:
                data = stream.read()
            finally:
                if stream is not sys.stdin.buffer:
                    stream.close()
        except OSError as err:
            reason = err.strerror or str(err)
            raise DriverError(f"error: cannot read '{name}': {reason}") from None
        self._input_text = _decode_text(data, name)
        if not self._input_text.strip():
            raise DriverError(f"{name}:1:1: error: the input is empty")
        if extension == "mlir" and not any(
            line.strip() and not line.strip().startswith("//")
            for line in self._input_text.splitlines()
        ):
            raise DriverError(f"{name}:1:1: error: the input has only comments, no IR")
        frontend = self.args.frontend
        if frontend is None and extension not in self.available_frontends:
            known = ", ".join(f".{ext}" for ext in self.available_frontends)
            raise DriverError(
                f"error: {name}: unknown file extension '.{extension}' (known: {known}); "
                "choose a frontend with -f"
            )
        if not self.args.split_input_file:
            return [(BytesIO(data), 0)], extension
        pieces = data.split(b"// -----")
        chunks: list[tuple[IO[bytes], int]] = []
        offset = 0
        for piece in pieces:
            blank = not any(
                line.strip() and not line.strip().startswith(b"//") for line in piece.splitlines()
            )
            # (an empty chunk is an empty module, as mlir-opt reads it)
            text = b"builtin.module {\n}\n" if blank and extension == "mlir" else piece
            chunks.append((BytesIO(text), offset))
            offset += piece.count(b"\n")
        return chunks, extension

    def prepare_output(self) -> IO[str]:
        """Standard output, or for ``-o FILE`` a buffer :meth:`finish_output` writes to
        ``FILE`` when the run succeeds: a failed run leaves ``FILE`` as it was, as
        mlir-opt does (it may be the input).  An unwritable ``FILE`` is an error now."""
        path = self.args.output_file
        if path == "":  # (`-o ''`, `-o "$UNSET"`: not standard output unasked)
            raise DriverError("error: -o needs a file name (`-o -` or no -o: standard output)")
        if path is None or path == "-":
            return sys.stdout
        try:
            existed = os.path.lexists(path)
            with open(path, "a"):  # (writable? appending nothing changes no byte)
                pass
            if not existed:
                os.unlink(path)
        except OSError as err:
            raise DriverError(f"error: cannot write '{path}': {err.strerror or err}") from None
        return StringIO()

    def finish_output(self, output: IO[str], succeeded: bool) -> None:
        """Write ``-o``'s buffer to its file if the run ``succeeded``; else leave it."""
        if output is sys.stdout or not isinstance(output, StringIO):
            return
        path = self.args.output_file
        if succeeded and path:
            try:
                with open(path, "w") as file:
                    file.write(output.getvalue())
            except OSError as err:
                raise DriverError(f"error: cannot write '{path}': {err.strerror or err}") from None

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        """Parse one chunk; MLIR text goes through :class:`LocatingParser`."""
        if self.args.expr is not None:
            # (errors at an op of the expression show its text: `<expr>:1:2`, a caret)
            self._locator = OpLocator({}, 0, "<expr>", self.args.expr)
            return self._lower_expression()
        spec = parse_spec(self.args.frontend or file_extension)
        if spec.name not in self.available_frontends:
            raise DriverError(f"error: unknown frontend '{spec.name}'")
        name = self.get_input_name()
        if spec.name != "mlir":
            self._locator = OpLocator({}, 0, name, self._input_text)
            if start_offset:  # (a later part of --split-input-file: its lines are the file's)
                chunk = BytesIO(b"\n" * start_offset + chunk.read())
            return super().parse_chunk(chunk, file_extension, start_offset)
        frontend = MLIRFrontend.from_spec(spec)
        text = chunk.read().decode("utf-8")
        quote = unterminated_string(text)
        if quote is not None:  # (start_offset: the chunk's first line in the input)
            start, end = text.rfind("\n", 0, quote) + 1, text.find("\n", quote)
            row, column = start_offset + text.count("\n", 0, quote) + 1, quote - start + 1
            raise DriverError(
                f"{name}:{row}:{column}: error: this string does not end on its line: close it "
                f'with `"`\n{text[start : None if end < 0 else end]}\n{" " * (column - 1)}^'
            )
        parser = LocatingParser(self.ctx, text, name)
        self._parser = parser
        self._locator = OpLocator(parser.op_spans, start_offset, name, self._input_text)
        no_implicit = frontend.no_implicit_module or self.args.no_implicit_module
        try:
            module = parser.parse_module(not no_implicit)
        except (struct.error, OverflowError) as err:  # xDSL packs a number it never checked
            bad = last_out_of_range(text, parser.pos, "float" in str(err))
            if bad is None:
                parser.raise_error(out_of_range(err, " before this"))
            parser.raise_error(out_of_range(err), bad[0], bad[1])
        attributes_to_properties(module)
        huge = find_huge_extent(module)
        if huge is not None:
            raise DriverError(format_op_error(huge[0], huge[1], self._locator))
        misuse = find_use_before_def(module)
        if misuse is not None:
            op, index, problem = misuse
            if self.args.verify_diagnostics:
                raise DominanceError(f"'{op.name}' op operand #{index} {problem}")
            raise DominanceError(
                format_op_error(op, f"'{op.name}' op operand #{index} {problem}", self._locator)
            )
        return module

    def _frontend_name(self, file_extension: str) -> str:
        if self.args.expr is not None:
            return "expr"
        return parse_spec(self.args.frontend or file_extension).name

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The target's output; a target of xDSL's that cannot take the IR is a user error."""
        spec = parse_spec(self.args.target)
        name = spec.name
        if name == "dot":
            return self._render_dot(prog, spec)
        if name in TDSL_OUTPUT_TARGETS:
            return super().output_resulting_program(prog)
        tdsl_op = next(
            (op for op in prog.walk() if op.name.partition(".")[0] in TDSL_DIALECTS), None
        )
        if tdsl_op is not None:
            where = self._locator.locate(tdsl_op)
            at = f" at {where}" if where is not None else ""
            raise DriverError(
                f"error: target '{name}' cannot take tdsl IR ('{tdsl_op.name}'{at}); "
                f"tdsl's targets are {', '.join(TDSL_OUTPUT_TARGETS)}"
            )
        try:
            text = super().output_resulting_program(prog)
        except Exception as err:  # xDSL targets assert what they take
            detail = str(err).strip()
            why = type(err).__name__ + (f": {detail}" if detail and "\n" not in detail else "")
            raise DriverError(
                f"error: target '{name}' cannot emit this IR (it failed with {why}); "
                f"tdsl's targets are {', '.join(TDSL_OUTPUT_TARGETS)}"
            ) from None
        ops = [op for op in prog.walk() if op is not prog]
        if not text.strip() and ops:
            raise DriverError(
                f"error: target '{name}' printed nothing for this IR (it takes none of its "
                f"ops, e.g. '{ops[0].name}'); tdsl's targets are {', '.join(TDSL_OUTPUT_TARGETS)}"
            )
        return text

    def _render_dot(self, prog: ModuleOp, spec: Any) -> str:
        """``-t dot`` with the input's text at hand, so ops are labelled with their source."""
        from tdsl.backend.dot import DotTarget, render_dot

        target = DotTarget.from_spec(spec)
        dialects = {op.name.partition(".")[0] for op in prog.walk() if op is not prog}
        if not dialects & {"tensordsl", "kernel"} and dialects - {"builtin", "func"}:
            lowered = next(op for op in prog.walk() if op.dialect_name() in dialects - {"func"})
            raise DriverError(  # (a graph of nothing, printed, was exit 0)
                format_op_error(
                    lowered,
                    "target 'dot' draws tensordsl and kernel ops, and this IR has none (it "
                    f"has '{lowered.name}'): print it before --lower-to-loops",
                    self._locator,
                )
            )
        sources: dict[str, str] = {}
        if self.args.expr is not None:
            sources["<expr>"] = self.args.expr
        elif self._input_text is not None:
            sources[self.get_input_name()] = self._input_text
        return render_dot(prog, target.memory_budget, locate=self._locator.locate, sources=sources)

    def _lower_expression(self) -> ModuleOp:
        from tdsl.frontend.ir_gen import lower_expression_cli

        return lower_expression_cli(self.args.expr, list(self.args.shape))
