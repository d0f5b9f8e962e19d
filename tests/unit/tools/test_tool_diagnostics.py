"""The error renderers and the op-locating parser behind ``tdsl-opt`` and ``tdsl-run``."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func, FuncOp, ReturnOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import ArgSpecParseError, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span

from tdsl.dialects import tensordsl as td
from tdsl.errors import TdslTypeError
from tdsl.ir_text import LocatingParser, OpLocator, find_verify_failure, op_message
from tdsl.tools.diagnostics import (
    EXIT_INTERNAL_ERROR,
    EXIT_USER_ERROR,
    DriverError,
    format_arg_spec_error,
    format_op_error,
    format_parse_error,
    internal_error_text,
    run_tool,
    span_location,
    user_error_text,
)


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Arith, td.TensorDSL):
        ctx.load_dialect(dialect)
    return ctx


NESTED = """\
builtin.module {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "tensordsl.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = tensordsl.neg %0 : tensor<4xf32>
    func.return %1 : tensor<4xf32>
  }
}
"""


def parse(text: str) -> tuple[ModuleOp, LocatingParser]:
    parser = LocatingParser(make_context(), text, "in.mlir")
    return parser.parse_module(), parser


def test_span_location_gives_line_column_and_source_line() -> None:
    text_input = Input("first\n  second line\n", "f.mlir")
    location = span_location(Span(8, 14, text_input), line_offset=10)
    assert (location.file, location.line, location.column, location.length) == ("f.mlir", 12, 3, 6)
    assert location.source_line == "  second line"


def test_span_location_clamps_a_multiline_span_to_its_first_line() -> None:
    text_input = Input("ab\ncd\n", "f.mlir")
    assert span_location(Span(1, 5, text_input)).length == 1


def test_parser_records_the_name_of_every_op() -> None:
    module, parser = parse(NESTED)
    spans = {
        op.name: (span.get_location().line, span.get_location().col, span.text)
        for op, span in parser.op_spans.items()
    }
    assert spans == {
        "builtin.module": (1, 1, "builtin.module"),
        "func.func": (2, 3, "func.func"),
        "tensordsl.relu": (3, 11, "tensordsl.relu"),
        "tensordsl.neg": (4, 10, "tensordsl.neg"),
        "func.return": (5, 5, "func.return"),
    }
    assert set(parser.op_spans) == set(module.walk())


def test_parser_names_an_ssa_value_that_looks_like_the_op() -> None:
    text = "%tensordsl.neg = tensordsl.neg %x : tensor<f32>"
    parser = LocatingParser(
        make_context(), "func.func @f(%x: tensor<f32>) {\n" + text + "\nfunc.return\n}", "in.mlir"
    )
    module = parser.parse_module()
    neg = next(op for op in module.walk() if isinstance(op, td.NegOp))
    assert parser.op_spans[neg].get_location().col == len("%tensordsl.neg = ") + 1


def test_unknown_op_error_points_at_its_name() -> None:
    with pytest.raises(ParseError) as info:
        parse("func.func @f() {\n  %0 = foo.bar : i32\n}\n")
    assert format_parse_error(info.value).splitlines() == [
        "in.mlir:2:8: error: Operation foo.bar is not registered",
        "  %0 = foo.bar : i32",
        "       ^^^^^^^",
    ]


def test_undefined_value_error_points_at_the_use() -> None:
    with pytest.raises(ParseError) as info:
        parse("func.func @f() {\n  %0 = tensordsl.neg %y : tensor<f32>\n  func.return\n}\n")
    assert format_parse_error(info.value, line_offset=3).splitlines() == [
        "in.mlir:5:22: error: use of undefined value '%y'",
        "  %0 = tensordsl.neg %y : tensor<f32>",
        "                     ^^",
    ]


def test_find_verify_failure_picks_the_innermost_op() -> None:
    module, _ = parse(NESTED.replace("func.return %1", "func.return %a"))
    assert find_verify_failure(module) is None
    bad_text = NESTED.replace(
        "tensordsl.neg %0 : tensor<4xf32>", '"tensordsl.neg"(%0) : (tensor<4xf32>) -> tensor<3xf32>'
    ).replace("func.return %1 : tensor<4xf32>", "func.return %a : tensor<4xf32>")
    module, _ = parse(bad_text)
    with pytest.raises(VerifyException):
        module.verify()
    found = find_verify_failure(module)
    assert found is not None
    assert isinstance(found[0], td.NegOp)


def test_find_verify_failure_reports_an_empty_block_on_its_parent() -> None:
    module = ModuleOp([FuncOp("f", ((), ()))])
    found = find_verify_failure(module)
    assert found is not None
    assert isinstance(found[0], FuncOp)
    assert "empty block" in str(found[1])


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("shapes differ", "'func.return' op shapes differ"),
        ("'func.return' op shapes differ", "'func.return' op shapes differ"),
        ("Operation func.return is odd\n", "Operation func.return is odd"),
    ],
)
def test_op_message_adds_the_op_name_once(message: str, expected: str) -> None:
    assert op_message(ReturnOp(), message) == expected


def test_format_op_error_without_location_shows_the_op() -> None:
    op: Operation = ReturnOp()
    text = format_op_error(op, "bad", OpLocator({}), note="after pass 'x'")
    assert text.splitlines() == [
        "error: 'func.return' op bad",
        "note: after pass 'x'",
        "note: the failing operation is:",
        '"func.return"() : () -> ()',
    ]


def test_format_arg_spec_error_reorders_xdsl_text() -> None:
    from xdsl.utils.arg_spec import parse_pipeline

    with pytest.raises(ArgSpecParseError) as info:
        list(parse_pipeline("cse{"))
    assert format_arg_spec_error(info.value).splitlines() == [
        "pass-pipeline:1:5: error: Expected argument name here",
        "cse{",
        "    ^",
    ]


def test_user_error_text_classifies_errors() -> None:
    assert user_error_text(DriverError("error: x")) == "error: x"
    assert user_error_text(TdslTypeError("bad shape")) == "error: bad shape"
    assert user_error_text(VerifyException("bad op")) == "error: bad op"
    assert user_error_text(KeyError("k")) is None


def test_internal_error_text_is_one_line() -> None:
    text = internal_error_text(ValueError("first\nsecond"))
    assert text == "internal error: ValueError: first (set TDSL_DEBUG=1 for a traceback)"


def _raise(err: BaseException) -> None:
    raise err


@pytest.mark.parametrize(
    ("err", "code", "stderr"),
    [
        (DriverError("error: nope"), EXIT_USER_ERROR, "error: nope\n"),
        (TdslTypeError("shapes"), EXIT_USER_ERROR, "error: shapes\n"),
        (
            KeyError("k"),
            EXIT_INTERNAL_ERROR,
            "internal error: KeyError: 'k' (set TDSL_DEBUG=1 for a traceback)\n",
        ),
        (KeyboardInterrupt(), 130, "error: interrupted\n"),
    ],
)
def test_run_tool_exit_codes(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    err: BaseException,
    code: int,
    stderr: str,
) -> None:
    monkeypatch.delenv("TDSL_DEBUG", raising=False)
    with pytest.raises(SystemExit) as info:
        run_tool(lambda: _raise(err))
    assert info.value.code == code
    assert capsys.readouterr().err == stderr


def test_run_tool_passes_system_exit_and_success_through() -> None:
    run_tool(lambda: None)
    with pytest.raises(SystemExit) as info:
        run_tool(lambda: _raise(SystemExit(0)))
    assert info.value.code == 0
