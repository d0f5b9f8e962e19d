"""``-t dot`` and ``CompiledKernel.to_dot``: one Graphviz text of the fusion plan."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tdsl
from tdsl.backend.dot import render_dot
from tdsl.frontend.snippets import source_snippets
from tdsl.tools.tdsl_opt import main

WALK = """\
def main(A: f32[8, 16], B: f32[16, 8], C: f32[8, 8]):
    return matmul(A, relu(B)) + softmax(C)
"""

RECOMPUTE = """\
def main(A: f32[4, 1000]):
    e = exp(A)
    return (e - max(e, axis=1, keepdims=true)) / sum(e, axis=1, keepdims=true)
"""
"""Rows cut into tiles: ``e`` is needed by the pass that reduces it and by the pass after."""


def opt(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    try:
        main(args)
    except SystemExit as exit_:
        assert exit_.code in (0, None), capsys.readouterr().err
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def well_formed(dot: str) -> None:
    """Balanced braces, and every edge joins declared nodes."""
    assert dot.startswith("digraph tdsl {") and dot.endswith("}\n")
    assert dot.count("{") == dot.count("}")
    declared = set(re.findall(r"^\s+(\w+) \[label=", dot, re.MULTILINE))
    for a, b in re.findall(r"^\s+(\w+) -> (\w+)", dot, re.MULTILINE):
        assert a in declared and b in declared, (a, b)


def clusters(dot: str) -> dict[str, list[str]]:
    """Group name -> the labels of the op nodes in its cluster."""
    found: dict[str, list[str]] = {}
    for body in re.findall(r"subgraph cluster_f0_g\d+ \{(.*?)\n    \}", dot, re.DOTALL):
        label = re.search(r'label="(\w+):', body)
        assert label is not None
        found[label.group(1)] = re.findall(r'\w+ \[label="([^"\\]*)', body)
    return found


def test_walkthrough_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "walk.tdsl"
    path.write_text(WALK)
    dot = opt(
        capsys, [str(path), "--fuse=memory-budget=192", "--tile", "-t", "dot{memory-budget=192}"]
    )
    well_formed(dot)
    # ops labelled with their source text, one cluster per group
    assert clusters(dot) == {
        "g0": ["relu(B)"],
        "g1": ["matmul(A, relu(B))", "softmax(C)", "matmul(A, relu(B)) + softmax(C)"],
    }
    # each cluster says how it is tiled, as the IR records it (192 elements: the
    # 128 of relu(B) held between the groups, and 64 for the tiles' scratch)
    assert "g0: 1 op\\ntiled in the input as g0 tiles [16, 8] with 0 elements of scratch" in dot
    assert "tiled in the input as g1 tiles [4, 16, 8] with 36 elements of scratch" in dot
    # the edge left unfused: materialized, with the reason
    (edge,) = [line for line in dot.split("\n") if "materialized" in line and "->" in line]
    assert "f32[16, 8] (128 elements)" in edge
    assert "tensordsl.matmul operand 1 must be materialized" in edge
    assert 'label="result f32[8, 8]"' in dot


def test_untiled_input_shows_the_tiles_tdsl_tile_would_choose(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "walk.tdsl"
    path.write_text(WALK)
    dot = opt(capsys, [str(path), "-t", "dot"])
    well_formed(dot)
    assert "tiles [8, 16, 8] with 72 elements of scratch" in dot


def test_mlir_input_is_labelled_with_its_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "in.mlir"
    path.write_text(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = tensordsl.exp %a : tensor<4xf32>\n"
        "  func.return %0 : tensor<4xf32>\n}\n"
    )
    dot = opt(capsys, [str(path), "-t", "dot"])
    assert 'label="%0 = tensordsl.exp %a\\ntensordsl.exp → f32[4]"' in dot


def test_recomputed_ops_are_marked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "recompute.tdsl"
    path.write_text(RECOMPUTE)
    args = [str(path), "--fuse=memory-budget=100", "--tile"]
    dot = opt(capsys, [*args, "-t", "dot{memory-budget=100}"])
    well_formed(dot)
    marked = re.findall(r'label="([^"]*recomputed in a later pass)", style="rounded,dashed"', dot)
    assert marked and all(m.startswith("exp(A)\\ntensordsl.exp") for m in marked)


def test_compiled_kernel_to_dot_is_the_target_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "recompute.tdsl"
    path.write_text(RECOMPUTE)
    kernel = tdsl.compile(
        RECOMPUTE, memory_budget=100, threads=1, target="numpy", filename=str(path)
    )
    dot = kernel.to_dot()
    command = [str(path), "-p", kernel.pipeline]
    assert opt(capsys, [*command, "-t", kernel.dot_target]) == dot
    assert "recomputed in a later pass" in dot


def test_render_dot_reads_the_source_file(tmp_path: Path) -> None:
    path = tmp_path / "walk.tdsl"
    path.write_text(WALK)
    module = tdsl.to_tensordsl(WALK, filename=str(path))
    assert "softmax(C)\\ntensordsl.softmax" in render_dot(module)
    assert "softmax(C)" not in render_dot(tdsl.to_tensordsl(WALK, filename="gone.tdsl"))


def test_source_snippets() -> None:
    text = "def f(x: f32[4]):\n    y = -x\n    return relu(y * 2) @ x\n"
    snippets = source_snippets(text)
    assert snippets[(2, 9)] == "-x"
    assert snippets[(3, 12)] == "relu(y * 2)"
    assert snippets[(3, 19)] == "y * 2"
    assert snippets[(3, 24)] == "relu(y * 2) @ x"
    assert source_snippets("%0 = tensordsl.exp %a") == {}
