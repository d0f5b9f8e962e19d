"""Tokenizer: token kinds, spans, numbers, comments, line structure, bad characters."""

from __future__ import annotations

import pytest

from tdsl.errors import TdslSyntaxError
from tdsl.frontend.ast import Source
from tdsl.frontend.lexer import TokenKind, tokenize


def kinds_and_texts(text: str) -> list[tuple[TokenKind, str]]:
    return [(t.kind, t.text) for t in tokenize(Source(text))]


def test_expression_tokens() -> None:
    assert kinds_and_texts("relu(x @ w) + 2.5") == [
        (TokenKind.NAME, "relu"),
        (TokenKind.PUNCT, "("),
        (TokenKind.NAME, "x"),
        (TokenKind.PUNCT, "@"),
        (TokenKind.NAME, "w"),
        (TokenKind.PUNCT, ")"),
        (TokenKind.PUNCT, "+"),
        (TokenKind.NUMBER, "2.5"),
        (TokenKind.NEWLINE, ""),
        (TokenKind.EOF, ""),
    ]


@pytest.mark.parametrize("text", ["2", "2.5", ".5", "1e-3", "1E+5", "2.", "1.e3", "007", "0.0"])
def test_number_spellings(text: str) -> None:
    tokens = tokenize(Source(text))
    assert (tokens[0].kind, tokens[0].text) == (TokenKind.NUMBER, text)
    assert float(tokens[0].text) == float(text)


def test_keywords_and_names() -> None:
    assert kinds_and_texts("def return define _x1")[:4] == [
        (TokenKind.KEYWORD, "def"),
        (TokenKind.KEYWORD, "return"),
        (TokenKind.NAME, "define"),
        (TokenKind.NAME, "_x1"),
    ]


def test_spans_are_one_based_lines_and_columns() -> None:
    tokens = tokenize(Source("a +\n  bc"))
    bc = next(t for t in tokens if t.text == "bc")
    assert (bc.span.line, bc.span.column, bc.span.start, bc.span.end) == (2, 3, 6, 8)


def test_comments_and_blank_lines_make_no_tokens() -> None:
    text = "# header\n\n   # indented comment\na # trailing\n\n"
    assert kinds_and_texts(text) == [
        (TokenKind.NAME, "a"),
        (TokenKind.NEWLINE, "\n"),
        (TokenKind.EOF, ""),
    ]


def test_no_newline_inside_brackets() -> None:
    kinds = [k for k, _ in kinds_and_texts("f(a,\n  b)\n[1,\n 2]\nc")]
    assert kinds.count(TokenKind.NEWLINE) == 3  # after `)`, after `]`, after `c`


def test_crlf_line_endings() -> None:
    tokens = tokenize(Source("a\r\nb\r\n"))
    assert [(t.kind, t.span.line) for t in tokens if t.kind is TokenKind.NAME] == [
        (TokenKind.NAME, 1),
        (TokenKind.NAME, 2),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a $ b", "<expr>:1:3: error: unexpected character `$`\na $ b\n  ^"),
        ("a ! b", "<expr>:1:3: error: unexpected character `!`\na ! b\n  ^"),
        ("x\x00", "<expr>:1:2: error: unexpected character `\\x00`\nx\x00\n ^"),
        ("\u00e9 + 1", "<expr>:1:1: error: unexpected character `\u00e9`\n\u00e9 + 1\n^"),
        (
            "a.b",
            "<expr>:1:2: error: attribute `.b` is not in the language; call a function of "
            "the language instead (docs/from-numpy.md)\na.b\n ^^",
        ),
        ("a.", "<expr>:1:2: error: unexpected character `.`\na.\n ^"),
        ("2x + 1", "<expr>:1:1: error: invalid number literal `2x`\n2x + 1\n^^"),
        ("1e", "<expr>:1:1: error: invalid number literal `1e`\n1e\n^^"),
        ("1.2.3", "<expr>:1:1: error: invalid number literal `1.2.3`\n1.2.3\n^^^^^"),
    ],
)
def test_lexical_errors(text: str, expected: str) -> None:
    with pytest.raises(TdslSyntaxError) as info:
        tokenize(Source(text))
    assert str(info.value) == expected


def test_an_integer_literal_beyond_pythons_digits_is_a_located_error() -> None:
    """Python converts at most 4300 digits to an int: 5000 of them were its ValueError, not
    a TdslError (found by fuzzing the language); 4300 still lex, and a float of more."""
    with pytest.raises(TdslSyntaxError) as info:
        tokenize(Source("x * " + "7" * 5000))
    assert info.value.message == (
        "an integer literal of 5000 digits is too large (at most 4300, as Python's): "
        "write it as a float (`1e400` is inf)"
    )
    assert info.value.location is not None and info.value.location.column == 5
    assert tokenize(Source("7" * 4300))[0].text == "7" * 4300
    assert tokenize(Source("7" * 5000 + ".0"))[0].text == "7" * 5000 + ".0"


def test_a_byte_order_mark_first_is_skipped_and_not_a_column() -> None:
    """Editors on Windows write one first, and Python skips it: it was "unexpected
    character" (found by fuzzing the language); columns count from after it."""
    tokens = tokenize(Source("\ufeffx + y"))
    assert [(t.text, t.span.column) for t in tokens[:3]] == [("x", 1), ("+", 3), ("y", 5)]
    with pytest.raises(TdslSyntaxError) as info:
        tokenize(Source("\ufeffx + $"))
    assert str(info.value) == "<expr>:1:5: error: unexpected character `$`\nx + $\n    ^"
