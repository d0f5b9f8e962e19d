"""Compiling tensordsl IR text (``JITTensorKernel.compile_ir``), re-typed for other shapes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tdsl.errors import TdslIRError, TdslTypeError
from tdsl.jit import JitOptions, JITTensorKernel

IR = """\
builtin.module {
  func.func @main(%x: tensor<4x6xf32>, %w: tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
    %0 = tensordsl.matmul %x, %w : (tensor<4x6xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
    %1 = tensordsl.softmax %0 : tensor<4x3xf32>
    %2 = tensordsl.constant dense<2.000000e+00> : tensor<f32>
    %3 = tensordsl.mul %x, %2 : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
    %4 = tensordsl.mean %3 axis = 1 : tensor<4x6xf32> -> tensor<4xf32>
    func.return %1, %4 : tensor<4x3xf32>, tensor<4xf32>
  }
}
"""


def reference(x: np.ndarray[Any, Any], w: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    h = x @ w
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), np.mean(x * 2, axis=1)


@pytest.mark.parametrize("shapes", [None, [(5, 7), (7, 2)], [(1, 1), (1, 9)], [(0, 3), (3, 4)]])
def test_ir_compiles_for_its_own_and_other_shapes(shapes: Any, matches: Any) -> None:
    jit = JITTensorKernel(memory_budget=16, threads=1)
    kernel = jit.compile_ir(IR, shapes)
    (m, k), (_, n) = shapes or [(4, 6), (6, 3)]
    assert [a.name for a in kernel.args] == ["x", "w"]
    assert kernel.results == (((m, n), np.dtype(np.float32)), ((m,), np.dtype(np.float32)))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    with np.errstate(invalid="ignore"):  # the mean of an empty row is nan
        want = reference(x, w)
        got = kernel(x, w)
    for g, r in zip(got, want, strict=True):
        matches(g, r)


def test_compile_ir_is_cached_on_text_shapes_and_options() -> None:
    jit = JITTensorKernel(threads=1)
    first = jit.compile_ir(IR, [(5, 7), (7, 2)])
    assert jit.compile_ir(IR, [[5, 7], (7, 2)]) is first
    assert jit.compile_ir(IR, [(5, 7), (7, 3)]) is not first
    other = jit.compile_ir(IR, [(5, 7), (7, 2)], options=JitOptions(memory_budget=64, threads=1))
    assert other is not first and other.options.memory_budget == 64
    assert jit.cache_info().misses == 3 and jit.cache_info().hits == 1


def test_unnamed_arguments_are_numbered() -> None:
    text = IR.replace("%x", "%10").replace("%w", "%11")  # numeric names: no name hints
    kernel = JITTensorKernel(threads=1).compile_ir(text)
    assert [a.name for a in kernel.args] == ["a0", "a1"]


I65_IR = """func.func @main(%a: tensor<4xi64>) -> tensor<4xi64> {
  %1 = "tensordsl.constant"() <{value = dense<1> : tensor<i65>}> : () -> tensor<i64>
  %2 = tensordsl.add %a, %1 : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  func.return %2 : tensor<4xi64>
}"""


@pytest.mark.parametrize(
    ("text", "shapes", "error", "message"),
    [
        ("builtin.module {", None, TdslIRError, "does not parse"),
        ("builtin.module {\n}", None, TdslIRError, "one func.func, got 0"),
        (IR, [(4, 6)], TdslTypeError, "1 shape(s) for the 2 argument(s) of @main"),
        (IR, [(4, 6), (5, 3)], TdslTypeError, "inner dimensions"),
        (
            IR,
            [(6,), (6, 3)],
            TdslTypeError,
            "@main for the shapes given (%x (6,), %w (6, 3)): 'tensordsl.mean' cannot take "
            "them: axis 1 is out of range for rank 1",
        ),
        # (xDSL cannot pack an i65 dense value: its parser raises NotImplementedError)
        (I65_IR, None, TdslIRError, "'tensordsl.constant' cannot be parsed: Format not"),
    ],
)
def test_bad_ir_and_shapes_are_tdsl_errors(
    text: str, shapes: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        JITTensorKernel(threads=1).compile_ir(text, shapes)


def test_ir_that_does_not_parse_is_a_located_error() -> None:
    """IR text that does not parse is an error at its place in the text, with its line
    and a caret (it was one line of xDSL's message, with no location)."""
    text = IR.replace("tensor<6x3xf32>", "tensor<6x3xf64>", 1)
    assert text != IR
    with pytest.raises(TdslIRError) as caught:
        JITTensorKernel(threads=1).compile_ir(text)
    location = caught.value.location
    assert location is not None and location.file == "<ir>"
    line = text.splitlines()[location.line - 1]
    assert location.source_line == line
    assert caught.value.message.startswith("the IR does not parse: ")
    assert "tensor<6x3xf64>" in caught.value.message or "tensor<6x3xf32>" in caught.value.message
    assert str(caught.value).startswith(f"<ir>:{location.line}:{location.column}: error: ")


FUSED_IR = """func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kernel.fused(%x, %y) group "g0" budget 1000000 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x_1: tensor<4xf32>, %y_1: tensor<4xf32>):
    %1 = tensordsl.exp %x_1 : tensor<4xf32>
    %2 = tensordsl.add %1, %y_1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    kernel.yield %2 : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}"""


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (  # an op at the top
            IR.replace("tensordsl.mean", "tensordsl.max").replace("axis = 1", "axis = 2"),
            None,
            "'tensordsl.max' op",
        ),
        (  # an op inside a group's body
            FUSED_IR.replace("%y: tensor<4xf32>", "%y: tensor<3xf32>")
            .replace("%y_1: tensor<4xf32>", "%y_1: tensor<3xf32>")
            .replace("(tensor<4xf32>, tensor<4xf32>)", "(tensor<4xf32>, tensor<3xf32>)"),
            5,
            "'tensordsl.add' op",
        ),
    ],
)
def test_ir_that_does_not_verify_is_a_located_error(
    text: str, line: int | None, message: str
) -> None:
    """IR text whose op does not verify is an error at that op's name, with its line and
    a caret, naming the op (it was xDSL's message alone, with no location)."""
    with pytest.raises(TdslIRError) as caught:
        JITTensorKernel(threads=1).compile_ir(text)
    location = caught.value.location
    assert location is not None and location.file == "<ir>"
    assert caught.value.message.startswith(f"the IR does not verify: {message}")
    name = message.split("'")[1]
    if line is not None:
        assert location.line == line
    assert location.source_line == text.splitlines()[location.line - 1]
    assert location.source_line[location.column - 1 :].startswith(name)


@pytest.mark.parametrize("stage", ["fused", "tiled"])
def test_fused_and_tiled_ir_compile_from_their_stage(stage: str, matches: Any) -> None:
    from tdsl.errors import TdslError

    jit = JITTensorKernel(memory_budget=16, threads=1)
    whole = jit.compile_ir(IR)
    assert list(whole.ir)[:4] == ["tensordsl", "canonical", "fused", "tiled"]
    kernel = jit.compile_ir(whole.ir[stage])
    # the passes that are left run: from tiled IR none, so the plan is the one given
    assert next(iter(kernel.ir)) == stage
    assert kernel.ir["tiled"] == whole.ir["tiled"]
    skipped = {"fused": 2, "tiled": 3}[stage]  # canonicalize and tdsl-fuse, then tdsl-tile
    assert kernel.pipeline == ",".join(whole.pipeline.split(",")[skipped:])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    for g, r in zip(kernel(x, w), reference(x, w), strict=True):
        matches(g, r)
    with pytest.raises(TdslError, match=rf"compiled from {stage} IR, fused already"):
        kernel.explain()
    with pytest.raises(TdslIRError, match=f"shapes re-type tensordsl IR, and this IR is {stage}"):
        jit.compile_ir(whole.ir[stage], [(5, 7), (7, 2)])


def test_ir_mixing_groups_and_loose_ops_is_refused() -> None:
    jit = JITTensorKernel(threads=1)
    fused = jit.compile_ir(IR).ir["fused"]
    loose = fused.replace(
        "    func.return",
        "    %9 = tensordsl.exp %x : tensor<4x6xf32>\n    func.return",
    )
    with pytest.raises(TdslIRError, match=r"has ops in kernel groups and 'tensordsl\.exp' outside"):
        jit.compile_ir(loose)


WINDOWS = """\
def main(h: f32[8, 12]):
    a = softmax(h[:, 0:3] @ transpose(h[:, 3:6]))
    b = softmax(h[:, 6:9] @ transpose(h[:, 9:12]))
    return concatenate((a @ h[:, 0:3], b @ h[:, 6:9]), axis=1)
"""


@pytest.mark.parametrize("stage", ["fused", "tiled", "planned"])
def test_windows_and_joins_between_groups_compile_from_their_stage(
    stage: str, jit_target: str, matches: Any
) -> None:
    """tdsl-fuse leaves windows (``tensordsl.slice``) and joins (``tensordsl.concatenate``)
    between its groups; IR at a later stage holds them beside the groups, and compiles
    (it was refused: "has ops in kernel groups and 'tensordsl.slice' outside them")."""
    if stage == "planned" and jit_target == "numpy":
        pytest.skip("the loops' plan is the native target's stage")
    jit = JITTensorKernel(threads=1)
    whole = jit.compile(WINDOWS)
    text = whole.ir[stage]
    assert "tensordsl.slice" in text and "tensordsl.concatenate" in text
    kernel = jit.compile_ir(text)
    h = np.random.default_rng(2).standard_normal((8, 12)).astype(np.float32)

    def softmax(s: Any) -> Any:
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    a = softmax(h[:, 0:3] @ h[:, 3:6].T)
    b = softmax(h[:, 6:9] @ h[:, 9:12].T)
    matches(kernel(h), np.concatenate((a @ h[:, 0:3], b @ h[:, 6:9]), axis=1))


HEX_IR = """\
func.func @main(%x: tensor<4xf32>, %h: tensor<2xf16>, %d: tensor<2xf64>, %i: tensor<3xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf16>, tensor<2xf64>, tensor<3xi32>) {
  %0 = tensordsl.constant dense<0x7FC00000> : tensor<f32>
  %1 = tensordsl.add %x, %0 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = tensordsl.constant dense<[0x7F800000, -1.5, 0xFF800000, 0x00000001]> : tensor<4xf32>
  %3 = tensordsl.add %x, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = tensordsl.constant dense<0x3C00> : tensor<2xf16>
  %5 = tensordsl.add %h, %4 : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %6 = tensordsl.constant dense<[0x7FF0000000000000, 0x8000000000000000]> : tensor<2xf64>
  %7 = tensordsl.mul %d, %6 : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %8 = tensordsl.constant dense<[0x10, -0x10, 7]> : tensor<3xi32>
  %9 = tensordsl.add %i, %8 : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %1, %3, %5, %7, %9 : tensor<4xf32>, tensor<4xf32>, tensor<2xf16>, tensor<2xf64>, tensor<3xi32>
}
"""


@pytest.mark.parametrize("target", ["numpy", "native"])
def test_hexadecimal_floats_in_dense_constants_are_their_bits(target: str) -> None:
    """As MLIR reads them (and prints NaN and infinity): ``dense<0x7FC00000> : tensor<f32>``
    is NaN, not 2143289344.0 (xDSL's parser read the integer's value); integers keep their
    value."""
    kernel = JITTensorKernel(target=target, threads=1).compile_ir(HEX_IR)
    x = np.zeros(4, np.float32)
    got = kernel(x, np.ones(2, np.float16), np.ones(2), np.zeros(3, np.int32))
    np.testing.assert_array_equal(got[0], np.full(4, np.nan, np.float32))
    tiny = np.array([1], np.uint32).view(np.float32)[0]  # (the bits 0x00000001)
    np.testing.assert_array_equal(got[1], np.array([np.inf, -1.5, -np.inf, tiny], np.float32))
    np.testing.assert_array_equal(got[2], np.full(2, 2.0, np.float16))
    np.testing.assert_array_equal(got[3], np.array([np.inf, -0.0]))
    assert np.signbit(got[3][1])
    np.testing.assert_array_equal(got[4], np.array([16, -16, 7], np.int32))


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        (
            "dense<-0x7FC00000> : tensor<2xf32>",
            "a hexadecimal float literal gives the float's bits",
        ),
        ("dense<[0x7FC00000, 1.0]> : tensor<2xf16>", "Hexadecimal float constant out of range"),
    ],
)
def test_a_hexadecimal_float_that_is_no_bit_pattern_is_a_located_error(
    literal: str, message: str
) -> None:
    ir = f"func.func @main() -> tensor<2xf32> {{\n  %0 = tensordsl.constant {literal}\n}}\n"
    with pytest.raises(TdslIRError, match=message) as info:
        JITTensorKernel().compile_ir(ir)
    assert info.value.location is not None and info.value.location.line == 2


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("[1.0, 2.0, 3.0]", r"Expected \[2\] shape from the type, but got \[3\]"),
        ("[[1.0, 2.0]]", r"Expected \[2\] shape from the type, but got \[1, 2\]"),
        ("", "Expected at least one element"),
        ('"0x0000803F0000803F0000803F"', "Expected 2 elements from the type, but got 3"),
    ],
)
def test_a_dense_literal_its_type_does_not_take_is_located_at_the_literal(
    literal: str, message: str
) -> None:
    """xDSL checks the elements after reading the type and pointed at the token after it:
    the next line's first, which is not where the mistake is."""
    ir = (
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        f"  %0 = tensordsl.constant dense<{literal}> : tensor<2xf32>\n"
        "  %1 = tensordsl.add %x, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
        "  func.return %1 : tensor<2xf32>\n}\n"
    )
    with pytest.raises(TdslIRError, match=message) as info:
        JITTensorKernel().compile_ir(ir)
    where = info.value.location
    assert where is not None and (where.line, where.column) == (2, 32)


def test_hexadecimal_nans_keep_their_payload_and_signal() -> None:
    """The bits as written, as MLIR keeps them: a float16 nan's payload and a float32
    signaling nan (packing the floats dropped the first and quieted the second)."""
    from tdsl.dialects.tensordsl import dense_to_numpy
    from tdsl.ir_text import LocatingParser
    from tdsl.jit.ir_input import ir_context

    text = (
        "%0 = tensordsl.constant dense<0x7C01> : tensor<2xf16>\n"
        "%1 = tensordsl.constant dense<[0x7F800001, 1.5, 0xFFC00000]> : tensor<3xf32>\n"
    )
    module = LocatingParser(ir_context(), text, "<ir>").parse_module()
    first, second = (op.properties["value"] for op in module.ops)
    assert dense_to_numpy(first).view(np.uint16).tolist() == [0x7C01, 0x7C01]
    got = dense_to_numpy(second).view(np.uint32).tolist()
    assert got == [0x7F800001, 0x3FC00000, 0xFFC00000]


@pytest.mark.parametrize("text", ["`", "\x00", "$x"])
def test_ir_that_cannot_start_is_a_located_error(text: str) -> None:
    """A first character xDSL's lexer refuses raised its bare ParseError (the parser reads
    the first token when it is made, outside the conversion; found by fuzzing)."""
    with pytest.raises(TdslIRError, match=r"<ir>:1:1: error: the IR does not parse"):
        JITTensorKernel().compile_ir(text)
