"""The user docs tell the truth: every output block in them is real, current output.

A page marks its blocks with HTML comments (invisible when rendered), each on the
line right before a fenced block:

- ``<!-- file: NAME -->``: the block is the text of file ``NAME``; it is written
  into the directory the page's commands run in.
- ``<!-- command: CMD -->``: the block is what ``CMD`` prints (stdout and stderr,
  interleaved as a terminal shows them); ``CMD`` exits with status 0.
- ``<!-- command (exit N): CMD -->``: the same, for a command that exits with ``N``.
- ``<!-- run -->``: the block is Python; it runs, sharing its names with the
  page's later ``run`` blocks.
- ``<!-- output -->``: the block is what the preceding ``run`` block printed.

Commands start with ``tdsl-opt``, ``tdsl-run`` or ``xdsl-opt``; they are split
as a shell would split them and run in-process (the driver classes, no
subprocess), in page order, from a scratch directory that holds the page's
files and a link to the repository's ``examples/``, so paths read as they do
from the repository root.  Each command must also appear in the page's visible
text, so a reader sees what produced each block.

When the compiler's output changes, refresh the blocks with::

    python tests/unit/docs/test_walkthrough.py --update
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import io
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = (
    "README.md",
    "docs/adding-an-op.md",
    "docs/dask.md",
    "docs/from-numpy.md",
    "docs/index.md",
    "docs/language.md",
    "docs/native.md",
    "docs/tools.md",
    "docs/walkthrough.md",
)
"""The pages checked here, from the repository root (``docs/dialects.md`` and
``docs/passes.md`` are generated)."""

_MARKER = re.compile(r"<!--\s*(.*?)\s*-->")
_COMMAND = re.compile(r"command(?:\s*\(exit (\d+)\))?:\s*(.+)", re.DOTALL)
_FENCE = re.compile(r"^(`{3,})([\w+-]*)\s*$")
_KINDS = ("file", "command", "run", "output")


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class Block:
    """One marked fenced block of a page."""

    kind: str
    """``file``, ``command``, ``run`` or ``output``."""
    argument: str
    """The file name or the command; empty for ``run`` and ``output``."""
    exit_code: int
    """The exit status a ``command`` must end with."""
    first: int
    """Index of the first content line (after the opening fence)."""
    end: int
    """Index of the closing fence line."""
    marker_line: int
    """1-based line of the marker comment, for messages."""
    content: str

    @property
    def where(self) -> str:
        return f"line {self.marker_line}"


def parse_page(text: str) -> list[Block]:
    """The marked blocks of a page, in order; raises ``ValueError`` on a malformed marker."""
    lines = text.split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        match = _MARKER.fullmatch(lines[index].strip())
        words = match.group(1).split() if match else []
        keyword = words[0].rstrip(":") if words else ""
        if match is None or keyword not in _KINDS:
            index += 1
            continue
        body = match.group(1)
        fence = _FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
        if fence is None:
            raise ValueError(f"line {index + 1}: `{body}` is not followed by a fenced block")
        ticks = fence.group(1)
        end = index + 2
        while end < len(lines) and lines[end].rstrip() != ticks:
            end += 1
        if end == len(lines):
            raise ValueError(f"line {index + 2}: the fenced block is never closed")
        kind, argument, exit_code = _parse_marker(body, index + 1)
        content = "\n".join(lines[index + 2 : end])
        blocks.append(Block(kind, argument, exit_code, index + 2, end, index + 1, content))
        index = end + 1
    return blocks


def _parse_marker(body: str, line: int) -> tuple[str, str, int]:
    command = _COMMAND.fullmatch(body)
    if command is not None:
        return "command", " ".join(command.group(2).split()), int(command.group(1) or 0)
    if body.startswith("file:"):
        name = body.removeprefix("file:").strip()
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"line {line}: bad file name `{name}`")
        return "file", name, 0
    if body in ("run", "output"):
        return body, "", 0
    raise ValueError(f"line {line}: malformed marker `<!-- {body} -->`")


def visible_text(text: str) -> str:
    """The page without its marker comments."""
    return _MARKER.sub("", text)


def normalize(text: str) -> str:
    """Trailing whitespace dropped, on each line and at the end."""
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))


# --------------------------------------------------------------------------- running


def _tool(name: str) -> Callable[[list[str]], None]:
    """The in-process entry of a command-line tool."""
    if name == "tdsl-opt":
        from tdsl.tools.diagnostics import run_tool
        from tdsl.tools.tdsl_opt import TdslOptMain

        return lambda args: run_tool(lambda: TdslOptMain(args=args).run())
    if name == "tdsl-run":
        from tdsl.tools.diagnostics import run_tool
        from tdsl.tools.tdsl_run import TdslRunMain

        return lambda args: run_tool(lambda: TdslRunMain(args=args).run())
    if name == "xdsl-opt":
        from xdsl.xdsl_opt_main import xDSLOptMain

        return lambda args: xDSLOptMain(args=args).run()
    raise ValueError(f"unknown tool `{name}` (expected tdsl-opt, tdsl-run or xdsl-opt)")


@contextlib.contextmanager
def _captured() -> Iterator[io.StringIO]:
    """stdout and stderr into one buffer, in the order they are written."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        yield buffer


def run_command(command: str) -> tuple[int, str]:
    """Run ``command`` in-process in the current directory: (exit status, output)."""
    argv = shlex.split(command)
    tool = _tool(argv[0])
    code = 0
    with _captured() as buffer:
        try:
            tool(argv[1:])
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return code, buffer.getvalue()


@contextlib.contextmanager
def _sandbox() -> Iterator[Path]:
    """A scratch working directory with ``examples/`` linked in."""
    # Import the package before leaving the current directory, which may be what
    # makes it importable (`python -m pytest` from the repository root).
    importlib.import_module("tdsl")
    previous = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="tdsl-docs-") as name:
        path = Path(name)
        (path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
        os.chdir(path)
        try:
            yield path
        finally:
            os.chdir(previous)


@dataclass(frozen=True)
class Mismatch:
    """An output block that is not what its command prints."""

    block: Block
    actual: str
    problem: str


def check_page(text: str) -> tuple[list[Block], list[Mismatch], dict[int, str]]:
    """Run a page's commands and code; return its blocks, the mismatches and the new outputs.

    The new outputs map the index of each output block to what it should hold.
    """
    blocks = parse_page(text)
    shown = visible_text(text)
    mismatches: list[Mismatch] = []
    outputs: dict[int, str] = {}
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    last_run: str | None = None
    with _sandbox() as directory:
        for index, block in enumerate(blocks):
            if block.kind == "file":
                (directory / block.argument).write_text(block.content + "\n")
                continue
            if block.kind == "run":
                last_run = _run_python(block, namespace)
                continue
            if block.kind == "output":
                if last_run is None:
                    raise ValueError(f"{block.where}: an output block with no `run` block before")
                actual, last_run = last_run, None
                problem = ""
            else:
                code, actual = run_command(block.argument)
                problem = ""
                if block.argument not in " ".join(shown.split()):
                    problem = "the command does not appear in the page's visible text; "
                if code != block.exit_code:
                    problem += f"exit status {code}, expected {block.exit_code}; "
            outputs[index] = normalize(actual)
            if normalize(actual) != normalize(block.content):
                problem += "the output differs"
            if problem:
                mismatches.append(Mismatch(block, normalize(actual), problem.rstrip("; ")))
    return blocks, mismatches, outputs


def _run_python(block: Block, namespace: dict[str, Any]) -> str:
    buffer = io.StringIO()
    code = compile(block.content, f"<docs {block.where}>", "exec")
    with contextlib.redirect_stdout(buffer):
        exec(code, namespace)
    return buffer.getvalue()


def describe(page: str, mismatches: Sequence[Mismatch]) -> str:
    """A readable report with a diff per mismatch."""
    parts: list[str] = []
    for m in mismatches:
        what = m.block.argument or "python output"
        diff = difflib.unified_diff(
            normalize(m.block.content).split("\n"),
            m.actual.split("\n"),
            "page",
            "actual",
            lineterm="",
        )
        parts.append(f"{page} {m.block.where} ({what}): {m.problem}\n" + "\n".join(diff))
    parts.append("refresh with: python tests/unit/docs/test_walkthrough.py --update")
    return "\n\n".join(parts)


def update_page(path: Path) -> int:
    """Rewrite the output blocks of ``path`` from their commands; return how many changed."""
    text = path.read_text()
    blocks, _, outputs = check_page(text)
    lines = text.split("\n")
    changed = 0
    for index in sorted(outputs, reverse=True):
        block = blocks[index]
        if normalize(block.content) != outputs[index]:
            changed += 1
            new = outputs[index].split("\n") if outputs[index] else []
            lines[block.first : block.end] = new
    if changed:
        path.write_text("\n".join(lines))
    return changed


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("page", PAGES)
def test_page_output_is_real(page: str) -> None:
    path = ROOT / page
    assert path.exists(), f"docs/{page} is missing"
    _, mismatches, _ = check_page(path.read_text())
    assert not mismatches, describe(page, mismatches)


TARGET_WORDS = re.compile(r"\b(native|numpy|llvm|target)\b|target=|ModuleID|triple|datalayout")
"""Lines that may differ between targets: those that name the target or show its code."""


@pytest.mark.parametrize("page", [p for p in PAGES if "<!-- run -->" in (ROOT / p).read_text()])
def test_examples_compute_the_same_on_both_targets(
    page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every example's printed results are the same with ``TDSL_TARGET=native`` and
    ``TDSL_TARGET=numpy``, but for the lines that name the target or show its code."""
    from tdsl.jit import api
    from tdsl.runtime.compile import native_unavailable_reason

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    text = (ROOT / page).read_text()
    seen: dict[str, dict[int, list[str]]] = {}
    for target in ("numpy", "native"):
        monkeypatch.setenv("TDSL_TARGET", target)
        monkeypatch.setattr(api._DEFAULT, "jit", None)
        blocks, _, outputs = check_page(text)
        seen[target] = {
            i: [line for line in out.split("\n") if not TARGET_WORDS.search(line)]
            for i, out in outputs.items()
            if blocks[i].kind == "output"
        }
    for i, lines in seen["numpy"].items():
        assert lines == seen["native"][i], f"{page}: {parse_page(text)[i].where}"


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them (``## `tdsl-opt` `` -> ``tdsl-opt``)."""
    found: set[str] = set()
    for heading in re.findall(r"^#+\s+(.+?)\s*$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("page", PAGES)
def test_page_links_resolve(page: str) -> None:
    text = visible_text((ROOT / page).read_text())
    problems: list[str] = []
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", text):
        if "://" in target:
            continue
        path = (ROOT / page).parent / target if target else ROOT / page
        if not path.exists():
            problems.append(f"{target}: no such page")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text()):
            problems.append(f"{target}#{anchor}: no such heading")
    assert not problems, f"{page} has broken links: {problems}"


def test_generated_reference_is_current() -> None:
    from tdsl.tools.gen_reference import main

    assert main(["--check"]) == 0, "run: python -m tdsl.tools.gen_reference"


def test_parser_reads_markers() -> None:
    text = "\n".join(
        [
            "<!-- file: k.tdsl -->",
            "```python",
            "def f(x: f32[2]):",
            "```",
            "<!-- command (exit 1): tdsl-opt   k.tdsl -->",
            "````text",
            "a",
            "```",
            "````",
            "<!-- a plain comment -->",
        ]
    )
    file, command = parse_page(text)
    assert (file.kind, file.argument, file.content) == ("file", "k.tdsl", "def f(x: f32[2]):")
    assert (command.kind, command.argument, command.exit_code) == ("command", "tdsl-opt k.tdsl", 1)
    assert command.content == "a\n```"


@pytest.mark.parametrize(
    "text",
    [
        "<!-- command: tdsl-opt x -->\nnot a fence",
        "<!-- run -->\n```python\nprint(1)\n",
        "<!-- file: ../x -->\n```\n```",
        "<!-- output: extra -->\n```\n```",
    ],
)
def test_parser_rejects_malformed_markers(text: str) -> None:
    with pytest.raises(ValueError):
        parse_page(text)


def test_mismatch_is_reported() -> None:
    page = "\n".join(
        [
            "Run `tdsl-opt --expr 'relu(A)' --shape A=2xf32`:",
            "<!-- command: tdsl-opt --expr 'relu(A)' --shape A=2xf32 -->",
            "```mlir",
            "stale",
            "```",
        ]
    )
    _, mismatches, outputs = check_page(page)
    assert [m.problem for m in mismatches] == ["the output differs"]
    assert "tensordsl.relu %A : tensor<2xf32>" in outputs[0]


def test_hidden_command_and_wrong_exit_status_are_reported() -> None:
    page = "\n".join(["<!-- command: tdsl-opt --expr 'relu(' -->", "```", "```"])
    (mismatch,) = check_page(page)[1]
    assert "does not appear" in mismatch.problem
    assert "exit status 1, expected 0" in mismatch.problem
    assert mismatch.actual.startswith("<expr>:1:6: error: expected an expression")


def main(argv: Sequence[str]) -> int:
    """``--update``: rewrite the output blocks of every page from their commands."""
    if list(argv) != ["--update"]:
        print(f"usage: python {sys.argv[0]} --update", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))  # the working tree's tdsl, as pytest would import it
    for page in PAGES:
        changed = update_page(ROOT / page)
        print(f"docs/{page}: {changed} block(s) updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
