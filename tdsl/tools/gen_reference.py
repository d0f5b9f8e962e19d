"""Writes ``docs/dialects.md`` and ``docs/passes.md`` from the docstrings, and the
functions of ``tdsl/lang/functions.py`` (``tdsl.lang``) from the language's function table.

The op and pass docstrings are the reference; this keeps the pages in step
with them.  ``tdsl.lang`` is checked in, so that type checkers read it, but
its functions are generated: one per entry of the function table
(``tdsl.frontend.ir_gen.FUNCTIONS``, made of the ops' ``FUNCTION``,
``ARITY`` and ``PARAMS``), with the op docstring's first paragraph.
``python -m tdsl.tools.gen_reference`` rewrites the pages and ``tdsl/lang/functions.py``
below its marker line; ``--check`` exits 1 when one is stale (a unit test runs
that).

The pages live in the ``docs/`` folder of a source checkout, found next to the
``tdsl`` package; an installed ``tdsl`` (in site-packages, whose ``docs/`` may
be another project's) has none, and then ``--docs DIR`` must say where to write.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
from pathlib import Path

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation

from tdsl.errors import internal_error


def checkout_docs(package_dir: Path | None = None) -> Path | None:
    """The ``docs/`` folder of the source checkout holding ``package_dir`` (default: this
    ``tdsl`` package), or None when the package is not in a checkout of tdsl."""
    package = package_dir or Path(__file__).resolve().parents[1]
    root = package.parent
    try:
        pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    if 'name = "tdsl"' not in pyproject or not (root / "docs").is_dir():
        return None
    return root / "docs"


_DIALECT_INTRO = """\
# Dialect reference

Generated from the op docstrings by `python -m tdsl.tools.gen_reference`; do
not edit by hand.  Every op prints in the custom form shown, parses back to the
same text, and also prints and parses in MLIR's generic form
(`tdsl-opt --print-op-generic`).
"""

_PASS_INTRO = """\
# Pass and target reference

Generated from the docstrings by `python -m tdsl.tools.gen_reference`; do not
edit by hand.  Each pass runs as `tdsl-opt --<flag>[=<options>]`, in a
pipeline `tdsl-opt -p '<name>{<option>=<value> ...}'`, or from plain
`xdsl-opt` through the `xdsl.universe` entry point.
"""


def _doc(obj: object) -> str:
    return inspect.cleandoc(inspect.getdoc(obj) or "(undocumented)")


def _dialect_section(dialect: Dialect, module_doc: str) -> str:
    lines = [f"## `{dialect.name}`", "", inspect.cleandoc(module_doc), ""]
    for op in sorted(dialect.operations, key=lambda o: o.name):
        if not issubclass(op, IRDLOperation):
            raise internal_error(f"gen-reference: {op.__name__} of {dialect.name} is not IRDL")
        lines += [f"### `{op.name}`", "", _doc(op), ""]
    return "\n".join(lines)


def render_dialects() -> str:
    from tdsl.dialects import kernel, kernel_plan, structured, tdslmath, tensordsl

    parts = [
        _DIALECT_INTRO,
        "## The structured-op interface (`tdsl.dialects.structured`)",
        "",
        _doc(structured),
        "",
        _dialect_section(tensordsl.TensorDSL, tensordsl.__doc__ or ""),
        _dialect_section(kernel.Kernel, kernel.__doc__ or ""),
        "## How a `kernel.tile` runs (`tdsl.dialects.kernel_plan`)",
        "",
        _doc(kernel_plan),
        "",
        _dialect_section(tdslmath.TdslMath, tdslmath.__doc__ or ""),
    ]
    return "\n".join(parts).rstrip() + "\n"


def _options(cls: type) -> list[str]:
    rows: list[str] = []
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            default = "" if f.default is dataclasses.MISSING else f" (default `{f.default!r}`)"
            rows.append(f"- `{f.name.replace('_', '-')}`: `{f.type}`{default}")
    return rows


def render_passes() -> str:
    from tdsl.transforms import fusion_analysis, iteration_space
    from tdsl.universe import TDSL_OPT_TARGETS, TDSL_PASSES

    # the modules whose docstrings state the rules a pass follows
    analyses = {
        "tdsl-fuse": (fusion_analysis, iteration_space),
        "tdsl-tile": (iteration_space,),
    }

    lines = [_PASS_INTRO]
    for title, table in (("Pass", TDSL_PASSES), ("Target", TDSL_OPT_TARGETS)):
        for name, factory in sorted(table.items()):
            cls = factory()
            module = sys.modules[cls.__module__]  # loaded with the class
            lines += [f"## {title} `{name}`", "", _doc(cls), ""]
            opts = _options(cls)
            if opts:
                lines += ["Options:", "", *opts, ""]
            lines += [_doc(module), ""]
            for analysis in analyses.get(name, ()):
                lines += [f"### `{analysis.__name__}`", "", _doc(analysis), ""]
    return "\n".join(lines).rstrip() + "\n"


PAGES = {"dialects.md": render_dialects, "passes.md": render_passes}

LANG_MARKER = (
    "# --------------------------------------------------------------------------- "
    "the functions\n# Generated from the function table by "
    "`python -m tdsl.tools.gen_reference`: do not edit below.\n"
)
"""The line of ``tdsl/lang/functions.py`` below which the file is generated."""

_ARGS = ("x",)
_MANY_ARGS = ("a", "b", "c", "d")


def _lang_doc(op: type) -> str:
    """The op docstring's first paragraph on one line, its operands named as the
    function's parameters (``lhs``/``rhs`` are ``a``/``b``)."""
    first = " ".join(_doc(op).split("\n\n")[0].split())
    return re.sub(r"\brhs\b", "b", re.sub(r"\blhs\b", "a", first))


def _param_type(kind: str, default: object) -> str:
    base = {
        "axis": "int",
        "axes": "int | tuple[int, ...]",
        "perm": "tuple[int, ...]",
        "bool": "bool",
        "float": "float",
        "int_axis": "int",
        "int_axes": "int | tuple[int, ...]",
        "new_axes": "int | tuple[int, ...]",
        "subscripts": "str",
        "shape": "int | tuple[int, ...]",
        "new_shape": "int | tuple[int, ...]",
        "sections": "int | tuple[int, ...]",
        "size": "int",
        "int": "int",
        "number": "float",
        "dtype": "DTypeLike",
    }[kind]
    return f"{base} | None" if default is None else base


def _natural(name: str) -> list[tuple[int, int | str]]:
    # log, log1p, log2, log10, log_softmax: ruff's order of __all__
    return [(0, int(t)) if t.isdigit() else (1, t) for t in re.findall(r"\d+|\D+", name)]


LINE_LENGTH = 100
"""ruff's line length (pyproject.toml): the generated code is laid out as ruff would."""


def _def_lines(name: str, params: list[str], result: str = "Array") -> list[str]:
    """``def name(params) -> Array:`` as ruff formats it: on one line where it fits,
    else the parameters on one indented line, else one per line."""
    one = f"def {name}({', '.join(params)}) -> {result}:"
    if len(one) <= LINE_LENGTH:
        return [one]
    inner = f"    {', '.join(params)}"
    if len(inner) <= LINE_LENGTH:
        return [f"def {name}(", inner, f") -> {result}:"]
    return [f"def {name}(", *(f"    {p}," for p in params), f") -> {result}:"]


LANG_FILES = ("elementwise.py", "functions.py")
"""The generated modules of ``tdsl/lang``: the element-wise functions, and the rest."""


def _in_file(op: type, file: str) -> bool:
    """Whether ``op``'s function is generated into ``tdsl/lang/<file>``."""
    from tdsl.dialects.structured_elementwise import ElementwiseOp

    return issubclass(op, ElementwiseOp) == (file == "elementwise.py")


def _return_lines(function: str, arguments: str) -> list[str]:
    """``return function(arguments)`` as ruff formats it: on one line where it fits, else
    the arguments on one indented line."""
    one = f"    return {function}({arguments})"
    if len(one) <= LINE_LENGTH:
        return [one]
    return [f"    return {function}(", f"        {arguments}", "    )"]


def render_lang(current: str, file: str = "functions.py") -> str:
    """``tdsl/lang/functions.py``: its head (``current`` up to the marker line), then
    one function per language function, then ``__all__``."""
    from tdsl.frontend.ir_gen import FUNCTIONS

    if LANG_MARKER not in current:
        raise ValueError(
            "tdsl/lang/functions.py has lost its marker line: " + LANG_MARKER.splitlines()[0]
        )
    head = current[: current.index(LANG_MARKER)]
    lines = [head + LANG_MARKER]
    chosen = {n: i for n, i in FUNCTIONS.items() if _in_file(i.op, file)}
    for name, info in chosen.items():
        args = _ARGS if info.arity == 1 else _MANY_ARGS[: info.arity]
        leading = [p for p in info.params if p.kind == "subscripts"]
        if leading:  # einsum(subscripts, a, b=None): the string first, then one or two
            (sub,) = leading
            lines += [
                "",
                *_def_lines(name, [f"{sub.name}: str", "a: Operand", "b: Operand | None = None"]),
                f'    """{_lang_doc(info.op)}"""',
                f'    return _call("{name}", (a,) if b is None else (a, b), '
                f'{{"{sub.name}": {sub.name}}})',
                "",
            ]
            continue
        if info.op.SEQUENCE:  # concatenate((a, b), axis=0): the tensors as one sequence
            params = ["arrays: Sequence[Operand]"] + [
                f"{p.name}: {_param_type(p.kind, p.default)} = {p.default!r}" for p in info.params
            ]
            words = ", ".join(f'"{p.name}": {p.name}' for p in info.params)
            lines += [
                "",
                *_def_lines(name, params),
                f'    """{_lang_doc(info.op)}"""',
                f'    return _call("{name}", tuple(arrays), {{{words}}}, sequence=True)',
                "",
            ]
            continue
        params = [f"{a}: Operand" for a in args] + [
            f"{p.name}: {_param_type(p.kind, 0)}"
            if p.required
            else f"{p.name}: {_param_type(p.kind, p.default)} = {p.default!r}"
            for p in info.params
        ]
        call = [repr(name), f"({args[0]},)" if len(args) == 1 else f"({', '.join(args)})"]
        if not args:
            call[1] = "()"
        if info.params:
            call.append("{" + ", ".join(f'"{p.name}": {p.name}' for p in info.params) + "}")
        call_text = ", ".join(call).replace("'", '"')
        several = info.op.SEVERAL  # a split: its parts
        lines += [
            "",
            *_def_lines(name, params, "list[Array]" if several else "Array"),
            f'    """{_lang_doc(info.op)}"""',
            *_return_lines("_call_parts" if several else "_call", call_text),
            "",
        ]
    names = sorted(chosen, key=_natural)
    lines += ["", "__all__ = [", *(f'    "{n}",' for n in names), "]", ""]
    return "\n".join(lines)


def lang_path(file: str = "functions.py") -> Path:
    """``tdsl/lang/<file>`` of this package: generated functions of ``tdsl.lang``."""
    return Path(__file__).resolve().parents[1] / "lang" / file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if a page is stale")
    ap.add_argument(
        "--docs",
        type=Path,
        default=None,
        metavar="DIR",
        help="the folder of the pages (default: docs/ of the source checkout)",
    )
    args = ap.parse_args(argv)
    docs: Path | None = args.docs or checkout_docs()
    if docs is None:
        print(
            "error: tdsl is not running from a source checkout, so there is no docs/ "
            "folder to write; give one with --docs DIR",
            file=sys.stderr,
        )
        return 2
    stale: list[str] = []
    for name, render in PAGES.items():
        path = docs / name
        text = render()
        fresh = path.exists() and path.read_text() == text
        if args.check:
            if not fresh:
                stale.append(name)
        elif not fresh:  # an unchanged file keeps its modification time
            path.write_text(text)
    if checkout_docs() is not None:  # a source checkout: tdsl/lang/functions.py is ours
        for file in LANG_FILES:
            lang = lang_path(file)
            current = lang.read_text(encoding="utf-8")
            text = render_lang(current, file)
            if args.check:
                if current != text:
                    stale.append(f"tdsl/lang/{file}")
            elif current != text:  # untouched, the disk-cache keys of this tree stay valid
                lang.write_text(text, encoding="utf-8")
    if stale:
        print(
            "stale: " + ", ".join(stale) + " (run python -m tdsl.tools.gen_reference)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
