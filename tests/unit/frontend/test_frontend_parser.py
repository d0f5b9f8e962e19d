"""Parser: precedence, associativity, calls, keywords, programs, spans, syntax errors."""

from __future__ import annotations

import pytest

from tdsl.errors import TdslError, TdslSyntaxError, TdslTypeError
from tdsl.frontend import Expression, Program, parse
from tdsl.frontend.ast import BinOp, Call, Expr, Name, Neg, Number, walk
from tdsl.frontend.parser import MAX_NESTING


def show(expr: Expr) -> str:
    """Fully parenthesized rendering of an expression tree."""
    match expr:
        case Number(text=text):
            return text
        case Name(id=name):
            return name
        case Neg(operand=operand):
            return f"(-{show(operand)})"
        case BinOp(op=op, lhs=lhs, rhs=rhs):
            return f"({show(lhs)} {op} {show(rhs)})"
        case Call(func=func, args=args, keywords=keywords):
            parts = [show(a) for a in args] + [f"{k.name}={k.value}" for k in keywords]
            return f"{func}({', '.join(parts)})"


def expr_of(text: str) -> Expr:
    tree = parse(text)
    assert isinstance(tree, Expression)
    return tree.body


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a + b * c", "(a + (b * c))"),
        ("a * b + c", "((a * b) + c)"),
        ("a - b - c", "((a - b) - c)"),
        ("a / b / c", "((a / b) / c)"),
        ("a / b * c", "((a / b) * c)"),
        ("a @ b @ c", "((a @ b) @ c)"),
        ("a @ b * c", "((a @ b) * c)"),
        ("a * b @ c", "((a * b) @ c)"),
        ("a + b @ c", "(a + (b @ c))"),
        ("-a * b", "((-a) * b)"),
        ("-a @ b", "((-a) @ b)"),
        ("a * -b", "(a * (-b))"),
        ("a - -b", "(a - (-b))"),
        ("--a", "(-(-a))"),
        ("-(a + b)", "(-(a + b))"),
        ("(a + b) * c", "((a + b) * c)"),
        ("a - (b - c)", "(a - (b - c))"),
        ("((a))", "a"),
        ("a + b * c - d / e", "((a + (b * c)) - (d / e))"),
    ],
)
def test_precedence_and_associativity(text: str, expected: str) -> None:
    assert show(expr_of(text)) == expected


def test_numbers_are_floats() -> None:
    values = [n.value for n in walk(expr_of("2 + 2.5 + .5 + 1e-3 + 3E2")) if isinstance(n, Number)]
    assert values == [2.0, 2.5, 0.5, 0.001, 300.0]


def test_calls_and_keywords() -> None:
    call = expr_of("sum(exp(A) * B, axis=-1, keepdims=True)")
    assert isinstance(call, Call)
    assert call.func == "sum"
    assert show(call.args[0]) == "(exp(A) * B)"
    assert [(k.name, k.value) for k in call.keywords] == [("axis", -1), ("keepdims", True)]


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("True", True), ("false", False), ("False", False), ("None", None)],
)
def test_keyword_constants(text: str, value: bool | None) -> None:
    call = expr_of(f"f(x, k={text})")
    assert isinstance(call, Call)
    assert call.keywords[0].value is value


def test_empty_call_and_trailing_comma() -> None:
    assert show(expr_of("f()")) == "f()"
    assert show(expr_of("maximum(a, b,)")) == "maximum(a, b)"


def test_expression_may_span_lines() -> None:
    assert show(expr_of("a +\n  b # comment\n * c\n")) == "(a + (b * c))"


def test_spans_point_at_source() -> None:
    node = expr_of("x + relu(y)")
    assert isinstance(node, BinOp)
    assert (node.op_span.column, node.op_span.start, node.op_span.end) == (3, 2, 3)
    assert isinstance(node.rhs, Call)
    assert (node.rhs.span.start, node.rhs.span.end) == (4, 11)
    assert (node.rhs.func_span.start, node.rhs.func_span.end) == (4, 8)
    assert (node.span.start, node.span.end) == (0, 11)


PROGRAM = """\
# comments start with '#'
def mlp(x: f32[64, 128], w: f32[128, 256], b: f32[256]):
    h = relu(x @ w + b)   # trailing comment

    return softmax(h), h

def scalars(a: f64[], e: f16[0, 3],):
\treturn a
"""


def test_program_structure() -> None:
    tree = parse(PROGRAM, "k.tdsl")
    assert isinstance(tree, Program)
    assert tree.source.filename == "k.tdsl"
    mlp, scalars = tree.kernels
    assert mlp.name == "mlp"
    assert [(p.name, p.dtype, p.shape) for p in mlp.params] == [
        ("x", "f32", (64, 128)),
        ("w", "f32", (128, 256)),
        ("b", "f32", (256,)),
    ]
    assert [(a.target, show(a.value)) for a in mlp.body] == [("h", "relu(((x @ w) + b))")]
    assert [show(v) for v in mlp.ret.values] == ["softmax(h)", "h"]
    assert (mlp.span.line, mlp.ret.span.line) == (2, 5)
    assert [(p.name, p.dtype, p.shape) for p in scalars.params] == [
        ("a", "f64", ()),
        ("e", "f16", (0, 3)),
    ]
    assert scalars.body == ()


def test_program_with_crlf_and_no_final_newline() -> None:
    tree = parse("def f(x: f32[2]):\r\n    y = x\r\n    return y")
    assert isinstance(tree, Program)
    assert tree.kernels[0].body[0].target == "y"


def test_nesting_limit() -> None:
    deep_ok = "(" * MAX_NESTING + "a" + ")" * MAX_NESTING
    assert show(expr_of(deep_ok)) == "a"
    assert show(expr_of("-" * MAX_NESTING + "a")).count("-") == MAX_NESTING
    calls_ok = "relu(" * MAX_NESTING + "a" + ")" * MAX_NESTING
    assert show(expr_of(calls_ok)).count("relu") == MAX_NESTING
    for too_deep in (
        "(" * (MAX_NESTING + 1) + "a" + ")" * (MAX_NESTING + 1),
        "relu(" * (MAX_NESTING + 1) + "a" + ")" * (MAX_NESTING + 1),
        "-" * (MAX_NESTING + 1) + "a",
        "(-" * 150 + "a" + ")" * 150,
    ):
        with pytest.raises(TdslSyntaxError, match="nested too deeply"):
            parse(too_deep)


def test_very_deep_input_gives_an_error_not_a_recursion_error() -> None:
    with pytest.raises(TdslSyntaxError, match="nested too deeply"):
        parse("(" * 20_000)


def test_long_flat_chains_parse_without_recursion() -> None:
    node = expr_of(" + ".join(["a"] * 20_000))
    assert isinstance(node, BinOp)


SYNTAX_ERRORS = [
    ("", "<expr>:1:1: error: empty input: expected an expression or a `def` kernel\n\n^"),
    (
        "# only a comment",
        "<expr>:1:17: error: empty input: expected an expression or a `def` kernel\n# only a comment\n                ^",
    ),
    ("a +", "<expr>:1:4: error: expected an expression, found end of input\na +\n   ^"),
    ("a b", "<expr>:1:3: error: expected end of input, found `b`\na b\n  ^"),
    ("a = 1", "<expr>:1:3: error: expected end of input, found `=`\na = 1\n  ^"),
    (
        "(a + 1",
        "<expr>:1:7: error: expected `)` to close the `(` at 1:1, found end of input\n(a + 1\n      ^",
    ),
    ("a + )", "<expr>:1:5: error: expected an expression, found `)`\na + )\n    ^"),
    ("+a", "<expr>:1:1: error: expected an expression, found `+`\n+a\n^"),
    (
        "relu(a b)",
        "<expr>:1:8: error: expected `,` or `)` in the call to `relu` (opened at 1:5), found `b`\nrelu(a b)\n       ^",
    ),
    (
        "f(axis=1, a)",
        "<expr>:1:11: error: positional argument follows keyword argument\nf(axis=1, a)\n          ^",
    ),
    (
        "f(a, axis=1, axis=2)",
        "<expr>:1:14: error: keyword argument `axis` repeated\nf(a, axis=1, axis=2)\n             ^^^^^^",
    ),
    (
        "f(a, eps=1e400)",
        "<expr>:1:10: error: number `1e400` is too large for a float64\nf(a, eps=1e400)\n         ^^^^^",
    ),
    (
        "sum(a, axis=b)",
        "<expr>:1:13: error: expected a number, inf, nan, true, false or None as the value of `axis`, found `b`\nsum(a, axis=b)\n            ^",
    ),
    (
        "sum(a, axis=" + "9" * 30 + ")",
        "<expr>:1:13: error: integer `"
        + "9" * 30
        + "` is too large\nsum(a, axis="
        + "9" * 30
        + ")\n            "
        + "^" * 30,
    ),
    (
        "a + return",
        "<expr>:1:5: error: expected an expression, found the keyword `return`\na + return\n    ^^^^^^",
    ),
    (
        "return a",
        "<expr>:1:1: error: expected an expression, found the keyword `return`\nreturn a\n^^^^^^",
    ),
]


@pytest.mark.parametrize(("text", "expected"), SYNTAX_ERRORS)
def test_expression_syntax_errors(text: str, expected: str) -> None:
    with pytest.raises(TdslSyntaxError) as info:
        parse(text)
    assert str(info.value) == expected


PROGRAM_ERRORS: list[tuple[str, type[TdslError], str]] = [
    (
        "def f(x):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:7: error: missing dtype and shape for argument `x` (write e.g. `x: f32[4, 4]`)\ndef f(x):\n      ^",
    ),
    (
        "def f(x: f32):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:13: error: expected `[` and the shape of argument `x` after `f32`, found `)` (write `f32[]` for a 0-d tensor)\ndef f(x: f32):\n            ^",
    ),
    (
        "def f(x: float32[2]):\n    return x\n",
        TdslTypeError,
        "k.tdsl:1:10: error: unknown dtype `float32`; expected bool, f16, f32, f64, i32, i64, u8 or u64 (did you mean `f32`?)\ndef f(x: float32[2]):\n         ^^^^^^^",
    ),
    (
        "def f(x: i8[2]):\n    return x\n",
        TdslTypeError,
        "k.tdsl:1:10: error: unknown dtype `i8`; expected bool, f16, f32, f64, i32, i64, u8 or u64\ndef f(x: i8[2]):\n         ^^",
    ),
    (
        "def f(x: f32[-1]):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:14: error: expected a dimension (a non-negative integer), found `-`\ndef f(x: f32[-1]):\n             ^",
    ),
    (
        "def f(x: f32[2.5]):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:14: error: expected a dimension (a non-negative integer), found `2.5`\ndef f(x: f32[2.5]):\n             ^^^",
    ),
    (
        "def f(x: f32[" + "9" * 20 + "]):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:14: error: dimension `"
        + "9" * 20
        + "` is too large\ndef f(x: f32["
        + "9" * 20
        + "]):\n             "
        + "^" * 20,
    ),
    (
        "def f(x: f32[2] y: f32[2]):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:17: error: expected `,` or `)` after an argument, found `y`\ndef f(x: f32[2] y: f32[2]):\n                ^",
    ),
    (
        "def f(x: f32[2]): return x\n",
        TdslSyntaxError,
        "k.tdsl:1:19: error: expected a new line after `:`, found `return` (the body goes on the following, indented lines)\ndef f(x: f32[2]): return x\n                  ^^^^^^",
    ),
    (
        "def f(x: f32[2]):\nreturn x\n",
        TdslSyntaxError,
        "k.tdsl:2:1: error: expected an indented body for kernel `f`\nreturn x\n^^^^^^",
    ),
    # at the end of the input: after its last line, which shows (it was the empty line
    # after it, and a bare caret; found by fuzzing the language)
    (
        "def f(x: f32[2]):\n",
        TdslSyntaxError,
        "k.tdsl:1:18: error: expected an indented body for kernel `f`\n"
        "def f(x: f32[2]):\n                 ^",
    ),
    (
        "def f(x: f32[2]):\n    return relu((x + 1)\n\n",
        TdslSyntaxError,
        "k.tdsl:2:24: error: expected `,` or `)` in the call to `relu` (opened at 2:16), "
        "found end of line\n    return relu((x + 1)\n                       ^",
    ),
    (
        "def f(x: f32[2]):\n    y = x\n        return y\n",
        TdslSyntaxError,
        "k.tdsl:3:9: error: unexpected indentation\n        return y\n        ^^^^^^",
    ),
    (
        "def f(x: f32[2]):\n    y = x\n  return y\n",
        TdslSyntaxError,
        "k.tdsl:3:3: error: indentation does not match the previous lines\n  return y\n  ^^^^^^",
    ),
    (
        "def f(x: f32[2]):\n    y = x\n\treturn y\n",
        TdslSyntaxError,
        # The source line is printed with each tab as one space, so the caret lines up;
        # tabs against spaces are named (they look alike in an editor; found by fuzzing)
        "k.tdsl:3:2: error: indentation does not match the previous lines: they have 0 "
        "tab(s), 4 space(s), this one 1 tab(s), 0 space(s)\n return y\n ^^^^^^",
    ),
    (
        "def f(x: f32[2]):\n    y = x\n",
        TdslSyntaxError,
        "k.tdsl:1:5: error: kernel `f` has no `return` at its end\ndef f(x: f32[2]):\n    ^",
    ),
    (
        "def f(x: f32[2]):\n    return x\n    y = x\n",
        TdslSyntaxError,
        "k.tdsl:3:5: error: `return` must be the last statement of kernel `f`\n    y = x\n    ^",
    ),
    (
        "def f(x: f32[2]):\n    relu(x)\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:2:5: error: expected a binding `name = ...` or `return`, found `relu`\n    relu(x)\n    ^^^^",
    ),
    (
        "def f(x: f32[2]):\n    y = x x\n    return y\n",
        TdslSyntaxError,
        "k.tdsl:2:11: error: expected end of line, found `x`\n    y = x x\n          ^",
    ),
    (
        "def f(x: f32[2]):\n    return x\nx + 1\n",
        TdslSyntaxError,
        "k.tdsl:3:1: error: expected `def` or end of input, found `x`\nx + 1\n^",
    ),
    (
        "  def f(x: f32[2]):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:3: error: unexpected indentation\n  def f(x: f32[2]):\n  ^^^",
    ),
    (
        "def (x: f32[2]):\n    return x\n",
        TdslSyntaxError,
        "k.tdsl:1:5: error: expected a kernel name after `def` (a keyword: it cannot name an input), found `(`\ndef (x: f32[2]):\n    ^",
    ),
]


@pytest.mark.parametrize(("text", "kind", "expected"), PROGRAM_ERRORS)
def test_program_syntax_errors(text: str, kind: type[TdslError], expected: str) -> None:
    with pytest.raises(kind) as info:
        parse(text, "k.tdsl")
    assert str(info.value) == expected
    assert type(info.value) is kind


def test_error_carries_line_column_and_source_line() -> None:
    with pytest.raises(TdslSyntaxError) as info:
        parse("def f(x: f32[2]):\n    return x +\n", "k.tdsl")
    err = info.value
    assert (err.line, err.column) == (2, 15)
    assert err.location is not None
    assert err.location.source_line == "    return x +"
    assert err.location.file == "k.tdsl"
