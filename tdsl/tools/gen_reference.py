"""Writes ``docs/dialects.md`` and ``docs/passes.md`` from the docstrings.

The op and pass docstrings are the reference; this keeps the pages in step
with them.  ``python -m tdsl.tools.gen_reference`` rewrites the pages;
``--check`` exits 1 when a page is stale (a unit test runs that).

The pages live in the ``docs/`` folder of a source checkout, found next to the
``tdsl`` package; an installed ``tdsl`` (in site-packages, whose ``docs/`` may
be another project's) has none, and then ``--docs DIR`` must say where to write.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import sys
from pathlib import Path

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation


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
        assert issubclass(op, IRDLOperation)
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


# The modules whose docstrings state the rules a pass follows.
_ANALYSES = {
    "tdsl-fuse": ("tdsl.lowering.fusion_analysis", "tdsl.lowering.iteration_space"),
    "tdsl-tile": ("tdsl.lowering.iteration_space",),
}


def render_passes() -> str:
    from tdsl.universe import TDSL_OPT_TARGETS, TDSL_PASSES

    lines = [_PASS_INTRO]
    for title, table in (("Pass", TDSL_PASSES), ("Target", TDSL_OPT_TARGETS)):
        for name, factory in sorted(table.items()):
            cls = factory()
            module = importlib.import_module(cls.__module__)
            lines += [f"## {title} `{name}`", "", _doc(cls), ""]
            opts = _options(cls)
            if opts:
                lines += ["Options:", "", *opts, ""]
            lines += [_doc(module), ""]
            for module_name in _ANALYSES.get(name, ()):
                analysis = importlib.import_module(module_name)
                lines += [f"### `{analysis.__name__}`", "", _doc(analysis), ""]
    return "\n".join(lines).rstrip() + "\n"


PAGES = {"dialects.md": render_dialects, "passes.md": render_passes}


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
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(
            "stale: " + ", ".join(stale) + " (run python -m tdsl.tools.gen_reference)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
