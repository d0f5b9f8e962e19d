"""The JIT runs the pipeline ``tdsl-opt`` runs: same passes, same options, same Python."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tdsl.jit import JITTensorKernel
from tdsl.pipeline import pipeline_spec, target_spec
from tdsl.tools.tdsl_opt import main as tdsl_opt

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
        "tdsl-fuse{memory-budget=1000000},tdsl-tile{memory-budget=1000000}"
    )
    assert pipeline_spec(4096, 16, (8, 4)) == (
        "tdsl-fuse{memory-budget=4096},tdsl-tile{memory-budget=4096 tile-size=16 tile-sizes=8,4}"
    )
    assert target_spec(2) == "numpy{threads=2}"
    fn = JITTensorKernel(memory_budget=4096, tile_size=16, threads=1).compile(MLP)
    assert fn.pipeline == pipeline_spec(4096, 16)
    assert fn.target == "numpy{threads=1}"


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
    fn = JITTensorKernel(**options).compile(MLP, filename=str(path))
    printed = run_tdsl_opt(capsys, [str(path), "-p", fn.pipeline, "-t", fn.target])
    assert printed == fn.source


def test_tdsl_opt_prints_the_jit_source_of_an_expression(
    capsys: pytest.CaptureFixture[str],
) -> None:
    expr = "matmul(A, relu(B)) + softmax(C)"
    fn = JITTensorKernel(memory_budget=300, threads=2).compile(
        expr, {"A": (40, 16), "B": (16, 24), "C": (40, 24)}, "f32"
    )
    shapes = ["--shape", "A=40x16xf32", "--shape", "B=16x24xf32", "--shape", "C=40x24xf32"]
    printed = run_tdsl_opt(capsys, ["--expr", expr, *shapes, "-p", fn.pipeline, "-t", fn.target])
    assert printed == fn.source
    assert len(fn.groups) > 1  # the budget split something: the options reached the passes
