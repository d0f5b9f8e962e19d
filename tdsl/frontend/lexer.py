"""The tokenizer of the tdsl expression language.

Produces names, keywords (``def``, ``return``), numbers, punctuation, NEWLINE
tokens and a final EOF.  A NEWLINE ends each line that holds tokens, except
inside parentheses or brackets, so an expression may continue over several lines
there.  Comments run from ``#`` to the end of the line.  Indentation is not a
token: the parser reads it from the column of the first token of a line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from tdsl.errors import TdslSyntaxError, internal_error
from tdsl.frontend.ast import Source, Span


class TokenKind(Enum):
    """The kinds of token."""

    NAME = "name"
    KEYWORD = "keyword"
    NUMBER = "number"
    STRING = "string"
    PUNCT = "punctuation"
    NEWLINE = "newline"
    EOF = "end of input"


KEYWORDS = frozenset({"def", "return"})
PUNCTUATION = frozenset("+-*/@()[],:=%<>!&|~^")
_TWO_CHAR = frozenset({"**", "<=", ">=", "==", "!=", "//", "<<", ">>"})
"""Operators of two characters, lexed as one token."""
_OPENING = frozenset("([")
_CLOSING = frozenset(")]")
_WHITESPACE = frozenset(" \t\r\f\v")

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NUMPY_MODULES = frozenset({"np", "numpy"})
"""Module names whose attributes are the language's names (``np.exp`` is ``exp``)."""
_NUMBER_RE = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# What a careless number may run on into: `1e`, `2x`, `1.2.3`.
_NUMBER_TAIL_RE = re.compile(r"[A-Za-z0-9_.]+")


@dataclass(frozen=True)
class Token:
    """One token: its kind, its exact text and where it is."""

    kind: TokenKind
    text: str
    span: Span

    def describe(self) -> str:
        """A phrase for error messages, e.g. "`+`" or "end of input"."""
        if self.kind is TokenKind.EOF:
            return "end of input"
        if self.kind is TokenKind.NEWLINE:
            return "end of line"
        return f"`{self.text}`"


def tokenize(source: Source) -> list[Token]:
    """Split ``source`` into tokens; raise :class:`TdslSyntaxError` on a bad character."""
    return _Lexer(source).run()


class _Lexer:
    """A single pass over the text, tracking the line and the bracket depth."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.text = source.text
        self.tokens: list[Token] = []
        self.line = 1
        self.line_start = 0
        self.depth = 0

    def span(self, start: int, end: int) -> Span:
        return Span(start, end, self.line, start - self.line_start + 1)

    def error(self, message: str, start: int, end: int) -> TdslSyntaxError:
        return TdslSyntaxError(message, self.source.location(self.span(start, end)))

    def emit(self, kind: TokenKind, start: int, end: int) -> None:
        self.tokens.append(Token(kind, self.text[start:end], self.span(start, end)))

    def at_line_end(self) -> bool:
        return not self.tokens or self.tokens[-1].kind is TokenKind.NEWLINE

    def run(self) -> list[Token]:
        text = self.text
        # a byte-order mark that editors write first (Python's parser skips it too): not a
        # column of the first line
        pos = self.line_start = 1 if text.startswith("\ufeff") else 0
        n = len(text)
        while pos < n:
            ch = text[pos]
            if ch == "\n":
                if self.depth == 0 and not self.at_line_end():
                    self.emit(TokenKind.NEWLINE, pos, pos + 1)
                pos += 1
                self.line += 1
                self.line_start = pos
            elif ch in _WHITESPACE:
                pos += 1
            elif ch == "#":
                end = text.find("\n", pos)
                pos = n if end < 0 else end
            elif ch.isascii() and (ch.isalpha() or ch == "_"):
                pos = self.name(pos)
            elif (ch.isascii() and ch.isdigit()) or (
                ch == "." and text[pos + 1 : pos + 2].isdigit()
            ):
                pos = self.number(pos)
            elif (
                ch == "."
                and text[pos + 1 : pos + 2].isascii()
                and (text[pos + 1 : pos + 2].isalpha() or text[pos + 1 : pos + 2] == "_")
            ):
                pos = self.attribute(pos)
            elif ch in "\"'":
                pos = self.string(pos)
            elif text[pos : pos + 3] == "...":  # NumPy's Ellipsis, in a subscript
                self.emit(TokenKind.PUNCT, pos, pos + 3)
                pos += 3
            elif text[pos : pos + 2] in _TWO_CHAR:
                self.emit(TokenKind.PUNCT, pos, pos + 2)
                pos += 2
            elif ch in PUNCTUATION and ch != "!":
                if ch in _OPENING:
                    self.depth += 1
                elif ch in _CLOSING:
                    self.depth = max(0, self.depth - 1)
                self.emit(TokenKind.PUNCT, pos, pos + 1)
                pos += 1
            else:
                shown = ch if ch.isprintable() else repr(ch)[1:-1]
                raise self.error(f"unexpected character `{shown}`", pos, pos + 1)
        if not self.at_line_end():
            self.emit(TokenKind.NEWLINE, n, n)
        self.emit(TokenKind.EOF, n, n)
        return self.tokens

    def name(self, pos: int) -> int:
        """Lex the name at ``pos``.  ``np.exp`` and ``numpy.pi`` are one name, NumPy's
        spelling of the language's ``exp`` and ``pi`` (the parser drops the module);
        any other ``.name`` after a name is an attribute, which the language lacks."""
        match = _NAME_RE.match(self.text, pos)
        if match is None:  # pragma: no cover (called on a letter or underscore)
            raise self.error("expected a name", pos, pos + 1)
        end = match.end()
        attribute = _NAME_RE.match(self.text, end + 1) if self.text[end : end + 1] == "." else None
        if attribute is not None and match.group() in NUMPY_MODULES:
            self.emit(TokenKind.NAME, pos, attribute.end())
            return attribute.end()
        kind = TokenKind.KEYWORD if match.group() in KEYWORDS else TokenKind.NAME
        self.emit(kind, pos, end)
        return end

    def attribute(self, pos: int) -> int:
        """Lex ``.T`` at ``pos`` (a punctuation token: the parser applies it to what it
        follows); any other attribute is an error that says what to write."""
        match = _NAME_RE.match(self.text, pos + 1)
        if match is None:  # pragma: no cover (called on a dot followed by a letter)
            raise self.error("unexpected character `.`", pos, pos + 1)
        attr = match.group()
        if attr == "T":
            self.emit(TokenKind.PUNCT, pos, match.end())
            return match.end()
        hint = {
            "shape": "shapes are static: give them when compiling",
            "dtype": "dtypes are static: give them when compiling",
            "real": "a real float is its own real part: drop `.real`",
            "imag": "complex numbers are not in the language",
        }.get(attr, "call a function of the language instead (docs/from-numpy.md)")
        raise self.error(f"attribute `.{attr}` is not in the language; {hint}", pos, match.end())

    def string(self, pos: int) -> int:
        """Lex the string at ``pos``: ``"..."`` or ``'...'`` on one line, no escapes
        (``einsum``'s subscripts are the language's only strings)."""
        quote = self.text[pos]
        end = pos + 1
        while end < len(self.text) and self.text[end] not in (quote, "\n", "\\"):
            end += 1
        if self.text[end : end + 1] == "\\":
            raise self.error("a backslash in a string: strings have no escapes", pos, end + 1)
        if self.text[end : end + 1] != quote:
            raise self.error(f"unterminated string: close it with {quote}", pos, end)
        self.emit(TokenKind.STRING, pos, end + 1)
        return end + 1

    def number(self, pos: int) -> int:
        """Lex the number at ``pos``; reject one that runs on into letters or dots."""
        match = _NUMBER_RE.match(self.text, pos)
        if match is None:  # called on a digit, or a dot followed by a digit
            raise internal_error(
                "lexer: a number lexed where none starts",
                location=self.source.location(self.span(pos, pos + 1)),
            )
        tail = _NUMBER_TAIL_RE.match(self.text, match.end())
        if tail is not None:
            whole = self.text[pos : tail.end()]
            raise self.error(f"invalid number literal `{whole}`", pos, tail.end())
        digits = match.end() - pos
        if digits > _MAX_LITERAL_DIGITS and self.text[pos : match.end()].isdigit():
            raise self.error(  # (Python's own limit: its parser refuses it too)
                f"an integer literal of {digits} digits is too large (at most "
                f"{_MAX_LITERAL_DIGITS}, as Python's): write it as a float (`1e400` is inf)",
                pos,
                match.end(),
            )
        self.emit(TokenKind.NUMBER, pos, match.end())
        return match.end()


__all__ = ["KEYWORDS", "Token", "TokenKind", "indent_words", "number_value", "tokenize"]


def indent_words(indent: str) -> str:
    """An indentation in words: its tabs and spaces (which may look alike)."""
    tabs = indent.count("\t")
    return f"{tabs} tab(s), {len(indent) - tabs} space(s)"


_MAX_LITERAL_DIGITS = 4300
"""The most digits an integer literal may have: Python's limit on converting a string to
an int (``sys.get_int_max_str_digits()``'s default), which its own parser keeps."""


def number_value(text: str) -> int | float:
    """A literal's value: an integer when written as one (``2``, weak like a Python int),
    else a float (``2.0``, ``1e3``, ``.5``)."""
    if text.isdigit():
        return int(text)
    return float(text)
