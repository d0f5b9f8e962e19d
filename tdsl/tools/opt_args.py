"""The command line of ``tdsl-opt``: rewriting mlir-opt style pass flags
(``--fuse=...``, ``--pass-pipeline=...``) into xDSL's ``-p`` pipeline, the options
tdsl adds to ``xdsl-opt``'s, the checks that name a bad option the way the user spelled
it, and :class:`OptArguments`, the base of the driver that registers them.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, NoReturn

# Only what every run needs is imported here: ``tdsl-opt`` starts as fast as
# ``xdsl-opt``.  Dialects load when the input uses them; the help, the dot
# target, fusion remarks and the frontend load when asked for.
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import _convert_arg_to_type  # pyright: ignore[reportPrivateUsage]
from xdsl.xdsl_opt_main import xDSLOptMain

from tdsl.errors import format_diagnostic
from tdsl.ir_text import LocatingParser, OpLocator
from tdsl.tools.diagnostics import DriverError
from tdsl.tools.opt_help import XDSL_PASS_FLAGS, HelpAction
from tdsl.tools.timing import PhaseTimes
from tdsl.universe import TDSL_OPT_TARGETS, TDSL_PASSES
from tdsl.version import __version__

PASS_PREFIX = "tdsl-"
"""tdsl's passes are registered as ``tdsl-<name>``; ``--<name>`` is accepted as a flag."""


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

MLIR_OPT_ALIASES = {
    "--mlir-print-ir-after-all": "print_ir_after_all",
    "--mlir-print-ir-before-all": "print_ir_before_all",
    "--mlir-timing": "time_passes",
}
"""mlir-opt's flags that tdsl-opt takes as its own (by ``dest``)."""


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
                name = name.removesuffix("=")  # (`--fuse={memory-budget=5}`: the same)
            else:
                name, _, options = body.partition("=")
            pass_name = alias_map.get(name, name)
            if name not in reserved and f"--{name}" not in reserved and pass_name in passes:
                empty = next((o for o in options.split() if o.endswith("=")), None)
                if empty is not None:
                    raise DriverError(
                        f"error: option `{empty[:-1]}` of `--{name}` has no value: write "
                        f"`--{name}={empty}<value>`"
                    )
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


def _usage_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """argparse's error: one line and where to look (its usage ran to 20 lines, of
    xdsl-opt's flags mostly, before the line that mattered)."""
    note = f"note: `{parser.prog} --help` lists the options"
    parser.exit(1, f"{parser.prog}: error: {message}\n{note}\n")


def _target_given(argv: list[str]) -> str | None:
    """The (last) target ``argv`` names with ``-t``/``--target`` (argparse's own error
    for an unknown one is its usage and every choice), without its ``{options}``."""
    found: str | None = None
    for k, arg in enumerate(argv):
        if arg in ("-t", "--target") and k + 1 < len(argv):
            found = argv[k + 1]
        elif arg.startswith("--target="):
            found = arg.split("=", 1)[1]
    return None if found is None else found.split("{", 1)[0]


def check_options(kind: str, name: str, cls: type, given: Mapping[str, tuple[object, ...]]) -> None:
    """Raise a DriverError naming an option that the pass or target ``cls`` does not have,
    or an integer option given something else (xDSL's message shows Python's reprs)."""
    if not dataclasses.is_dataclass(cls):
        return
    known = [f.name.replace("_", "-") for f in dataclasses.fields(cls)]
    hints = typing.get_type_hints(cls)
    for option, values in given.items():
        if option.replace("_", "-") in known:
            wanted = hints.get(option.replace("-", "_"))
            if wanted in (int, int | None) and any(type(v) is not int for v in values):
                shown = ", ".join(str(v) for v in values)
                raise DriverError(
                    format_diagnostic(
                        f"option '{option}' of {kind} '{name}' takes an integer, not `{shown}`",
                        None,
                        note=_integer_note(values),
                    )
                )
            try:
                _convert_arg_to_type(values, wanted)  # (what xDSL's from_spec does with it)
            except ValueError:
                shown = ", ".join(str(v).lower() if type(v) is bool else str(v) for v in values)
                raise DriverError(
                    format_diagnostic(
                        f"option '{option}' of {kind} '{name}' takes {_describe(wanted)}, "
                        f"not `{shown}`",
                        None,
                    )
                ) from None
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


def _describe(wanted: object) -> str:
    """An option's type in words: ``true or false``, ``one integer``, ``integers``."""
    words = {
        bool: "true or false",
        int: "one integer",
        int | None: "one integer",
        float: "one number",
        str: "one string",
        tuple[int, ...]: "integers (`1,2`)",
        tuple[str, ...]: "names (`a,b`)",
    }
    return words.get(wanted, f"a value of type {wanted}")  # type: ignore[arg-type]


def _integer_note(values: tuple[object, ...]) -> str | None:
    """``1e6`` is written ``1000000``."""
    for v in values:
        try:
            number = float(str(v))
        except ValueError:
            continue
        if number.is_integer() and type(v) is not bool:
            return f"write {int(number)}"
    return None


class OptArguments(xDSLOptMain):
    """The command line of ``tdsl-opt``: its options besides xDSL's, pass flags rewritten
    into ``-p``, and the short help.  Also declares the driver's state, which
    :class:`~tdsl.tools.tdsl_opt.TdslOptMain` sets."""

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
            "--print-ir-before-all",
            action="store_true",
            default=False,
            help="print the IR before every pass, on stderr",
        )
        arg_parser.add_argument(
            "--print-ir-before",
            action="append",
            default=[],
            metavar="PASS",
            help="print the IR before each run of PASS, on stderr (repeat for several passes)",
        )
        arg_parser.add_argument(
            "--verify-expected-errors",
            action="store_true",
            default=False,
            help="check the input's `// expected-error {{...}}` annotations, as "
            "mlir-opt's -verify-diagnostics does: each error expected on its line, each "
            "expectation met (exit 0), else each mismatch is an error",
        )
        arg_parser.add_argument(
            "--dump-pass-pipeline",
            action="store_true",
            default=False,
            help="print the pass pipeline, as --pass-pipeline takes it, on stderr",
        )
        # mlir-opt's spellings of the same
        for alias, dest in MLIR_OPT_ALIASES.items():
            own = "--" + dest.replace("_", "-")
            arg_parser.add_argument(
                alias, dest=dest, action="store_true", default=False, help=f"the same as {own}"
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
        target = _target_given(self._argv)
        if target is not None and target not in self.available_targets:
            close = difflib.get_close_matches(target, list(self.available_targets), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise DriverError(
                format_diagnostic(
                    f"unknown target '{target}'{hint}", None, note="`tdsl-opt --help` lists them"
                )
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
