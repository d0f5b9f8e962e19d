"""The ``tdsl-opt`` driver, run in-process: flags, pass order, errors and exit codes."""

from __future__ import annotations

import re
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tdsl.dialects import tensordsl as td
from tdsl.errors import SourceLocation, TdslBudgetError, TdslSyntaxError, internal_error
from tdsl.tools.diagnostics import run_tool
from tdsl.tools.opt_args import pass_flag_aliases, rewrite_pass_flags, unknown_long_options
from tdsl.tools.tdsl_opt import TdslOptMain, main
from tdsl.transforms.fuse import FusePass

GOOD = """\
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.relu %0 : tensor<4x8xf32>
  %2 = tensordsl.add %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}
"""

BAD_BROADCAST = """\
func.func @main(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.add %0, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
"""


@dataclass
class Outcome:
    """What one run of a tool did."""

    code: int
    out: str
    err: str


def run_main(
    capsys: pytest.CaptureFixture[str],
    args: Sequence[str],
    tool: type[TdslOptMain] = TdslOptMain,
) -> Outcome:
    """Run ``tool`` like its console script and capture the exit status and output."""

    def body() -> None:
        tool(args=list(args)).run()

    code = 0
    try:
        if tool is TdslOptMain:
            main(list(args))
        else:
            run_tool(body)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


# --------------------------------------------------------------------------- #
# Rewriting pass flags
# --------------------------------------------------------------------------- #

PASSES = ("canonicalize", "cse", "dce", "tdsl-fuse", "tdsl-tile")


def test_aliases_strip_the_tdsl_prefix() -> None:
    assert pass_flag_aliases(PASSES) == {"fuse": "tdsl-fuse", "tile": "tdsl-tile"}


def test_alias_dropped_when_a_pass_has_the_short_name() -> None:
    assert pass_flag_aliases(("tdsl-fuse", "fuse")) == {}


def test_rewrite_keeps_command_line_order() -> None:
    argv = ["in.mlir", "--canonicalize", "--fuse", "-p", "cse", "--tile=tile-size=32 sizes=4,4"]
    out = rewrite_pass_flags(argv, PASSES, aliases=pass_flag_aliases(PASSES))
    assert out == ["in.mlir", "-p", "canonicalize,tdsl-fuse,cse,tdsl-tile{tile-size=32 sizes=4,4}"]


def test_rewrite_accepts_every_spelling_of_passes() -> None:
    argv = ["-pcse", "--passes=dce", "--passes", "canonicalize", "--tdsl-fuse{memory-budget=8}"]
    out = rewrite_pass_flags(argv, PASSES)
    assert out == ["-p", "cse,dce,canonicalize,tdsl-fuse{memory-budget=8}"]


def test_rewrite_leaves_option_values_and_reserved_flags_alone() -> None:
    argv = ["--expr", "--cse", "--cse", "--target=numpy", "--", "--dce"]
    out = rewrite_pass_flags(
        argv,
        (*PASSES, "target"),
        value_options=("--expr",),
        reserved_options=("--expr", "--target"),
    )
    assert out == ["--expr", "--cse", "--target=numpy", "--", "--dce", "-p", "cse"]


def test_rewrite_without_passes_adds_no_pipeline() -> None:
    assert rewrite_pass_flags(["in.mlir", "-p", ""], PASSES) == ["in.mlir"]


def test_unknown_long_options_allows_abbreviations() -> None:
    known = ("--split-input-file", "--target")
    assert unknown_long_options(["--split", "--tar=mlir", "--fsue"], known) == ["--fsue"]


def test_driver_pipeline_follows_flag_order(tmp_path: Path) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    tool = TdslOptMain(args=[path, "--dce", "-p", "cse,canonicalize", "--cse", "--fuse"])
    assert [p.name for p in tool.pipeline.passes] == [
        "dce",
        "cse",
        "canonicalize",
        "cse",
        "tdsl-fuse",
    ]


def test_driver_passes_options_to_the_pass(tmp_path: Path) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    tool = TdslOptMain(args=[path, "--fuse=memory-budget=4096"])
    (fuse,) = tool.pipeline.passes
    assert isinstance(fuse, FusePass)
    assert fuse.memory_budget == 4096


# --------------------------------------------------------------------------- #
# Success paths
# --------------------------------------------------------------------------- #


def test_prints_the_canonicalized_module(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outcome = run_main(capsys, [write(tmp_path, "in.mlir", GOOD), "--canonicalize"])
    assert outcome.code == 0, outcome.err
    assert outcome.err == ""
    assert outcome.out.count("tensordsl.relu") == 1
    assert "tensordsl.add" in outcome.out


def test_generic_output_parses_back(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    first = run_main(capsys, [write(tmp_path, "in.mlir", GOOD), "--print-op-generic"])
    assert '"tensordsl.relu"' in first.out
    second = run_main(capsys, [write(tmp_path, "generic.mlir", first.out)])
    third = run_main(capsys, [write(tmp_path, "custom.mlir", second.out)])
    assert second.code == third.code == 0
    assert second.out == third.out
    assert "%0 = tensordsl.relu %a : tensor<4x8xf32>" in second.out


def test_help_lists_pass_flags(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_main(capsys, ["--help"])
    assert outcome.code == 0
    for flag in ("--fuse, --tdsl-fuse", "--tile, --tdsl-tile", "--canonicalize", "--cse"):
        assert flag in outcome.out
    assert "--explain-fusion" in outcome.out


def test_version_names_tdsl_and_xdsl(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    outcome = run_main(capsys, ["--version"])
    assert outcome.code == 0
    assert outcome.out == (
        f"tdsl-opt from tdsl version {version('tdsl')}, built on xDSL version {version('xdsl')}\n"
    )


def test_output_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    outcome = run_main(capsys, [write(tmp_path, "in.mlir", GOOD), "-o", str(target)])
    assert outcome.code == 0
    assert outcome.out == ""
    assert "func.func @main" in target.read_text()


@pytest.mark.parametrize("same", [True, False], ids=["the-input", "another-file"])
def test_a_failed_run_leaves_the_output_file_as_it_was(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, same: bool
) -> None:
    """As mlir-opt: the ``-o`` file is written only by a run that succeeds; a failed run
    emptied it, the input itself when ``-o`` named it (``tdsl-opt bad.mlir -o bad.mlir``)."""
    bad = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = nope\n}\n"
    path = write(tmp_path, "bad.mlir", bad)
    target = Path(path) if same else tmp_path / "out.mlir"
    if not same:
        target.write_text("keep\n")
    before = target.read_bytes()
    outcome = run_main(capsys, [path, "-o", str(target)])
    assert outcome.code == 1 and "error" in outcome.err
    assert target.read_bytes() == before
    missing = tmp_path / "new.mlir"
    assert run_main(capsys, [path, "-o", str(missing)]).code == 1
    assert not missing.exists()  # (nor is a file made)
    good = write(tmp_path, "good.mlir", GOOD)
    assert run_main(capsys, [good, "-o", str(target)]).code == 0
    assert "func.func @main" in target.read_text()


def test_o_dash_is_standard_output_and_an_empty_name_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-o -`` writes to standard output, as mlir-opt's does (it wrote a file named
    ``-``); ``-o ''`` is an error (it wrote to standard output with exit 0; found by
    fuzzing the CLI)."""
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, "in.mlir", GOOD)
    dash = run_main(capsys, [path, "-o", "-"])
    assert dash.code == 0 and "func.func @main" in dash.out
    assert not (tmp_path / "-").exists()
    empty = run_main(capsys, [path, "-o", ""])
    assert empty.code == 1 and empty.out == ""
    assert empty.err.startswith("error: -o needs a file name")


def test_expression_is_lowered(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--expr", "relu(A)+B", "--shape", "A=4x4xf32", "--shape", "B=4xf32"]
    outcome = run_main(capsys, args)
    assert outcome.code == 0, outcome.err
    assert "func.func @main(%A: tensor<4x4xf32>, %B: tensor<4xf32>)" in outcome.out
    assert "tensordsl.relu %A" in outcome.out


def test_expression_error_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_main(capsys, ["--expr", "relu(A", "--shape", "A=4xf32"])
    assert outcome.code == 1
    assert outcome.err.startswith("<expr>:1:")
    assert "Traceback" not in outcome.err


def test_explain_fusion_prints_remarks_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outcome = run_main(capsys, [write(tmp_path, "in.mlir", GOOD), "--fuse", "--explain-fusion"])
    assert outcome.code == 0, outcome.err
    assert "kernel.fused" in outcome.out
    assert "remark:" in outcome.err
    # Fusion keeps the parsed ops, so the remarks point into the input.
    assert f"{tmp_path / 'in.mlir'}:4:" in outcome.err


def test_explain_fusion_hook_gets_budget_and_locator(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tdsl.transforms import fuse

    calls: list[tuple[int | None, SourceLocation | None]] = []

    def explain(
        module: ModuleOp,
        budget: int | None = None,
        locate: object = None,
        fallback: int | None = None,
    ) -> str:
        assert callable(locate) and fallback is None  # (none given)
        relu = next(op for op in module.walk() if isinstance(op, td.ReluOp))
        calls.append((budget, locate(relu)))
        return "remark: explained\n"

    monkeypatch.setattr(fuse, "explain_fusion", explain)
    path = write(tmp_path, "in.mlir", GOOD)
    outcome = run_main(capsys, [path, "--fuse=memory-budget=777", "--explain-fusion"])
    assert outcome.code == 0, outcome.err
    assert outcome.err == "remark: explained\n"
    ((budget, location),) = calls
    assert budget == 777
    assert location is not None
    assert (location.file, location.line, location.column) == (path, 2, 8)


# --------------------------------------------------------------------------- #
# Bad input: exit status 1, one clean message, no traceback
# --------------------------------------------------------------------------- #


def assert_clean_error(outcome: Outcome, first_line: str) -> None:
    assert outcome.code == 1, outcome.err
    assert "Traceback" not in outcome.err
    assert outcome.err.splitlines()[0] == first_line


def test_syntax_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "bad.mlir", GOOD.replace("%a : tensor<4x8xf32>", "%a tensor<4x8xf32>"))
    outcome = run_main(capsys, [path])
    assert_clean_error(outcome, f"{path}:2:26: error: Expected ':'")
    assert outcome.err.splitlines()[1:] == [
        "  %0 = tensordsl.relu %a tensor<4x8xf32>",
        "                         ^^^^^^",
    ]


def test_unknown_op_points_at_its_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "bad.mlir", GOOD.replace("tensordsl.relu %a", "tensordsl.rleu %a"))
    outcome = run_main(capsys, [path])
    assert_clean_error(outcome, f"{path}:2:8: error: Operation tensordsl.rleu is not registered")
    assert outcome.err.splitlines()[2] == "       " + "^" * len("tensordsl.rleu")


def test_verifier_error_points_at_the_op(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "bad.mlir", BAD_BROADCAST)
    outcome = run_main(capsys, [path])
    lines = outcome.err.splitlines()
    assert outcome.code == 1
    assert lines[0].startswith(f"{path}:3:8: error: 'tensordsl.add' op ")
    assert lines[1] == BAD_BROADCAST.splitlines()[2]
    assert lines[2] == "       " + "^" * len("tensordsl.add")
    assert len(lines) == 3  # no module dump


def test_verifier_error_in_generic_form(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = BAD_BROADCAST.replace(
        "%1 = tensordsl.add %0, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>",
        '%1 = "tensordsl.add"(%0, %b) : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>',
    )
    path = write(tmp_path, "bad.mlir", text)
    outcome = run_main(capsys, [path])
    assert outcome.code == 1
    assert outcome.err.startswith(f"{path}:3:9: error: 'tensordsl.add' op ")


def test_type_error_while_parsing_is_located(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = "func.func @f(%a: f32) {\n  %0 = arith.addf %a, %a : i32\n  func.return\n}\n"
    path = write(tmp_path, "bad.mlir", text)
    outcome = run_main(capsys, [path])
    assert outcome.code == 1
    assert outcome.err.startswith(f"{path}:2:")
    assert "Traceback" not in outcome.err


def test_undefined_value_points_at_its_use(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "bad.mlir", GOOD.replace("tensordsl.relu %a", "tensordsl.relu %zz"))
    outcome = run_main(capsys, [path])
    assert_clean_error(outcome, f"{path}:2:23: error: use of undefined value '%zz'")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.mlir", "", "{path}:1:1: error: the input is empty"),
        ("blank.mlir", "  \n\n", "{path}:1:1: error: the input is empty"),
        # (xDSL's message was empty, " in block definition", past the end; found by fuzzing)
        (
            "open.mlir",
            "func.func @f() {\n  func.return\n",
            "{path}:2:13: error: the input ends inside a region: a closing `}}` is missing",
        ),
        # (xDSL's "Could not parse entire input!" at a blank line past the end; found by fuzzing)
        (
            "comments.mlir",
            "// a note\n  // another\n\n",
            "{path}:1:1: error: the input has only comments, no IR",
        ),
        (
            "binary.mlir",
            b"\x89PNG\r\n\x1a\n\xff",
            "{path}:1:1: error: not a text file (invalid UTF-8 byte 0x89)",
        ),
        ("nul.mlir", b"// x\nfunc\x00", "{path}:2:5: error: not a text file (a NUL byte)"),
        (
            "notes.txt",
            "hello",
            "error: {path}: unknown file extension '.txt' (known: .tdsl, .mlir); choose a frontend with -f",
        ),
    ],
)
def test_bad_files(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    name: str,
    content: str | bytes,
    message: str,
) -> None:
    path = write(tmp_path, name, content)
    assert_clean_error(run_main(capsys, [path]), message.format(path=path))


def test_invalid_utf8_is_located(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The line and column of the first byte that is not UTF-8, with a caret (the error
    gave only a byte offset)."""
    path = write(tmp_path, "bad.tdsl", b"def f(x: f32[4]):\n    return x * \xc3\xa9\xff + 1\n")
    outcome = run_main(capsys, [path])
    assert_clean_error(outcome, f"{path}:2:17: error: not a text file (invalid UTF-8 byte 0xff)")
    assert outcome.err.splitlines()[1:3] == ["    return x * \u00e9\ufffd + 1", " " * 16 + "^"]


def test_a_string_left_open_is_located_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A string that does not end on its line: at its quote, in any chunk, at once (xDSL's
    lexer took time doubling with each character after the quote: minutes at 30; found by
    fuzzing).  Quotes in comments and escaped ones are no strings."""
    good = GOOD.replace("tensordsl.relu %a", 'tensordsl.relu %a {note = "a // b \\" c"}')
    bad = GOOD.replace("tensordsl.relu %a", 'tensordsl.relu %a {note = "an open string left}')
    path = write(tmp_path, "open.mlir", f'{good}// -----\n// " a quote\n{bad}')
    outcome = run_main(capsys, [path, "--split-input-file"])
    row = f"{good}// -----\n// a\n".count("\n") + 2
    first = f'{path}:{row}:34: error: this string does not end on its line: close it with `"`'
    assert_clean_error(outcome, first)
    assert outcome.err.splitlines()[2] == " " * 33 + "^"


def test_a_hash_comment_is_explained(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """(xDSL's message printed its placeholder, `{first_char}`; found by fuzzing.)"""
    path = write(tmp_path, "hash.mlir", f"# a comment in the wrong syntax\n{GOOD}")
    outcome = run_main(capsys, [path])
    message = "error: Expected a name after `#` or `!` (a comment is `//`)"
    assert_clean_error(outcome, f"{path}:1:1: {message}")


def test_dot_of_lowered_ir_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """(It printed an empty graph and exited 0; found by fuzzing.)"""
    path = write(tmp_path, "in.mlir", GOOD)
    lowered = [path, "--fuse", "--tile", "--lower-to-loops", "--convert-to-llvm", "-t", "dot"]
    assert_clean_error(
        run_main(capsys, lowered),
        "error: target 'dot' draws tensordsl and kernel ops, and this IR has none (it has "
        "'llvm.func'): print it before --lower-to-loops",
    )
    assert run_main(capsys, [path, "--fuse", "--tile", "-t", "dot"]).code == 0
    # read from a file, the first such op is located (it had no line: found by fuzzing)
    loops = str(tmp_path / "loops.mlir")
    assert run_main(capsys, [path, "--fuse", "--tile", "--lower-to-loops", "-o", loops]).code == 0
    outcome = run_main(capsys, [loops, "-t", "dot"])
    assert outcome.code == 1 and re.search(
        rf"{re.escape(loops)}:\d+:\d+: error: target 'dot'", outcome.err
    )


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = str(tmp_path / "nope.mlir")
    assert_clean_error(
        run_main(capsys, [path]), f"error: cannot read '{path}': No such file or directory"
    )


def test_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert_clean_error(
        run_main(capsys, [str(tmp_path)]), f"error: cannot read '{tmp_path}': Is a directory"
    )


def test_unreadable_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    target = tmp_path / "missing-dir" / "out.mlir"
    assert_clean_error(
        run_main(capsys, [path, "-o", str(target)]),
        f"error: cannot write '{target}': No such file or directory",
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["-p", "canonicalise"],
            "error: unknown pass 'canonicalise'; did you mean 'canonicalize'?",
        ),
        (["--fsue"], "error: unknown option '--fsue'; did you mean '--fuse'?"),
        # (argparse's error was its whole usage and every choice; found by fuzzing)
        (["-t", "numpi"], "error: unknown target 'numpi'; did you mean 'numpy'?"),
        (["--target=zzz{threads=1}"], "error: unknown target 'zzz'"),
        (["--cse=bogus=1"], "error: pass 'cse' has no option 'bogus'"),
        (
            ["--tile=tile-szie=3"],
            "error: pass 'tdsl-tile' has no option 'tile-szie'; did you mean 'tile-size'?",
        ),
        (
            ["--tile=tile-size=1.5"],
            "error: option 'tile-size' of pass 'tdsl-tile' takes an integer, not `1.5`",
        ),
        (["-p", "cse{"], "pass-pipeline:1:5: error: Expected argument name here"),
        (["-p", "cse,,dce"], "pass-pipeline:1:5: error: Expected pass name here"),
    ],
)
def test_bad_pipelines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], message: str
) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    assert_clean_error(run_main(capsys, [path, *flags]), message)


def test_expr_with_a_file_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    assert_clean_error(
        run_main(capsys, [path, "--expr", "A"]),
        "error: give either an input file or --expr, not both",
    )


def test_split_input_file_reports_every_chunk(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = GOOD + "// -----\n" + BAD_BROADCAST + "// -----\n" + "func.func @g( {\n}\n"
    path = write(tmp_path, "many.mlir", text)
    outcome = run_main(capsys, [path, "--split-input-file"])
    assert outcome.code == 1
    errors = [line for line in outcome.err.splitlines() if ": error: " in line]
    assert [e.split(": error: ")[0] for e in errors] == [f"{path}:10:8", f"{path}:14:15"]
    assert outcome.out.count("// -----") == 2
    assert "func.func @main" in outcome.out


def test_verify_diagnostics_keeps_xdsl_semantics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "bad.mlir", BAD_BROADCAST)
    outcome = run_main(capsys, [path, "--verify-diagnostics"])
    assert outcome.code == 0
    assert outcome.out.startswith("'tensordsl.add' op ")
    assert "Operation does not verify" in outcome.out


def test_parsing_diagnostics(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "bad.mlir", "func.func @g( {\n}\n")
    outcome = run_main(capsys, [path, "--parsing-diagnostics"])
    assert outcome.code == 0
    assert outcome.out.startswith(f"{path}:1:15")


def test_tdsl_frontend_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "k.tdsl", "def k(x: f32[4]):\n    return sofmax(x)\n")
    outcome = run_main(capsys, [path])
    assert outcome.code == 1
    assert outcome.err.startswith(f"{path}:2:12: error: ")
    assert "sofmax" in outcome.err
    assert "Traceback" not in outcome.err


# --------------------------------------------------------------------------- #
# Errors raised by passes and frontends
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class BreakReturnPass(ModulePass):
    """Replaces each func.return by one without operands: a new op that does not verify."""

    name = "test-break-return"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ret in [o for o in op.walk() if isinstance(o, func.ReturnOp)]:
            ret.parent_block().insert_op_before(func.ReturnOp(), ret)  # pyright: ignore[reportOptionalMemberAccess]
            ret.detach()
            ret.erase()


@dataclass(frozen=True)
class RewireAddPass(ModulePass):
    """Makes each tensordsl.add use the function's last argument: a parsed op that breaks."""

    name = "test-rewire-add"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for add in [o for o in op.walk() if isinstance(o, td.AddOp)]:
            fn = add.parent_op()
            assert isinstance(fn, func.FuncOp)
            add.operands[1] = fn.body.block.args[-1]


@dataclass(frozen=True)
class BudgetPass(ModulePass):
    """Fails the way the fusion pass does when the memory budget is too small."""

    name = "test-budget"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise TdslBudgetError("the group needs 64 elements, more than the budget of 8")


@dataclass(frozen=True)
class FailingPass(ModulePass):
    """Reports a failure the xDSL way."""

    name = "test-fail"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise PassFailedException("could not do it")


@dataclass(frozen=True)
class BuggyPass(ModulePass):
    """Has a bug."""

    name = "test-bug"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise RuntimeError("boom")


@dataclass(frozen=True)
class InvariantPass(ModulePass):
    """Finds one of its invariants broken (a bug in tdsl, reported as a TdslIRError)."""

    name = "test-invariant"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise internal_error("test-invariant: a group without its plan", op=op)


@dataclass(frozen=True)
class BrokenFrontend:
    """A frontend that rejects every input with a located error."""

    name = "broken"

    @classmethod
    def from_spec(cls, spec: object) -> BrokenFrontend:
        return cls()

    def parse(self, ctx: Context, input: object, input_name: str) -> ModuleOp:
        location = SourceLocation(input_name, 1, 5, 3, "def oops")
        raise TdslSyntaxError("unexpected `oops`", location)


class TestMain(TdslOptMain):
    """``tdsl-opt`` with the test passes above registered."""

    __test__ = False

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for pass_class in (
            BreakReturnPass,
            RewireAddPass,
            BudgetPass,
            FailingPass,
            BuggyPass,
            InvariantPass,
        ):
            self.register_pass(pass_class.name, _factory(pass_class))

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["broken"] = lambda: BrokenFrontend  # pyright: ignore[reportArgumentType]


def _factory(pass_class: type[ModulePass]) -> types.FunctionType:
    def factory() -> type[ModulePass]:
        return pass_class

    return factory  # pyright: ignore[reportReturnType]


def test_pass_output_that_does_not_verify_points_at_the_parsed_op(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        "in.mlir",
        GOOD.replace("%b: tensor<8xf32>", "%b: tensor<8xf32>, %c: tensor<5xf32>"),
    )
    outcome = run_main(capsys, [path, "--test-rewire-add"], TestMain)
    lines = outcome.err.splitlines()
    assert outcome.code == 1
    assert lines[0].startswith(f"{path}:4:8: error: 'tensordsl.add' op ")
    assert lines[3] == "note: the IR produced by pass 'test-rewire-add' does not verify"


def test_new_op_that_does_not_verify_points_at_its_parent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    outcome = run_main(capsys, [path, "--canonicalize", "--test-break-return"], TestMain)
    lines = outcome.err.splitlines()
    assert outcome.code == 1
    assert lines[0].startswith(f"{path}:1:1: error: 'func.return' op ")
    assert lines[2] == "^" * len("func.func")
    assert "note: the IR produced by pass 'test-break-return' does not verify" in lines
    assert "note: in the body of this 'func.func'; the failing operation is:" in lines
    assert '"func.return"() : () -> ()' in lines


def test_tdsl_error_from_a_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    outcome = run_main(capsys, [path, "--test-budget"], TestMain)
    assert_clean_error(outcome, "error: the group needs 64 elements, more than the budget of 8")


def test_tdsl_error_is_a_diagnostic_under_verify_diagnostics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    outcome = run_main(capsys, [path, "--test-budget", "--verify-diagnostics"], TestMain)
    assert outcome.code == 0
    assert outcome.out == "error: the group needs 64 elements, more than the budget of 8\n"


def test_failed_pass_names_the_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    outcome = run_main(capsys, [path, "--cse", "-p", "test-fail"], TestMain)
    assert_clean_error(outcome, "error: in pass 'test-fail': could not do it")


def test_frontend_tdsl_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    outcome = run_main(capsys, [path, "-f", "broken"], TestMain)
    assert_clean_error(outcome, f"{path}:1:5: error: unexpected `oops`")
    assert outcome.err.splitlines()[1:] == ["def oops", "    ^^^"]


def test_internal_error_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    outcome = run_main(capsys, [path, "--test-bug"], TestMain)
    assert outcome.code == 2
    assert outcome.err == (
        "internal error: RuntimeError: boom (set TDSL_DEBUG=1 for a traceback)\n"
    )


def test_a_broken_invariant_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A TdslIRError saying "internal error" is a bug in tdsl too: exit status 2, as the
    docs say (it was 1, as for an error in the input; found by fuzzing the driver)."""
    path = write(tmp_path, "in.mlir", GOOD)
    outcome = run_main(capsys, [path, "-p", "test-invariant"], TestMain)
    assert outcome.code == 2
    assert "internal error: test-invariant: a group without its plan" in outcome.err


def test_tdsl_debug_lets_the_traceback_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TDSL_DEBUG", "1")
    path = write(tmp_path, "in.mlir", GOOD)
    with pytest.raises(RuntimeError, match="boom"):
        run_main(capsys, [path, "--test-bug"], TestMain)


def test_registering_tdsl_twice_is_harmless() -> None:
    # The entry point already put tdsl in the multiverse; the overrides must not
    # register it again.
    tool = TdslOptMain(args=["--expr", "A", "--shape", "A=2xf32"])
    assert "tensordsl" in tool.ctx.registered_dialect_names
    assert "tdsl-fuse" in tool.available_passes
    assert "numpy" in tool.available_targets
    assert "tdsl" in tool.available_frontends


TWO_RESULTS = "def k(a: f32[4]):\n    return relu(a), exp(a)\n"


def test_convert_to_llvm_of_two_results_is_a_located_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Tensor-level IR given to tdsl-convert-to-llvm: exit 1 at the function, saying
    which passes come first (it was an internal ValueError, exit 2, for two results)."""
    path = write(tmp_path, "two.tdsl", TWO_RESULTS)
    outcome = run_main(capsys, [path, "--convert-to-llvm"])
    assert outcome.code == 1, outcome.err
    assert outcome.err.startswith(f"{path}:1:1: error: tdsl-convert-to-llvm lowers loops-stage IR")
    assert "tdsl-lower-to-loops before it" in outcome.err
    assert "internal error" not in outcome.err and "Traceback" not in outcome.err
    # after the passes it names, both results are pointer arguments
    lowered = run_main(capsys, [path, "--fuse", "--tile", "--lower-to-loops", "--convert-to-llvm"])
    assert lowered.code == 0, lowered.err
    assert "llvm.func @k(%a: !llvm.ptr, %out0: !llvm.ptr, %out1: !llvm.ptr)" in lowered.out


def test_split_tdsl_parts_report_the_lines_of_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An error in a later part of a ``.tdsl`` file split by ``--split-input-file`` is at
    its line in the file (it was at its line in the part), as for ``.mlir`` files."""
    text = "def main(x: f32[4]):\n    return x * 2.0\n// -----\ndef main(x: f32[4]):\n    return x[9]\n"
    outcome = run_main(capsys, [write(tmp_path, "parts.tdsl", text), "--split-input-file"])
    assert outcome.code == 1
    assert f"{tmp_path / 'parts.tdsl'}:5:14: error: index 9 is out of bounds" in outcome.err
    assert "func.func @main" in outcome.out  # (the first part's IR)


def test_a_shape_for_a_name_the_expression_does_not_use_is_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As the JIT's ``shapes=``: a misspelled ``--shape`` was taken without a word."""
    outcome = run_main(capsys, ["--expr", "x + 1", "--shape", "x=4xf32", "--shape", "y=4xf32"])
    assert_clean_error(
        outcome, "error: --shape names `y`, which the expression does not use (its inputs: `x`)"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--fuse=memory-budget=abc"],
            "option 'memory-budget' of pass 'tdsl-fuse' takes an integer, not `abc`",
        ),
        (
            ["--fuse=memory-budget=1e6"],
            "option 'memory-budget' of pass 'tdsl-fuse' takes an integer, not `1e6`",
        ),
        (
            ["-t", "numpy{threads=two}"],
            "option 'threads' of target 'numpy' takes an integer, not `two`",
        ),
    ],
)
def test_an_integer_option_given_something_else_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], message: str
) -> None:
    """(xDSL's message: "Incompatible types: given ('abc',), expected <class 'int'>".)"""
    outcome = run_main(capsys, [write(tmp_path, "in.mlir", GOOD), *flags])
    assert_clean_error(outcome, f"error: {message}")
    if "1e6" in message:
        assert "note: write 1000000" in outcome.err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["-p", "tdsl-convert-to-llvm{noalias=maybe}"],
            "option 'noalias' of pass 'tdsl-convert-to-llvm' takes true or false, not `maybe`",
        ),
        (
            ["--tile=memory-budget=4,4"],
            "option 'memory-budget' of pass 'tdsl-tile' takes one integer, not `4, 4`",
        ),
        (
            ["-p", "tdsl-tile{tile-sizes=inf}"],
            "option 'tile-sizes' of pass 'tdsl-tile' takes integers (`1,2`), not `inf`",
        ),
        (
            ["-t", "numpy{threads=4,4}"],
            "option 'threads' of target 'numpy' takes one integer, not `4, 4`",
        ),
    ],
)
def test_an_option_of_the_wrong_type_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], message: str
) -> None:
    """(xDSL's message: "invalid pass options: Incompatible types: given (4, 4), expected
    int | None", naming neither the pass nor the option.)"""
    outcome = run_main(capsys, [write(tmp_path, "in.mlir", GOOD), *flags])
    assert_clean_error(outcome, f"error: {message}")


def test_an_empty_chunk_is_an_empty_module(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two separators in a row (or a chunk of comments): an empty module, as mlir-opt reads
    it ("Could not parse entire input!" at a blank line, exit 1; found by fuzzing)."""
    path = write(tmp_path, "parts.mlir", f"{GOOD}// -----\n// -----\n// a note\n// -----\n{GOOD}")
    outcome = run_main(capsys, [path, "--split-input-file"])
    assert outcome.code == 0, outcome.err
    assert outcome.out.count("builtin.module {\n}\n") == 2
    assert outcome.out.count("func.func @main") == 2
