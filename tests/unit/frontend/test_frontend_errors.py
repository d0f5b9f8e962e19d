"""The exact text of every kind of frontend error: message, location, source line, caret."""

from __future__ import annotations

import pytest

from tdsl.errors import TdslError, TdslNameError, TdslSyntaxError, TdslTypeError
from tdsl.frontend import to_tensordsl

SHAPES = {"A": (4, 8), "B": (8,), "C": (3,), "S": (), "D": (2, 4, 8)}

EXPRESSION_ERRORS: list[tuple[str, type[TdslError], str]] = [
    # Unknown functions: the nearest name, or where the functions are listed.
    (
        "sofmax(A)",
        TdslNameError,
        "<expr>:1:1: error: unknown function `sofmax`; did you mean `softmax`?\nsofmax(A)\n^^^^^^",
    ),
    (
        "Relu(A)",
        TdslNameError,
        "<expr>:1:1: error: unknown function `Relu`; did you mean `relu`?\nRelu(A)\n^^^^",
    ),
    (
        "frobnicate(A)",
        TdslNameError,
        "<expr>:1:1: error: unknown function `frobnicate` (the functions are listed in docs/language.md#functions)\nfrobnicate(A)\n^^^^^^^^^^",
    ),
    # Arity: the signature.
    (
        "relu(A, B)",
        TdslTypeError,
        "<expr>:1:1: error: `relu` takes 1 argument but 2 were given (signature: relu(x))\nrelu(A, B)\n^^^^^^^^^^",
    ),
    (
        "relu()",
        TdslTypeError,
        "<expr>:1:1: error: `relu` takes 1 argument but 0 were given (signature: relu(x))\nrelu()\n^^^^^^",
    ),
    (
        "maximum(A)",
        TdslTypeError,
        "<expr>:1:1: error: `maximum` takes 2 arguments but 1 was given (signature: maximum(a, b))\nmaximum(A)\n^^^^^^^^^^",
    ),
    (
        "sum(A, B)",
        TdslTypeError,
        "<expr>:1:1: error: `sum` takes 1 positional argument but 2 were given (signature: sum(x, axis=None, keepdims=False))\nsum(A, B)\n^^^^^^^^^",
    ),
    (
        "max(A, B)",
        TdslTypeError,
        "<expr>:1:1: error: `max` takes 1 positional argument but 2 were given (signature: max(x, axis=None, keepdims=False)); for the element-wise maximum use `maximum(a, b)`\nmax(A, B)\n^^^^^^^^^",
    ),
    # Keywords.
    (
        "relu(A, axis=1)",
        TdslNameError,
        "<expr>:1:9: error: `relu` takes no keyword arguments (signature: relu(x))\nrelu(A, axis=1)\n        ^^^^^^",
    ),
    (
        "sum(A, axes=1)",
        TdslNameError,
        "<expr>:1:8: error: unknown keyword argument `axes` for `sum`; did you mean `axis`? (signature: sum(x, axis=None, keepdims=False))\nsum(A, axes=1)\n       ^^^^^^",
    ),
    (
        "sum(A, axis=1.5)",
        TdslTypeError,
        "<expr>:1:8: error: `axis` of `sum` must be an integer or a tuple of integers, not `1.5`\nsum(A, axis=1.5)\n       ^^^^^^^^",
    ),
    (
        "sum(A, keepdims=1.0)",
        TdslTypeError,
        "<expr>:1:8: error: `keepdims` must be true or false, not `1.0`\nsum(A, keepdims=1.0)\n       ^^^^^^^^^^^^",
    ),
    (
        "softmax(A, keepdims=true)",
        TdslNameError,
        "<expr>:1:12: error: unknown keyword argument `keepdims` for `softmax` (signature: softmax(x, axis=-1))\nsoftmax(A, keepdims=true)\n           ^^^^^^^^^^^^^",
    ),
    # Shapes: both shapes.
    (
        "A + C",
        TdslTypeError,
        "<expr>:1:3: error: operands of `+` do not broadcast: f32[4, 8] and f32[3]\nA + C\n  ^",
    ),
    (
        "maximum(A, C)",
        TdslTypeError,
        "<expr>:1:1: error: operands of `maximum` do not broadcast: f32[4, 8] and f32[3]\nmaximum(A, C)\n^^^^^^^^^^^^^",
    ),
    (
        "A @ C",
        TdslTypeError,
        "<expr>:1:3: error: inner dimensions of `@` differ (8 vs 3): f32[4, 8] and f32[3]\nA @ C\n  ^",
    ),
    (
        "A @ 2",
        TdslTypeError,
        "<expr>:1:3: error: `@` needs operands of rank 1 or more, got f32[4, 8] and int (the number 2)\nA @ 2\n  ^",
    ),
    (
        "S @ A",
        TdslTypeError,
        "<expr>:1:3: error: `@` needs operands of rank 1 or more, got f32[] and f32[4, 8]\nS @ A\n  ^",
    ),
    (
        "matmul(D, transpose(D))",
        TdslTypeError,
        "<expr>:1:1: error: inner dimensions of `matmul` differ (8 vs 4): f32[2, 4, 8] and f32[8, 4, 2]\nmatmul(D, transpose(D))\n^^^^^^^^^^^^^^^^^^^^^^^",
    ),
    # Axes: the rank.
    (
        "sum(A, axis=2)",
        TdslTypeError,
        "<expr>:1:8: error: axis 2 is out of range for `sum` of f32[4, 8] (rank 2; expected -2 <= axis < 2)\nsum(A, axis=2)\n       ^^^^^^",
    ),
    (
        "softmax(A, axis=-3)",
        TdslTypeError,
        "<expr>:1:12: error: axis -3 is out of range for `softmax` of f32[4, 8] (rank 2; expected -2 <= axis < 2)\nsoftmax(A, axis=-3)\n           ^^^^^^^",
    ),
    (
        "mean(S, axis=0)",
        TdslTypeError,
        "<expr>:1:9: error: axis 0 is out of range for `mean` of f32[] (rank 0; a 0-d tensor has no axes)\nmean(S, axis=0)\n        ^^^^^^",
    ),
    (
        "softmax(A, axis=None)",
        TdslTypeError,
        "<expr>:1:12: error: `axis` of `softmax` must be an integer, not `None`\nsoftmax(A, axis=None)\n           ^^^^^^^^^",
    ),
    (
        "sum(A, axis=true)",
        TdslTypeError,
        "<expr>:1:8: error: `axis` of `sum` must be an integer or a tuple of integers, not `true`\nsum(A, axis=true)\n       ^^^^^^^^^",
    ),
    (
        "sum(A, keepdims=1)",
        TdslTypeError,
        "<expr>:1:8: error: `keepdims` must be true or false, not `1`\nsum(A, keepdims=1)\n       ^^^^^^^^^^",
    ),
    (
        "max(A, keepdims=None)",
        TdslTypeError,
        "<expr>:1:8: error: `keepdims` must be true or false, not `None`\nmax(A, keepdims=None)\n       ^^^^^^^^^^^^^",
    ),
    # Missing shapes: which input, and which shapes were given.
    (
        "A + Q",
        TdslNameError,
        "<expr>:1:5: error: no shape given for input `Q` (shapes were given for: `A`, `B`, `C`, `S`, `D`)\nA + Q\n    ^",
    ),
    (
        "A + b",
        TdslNameError,
        "<expr>:1:5: error: no shape given for input `b`; did you mean `B`? (shapes were given for: `A`, `B`, `C`, `S`, `D`)\nA + b\n    ^",
    ),
    (
        "relu + A",
        TdslNameError,
        "<expr>:1:1: error: no shape given for input `relu` (shapes were given for: `A`, `B`, `C`, `S`, `D`); `relu` is a function: call it as `relu(...)`\nrelu + A\n^^^^",
    ),
    # Call checks (names, arities, keywords) come before shape checks, then source order.
    (
        "sum(A, axis=5) + sofmax(B)",
        TdslNameError,
        "<expr>:1:18: error: unknown function `sofmax`; did you mean `softmax`?\nsum(A, axis=5) + sofmax(B)\n                 ^^^^^^",
    ),
    (
        "relu(A + C) * exp(A, A)",
        TdslTypeError,
        "<expr>:1:15: error: `exp` takes 1 argument but 2 were given (signature: exp(x))\nrelu(A + C) * exp(A, A)\n              ^^^^^^^^^",
    ),
    # Carets stay on the first line of a multi-line span.
    (
        "relu(A,\n     B)",
        TdslTypeError,
        "<expr>:1:1: error: `relu` takes 1 argument but 2 were given (signature: relu(x))\nrelu(A,\n^^^^^^^",
    ),
]


@pytest.mark.parametrize(("text", "kind", "expected"), EXPRESSION_ERRORS)
def test_expression_errors(text: str, kind: type[TdslError], expected: str) -> None:
    with pytest.raises(TdslError) as info:
        to_tensordsl(text, shapes=SHAPES, dtypes="f32")
    assert type(info.value) is kind
    assert str(info.value) == expected


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        (
            None,
            "<expr>:1:1: error: no shape given for input `A` (shapes were given for: none)\nA + B\n^",
        ),
        (
            {"A": (-1,), "B": (2,)},
            "<expr>:1:1: error: invalid shape (-1,) for input `A`: expected a tuple of integers from 0 to 2**62, at most 64 of them (NumPy's)\nA + B\n^",
        ),
        (
            {"A": 3, "B": (2,)},
            "<expr>:1:1: error: invalid shape 3 for input `A`: expected a tuple of integers from 0 to 2**62, at most 64 of them (NumPy's)\nA + B\n^",
        ),
        (
            {"A": (2,), "B": "4x4"},
            "<expr>:1:5: error: invalid shape '4x4' for input `B`: expected a tuple of integers from 0 to 2**62, at most 64 of them (NumPy's)\nA + B\n    ^",
        ),
        (
            {"A": (2,), "B": (2.5,)},
            "<expr>:1:5: error: invalid shape (2.5,) for input `B`: expected a tuple of integers from 0 to 2**62, at most 64 of them (NumPy's)\nA + B\n    ^",
        ),
        (
            {"A": (True, 3), "B": (4,)},
            "<expr>:1:1: error: invalid shape (True, 3) for input `A`: expected a tuple of integers from 0 to 2**62, at most 64 of them (NumPy's)\nA + B\n^",
        ),
        (
            {"A": (1,) * 65, "B": (4,)},
            f"<expr>:1:1: error: invalid shape {(1,) * 65} for input `A`: expected a tuple of integers from 0 to 2**62, at most 64 of them (NumPy's)\nA + B\n^",
        ),
        (
            {"A": (2**70,), "B": (4,)},
            "<expr>:1:1: error: invalid shape (1180591620717411303424,) for input `A`: expected a tuple of integers from 0 to 2**62, at most 64 of them (NumPy's)\nA + B\n^",
        ),
    ],
)
def test_bad_shapes(shapes: dict[str, object] | None, expected: str) -> None:
    with pytest.raises(TdslError) as info:
        to_tensordsl("A + B", shapes=shapes)  # type: ignore[arg-type]
    assert str(info.value) == expected


PROGRAM_ERRORS: list[tuple[str, type[TdslError], str]] = [
    (
        "def k(x: f32[4]):\n    y = relu(x)\n    return y + z\n",
        TdslNameError,
        "k.tdsl:3:16: error: unknown name `z` (names in scope: `x`, `y`)\n    return y + z\n               ^",
    ),
    (
        "def k(x: f32[4]):\n    hidden = relu(x)\n    return hiden\n",
        TdslNameError,
        "k.tdsl:3:12: error: unknown name `hiden`; did you mean `hidden`? (names in scope: `x`, `hidden`)\n    return hiden\n           ^^^^^",
    ),
    (
        "def k(x: f32[4]):\n    return exp\n",
        TdslNameError,
        "k.tdsl:2:12: error: unknown name `exp` (names in scope: `x`); `exp` is a function: call it as `exp(...)`\n    return exp\n           ^^^",
    ),
    # (True and None are keyword values: it was "unknown name" alone; found by fuzzing)
    (
        "def k(x: f32[4]):\n    return x * True\n",
        TdslNameError,
        "k.tdsl:2:16: error: unknown name `True` (names in scope: `x`); `True` is only a "
        "keyword's value (`keepdims=True`, `axis=None`): as a value write a number, or a "
        "comparison for a mask (`x > 0`)\n    return x * True\n               ^^^^",
    ),
    (
        "def k():\n    return x\n",
        TdslNameError,
        "k.tdsl:2:12: error: unknown name `x` (names in scope: none)\n    return x\n           ^",
    ),
    (
        "def k(x: f32[4]):\n    y = y + x\n    return y\n",
        TdslNameError,
        "k.tdsl:2:9: error: unknown name `y` (names in scope: `x`)\n    y = y + x\n        ^",
    ),
    (
        "def k(x: f32[4], x: f32[4]):\n    return x\n",
        TdslNameError,
        "k.tdsl:1:18: error: duplicate argument `x` in kernel `k`\ndef k(x: f32[4], x: f32[4]):\n                 ^^^^^^^^^",
    ),
    (
        "def k(x: f32[4]):\n    return x\n\ndef k(y: f32[4]):\n    return y\n",
        TdslNameError,
        "k.tdsl:4:5: error: kernel `k` is already defined at line 1\ndef k(y: f32[4]):\n    ^",
    ),
    (
        "def a(x: f32[4]):\n    return x\n\ndef b(y: f32[4, 3]):\n    return y @ y\n",
        TdslTypeError,
        "k.tdsl:5:14: error: inner dimensions of `@` differ (3 vs 4): f32[4, 3] and f32[4, 3]\n    return y @ y\n             ^",
    ),
    (
        "def k(x: f32[4]):\n    y = sum(x, axis=3)\n    return sofmax(y)\n",
        TdslNameError,
        "k.tdsl:3:12: error: unknown function `sofmax`; did you mean `softmax`?\n    return sofmax(y)\n           ^^^^^^",
    ),
    # (each of these was a bare parse error at the next token, or underlined the whole
    # call; found by fuzzing the language)
    (
        "def k(x: f32[8]):\n    n = 2\n    return x[n:]\n",
        TdslSyntaxError,
        "k.tdsl:3:14: error: a slice's start, stop and step are integer literals "
        "(`x[1:-1:2]`): every shape is static, so they cannot be names or arithmetic; "
        "write the number\n    return x[n:]\n             ^",
    ),
    (
        "def k(x: f32[8]):\n    return x[1:2 + 1]\n",
        TdslSyntaxError,
        "k.tdsl:2:16: error: a slice's start, stop and step are integer literals "
        "(`x[1:-1:2]`): every shape is static, so they cannot be names or arithmetic; "
        "write the number\n    return x[1:2 + 1]\n               ^^^^^",
    ),
    (
        "def k(x: f32[8]):\n    n = 2\n    return x[n]\n",
        TdslTypeError,
        "k.tdsl:3:14: error: an index is an integer literal written in the subscript "
        "(`x[2]`: every shape is static) or an integer array (a gather), not a number "
        "bound to a name: write the number\n    return x[n]\n             ^",
    ),
    (
        "def k(x: f32[4]):\n    return x + arange(2 * 2)\n",
        TdslSyntaxError,
        "k.tdsl:2:23: error: `start` of `arange` takes a constant (a number, a tuple, true, "
        "false or None), not an expression: write its value\n"
        "    return x + arange(2 * 2)\n                      ^^^^^",
    ),
    (
        "def k(x: f32[4, 3]):\n    return sum(x, axis=0 + 1)\n",
        TdslSyntaxError,
        "k.tdsl:2:24: error: `axis` of `sum` takes a constant (a number, a tuple, true, "
        "false or None), not an expression: write its value\n"
        "    return sum(x, axis=0 + 1)\n                       ^^^^^",
    ),
    (
        "def k(x: f32[4, 3], y: f32[4, 3]):\n    return concatenate([x, y], axis=2)\n",
        TdslTypeError,
        "k.tdsl:2:32: error: axis 2 is out of range for rank 2 (expected -2 <= axis < 2)\n"
        "    return concatenate([x, y], axis=2)\n                               ^^^^^^",
    ),
    (
        "def k(x: f32[4, 3]):\n    return split(x, 2, axis=-3)\n",
        TdslTypeError,
        "k.tdsl:2:24: error: axis -3 is out of range for rank 2 (expected -2 <= axis < 2)\n"
        "    return split(x, 2, axis=-3)\n                       ^^^^^^^",
    ),
    (
        "k(x: f32[4]):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:4: error: expected `,` or `)` in the call to `k` (opened at 1:2), found "
        "`:`: a kernel starts with `def` (`def main(x: f32[4]):`)\nk(x: f32[4]):\n   ^",
    ),
    (
        "def k(x: f32[4]):\n    return x\nj(x: f32[4]):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:3:1: error: expected `def` or end of input, found `j`: a kernel starts with "
        "`def` (`def main(x: f32[4]):`)\nj(x: f32[4]):\n^",
    ),
    (
        "def a(x: f16[4], y: f64[3]):\n    return maximum(x, y)\n",
        TdslTypeError,
        "k.tdsl:2:12: error: operands of `maximum` do not broadcast: f16[4] and f64[3]\n    return maximum(x, y)\n           ^^^^^^^^^^^^^",
    ),
]


@pytest.mark.parametrize(("text", "kind", "expected"), PROGRAM_ERRORS)
def test_program_errors(text: str, kind: type[TdslError], expected: str) -> None:
    with pytest.raises(TdslError) as info:
        to_tensordsl(text, filename="k.tdsl")
    assert type(info.value) is kind
    assert str(info.value) == expected


def test_errors_carry_structured_location() -> None:
    with pytest.raises(TdslTypeError) as info:
        to_tensordsl("def k(x: f32[4]):\n    return sum(x, axis=1)\n", filename="k.tdsl")
    err = info.value
    assert (err.line, err.column) == (2, 19)
    assert err.location is not None
    assert (err.location.file, err.location.length) == ("k.tdsl", 6)
    assert err.location.source_line == "    return sum(x, axis=1)"
    assert err.message.startswith("axis 1 is out of range for `sum` of f32[4] (rank 1")


@pytest.mark.parametrize(
    "text",
    [
        "reshape(x, (" + "1, " * 64 + "24))",
        "x[" + "None, " * 63 + "...] + 1",
        f"expand_dims(x, {tuple(range(63))})",
    ],
)
def test_a_value_of_more_dims_than_numpy_has_is_an_error_when_compiling(text: str) -> None:
    """NumPy's arrays have at most 64 dims: such a value compiled, and every call failed
    in NumPy with a bare ValueError (found by fuzzing)."""
    with pytest.raises(TdslTypeError, match=r"<expr>:1:\d+: .*a tensor of 65 dims, and NumPy's"):
        to_tensordsl(text, shapes={"x": (4, 6)})
    fine = to_tensordsl("reshape(x, (" + "1, " * 63 + "24))", shapes={"x": (4, 6)})
    assert "tensor<" + "1x" * 63 + "24xf64>" in str(fine)  # (64 dims: NumPy's most)
