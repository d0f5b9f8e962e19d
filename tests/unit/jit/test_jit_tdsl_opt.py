"""The JIT runs the pipeline ``tdsl-opt`` runs: same passes, same options, same Python."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tdsl.jit import JITTensorKernel
from tdsl.pipeline import pipeline_spec, target_spec
from tdsl.tools.tdsl_opt import main as tdsl_opt

# every test names its target: the folder's default target (``jit_target``) takes one
# value here, not both, whose two runs were the same
pytestmark = pytest.mark.parametrize("jit_target", ["numpy"], indirect=True)

MLP = textwrap.dedent(
    """\
    def mlp(x: f32[64, 32], w: f32[32, 48], b: f32[48], c: f32[64, 48]):
        h = relu(x @ w + b)
        return softmax(h) * c - sum(h, axis=1, keepdims=true), h
    """
)


def run_tdsl_opt(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    try:
        tdsl_opt(args)
    except SystemExit as exit_:  # pragma: no cover - reported below
        pytest.fail(f"tdsl-opt exited with {exit_.code}: {capsys.readouterr().err}")
    return capsys.readouterr().out


def test_pipeline_spec_is_what_a_user_types() -> None:
    assert pipeline_spec(1_000_000) == (
        "canonicalize,tdsl-fuse{memory-budget=1000000},tdsl-tile{memory-budget=1000000}"
    )
    assert pipeline_spec(4096, 16, (8, 4)) == (
        "canonicalize,tdsl-fuse{memory-budget=4096},tdsl-tile{memory-budget=4096 tile-size=16 tile-sizes=8,4}"
    )
    assert target_spec(2) == "numpy{threads=2}"
    fn = JITTensorKernel(memory_budget=4096, tile_size=16, threads=1, target="numpy").compile(MLP)
    assert fn.pipeline == pipeline_spec(4096, 16)
    assert fn.target_spec == "numpy{threads=1}"


@pytest.mark.parametrize(
    "options",
    [
        {"threads": 1},
        {"threads": 2},
        {"memory_budget": 512, "threads": 1},
        {"memory_budget": 2048, "tile_size": 8, "threads": 2},
        {"tile_sizes": (16, 48, 32), "threads": 1},
    ],
)
def test_tdsl_opt_prints_the_jit_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, options: dict[str, Any]
) -> None:
    path = tmp_path / "mlp.tdsl"
    path.write_text(MLP)
    fn = JITTensorKernel(**options, target="numpy").compile(MLP, filename=str(path))
    printed = run_tdsl_opt(capsys, [str(path), "-p", fn.pipeline, "-t", fn.target_spec])
    assert printed == fn.source


def test_tdsl_opt_prints_the_jit_source_of_an_expression(
    capsys: pytest.CaptureFixture[str],
) -> None:
    expr = "matmul(A, relu(B)) + softmax(C)"
    fn = JITTensorKernel(memory_budget=300, threads=2, target="numpy").compile(
        expr, {"A": (40, 16), "B": (16, 24), "C": (40, 24)}, "f32"
    )
    shapes = ["--shape", "A=40x16xf32", "--shape", "B=16x24xf32", "--shape", "C=40x24xf32"]
    printed = run_tdsl_opt(
        capsys, ["--expr", expr, *shapes, "-p", fn.pipeline, "-t", fn.target_spec]
    )
    assert printed == fn.source
    assert len(fn.groups) > 1  # the budget split something: the options reached the passes


def test_tdsl_opt_prints_the_llvm_ir_of_a_native_kernel(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A native kernel's ``pipeline`` and ``target_spec`` reproduce its LLVM IR, but for
    the BLAS shims the runtime puts where the matmul functions are declared."""
    from tdsl.runtime.compile import native_unavailable_reason
    from tdsl.runtime.native import _DECLARE  # pyright: ignore[reportPrivateUsage]

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    path = tmp_path / "mlp.tdsl"
    path.write_text(MLP)
    fn = JITTensorKernel(memory_budget=2048, threads=1, target="native").compile(
        MLP, filename=str(path)
    )
    assert fn.target == "native" and fn.target_spec == "llvm"
    assert fn.pipeline.endswith(",tdsl-lower-to-loops,tdsl-convert-to-llvm{noalias=true}")
    printed = run_tdsl_opt(capsys, [str(path), "-p", fn.pipeline, "-t", fn.target_spec])
    assert fn.llvm_ir is not None
    assert fn.llvm_ir.startswith(_DECLARE.sub("", printed).rstrip("\n"))


def test_a_native_matmul_calls_blas_through_a_shim(tmp_path: Path) -> None:
    from tdsl.runtime.compile import native_unavailable_reason
    from tdsl.runtime.native import _DECLARE  # pyright: ignore[reportPrivateUsage]

    if native_unavailable_reason() is not None:
        pytest.skip(str(native_unavailable_reason()))
    fn = JITTensorKernel(target="native", threads=1).compile(
        "relu(x @ w + b)", {"x": (64, 32), "w": (32, 48), "b": (48,)}, "f32"
    )
    assert "func.func private @tdsl_matmul_f32_64x32x48" in fn.ir["loops"]
    assert fn.llvm_ir is not None
    assert not _DECLARE.findall(fn.llvm_ir)
    assert "define" in fn.llvm_ir and "tdsl_matmul_f32_64x32x48" in fn.llvm_ir
