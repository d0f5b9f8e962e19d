"""``tdsl-opt``: the tdsl optimizer driver.

``xdsl-opt`` with tdsl's dialects, passes, frontend and target loaded, plus:

- mlir-opt style pass flags, applied in command-line order together with
  ``-p``::

      tdsl-opt model.mlir --canonicalize --fuse='memory-budget=4096' -p cse --tile

  runs ``canonicalize,tdsl-fuse{memory-budget=4096},cse,tdsl-tile``.  Every
  registered pass can be given as ``--<name>[=<options>]``; ``--fuse`` and
  ``--tile`` are short for ``--tdsl-fuse`` and ``--tdsl-tile``.
- ``--expr 'relu(A)+B' --shape A=4x4xf32 --shape B=4x4xf32`` compiles a
  one-line expression instead of reading a file.
- ``--explain-fusion`` prints the fusion remarks on stderr after the passes.
- MLIR's habits: ``-`` reads standard input; ``--pass-pipeline='builtin.module(...)'``;
  ``--print-ir-after-all`` and ``--print-ir-after=PASS`` dump the IR on stderr
  (after the last pass too); ``--time-passes`` reports the frontend, each pass,
  the verifier and the target on stderr (:mod:`tdsl.tools.timing`).
- ``--help`` shows tdsl's options, passes and targets (:mod:`tdsl.tools.opt_help`);
  ``--help-all`` everything xDSL registers.
- A target of xDSL's that cannot take the IR (``-t x86-asm`` on tensordsl IR)
  is a one-line error with exit status 1.
- Errors the compiler way (``file:line:col: error: ...``, the source line and a
  caret, exit status 1), a verifier error pointing at the failing operation's
  line in the input; never a Python traceback (see
  :mod:`tdsl.tools.diagnostics`).

With ``--verify-diagnostics`` errors are printed on stdout and the driver
exits 0, as ``xdsl-opt`` does; tdsl's own errors (``TdslError``, e.g. from a
``.tdsl`` file or the memory budget) are treated as diagnostics there too.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import inspect
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from io import BytesIO
from typing import IO, Any, ClassVar, Literal, NoReturn, cast

# Only what every run needs is imported here: ``tdsl-opt`` starts as fast as
# ``xdsl-opt``.  Dialects load when the input uses them; the help, the dot
# target, fusion remarks and the frontend load when asked for.
from xdsl.dialects.builtin import ModuleOp
from xdsl.frontend.mlir import MLIRFrontend
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import parse_pipeline, parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    ShrinkException,
    VerifyException,
)
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from tdsl.errors import TdslError, format_diagnostic
from tdsl.tools.diagnostics import (
    DominanceError,
    DriverError,
    LocatingParser,
    OpLocator,
    find_use_before_def,
    format_arg_spec_error,
    format_op_error,
    format_parse_error,
    format_verify_error,
    print_error,
    run_tool,
    span_location,
)
from tdsl.tools.opt_help import XDSL_PASS_FLAGS, HelpAction
from tdsl.tools.timing import PhaseTimes
from tdsl.universe import TDSL_DIALECTS, TDSL_FRONTENDS, TDSL_OPT_TARGETS, TDSL_PASSES
from tdsl.version import __version__

PASS_PREFIX = "tdsl-"
"""tdsl's passes are registered as ``tdsl-<name>``; ``--<name>`` is accepted as a flag."""

STDIN = "-"
"""The input file name that reads standard input, as in mlir-opt."""

TDSL_OUTPUT_TARGETS = ("mlir", *TDSL_OPT_TARGETS)
"""The targets that print tdsl IR at any stage: ``mlir`` and tdsl's own."""

Phase = Literal["read", "parse", "verify", "pass", "emit"]


def pass_flag_aliases(pass_names: Iterable[str]) -> dict[str, str]:
    """Short flag names for tdsl's passes: ``fuse`` for ``tdsl-fuse``, and so on.

    An alias is dropped when another pass is registered under the short name.
    """
    names = set(pass_names)
    return {
        name.removeprefix(PASS_PREFIX): name
        for name in sorted(names)
        if name.startswith(PASS_PREFIX) and name.removeprefix(PASS_PREFIX) not in names
    }


def _is_passes_option(token: str) -> bool:
    """``-p`` or ``--passes``, or an unambiguous abbreviation argparse would accept."""
    return token == "-p" or (len(token) >= 5 and "--passes".startswith(token))


PASS_PIPELINE = "--pass-pipeline"


def unanchor_pipeline(text: str) -> str:
    """The passes of an MLIR pipeline ``builtin.module(p1,p2{opt=v})``: ``p1,p2{opt=v}``.

    Every pass tdsl-opt runs is a module pass, so the one anchor is
    ``builtin.module``; text without an anchor is taken as it is.  A nested
    pipeline (``func.func(cse)``) is a :class:`DriverError`.
    """
    stripped = text.strip()
    head, paren, rest = _split_anchor(stripped)
    if paren is None:
        return stripped
    if head != "builtin.module" or not rest.endswith(")"):
        raise DriverError(
            format_diagnostic(
                f"--pass-pipeline: expected 'builtin.module(...)', got '{stripped}'",
                None,
                note="tdsl-opt's passes all run on the whole module",
            )
        )
    pieces = [piece.strip() for piece in _top_level_pieces(rest[:-1])]
    for piece in pieces:
        nested, nested_paren, _ = _split_anchor(piece)
        if nested_paren is not None:
            raise DriverError(
                format_diagnostic(
                    f"--pass-pipeline: nested pipeline '{nested}(...)' is not supported",
                    None,
                    note="tdsl-opt's passes all run on the whole module: list them "
                    "directly inside builtin.module(...)",
                )
            )
    return ",".join(piece for piece in pieces if piece)


def _split_anchor(text: str) -> tuple[str, str | None, str]:
    """``name(rest`` -> (name, "(", rest); text whose first ``(`` or ``{`` is not a
    ``(`` -> (text, None, "")."""
    for index, char in enumerate(text):
        if char == "(":
            return text[:index].strip(), "(", text[index + 1 :].strip()
        if char in "{,":
            break
    return text, None, ""


def _top_level_pieces(text: str) -> list[str]:
    """``text`` split at the commas outside ``{...}``, ``(...)`` and quotes."""
    pieces: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0
    for index, char in enumerate(text):
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "{(":
            depth += 1
        elif char in "})":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:index])
            start = index + 1
    pieces.append(text[start:])
    return pieces


def rewrite_pass_flags(
    argv: Sequence[str],
    pass_names: Iterable[str],
    *,
    aliases: Mapping[str, str] | None = None,
    value_options: Iterable[str] = (),
    reserved_options: Iterable[str] = (),
) -> list[str]:
    """Turn mlir-opt style pass flags into one ``-p`` pipeline, keeping their order.

    Each ``--<pass>``, ``--<pass>=<options>`` or ``--<pass>{<options>}`` (``<pass>``
    a registered pass or an alias of one) becomes ``<pass>{<options>}``; each
    ``-p X`` / ``--passes=X`` / ``--pass-pipeline='builtin.module(X)'`` contributes
    ``X`` at its position; the result
    carries a single ``-p`` with the comma-joined pipeline at its end.  The values
    of ``value_options`` and everything after ``--`` are left alone, and so are
    the ``reserved_options`` (the tool's own flags win over pass names).
    """
    passes = set(pass_names)
    alias_map = dict(aliases or {})
    takes_value = set(value_options)
    reserved = set(reserved_options)
    out: list[str] = []
    pipeline: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            out.extend(argv[index:])
            break
        if _is_passes_option(token) and index + 1 < len(argv):
            pipeline.append(argv[index + 1])
            index += 2
            continue
        if token.startswith("--passes="):
            pipeline.append(token.removeprefix("--passes="))
            index += 1
            continue
        if token == PASS_PIPELINE and index + 1 < len(argv):
            pipeline.append(unanchor_pipeline(argv[index + 1]))
            index += 2
            continue
        if token.startswith(PASS_PIPELINE + "="):
            pipeline.append(unanchor_pipeline(token.removeprefix(PASS_PIPELINE + "=")))
            index += 1
            continue
        if token.startswith("-p") and not token.startswith("--") and len(token) > 2:
            pipeline.append(token[2:])
            index += 1
            continue
        if token.startswith("--") and token not in reserved:
            body = token[2:]
            if body.endswith("}") and "{" in body:
                name, _, options = body[:-1].partition("{")
            else:
                name, _, options = body.partition("=")
            pass_name = alias_map.get(name, name)
            if name not in reserved and f"--{name}" not in reserved and pass_name in passes:
                pipeline.append(f"{pass_name}{{{options}}}" if options.strip() else pass_name)
                index += 1
                continue
        if token in takes_value and index + 1 < len(argv):
            out.extend(argv[index : index + 2])
            index += 2
            continue
        out.append(token)
        index += 1
    steps = [step.strip() for step in pipeline if step.strip()]
    if steps:
        out.extend(["-p", ",".join(steps)])
    return out


def unknown_long_options(
    argv: Sequence[str], known_options: Iterable[str], value_options: Iterable[str] = ()
) -> list[str]:
    """The ``--flags`` in ``argv`` that are neither known nor an abbreviation of one.

    Run after :func:`rewrite_pass_flags`, so pass flags are gone by then.
    """
    known = [option for option in known_options if option.startswith("--")]
    takes_value = set(value_options)
    unknown: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            break
        if token in takes_value:
            index += 2
            continue
        if token.startswith("--") and len(token) > 2:
            name = token.partition("=")[0]
            if not any(option.startswith(name) for option in known):
                unknown.append(name)
        index += 1
    return unknown


class _PassFlagHelp(argparse.Action):
    """A ``--help`` entry for a pass flag.

    Pass flags are rewritten into ``-p`` before argparse runs, so this action
    only fires for an abbreviation, which pass flags do not allow.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        parser.error(f"pass flags cannot be abbreviated: write {self.option_strings[0]} in full")


class TdslOptMain(xDSLOptMain):
    """The ``tdsl-opt`` driver: ``xDSLOptMain`` with tdsl loaded and compiler-style errors."""

    prog: ClassVar[str] = "tdsl-opt"
    """The tool's name in its usage and help (also when run in-process)."""

    version_format: ClassVar[str] = (
        f"tdsl-opt from tdsl version {__version__}, built on xDSL version {{xdsl_version}}"
    )

    _argv: list[str]
    _locator: OpLocator
    _parser: LocatingParser | None
    _module: ModuleOp | None
    _phase: Phase
    _pass: ModulePass | None
    _input_text: str | None
    _fusion_remarks: list[str] | None
    _times: PhaseTimes | None

    def __init__(
        self,
        description: str = "tdsl modular optimizer driver",
        args: Sequence[str] | None = None,
    ) -> None:
        # The pass table exists only once ``super().__init__`` has registered the
        # passes, so the pass flags are rewritten in ``register_all_arguments``,
        # in place, on this list object, which argparse reads afterwards.
        self._argv = list(sys.argv[1:] if args is None else args)
        self._reset_chunk_state(0)
        self._input_text = None
        self._times = None
        super().__init__(description, self._argv)
        if self.args.time_passes:
            self._times = PhaseTimes()

    def _reset_chunk_state(self, line_offset: int) -> None:
        self._locator = OpLocator({}, line_offset)
        self._parser = None
        self._module = None
        self._phase = "read"
        self._pass = None
        self._fusion_remarks = None

    # ----------------------------------------------------------------- #
    # Registration
    # ----------------------------------------------------------------- #

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in TDSL_DIALECTS.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        for name, factory in TDSL_FRONTENDS.items():
            if name not in self.available_frontends:
                self.available_frontends[name] = factory

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in TDSL_PASSES.items():
            if name not in self.available_passes:
                self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets.update(TDSL_OPT_TARGETS)  # tdsl's llvm replaces xDSL's
        self.available_targets["mlir"] = _exact_mlir_target

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.prog = self.prog
        # A bad command line is a user error: exit 1, like every other one (argparse
        # would exit 2, which tdsl's tools keep for internal errors).
        arg_parser.error = functools.partial(_usage_error, arg_parser)
        # -h shows tdsl's part; --help-all argparse's full help (every xDSL pass)
        arg_parser.conflict_handler = arg_parser._optionals.conflict_handler = "resolve"
        arg_parser.add_argument(
            "-h",
            "--help",
            action=HelpAction,
            render=lambda: self._short_help(arg_parser),
            help="show tdsl's options, pass flags and targets, and exit",
        )
        arg_parser.add_argument(
            "--help-all",
            action=HelpAction,
            help="show every option, pass and target (xDSL's too), and exit",
        )
        for action in arg_parser._actions:
            if action.dest == "input_file":
                action.help = "the input: .mlir, .tdsl, or '-' (the default) for standard input"
            elif action.dest == "version":
                action.help = "print the versions of tdsl and xDSL, and exit"
            elif action.dest == "print_between_passes":
                action.help = "the same as --print-ir-after-all"
            elif action.dest == "time_passes":
                action.help = (
                    "report the time of the frontend, each pass, the verifier and the "
                    "target, on stderr"
                )
        arg_parser.add_argument(
            PASS_PIPELINE,
            metavar="'builtin.module(PASSES)'",
            help="an MLIR pass pipeline, e.g. 'builtin.module(tdsl-fuse,tdsl-tile)'; "
            "runs in command-line order with -p and the pass flags",
        )
        arg_parser.add_argument(
            "--print-ir-after-all",
            action="store_true",
            default=False,
            help="print the IR after every pass, on stderr",
        )
        arg_parser.add_argument(
            "--print-ir-after",
            action="append",
            default=[],
            metavar="PASS",
            help="print the IR after each run of PASS, on stderr (repeat for several passes)",
        )
        arg_parser.add_argument(
            "--expr",
            type=str,
            default=None,
            metavar="EXPRESSION",
            help="compile a one-line expression, e.g. 'relu(A)+B', instead of reading a file",
        )
        arg_parser.add_argument(
            "--shape",
            action="append",
            default=[],
            metavar="NAME=DIMSxDTYPE",
            help="shape and dtype of an --expr input, e.g. A=4x4xf32 (repeat per input)",
        )
        arg_parser.add_argument(
            "--explain-fusion",
            action="store_true",
            default=False,
            help="after the passes, print on stderr why ops were or were not fused",
        )

        aliases = pass_flag_aliases(self.available_passes)
        reverse = {full: short for short, full in aliases.items()}
        group = arg_parser.add_argument_group(
            "pass flags",
            "Each registered pass can be given as --<pass>[=<options>] "
            "(e.g. --tile='tile-size=32 memory-budget=4096'); pass flags and -p "
            "run in command-line order.",
        )
        for name in [*TDSL_PASSES, *XDSL_PASS_FLAGS]:
            if name not in self.available_passes:
                continue
            flags = [f"--{name}"]
            if name in reverse:
                flags.insert(0, f"--{reverse[name]}")
            group.add_argument(*flags, action=_PassFlagHelp, help=f"run {name}")

        reserved: set[str] = set()
        value_options: set[str] = set()
        for action in arg_parser._actions:
            if isinstance(action, _PassFlagHelp):
                continue
            reserved.update(action.option_strings)
            if action.option_strings and action.nargs != 0:
                value_options.update(action.option_strings)
        self._argv[:] = rewrite_pass_flags(
            self._argv,
            self.available_passes,
            aliases=aliases,
            value_options=value_options,
            reserved_options=reserved,
        )
        unknown = unknown_long_options(self._argv, reserved, value_options)
        if unknown:
            flags = [*reserved, *(f"--{name}" for name in [*self.available_passes, *aliases])]
            close = difflib.get_close_matches(unknown[0], flags, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise DriverError(
                format_diagnostic(
                    f"unknown option '{unknown[0]}'{hint}",
                    None,
                    note="`tdsl-opt --help` lists the options and pass flags",
                )
            )

    def _short_help(self, arg_parser: argparse.ArgumentParser) -> str:
        from tdsl.tools.opt_help import short_help

        return short_help(
            arg_parser,
            self.available_passes,
            self.available_targets,
            pass_flag_aliases(self.available_passes),
            _PassFlagHelp,
        )

    # ----------------------------------------------------------------- #
    # The pass pipeline
    # ----------------------------------------------------------------- #

    def _check_target(self) -> None:
        """Bad ``-t`` options are user errors, named as the user spelled them."""
        try:
            spec = parse_spec(self.args.target)
        except ArgSpecParseError as err:
            raise DriverError(format_arg_spec_error(err)) from None
        entry = self.available_targets.get(spec.name)
        if entry is None or inspect.signature(entry).parameters:
            return  # argparse has checked the name; legacy targets take no options
        target_cls = cast(Callable[[], type[Target]], entry)()
        _check_options("target", spec.name, target_cls, list(spec.parameters))
        try:
            target_cls.from_spec(spec)
        except (ValueError, TypeError) as err:
            raise DriverError(
                format_diagnostic(f"invalid options for target '{spec.name}': {err}", None)
            ) from None

    def setup_pipeline(self) -> None:
        """Build the pipeline; an unknown pass or a bad option is a user error."""
        spec: str = self.args.passes
        try:
            pass_specs = list(parse_pipeline(spec))
        except ArgSpecParseError as err:
            raise DriverError(format_arg_spec_error(err)) from None
        for pass_spec in pass_specs:
            if pass_spec.name not in self.available_passes:
                raise DriverError(self._unknown_pass_message(pass_spec.name))
            self._check_pass_options(pass_spec.name, list(pass_spec.parameters))
        try:
            self.pipeline = PassPipeline.parse_spec(
                self.available_passes, spec, self._pipeline_callback()
            )
        except ArgSpecParseError as err:
            raise DriverError(format_arg_spec_error(err)) from None
        except (ValueError, TypeError) as err:
            raise DriverError(format_diagnostic(f"invalid pass options: {err}", None)) from None
        self._check_target()
        self._check_print_ir_after()

    def _check_print_ir_after(self) -> None:
        """Each ``--print-ir-after`` names a registered pass (or a short name of one)."""
        aliases = pass_flag_aliases(self.available_passes)
        names: set[str] = set()
        for name in self.args.print_ir_after:
            full = aliases.get(name, name)
            if full not in self.available_passes:
                raise DriverError(
                    self._unknown_pass_message(name).replace(
                        "error: unknown pass", "error: --print-ir-after: unknown pass", 1
                    )
                )
            names.add(full)
        self._print_after: frozenset[str] = frozenset(names)

    def _prints_after(self, done: ModulePass) -> bool:
        args = self.args
        return (
            args.print_ir_after_all or args.print_between_passes or done.name in self._print_after
        )

    def _dump_ir(self, done: ModulePass, module: ModuleOp) -> None:
        """MLIR's ``// -----// IR Dump After PASS //----- //`` and the IR, on stderr."""
        from tdsl.tools.mlir_target import ExactFloatPrinter

        stream = sys.stderr
        stream.write(f"// -----// IR Dump After {_spec_text(done)} //----- //\n")
        printer = ExactFloatPrinter(
            stream=stream,
            print_generic_format=self.args.print_op_generic,
            print_debuginfo=self.args.print_debuginfo,
        )
        printer.print_op(module)
        stream.write("\n\n")
        stream.flush()

    def _pass_label(self, done: ModulePass, position: int) -> str:
        """The pass as the time report lists it: its spec, numbered when it runs twice."""
        spec = _spec_text(done)
        earlier = [_spec_text(p) for p in self.pipeline.passes[: position - 1]]
        repeat = earlier.count(spec)
        return spec if repeat == 0 else f"{spec} (run {repeat + 1})"

    def _check_pass_options(self, name: str, given: list[str]) -> None:
        """An option the pass does not have is named as the user spelled it."""
        _check_options("pass", name, self.available_passes[name](), given)

    def _unknown_pass_message(self, name: str) -> str:
        candidates = [*self.available_passes, *pass_flag_aliases(self.available_passes)]
        close = difflib.get_close_matches(name, candidates, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return format_diagnostic(
            f"unknown pass '{name}'{hint}",
            None,
            note="`tdsl-opt --help` lists the available passes",
        )

    def _pipeline_callback(
        self,
    ) -> Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]:
        start = time.perf_counter()
        position = 0

        def callback(
            previous: ModulePass | None, module: ModuleOp, upcoming: ModulePass | None
        ) -> None:
            nonlocal start, position
            times = self._times
            if times is not None and previous is not None:
                position += 1
                times.add(self._pass_label(previous, position), time.perf_counter() - start)
            self._phase = "verify"
            self._pass = previous
            if not self.args.disable_verify:
                with times.phase("verifier") if times is not None else nullcontext():
                    module.verify()
            if previous is not None and self._prints_after(previous):
                self._dump_ir(previous, module)
            if upcoming is None:
                position = 0  # the next chunk of --split-input-file runs the pipeline again
            self._phase = "pass"
            self._pass = upcoming
            self._record_fusion_remarks(module, upcoming)
            start = time.perf_counter()

        return callback

    # ----------------------------------------------------------------- #
    # Input
    # ----------------------------------------------------------------- #

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
            chunks.append((BytesIO(piece), offset))
            offset += piece.count(b"\n")
        return chunks, extension

    def prepare_output(self) -> IO[str]:
        try:
            return super().prepare_output()
        except OSError as err:
            reason = err.strerror or str(err)
            raise DriverError(f"error: cannot write '{self.args.output_file}': {reason}") from None

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        """Parse one chunk; MLIR text goes through :class:`LocatingParser`."""
        if self.args.expr is not None:
            return self._lower_expression()
        spec = parse_spec(self.args.frontend or file_extension)
        if spec.name not in self.available_frontends:
            raise DriverError(f"error: unknown frontend '{spec.name}'")
        name = self.get_input_name()
        if spec.name != "mlir":
            self._locator = OpLocator({}, 0, name, self._input_text)
            return super().parse_chunk(chunk, file_extension, start_offset)
        frontend = MLIRFrontend.from_spec(spec)
        text = chunk.read().decode("utf-8")
        parser = LocatingParser(self.ctx, text, name)
        self._parser = parser
        self._locator = OpLocator(parser.op_spans, start_offset, name, self._input_text)
        no_implicit = frontend.no_implicit_module or self.args.no_implicit_module
        module = parser.parse_module(not no_implicit)
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
        sources: dict[str, str] = {}
        if self.args.expr is not None:
            sources["<expr>"] = self.args.expr
        elif self._input_text is not None:
            sources[self.get_input_name()] = self._input_text
        return render_dot(prog, target.memory_budget, locate=self._locator.locate, sources=sources)

    def _lower_expression(self) -> ModuleOp:
        from tdsl.frontend.ir_gen import lower_expression_cli

        return lower_expression_cli(self.args.expr, list(self.args.shape))

    # ----------------------------------------------------------------- #
    # Running
    # ----------------------------------------------------------------- #

    def run(self) -> None:
        """Process every chunk; report each error; exit 1 if any chunk failed."""
        chunks, file_extension = self.prepare_input()
        output_stream = self.prepare_output()
        failed = False
        try:
            for index, (chunk, offset) in enumerate(chunks):
                if index > 0:
                    output_stream.write("// -----\n")
                try:
                    if not self._process_chunk(chunk, file_extension, offset, output_stream):
                        failed = True
                finally:
                    chunk.close()
                if failed and not self.args.split_input_file:
                    break
        except ShrinkException:
            assert self.args.shrink
            print("Success, can shrink")
            raise SystemExit(0) from None
        finally:
            if output_stream is not sys.stdout:
                output_stream.close()
            if self._times is not None:
                sys.stdout.flush()
                sys.stderr.write(self._times.report())
                sys.stderr.flush()
        if self.args.shrink:
            print("Failure, can't shrink")
            raise SystemExit(1)
        if failed:
            raise SystemExit(1)

    def _process_chunk(
        self, chunk: IO[bytes], file_extension: str, offset: int, output: IO[str]
    ) -> bool:
        """Parse, transform and print one chunk; returns False after reporting an error."""
        self._reset_chunk_state(offset)
        try:
            self._phase = "parse"
            with self._timed(f"frontend ({self._frontend_name(file_extension)})"):
                module = self.parse_chunk(chunk, file_extension, offset)
            if module is not None:
                self._module = module
                self.apply_passes(module)
                self._phase = "emit"
                self._explain_fusion(module)
                with self._timed(f"target ({parse_spec(self.args.target).name})"):
                    text = self.output_resulting_program(module)
                output.write(text)
            output.flush()
            return True
        except ParseError as err:
            err.span = dataclasses.replace(err.span, line_offset=offset)
            if self.args.parsing_diagnostics:
                print(err)
                return True
            print_error(format_parse_error(err))
        except DiagnosticException as err:
            if self.args.verify_diagnostics:
                print(err)
                for note in getattr(err, "__notes__", ()):
                    print(note)
                return True
            print_error(self._format_diagnostic(err))
        except TdslError as err:
            if self.args.verify_diagnostics:
                print(err)
                return True
            print_error(self._format_tdsl_error(err))
        except DominanceError as err:
            if self.args.verify_diagnostics:
                print(err.text)
                return True
            print_error(err.text)
        except DriverError as err:
            print_error(err.text)
        return False

    def _format_tdsl_error(self, err: TdslError) -> str:
        """A tdsl error, placed at its op's line in the input (with the source line) when
        the driver can find the op there."""
        where = err.location
        if where is not None and where.source_line is None:
            # a loc(...) the error carries wins; add its source line when the file reads
            return err.render(self._locator.file_location(where.file, where.line, where.column))
        if where is None and isinstance(err.op, Operation):
            location = self._locator.locate(err.op)
            if location is not None:
                return err.render(location)
        return str(err)

    def _format_diagnostic(self, err: DiagnosticException) -> str:
        """Render a verifier or pass error at the right place in the input."""
        if self._phase == "parse":
            parser = self._parser
            if parser is not None and parser.failure_span is not None:
                span = parser.failure_span
                message = str(err).strip()
                if span.text not in message:
                    message = f"'{span.text}' op {message}"
                return format_diagnostic(message, span_location(span, self._locator.line_offset))
            return format_diagnostic(str(err).strip(), None)
        if self._phase == "verify" and isinstance(err, VerifyException):
            note = (
                None
                if self._pass is None
                else f"the IR produced by pass '{self._pass.name}' does not verify"
            )
            return format_verify_error(err, self._module, self._locator, note=note)
        where = f"in pass '{self._pass.name}': " if self._phase == "pass" and self._pass else ""
        return format_diagnostic(f"{where}{str(err).strip()}", None)

    def _record_fusion_remarks(self, module: ModuleOp, upcoming: ModulePass | None) -> None:
        """Explain the fusion decisions on the IR that ``tdsl-fuse`` is about to see."""
        if not self.args.explain_fusion:
            return
        from tdsl.transforms.fuse import FusePass, explain_fusion

        if isinstance(upcoming, FusePass):
            remarks = explain_fusion(module, upcoming.memory_budget, locate=self._locator.locate)
            self._fusion_remarks = [*(self._fusion_remarks or []), remarks]

    def _explain_fusion(self, module: ModuleOp) -> None:
        """The ``--explain-fusion`` hook: print the fusion remarks on stderr.

        The remarks were taken just before each ``tdsl-fuse`` in the pipeline
        ran; without one, they explain what ``tdsl-fuse`` would do to the output.
        """
        if not self.args.explain_fusion:
            return
        if self._fusion_remarks is None:
            from tdsl.transforms.fuse import explain_fusion

            self._fusion_remarks = [explain_fusion(module, locate=self._locator.locate)]
        for remarks in self._fusion_remarks:
            if remarks:
                sys.stderr.write(remarks.rstrip("\n") + "\n")
        sys.stderr.flush()


def _spec_text(done: ModulePass) -> str:
    """``tdsl-fuse{memory-budget=64}``: a pass as written on the command line (options
    that differ from their defaults, in kebab case)."""
    spec = done.pipeline_pass_spec()
    text = str(spec)
    for key in spec.parameters:
        text = text.replace(f"{key}=", f"{key.replace('_', '-')}=")
    return text


def _exact_mlir_target() -> type[Target]:
    from tdsl.tools.mlir_target import ExactMLIRTarget

    return ExactMLIRTarget


def _usage_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.print_usage(sys.stderr)
    parser.exit(1, f"{parser.prog}: error: {message}\n")


def _check_options(kind: str, name: str, cls: type, given: list[str]) -> None:
    """Raise a DriverError naming an option that the pass or target ``cls`` does not have."""
    if not dataclasses.is_dataclass(cls):
        return
    known = [f.name.replace("_", "-") for f in dataclasses.fields(cls)]
    for option in given:
        if option.replace("_", "-") in known:
            continue
        close = difflib.get_close_matches(option.replace("_", "-"), known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise DriverError(
            format_diagnostic(
                f"{kind} '{name}' has no option '{option}'{hint}",
                None,
                note=f"the options of '{name}' are: {', '.join(known) if known else 'none'}",
            )
        )


def _decode_text(data: bytes, name: str) -> str:
    """``data`` as UTF-8 text; binary input is a user error."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DriverError(
            f"error: {name}: not a text file (invalid UTF-8 at byte {err.start})"
        ) from None
    if "\x00" in text:
        raise DriverError(f"error: {name}: not a text file (contains NUL bytes)")
    return text


def main(args: Sequence[str] | None = None) -> None:
    """The ``tdsl-opt`` console script; raises ``SystemExit`` with 1 or 2 on error."""

    def body() -> None:
        TdslOptMain(args=args).run()

    run_tool(body)


if __name__ == "__main__":
    main()
