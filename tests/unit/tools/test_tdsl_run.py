"""``tdsl-run``, in-process: arguments, results against NumPy, and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType, f32, i1

from tdsl.errors import TdslCallError
from tdsl.tools.diagnostics import DriverError
from tdsl.tools.tdsl_run import TdslRunMain, find_function, format_results, main, random_array

PROGRAM = """\
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = tensordsl.relu %a : tensor<2x3xf32>
  %1 = tensordsl.mul %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
func.func @other(%x: tensor<2xf64>) -> (tensor<2xf64>, tensor<2xf64>) {
  %0 = tensordsl.exp %x : tensor<2xf64>
  %1 = tensordsl.neg %x : tensor<2xf64>
  func.return %0, %1 : tensor<2xf64>, tensor<2xf64>
}
"""

A = "dense<[[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]> : tensor<2x3xf32>"
B = "dense<[0.5, 2.0, -1.0]> : tensor<3xf32>"


def run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    code = 0
    try:
        main(args)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def program(tmp_path: Path, text: str = PROGRAM, name: str = "prog.mlir") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def parse_results(out: str) -> list[np.ndarray]:
    """Read back the arrays printed by ``tdsl-run`` (each after its ``result #i`` line)."""
    arrays: list[np.ndarray] = []
    blocks = out.split("result #")[1:]
    for block in blocks:
        body = block.split("\n", 1)[1]
        rows = [
            [float(x) for x in line.replace("[", " ").replace("]", " ").split()]
            for line in body.strip().splitlines()
        ]
        arrays.append(np.array(rows).squeeze())
    return arrays


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (A, np.array([[1, -2, 3], [-4, 5, -6]], np.float32)),
        ("dense<1.5> : tensor<2x2xf64>", np.full((2, 2), 1.5)),
        ("dense<[0.25, -8.0]> : tensor<2xf16>", np.array([0.25, -8.0], np.float16)),
        ("dense<> : tensor<0x3xf32>", np.zeros((0, 3), np.float32)),
        ("dense<2.5> : tensor<f32>", np.array(2.5, np.float32)),
    ],
)
def test_arguments_reach_the_function_unchanged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, expected: np.ndarray
) -> None:
    type_text = text.split(" : ", 1)[1]
    identity = (
        f"func.func @main(%x: {type_text}) -> {type_text} {{\n  func.return %x : {type_text}\n}}\n"
    )
    code, out, err = run(capsys, [program(tmp_path, identity), "--args", text])
    assert code == 0, err
    assert out == f"result #0: {type_text}\n{np.array2string(expected, threshold=10_000)}\n"


@pytest.mark.parametrize(
    ("type_text", "args"),
    [
        ("tensor<2xi8>", ["--args", "dense<[1, 2]> : tensor<2xi8>"]),
        ("tensor<2xui16>", ["--random-args", "0"]),
        ("f32", ["--args", "2.5 : f32"]),
    ],
)
def test_only_float_tensors_can_be_passed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, type_text: str, args: list[str]
) -> None:
    # tdsl's ops and its interpreter compute on bool, f16, f32, f64, i32, i64, ui8 and
    # ui64 tensors only (the message left out the last two)
    identity = (
        f"func.func @main(%x: {type_text}) -> {type_text} {{\n  func.return %x : {type_text}\n}}\n"
    )
    code, out, err = run(capsys, [program(tmp_path, identity), *args])
    assert code == 1 and out == ""
    assert err.splitlines()[0] == (
        f"error: argument #0 of @main has type {type_text}; "
        "tdsl runs functions of bool, f16, f32, f64, i32, i64, ui8 and ui64 tensors"
    )


def test_index_tensors_can_be_passed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    gather = (
        "func.func @main(%w: tensor<3x2xf32>, %t: tensor<2xi64>) -> tensor<2x2xf32> {\n"
        "  %0 = tensordsl.take %w, %t axis 0 : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>\n"
        "  func.return %0 : tensor<2x2xf32>\n}\n"
    )
    args = "dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>, dense<[2, -3]> : tensor<2xi64>"
    code, out, err = run(capsys, [program(tmp_path, gather), "--args", args])
    assert code == 0, err
    assert out == "result #0: tensor<2x2xf32>\n[[5. 6.]\n [1. 2.]]\n"


def test_random_array_is_reproducible_and_typed() -> None:
    tensor = TensorType(f32, [3, 4])
    first = random_array(np.random.default_rng(7), tensor)
    second = random_array(np.random.default_rng(7), tensor)
    assert first.shape == (3, 4)
    assert first.dtype == np.float32
    np.testing.assert_array_equal(first, second)
    flags = random_array(np.random.default_rng(0), TensorType(i1, [5]))
    assert flags.dtype == np.bool_ and flags.shape == (5,)
    with pytest.raises(
        DriverError,
        match="makes bool, f16, f32, f64, i32, i64, ui8 or ui64 tensors, not tensor<5xi8>",
    ):
        random_array(np.random.default_rng(0), TensorType(IntegerType(8), [5]))


def test_find_function(tmp_path: Path) -> None:
    tool = TdslRunMain(args=[program(tmp_path)])
    chunks, ext = tool.prepare_input()
    module = tool.parse_chunk(chunks[0][0], ext)
    assert isinstance(module, ModuleOp)
    assert find_function(module, None).sym_name.data == "main"
    assert find_function(module, "other").sym_name.data == "other"
    with pytest.raises(
        TdslCallError, match=r"no function @nope in the module \(it defines @main, @other\)"
    ):
        find_function(module, "nope")


def test_format_results() -> None:
    text = format_results([np.array([1.0, 2.5], np.float32)], [TensorType(f32, [2])], 3)
    assert text == "result #0: tensor<2xf32>\n[1.  2.5]\n"


def test_runs_main_and_matches_numpy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, [program(tmp_path), "--args", f"{A}, {B}"])
    assert code == 0, err
    a = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    b = np.array([0.5, 2.0, -1.0], np.float32)
    assert out.startswith("result #0: tensor<2x3xf32>\n")
    (result,) = parse_results(out)
    np.testing.assert_allclose(result, np.maximum(a, 0) * b)


def test_several_results(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = [program(tmp_path), "--symbol", "other", "--args", "dense<[0.0, 1.0]> : tensor<2xf64>"]
    code, out, err = run(capsys, args)
    assert code == 0, err
    first, second = parse_results(out)
    np.testing.assert_allclose(first, np.exp([0.0, 1.0]), rtol=1e-5)
    np.testing.assert_allclose(second, [-0.0, -1.0])


def test_random_args_same_results_after_fusion_and_tiling(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = program(tmp_path)
    plain = run(capsys, [path, "--random-args", "3", "--print-args"])
    lowered = run(
        capsys, [path, "--random-args", "3", "--print-args", "--fuse", "--tile=memory-budget=3"]
    )
    assert plain[0] == lowered[0] == 0, plain[2] + lowered[2]
    assert plain[1] == lowered[1]
    assert plain[1].startswith("arg #0: tensor<2x3xf32>\n")


def test_tdsl_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = program(tmp_path, "def k(x: f32[3]):\n    return x * x\n", "k.tdsl")
    code, out, err = run(capsys, [path, "--args", "dense<[1.0, -2.0, 3.0]> : tensor<3xf32>"])
    assert code == 0, err
    (result,) = parse_results(out)
    np.testing.assert_allclose(result, [1.0, 4.0, 9.0])


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["--args", A], "error: @main takes 2 argument(s), 1 given"),
        (
            [],
            "error: @main takes 2 argument(s), 0 given (pass them with --args or --random-args SEED)",
        ),
        (
            ["--args", f"{A}, dense<1.0> : tensor<4xf32>"],
            "args:1:{col}: error: argument #1 of @main has type tensor<3xf32>, not tensor<4xf32>",
        ),
        (
            ["--args", f'{A}, "text"'],
            'args:1:{col}: error: cannot pass "text" as an argument: write dense<...> : tensor<...>',
        ),
        (
            ["--args", f"{A}, {B} junk"],
            "args:1:{end}: error: expected ',' or the end of the arguments",
        ),
        (["--args", "dense<[1.0> : tensor<1xf32>"], "args:1:11: error: ']' expected"),
        (  # xDSL checks the literal's range with a ValueError (was an internal error)
            ["--args", f"{A}, dense<99999999999999999999> : tensor<3xi32>"],
            "args:1:{col}: error: Integer value 99999999999999999999 is out of range for type "
            "i32 which supports values in the range [-2147483648, 4294967296)",
        ),
        (
            ["--symbol", "nope", "--random-args", "0"],
            "error: no function @nope in the module (it defines @main, @other)",
        ),
    ],
)
def test_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], first_line: str
) -> None:
    code, out, err = run(capsys, [program(tmp_path), *args])
    expected = first_line.format(col=len(A) + 3, end=len(A) + len(B) + 4)
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    assert err.splitlines()[0] == expected


def test_args_and_random_args_exclude_each_other(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, [program(tmp_path), "--args", A, "--random-args", "1"])
    assert code == 1  # a bad command line is a user error
    assert "not allowed with argument" in err


def test_convert_to_llvm_of_two_results_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "two.tdsl"
    path.write_text("def k(a: f32[4]):\n    return relu(a), exp(a)\n")
    with pytest.raises(SystemExit) as exit_:
        main([str(path), "--random-args", "1", "-p", "tdsl-convert-to-llvm"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:1: error: tdsl-convert-to-llvm lowers loops-stage IR")
    assert "internal error" not in err


def test_plain_xdsl_run_runs_tdsl_ir(tmp_path: Path) -> None:
    # xDSL's own runner loads tdsl through the xdsl.universe entry point, which adds
    # tdsl's interpreter functions to it (it registers a fixed list of xDSL's own)
    import subprocess
    import sys

    path = tmp_path / "exp.mlir"
    path.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = tensordsl.exp %x : tensor<2xf32>\n"
        "  %1 = tensordsl.softmax %0 : tensor<2xf32>\n"
        "  func.return %1 : tensor<2xf32>\n"
        "}\n"
    )
    runner = Path(sys.executable).parent / "xdsl-run"
    done = subprocess.run(
        [str(runner), str(path), "--verbose", "--args", "dense<[0.0, 1.0]> : tensor<2xf32>"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    e = np.exp(np.array([0.0, 1.0], np.float32))
    want = np.exp(e - e.max()) / np.exp(e - e.max()).sum()
    got = np.array(done.stdout.split("[")[1].split("]")[0].split(), np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_random_args_too_large_to_make_are_a_driver_error() -> None:
    """(An internal ValueError, "array is too big", exit 2.)"""
    with pytest.raises(DriverError, match=r"out of memory: --random-args cannot make a tensor"):
        random_array(np.random.default_rng(0), TensorType(f32, [4_000_000_000] * 2))


def test_boolean_arguments_can_be_passed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """docs/tools.md says booleans go in ``--args`` as ``tensor<..xi1>``; they were refused
    ("tdsl tensors are f16, f32 or f64")."""
    text = "def main(b: bool[2], x: f32[2]):\n    return where(b, x, -x)\n"
    args = "dense<[true, false]> : tensor<2xi1>, dense<[1.0, 2.0]> : tensor<2xf32>"
    code, out, err = run(capsys, [program(tmp_path, text, "where.tdsl"), "--args", args])
    assert code == 0, err
    (got,) = parse_results(out)
    np.testing.assert_array_equal(got, np.array([1.0, -2.0], np.float32))


def test_llvm_stage_ir_says_what_tdsl_run_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """LLVM-stage IR said "no @main function (functions: none)" though it holds an
    ``llvm.func @main`` (found by fuzzing the driver)."""
    from tdsl.tools.tdsl_opt import main as opt_main

    source = tmp_path / "r.tdsl"
    source.write_text("def main(x: f32[4]):\n    return relu(x) + 1\n")
    lowered = tmp_path / "r.mlir"
    pipeline = "tdsl-fuse,tdsl-tile,tdsl-lower-to-loops,tdsl-convert-to-llvm"
    try:
        opt_main([str(source), "-p", pipeline, "-o", str(lowered)])
    except SystemExit as done:
        assert done.code in (0, None)
    capsys.readouterr()
    assert "llvm.func @main" in lowered.read_text()
    code, _, err = run(capsys, [str(lowered), "--random-args", "0"])
    assert code == 1
    assert "this is LLVM-stage IR, which tdsl-run does not interpret" in err


def test_hexadecimal_float_arguments_are_their_bits(capsys: pytest.CaptureFixture[str]) -> None:
    """``--args`` reads ``dense<0x7FC00000>`` as the IR does, a nan (it read the integer's
    value, 2143289344.0; found by fuzzing)."""
    code, out, _ = run(
        capsys,
        [
            "--expr",
            "a + 1",
            "--shape",
            "a=3xf16",
            "--args",
            "dense<[0x3C00, 0x0, 0x7E00]> : tensor<3xf16>",
        ],
    )
    assert code == 0 and out.splitlines()[-1] == "[ 2.  1. nan]"
    code, _, err = run(
        capsys, ["--expr", "a", "--shape", "a=2xf32", "--args", "dense<-0x1> : tensor<2xf32>"]
    )
    assert (
        code == 1 and "args:1:7: error: a hexadecimal float literal gives the float's bits" in err
    )
