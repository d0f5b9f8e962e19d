"""``tdsl-opt``'s mlir-opt and xdsl-opt habits, run in-process: standard input as ``-``,
IR dumps and timings on stderr, anchored pipelines, the short help, xDSL's targets
on tdsl IR, and ``--explain-fusion`` / ``-t dot`` on tiled IR."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from tdsl.tools.diagnostics import DriverError
from tdsl.tools.opt_args import unanchor_pipeline
from tdsl.tools.tdsl_opt import main
from tdsl.universe import TDSL_OPT_TARGETS, TDSL_PASSES

GOOD = """\
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
"""

WALK = """\
def main(A: f32[8, 16], B: f32[16, 8], C: f32[8, 8]):
    return matmul(A, relu(B)) + softmax(C)
"""


def run(
    capsys: pytest.CaptureFixture[str], args: list[str], stdin: str | None = None
) -> tuple[int, str, str]:
    if stdin is not None:
        wrapper = io.TextIOWrapper(io.BytesIO(stdin.encode()))
        old = sys.stdin
        sys.stdin = wrapper
    code = 0
    try:
        main(args)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        if stdin is not None:
            sys.stdin = old  # pyright: ignore[reportPossiblyUnboundVariable]
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# --------------------------------------------------------------------------- input


def test_dash_reads_standard_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, ["-", "--fuse"], stdin=GOOD)
    assert (code, err) == (0, "")
    assert 'kernel.fused(%a, %b) group "g0"' in out


def test_dash_with_the_tdsl_frontend(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, ["-", "-f", "tdsl"], stdin=WALK)
    assert code == 0
    assert "tensordsl.softmax %C" in out


def test_dash_errors_name_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, ["-"], stdin=GOOD.replace("%0, %b", "%0, %x"))
    assert code == 1
    assert err.startswith("stdin:3:")


# --------------------------------------------------------------------------- IR dumps


def test_print_ir_after_all_goes_to_stderr_after_every_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(
        capsys, [write(tmp_path, "in.mlir", GOOD), "--fuse", "--tile", "--print-ir-after-all"]
    )
    assert code == 0
    assert "IR Dump" not in out
    headers = re.findall(r"// -----// IR Dump After (\S+) //----- //", err)
    assert headers == ["tdsl-fuse", "tdsl-tile"]  # the last pass too
    after_tile = err.split("IR Dump After tdsl-tile")[1]
    assert "kernel.tile" in after_tile
    assert out.strip() in after_tile  # the dump after the last pass is the output


def test_print_ir_after_picks_passes_and_repeats(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys,
        [
            write(tmp_path, "in.mlir", GOOD),
            "-p",
            "canonicalize,tdsl-fuse{memory-budget=64},cse,tdsl-tile",
            "--print-ir-after=fuse",
            "--print-ir-after",
            "cse",
        ],
    )
    assert code == 0
    headers = re.findall(r"IR Dump After (\S+) //", err)
    assert headers == ["tdsl-fuse{memory-budget=64}", "cse"]


def test_print_between_passes_is_print_ir_after_all(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(
        capsys, [write(tmp_path, "in.mlir", GOOD), "--fuse", "--print-between-passes"]
    )
    assert code == 0
    assert "IR after" not in out
    assert "IR Dump After tdsl-fuse" in err


def test_print_ir_after_unknown_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, [write(tmp_path, "in.mlir", GOOD), "--print-ir-after=fsue"])
    assert code == 1
    assert err.startswith("error: --print-ir-after: unknown pass 'fsue'; did you mean 'fuse'?")


def test_print_ir_after_a_pass_the_pipeline_does_not_run_warns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """It printed nothing, and said nothing (found by fuzzing the CLI)."""
    path = write(tmp_path, "in.mlir", GOOD)
    code, out, err = run(
        capsys, [path, "--fuse", "--print-ir-after=tile", "--print-ir-before=fuse"]
    )
    assert code == 0 and "kernel.fused" in out
    warning = (
        "warning: --print-ir-after names 'tdsl-tile', which the pipeline does not run (it "
        "runs: tdsl-fuse)\n"
    )
    assert err.startswith(warning + "// -----// IR Dump Before tdsl-fuse //----- //\n")
    assert err.count("warning") == 1  # (the pass it runs: no warning)


# --------------------------------------------------------------------------- timing


def test_time_passes_reports_every_phase_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(
        capsys,
        [write(tmp_path, "walk.tdsl", WALK), "--fuse", "--tile", "-t", "numpy", "--time-passes"],
    )
    assert code == 0
    assert "Execution time report" not in out
    assert out.startswith('"""NumPy code generated by tdsl')
    rows = re.findall(r"^\s+(\d+\.\d{4}) \(\s*([\d.]+)%\)  (.+)$", err, re.MULTILINE)
    names = [name for _, _, name in rows]
    assert names == [
        "input",
        "frontend (tdsl)",
        "verifier",
        "tdsl-fuse",
        "tdsl-tile",
        "target (numpy)",
        "Total",
    ]
    seconds = [float(s) for s, _, _ in rows]
    assert seconds[-1] == pytest.approx(sum(seconds[:-1]), abs=1e-3)
    assert float(rows[-1][1]) == 100.0
    total = re.search(r"Total Execution Time: (\d+\.\d+) seconds", err)
    assert total is not None and float(total.group(1)) == seconds[-1]


def test_time_passes_numbers_a_pass_run_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, [write(tmp_path, "in.mlir", GOOD), "-p", "cse,cse", "--time-passes"])
    assert code == 0
    assert "  cse\n" in err and "  cse (run 2)\n" in err


# --------------------------------------------------------------------------- pipelines


def test_anchored_pass_pipeline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    anchored = run(
        capsys,
        [path, "--pass-pipeline=builtin.module(tdsl-fuse{memory-budget=64}, tdsl-tile)"],
    )
    plain = run(capsys, [path, "-p", "tdsl-fuse{memory-budget=64},tdsl-tile"])
    assert anchored == plain
    assert anchored[0] == 0 and "kernel.tile" in anchored[1]


def test_pass_flag_options_in_braces_after_equals_and_empty_values(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--fuse={memory-budget=64}`` is ``--fuse{memory-budget=64}`` (it was "unknown
    option '--fuse'; did you mean '--fuse'?"), and an option without its value is named
    as the user wrote it (it was xDSL's advice to quote a string, about pipeline text the
    user never typed; both found by fuzzing the CLI)."""
    path = write(tmp_path, "in.mlir", GOOD)
    braced = run(capsys, [path, "--fuse={memory-budget=64}"])
    assert braced == run(capsys, [path, "--fuse{memory-budget=64}"])
    assert braced[0] == 0 and "budget 64" in braced[1]
    code, _, err = run(capsys, [path, "--fuse=memory-budget=", "--tile"])
    assert code == 1
    assert "error: option `memory-budget` of `--fuse` has no value: write" in err
    assert "Traceback" not in err and "quotes" not in err


def test_pass_pipeline_keeps_command_line_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys,
        [
            write(tmp_path, "in.mlir", GOOD),
            "--canonicalize",
            "--pass-pipeline",
            "builtin.module(tdsl-fuse)",
            "-p",
            "cse",
            "--print-ir-after-all",
        ],
    )
    assert code == 0
    assert re.findall(r"IR Dump After (\S+) //", err) == ["canonicalize", "tdsl-fuse", "cse"]


def test_unanchor_pipeline() -> None:
    assert unanchor_pipeline("builtin.module(a,b{x=1 y=2,3})") == "a,b{x=1 y=2,3}"
    assert unanchor_pipeline(" builtin.module( a ) ") == "a"
    assert unanchor_pipeline("a,b") == "a,b"
    assert unanchor_pipeline("builtin.module()") == ""
    with pytest.raises(DriverError, match=r"nested pipeline 'func\.func"):
        unanchor_pipeline("builtin.module(func.func(cse))")
    with pytest.raises(DriverError, match=r"expected 'builtin\.module"):
        unanchor_pipeline("func.func(cse)")


# --------------------------------------------------------------------------- help


def test_help_shows_tdsl_first_and_points_to_help_all(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, ["--help"])
    assert (code, err) == (0, "")
    assert out.startswith("usage: tdsl-opt [options] [input_file | -]")
    for name in TDSL_PASSES:  # every tdsl pass, read from the universe
        assert f"--{name}" in out
    for name in ("mlir", *TDSL_OPT_TARGETS):
        assert re.search(rf"^  {name} ", out, re.MULTILINE), name
    assert "memory-budget=1000000" in out  # a pass's options
    assert "--help-all" in out.rsplit("\n\n", 1)[-1]
    assert "convert-arith-to-riscv" not in out  # xDSL's passes are in --help-all only
    assert "--print-no-properties" not in out


def test_help_all_lists_xdsl_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, ["--help-all"])
    assert code == 0
    assert "convert-arith-to-riscv" in out
    assert "--print-no-properties" in out


# --------------------------------------------------------------------------- targets


@pytest.mark.parametrize("target", ["x86-asm", "riscv-asm", "arm-asm", "mps", "wgsl", "wat"])
def test_xdsl_targets_refuse_tdsl_ir_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    code, out, err = run(capsys, [write(tmp_path, "in.mlir", GOOD), "-t", target])
    assert (code, out) == (1, "")
    assert err == (
        f"error: target '{target}' cannot take tdsl IR ('tensordsl.relu' at "
        f"{tmp_path / 'in.mlir'}:2:8); tdsl's targets are mlir, {', '.join(TDSL_OPT_TARGETS)}\n"
    )


@pytest.mark.parametrize(("target", "why"), [("x86-asm", "failed with"), ("wgsl", "nothing")])
def test_xdsl_targets_on_lowered_ir_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str, why: str
) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    code, out, err = run(capsys, [path, "--fuse", "--tile", "--lower-to-loops", "-t", target])
    assert (code, out) == (1, "")
    assert err.startswith(f"error: target '{target}' ")
    assert why in err and err.count("\n") == 1


# --------------------------------------------------------------------------- tiled IR


def test_explain_fusion_on_tiled_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, tiled, _ = run(capsys, [write(tmp_path, "walk.tdsl", WALK), "--fuse", "--tile"])
    assert code == 0
    code, _, err = run(capsys, [write(tmp_path, "tiled.mlir", tiled), "--explain-fusion"])
    assert code == 0
    assert "group g0 in @main: 1 op (tensordsl.relu)" in err
    assert "tiled in the input as g0 tiles [16, 8] with 0 elements of scratch" in err
    assert "group g1 in @main: 3 ops (tensordsl.matmul, tensordsl.softmax, tensordsl.add)" in err
    assert "not fused: %0 (tensordsl.relu, group g0) -> operand 1 of tensordsl.matmul" in err
    assert "remark: @main: 2 fusion groups" in err


# --------------------------------------------------------------------------- start-up


def test_an_empty_module_loads_no_dialect_nor_numpy(tmp_path: Path) -> None:
    """What makes tdsl-opt start as fast as xdsl-opt: a run imports what it uses."""
    import subprocess

    path = write(tmp_path, "empty.mlir", "builtin.module {}\n")
    script = (
        "import sys\n"
        "from tdsl.tools.tdsl_opt import main\n"
        "try:\n"
        f"    main([{path!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('numpy', 'tdsl.dialects', 'tdsl.transforms', 'tdsl.backend', 'tdsl.frontend', 'tdsl.jit')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.splitlines() == ["builtin.module {", "}", "", "[]"]


@pytest.mark.parametrize(
    ("flags", "before", "after"),
    [
        (["--print-ir-before-all"], ["tdsl-fuse", "tdsl-tile"], []),
        (["--mlir-print-ir-before-all"], ["tdsl-fuse", "tdsl-tile"], []),
        (["--print-ir-before", "tile"], ["tdsl-tile"], []),
        (["--mlir-print-ir-after-all"], [], ["tdsl-fuse", "tdsl-tile"]),
        (
            ["--mlir-print-ir-before-all", "--print-ir-after", "tdsl-fuse"],
            ["tdsl-fuse", "tdsl-tile"],
            ["tdsl-fuse"],
        ),
    ],
)
def test_mlir_opt_spellings_print_the_ir_before_and_after_passes(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    flags: list[str],
    before: list[str],
    after: list[str],
) -> None:
    code, out, err = run(capsys, [write(tmp_path, "in.mlir", GOOD), "--fuse", "--tile", *flags])
    assert code == 0 and "IR Dump" not in out
    assert re.findall(r"// -----// IR Dump Before (\S+) //----- //", err) == before
    assert re.findall(r"// -----// IR Dump After (\S+) //----- //", err) == after
    if before[:1] == ["tdsl-fuse"]:  # before tdsl-fuse: the input, with no group yet
        first = err.split("//----- //")[1].split("// -----//")[0]
        assert "tensordsl." in first and "kernel." not in first


def test_mlir_timing_and_dump_pass_pipeline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    code, _, err = run(capsys, [path, "--fuse", "--tile=tile-size=4", "--mlir-timing"])
    assert code == 0 and "Execution time report" in err and "tdsl-tile{tile-size=4}" in err
    code, _, err = run(capsys, [path, "--fuse", "--tile=tile-size=4", "--dump-pass-pipeline"])
    assert code == 0
    assert err.startswith("Pass Manager with 2 passes:\nbuiltin.module(tdsl-fuse,tdsl-tile{")
    assert "tile-size=4" in err.splitlines()[1]


def test_a_pass_pipeline_given_to_p_points_to_pass_pipeline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "in.mlir", GOOD)
    code, out, err = run(capsys, [path, "-p", "builtin.module(tdsl-fuse,tdsl-tile)"])
    assert code == 1 and not out and "Traceback" not in err
    assert err.splitlines() == [
        "error: -p takes a list of passes, not the MLIR pipeline "
        "'builtin.module(tdsl-fuse,tdsl-tile)'",
        "note: give it as --pass-pipeline='builtin.module(tdsl-fuse,tdsl-tile)', or as -p "
        "'tdsl-fuse,tdsl-tile'",
    ]


BAD_TILE = """\
func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensordsl.relu %a : tensor<4x8xf32>
  %1 = tensordsl.add %0, %a : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
"""


@pytest.mark.parametrize(
    ("annotation", "problems"),
    [
        ("  // expected-error@+1 {{operand}}\n", []),
        ("  // expected-error@below {{operand}}\n", []),
        (None, ["unexpected error"]),
        ("  // expected-error@+1 {{no such message}}\n", ["unexpected error", "was not produced"]),
        (
            "  // expected-error@+2 {{operand}}\n",
            ["unexpected error", "on line 5 was not produced"],
        ),
    ],
)
def test_verify_expected_errors_checks_mlir_opts_annotations(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    annotation: str | None,
    problems: list[str],
) -> None:
    lines = BAD_TILE.splitlines(keepends=True)
    text = "".join([*lines[:2], *([annotation] if annotation else []), *lines[2:]])
    path = write(tmp_path, "bad.mlir", text)
    code, _, err = run(capsys, [path, "--verify-expected-errors"])
    assert code == (1 if problems else 0)
    reported = err.strip().splitlines()
    assert len(reported) == len(problems)
    for line, problem in zip(reported, problems, strict=True):
        assert line.startswith(f"{path}:") and problem in line


def test_verify_expected_errors_wants_every_expectation_met(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = GOOD.replace("\n", "  // expected-error {{never}}\n", 1)
    code, out, err = run(capsys, [write(tmp_path, "good.mlir", text), "--verify-expected-errors"])
    assert code == 1 and "func.func" in out  # the output, as without the flag
    assert 'expected error "never" on line 1 was not produced' in err


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [
        ("// expected-error@+1 {{never closed\n", ":2:1: error: malformed annotation"),
        ("// expected-error@+x {{text}}\n", ":2:1: error: malformed annotation"),
        (
            "// expected-error@-99 {{text}}\n",
            ":2: error: the annotation expects an error on line -97",
        ),
    ],
)
def test_a_malformed_expectation_is_an_error_not_ignored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, annotation: str, problem: str
) -> None:
    # ignored, it let a test with a typo in its annotation pass (exit 0; found by fuzzing)
    lines = GOOD.splitlines(keepends=True)
    text = "".join([lines[0], annotation, *lines[1:]])
    path = write(tmp_path, "typo.mlir", text)
    code, _, err = run(capsys, [path, "--verify-expected-errors"])
    assert code == 1 and f"{path}{problem}" in err


def test_an_argparse_error_is_one_line_and_a_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``-f bogus`` printed about 20 lines of usage, most of them xdsl-opt's flags, before
    its error (found by fuzzing the driver)."""
    path = tmp_path / "in.tdsl"
    path.write_text("def main(x: f32[4]):\n    return x\n")
    code, out, err = run(capsys, ["-f", "bogus", str(path)])
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "tdsl-opt: error: argument -f/--frontend: invalid choice: 'bogus' (choose from tdsl, mlir)",
        "note: `tdsl-opt --help` lists the options",
    ]
