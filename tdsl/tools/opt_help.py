"""``tdsl-opt --help``: tdsl's options, passes and targets first; ``--help-all`` for the rest.

xDSL's own ``--help`` lists every pass and target of every registered dialect
(about 150 passes) inside the help of ``-p``.  The short help shows instead:

- the options a tdsl user needs (every option but a few xDSL-internal ones);
- tdsl's passes as pass flags, read from :mod:`tdsl.universe` (so a pass
  registered there appears without an edit here), with the first line of the
  pass's docstring and its options, then xDSL's ``canonicalize``, ``cse`` and
  ``dce``;
- tdsl's targets (again from :mod:`tdsl.universe`) and ``mlir``;
- a last line pointing at ``--help-all``, the full argparse help.

The pass and target classes are imported only when help is asked for.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import inspect
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tdsl.universe import TDSL_OPT_TARGETS, TDSL_PASSES

XDSL_PASS_FLAGS: dict[str, str] = {
    "canonicalize": "apply the ops' canonicalization patterns and folders (xDSL's pass)",
    "cse": "merge identical side-effect-free operations (xDSL's pass)",
    "dce": "erase unused side-effect-free operations (xDSL's pass)",
}
"""xDSL passes the short help lists after tdsl's own."""

MLIR_TARGET_HELP = "MLIR text, the default (--print-op-generic, --print-debuginfo)"

HIDDEN_OPTIONS = frozenset(
    {
        "allow_unregistered_dialect",
        "no_implicit_module",
        "print_no_properties",
        "syntax_highlight",
        "shrink",
        "parsing_diagnostics",
        "print_between_passes",
        "disable_verify",
    }
)
"""Options (by ``dest``) only ``--help-all`` shows."""

OPTION_ORDER = (
    "input_file",
    "help",
    "help_all",
    "version",
    "output_file",
    "target",
    "passes",
    "pass-pipeline",
    "pass_pipeline",
    "expr",
    "shape",
    "frontend",
    "explain_fusion",
    "print_ir_after_all",
    "print_ir_after",
    "print_ir_before_all",
    "print_ir_before",
    "dump_pass_pipeline",
    "time_passes",
    "print_op_generic",
    "print_debuginfo",
    "split_input_file",
    "verify_diagnostics",
    "verify_expected_errors",
)
"""The order of the short help's options (by ``dest``); others (a subclass's) follow."""


def summary(cls: type) -> str:
    """The first sentence of ``cls``'s docstring, without reST markup."""
    doc = inspect.getdoc(cls) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    first = re.sub(r"``(.*?)``", r"\1", first)
    first = re.sub(r":\w+:`~?([^`]*)`", r"\1", first)
    return first.rstrip(".")


def option_list(cls: type) -> str:
    """``memory-budget=1000000 tile-size=None``: a pass's or target's options and defaults."""
    if not dataclasses.is_dataclass(cls):
        return ""
    parts: list[str] = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = "..."
        if isinstance(default, tuple):
            default = ",".join(str(d) for d in default) or "''"  # pyright: ignore[reportUnknownArgumentType,reportUnknownVariableType]
        parts.append(f"{f.name.replace('_', '-')}={default}")
    return " ".join(parts)


class HelpAction(argparse.Action):
    """Prints the text ``render()`` returns and exits 0 (``-h`` and ``--help-all``)."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        render: Callable[[], str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.render = render

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        text = self.render() if self.render is not None else parser.format_help()
        sys.stdout.write(text)
        sys.stdout.flush()
        parser.exit(0)


def short_help(
    parser: argparse.ArgumentParser,
    available_passes: Mapping[str, Callable[[], type]],
    available_targets: Mapping[str, Any],
    aliases: Mapping[str, str],
    pass_flag_action: type[argparse.Action],
) -> str:
    """The text of ``tdsl-opt --help`` (see the module docstring)."""
    short = argparse.ArgumentParser(
        prog=parser.prog,
        usage=f"{parser.prog} [options] [input_file | -]",
        description=parser.description,
        formatter_class=parser.formatter_class,
        add_help=False,
    )
    shown_actions = [
        a
        for a in parser._actions
        if a.dest not in HIDDEN_OPTIONS and not isinstance(a, pass_flag_action)
    ]
    order = {dest: i for i, dest in enumerate(OPTION_ORDER)}
    shown_actions.sort(key=lambda a: order.get(a.dest, len(order)))
    for action in shown_actions:
        shown = copy.copy(action)
        if action.dest == "passes":
            shown.help = (
                "a pass pipeline, 'pass1,pass2{option=value ...}' (the pass flags below, "
                "and every pass --help-all lists)"
            )
        elif action.dest == "target":
            shown.help = "the output: one of the targets below, with options in {...}"
        short._add_action(shown)

    reverse = {full: alias for alias, full in aliases.items()}
    flags = short.add_argument_group(
        "pass flags",
        "Each pass is also a flag, --<pass>[=<options>] (e.g. "
        "--tile='tile-size=32 memory-budget=4096'); pass flags, -p and "
        "--pass-pipeline run in command-line order.",
    )
    names = [n for n in TDSL_PASSES if n in available_passes]
    names += [n for n in XDSL_PASS_FLAGS if n in available_passes and n not in names]
    for name in names:
        cls = available_passes[name]()
        text = XDSL_PASS_FLAGS.get(name) or summary(cls)
        options = option_list(cls) if name in TDSL_PASSES else ""
        if options:
            text += f"; options: {options}"
        option_strings = [f"--{name}"]
        if name in reverse:
            option_strings.insert(0, f"--{reverse[name]}")
        flags.add_argument(*option_strings, action="store_true", help=text)

    targets = short.add_argument_group("targets", "Chosen with -t NAME or -t 'NAME{option=value}'.")
    targets.add_argument("mlir", nargs="?", help=MLIR_TARGET_HELP)
    for name, factory in TDSL_OPT_TARGETS.items():
        if name not in available_targets:
            continue
        cls = factory()
        text = summary(cls)
        options = option_list(cls)
        if options:
            text += f"; options: {options}"
        targets.add_argument(name, nargs="?", help=text)

    others_passes = len([n for n in available_passes if n not in names])
    others_targets = len(
        [n for n in available_targets if n != "mlir" and n not in TDSL_OPT_TARGETS]
    )
    short.epilog = (
        f"`{parser.prog} --help-all` lists every option, and the {others_passes} other passes "
        f"and {others_targets} other targets that xDSL registers."
    )
    return short.format_help()


__all__ = [
    "HIDDEN_OPTIONS",
    "XDSL_PASS_FLAGS",
    "HelpAction",
    "option_list",
    "short_help",
    "summary",
]
