"""The recursive-descent parser of the tdsl expression language.

Grammar (``NEWLINE`` tokens only matter in programs; indentation is read from
the column of the first token of a line)::

    source     ::= expression | program
    expression ::= expr EOF
    program    ::= kernel+ EOF
    kernel     ::= "def" NAME "(" [param ("," param)* [","]] ")" ":" NEWLINE body
    param      ::= NAME ":" DTYPE "[" [INT ("," INT)* [","]] "]"
    body       ::= (NAME ("," NAME)* "=" expr NEWLINE)* "return" expr ("," expr)* NEWLINE
    expr       ::= operand (("+" | "-" | "*" | "/" | "@") operand)*
    operand    ::= ("-" | "~")* postfix ["**" operand]
    postfix    ::= primary (".T" | "[" index ("," index)* [","] "]")*
    index      ::= [INT] ":" [INT] [":" [INT]] | INT | "..." | "None"     (INT: ["-"] digits)
    primary    ::= NUMBER | NAME | NAME "(" [arg ("," arg)* [","]] ")" | "(" expr ")"
                 | "(" expr "," [expr ("," expr)* [","]] ")" | "[" expr ("," expr)* [","] "]"
    arg        ::= expr | NAME "=" kwvalue
    kwvalue    ::= ["-"] INT | "true" | "false" | "True" | "False" | "None"

Binary operators follow Python: ``* / @`` bind tighter than ``+ -``, unary
minus tighter than both, all left-associative.  Nesting (parentheses, calls,
unary minus) is bounded by :data:`MAX_NESTING`, and the parser recurses only
through nesting, so no input can exhaust the Python stack.
"""

from __future__ import annotations

import math

from tdsl.dtypes import DTYPE_ALIASES, WEAK_PARAMS
from tdsl.dtypes import DTYPES as ELEMENT_DTYPES
from tdsl.errors import TdslSyntaxError, TdslTypeError, check_argument
from tdsl.frontend.ast import (
    Assign,
    BinOp,
    Call,
    Expr,
    Expression,
    Invert,
    Kernel,
    Keyword,
    Name,
    Neg,
    Number,
    Param,
    Program,
    Return,
    Source,
    Span,
)
from tdsl.frontend.functions import leading_string_param, positional_params, unqualified
from tdsl.frontend.lexer import Token, TokenKind, indent_words, number_value, tokenize
from tdsl.frontend.subscripts import parse_bracketed, parse_subscript

MAX_NESTING = 200
"""The deepest nesting of parentheses, calls and unary minus the parser accepts."""

DTYPES = tuple(ELEMENT_DTYPES)
"""The element types a kernel signature may name."""

_KEYWORD_CONSTANTS: dict[str, bool | None] = {
    "true": True,
    "True": True,
    "false": False,
    "False": False,
    "None": None,
}
_FLOAT_NAMES: dict[str, float] = {"inf": math.inf, "nan": math.nan}
"""Names a parameter's value may be, as NumPy's constants (``full(s, np.nan)``)."""
COMPARISONS = frozenset({"<", "<=", "==", "!=", ">=", ">"})
_PRECEDENCE = {**dict.fromkeys(COMPARISONS, 0), "|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4}
_PRECEDENCE |= {"+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6, "@": 6}
"""Binary operators (``**`` aside) and their precedence, as in Python."""
_MAX_INT_DIGITS = 18
MAX_DIM = 2**62


def parse(source: str, filename: str = "<expr>") -> Expression | Program:
    """Parse a bare expression, or a program of ``def`` kernels, into its AST.

    Raises :class:`~tdsl.errors.TdslSyntaxError` (or, for an unknown dtype in a
    signature, :class:`~tdsl.errors.TdslTypeError`) pointing at the culprit.
    """
    check_argument(source, str, "the source given to `parse`")
    src = Source(source, filename)
    return _Parser(src, tokenize(src)).parse_source()


class _Parser:
    """Holds the token stream and the current nesting depth."""

    def __init__(self, source: Source, tokens: list[Token]) -> None:
        self.source = source
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    # ------------------------------------------------------------------ helpers

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, offset: int = 1) -> Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind is not TokenKind.EOF:
            self.pos += 1
        return token

    def is_punct(self, text: str) -> bool:
        return self.tok.kind is TokenKind.PUNCT and self.tok.text == text

    def error(self, message: str, span: Span | None = None) -> TdslSyntaxError:
        return TdslSyntaxError(message, self.source.location(span or self.tok.span))

    def expect_punct(self, text: str, context: str, signature: bool = False) -> Token:
        """The ``text`` token; else an error (at a ``signature`` without ``def``: a hint)."""
        if not self.is_punct(text):
            hint = ": a kernel starts with `def` (`def main(x: f32[4]):`)" * signature
            raise self.error(f"expected `{text}` {context}, found {self.tok.describe()}{hint}")
        return self.advance()

    def starts_line(self, token: Token) -> bool:
        at = self.tokens.index(token)
        return at == 0 or self.tokens[at - 1].kind is TokenKind.NEWLINE

    def expect_name(self, what: str) -> Token:
        if self.tok.kind is not TokenKind.NAME:
            raise self.error(f"expected {what}, found {self.tok.describe()}")
        return self.advance()

    def indent_of(self, token: Token) -> str:
        """The leading whitespace of the line ``token`` starts."""
        line = self.source.lines[token.span.line - 1]
        return line[: token.span.column - 1]

    def enter(self, token: Token) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(
                f"expression is nested too deeply (more than {MAX_NESTING} levels)", token.span
            )

    # ------------------------------------------------------------------ sources

    def parse_source(self) -> Expression | Program:
        if self.tok.kind is TokenKind.EOF:
            raise self.error("empty input: expected an expression or a `def` kernel")
        if self.tok.kind is TokenKind.KEYWORD and self.tok.text == "def":
            return self.parse_program()
        # A bare expression may span lines freely: drop the line structure.
        self.tokens = [t for t in self.tokens if t.kind is not TokenKind.NEWLINE]
        body = self.parse_expr()
        rest = self.tok
        if rest.kind is not TokenKind.EOF:
            raise self.error(f"expected end of input, found {rest.describe()}")
        return Expression(body, self.source)

    def parse_program(self) -> Program:
        kernels: list[Kernel] = []
        while self.tok.kind is not TokenKind.EOF:
            if self.indent_of(self.tok):
                raise self.error("unexpected indentation")
            if not (self.tok.kind is TokenKind.KEYWORD and self.tok.text == "def"):
                self.expect_punct("def", "or end of input", self.peek().text == "(")
            kernels.append(self.parse_kernel())
        return Program(tuple(kernels), self.source)

    def parse_kernel(self) -> Kernel:
        def_tok = self.advance()
        name_tok = self.expect_name(
            "a kernel name after `def` (a keyword: it cannot name an input)"
        )
        self.expect_punct("(", f"after the kernel name `{name_tok.text}`")
        params: list[Param] = []
        while not self.is_punct(")"):
            params.append(self.parse_param())
            if not self.is_punct(")"):
                self.expect_punct(",", "or `)` after an argument")
        self.advance()
        self.expect_punct(":", "after the kernel signature")
        if self.tok.kind is not TokenKind.NEWLINE:
            raise self.error(
                f"expected a new line after `:`, found {self.tok.describe()} "
                "(the body goes on the following, indented lines)"
            )
        self.advance()
        body, ret = self.parse_body(name_tok)
        return Kernel(
            name_tok.text,
            tuple(params),
            body,
            ret,
            def_tok.span.to(ret.span),
            name_tok.span,
        )

    def parse_param(self) -> Param:
        name_tok = self.expect_name("an argument name")
        if not self.is_punct(":"):
            raise self.error(
                f"missing dtype and shape for argument `{name_tok.text}` "
                f"(write e.g. `{name_tok.text}: f32[4, 4]`)",
                name_tok.span,
            )
        self.advance()
        dtype_tok = self.expect_name("a dtype (f16, f32 or f64)")
        dtype = dtype_tok.text
        if dtype in WEAK_PARAMS and not self.is_punct("["):  # a Python float or int
            return Param(name_tok.text, dtype, (), name_tok.span.to(dtype_tok.span))
        if dtype not in DTYPES:
            hint = DTYPE_ALIASES.get(dtype)
            message = f"unknown dtype `{dtype}`; expected bool, f16, f32, f64, i32, i64, u8 or u64"
            if hint is not None:
                message += f" (did you mean `{hint}`?)"
            raise TdslTypeError(message, self.source.location(dtype_tok.span))
        if not self.is_punct("["):
            raise self.error(
                f"expected `[` and the shape of argument `{name_tok.text}` after `{dtype}`, "
                f"found {self.tok.describe()} (write `{dtype}[]` for a 0-d tensor)"
            )
        self.advance()
        shape: list[int] = []
        while not self.is_punct("]"):
            shape.append(self.parse_dim())
            if not self.is_punct("]"):
                self.expect_punct(",", "or `]` in a shape")
        close = self.advance()
        return Param(name_tok.text, dtype, tuple(shape), name_tok.span.to(close.span))

    def parse_dim(self) -> int:
        token = self.tok
        if token.kind is not TokenKind.NUMBER or not token.text.isdigit():
            raise self.error(
                f"expected a dimension (a non-negative integer), found {token.describe()}"
            )
        if len(token.text) > _MAX_INT_DIGITS or int(token.text) > MAX_DIM:
            raise self.error(f"dimension `{token.text}` is too large")
        self.advance()
        return int(token.text)

    def parse_body(self, name_tok: Token) -> tuple[tuple[Assign, ...], Return]:
        first = self.tok
        if first.kind is TokenKind.EOF or not self.indent_of(first):
            raise self.error(f"expected an indented body for kernel `{name_tok.text}`")
        body_indent = self.indent_of(first)
        bindings: list[Assign] = []
        while True:
            token = self.tok
            if token.kind is TokenKind.KEYWORD and token.text == "return":
                ret = self.parse_return()
                following = self.tok
                if following.kind is not TokenKind.EOF and self.indent_of(following):
                    self.check_indent(following, body_indent)
                    raise self.error(
                        f"`return` must be the last statement of kernel `{name_tok.text}`"
                    )
                return tuple(bindings), ret
            if token.kind is TokenKind.NAME and self.peek().text in ("=", ","):
                bindings.append(self.parse_assign())
            else:
                raise self.error(
                    f"expected a binding `name = ...` or `return`, found {token.describe()}"
                )
            following = self.tok
            if following.kind is TokenKind.EOF or not self.indent_of(following):
                raise self.error(
                    f"kernel `{name_tok.text}` has no `return` at its end", name_tok.span
                )
            self.check_indent(following, body_indent)

    def check_indent(self, token: Token, body_indent: str) -> None:
        indent = self.indent_of(token)
        if indent == body_indent:
            return
        if indent.startswith(body_indent):
            raise self.error("unexpected indentation", token.span)
        mixed = ("\t" in indent) != ("\t" in body_indent)  # (they may look alike)
        words = ": they have {}, this one {}".format(*map(indent_words, (body_indent, indent)))
        message = "indentation does not match the previous lines" + (words if mixed else "")
        raise self.error(message, token.span)

    def parse_assign(self) -> Assign:
        target = self.advance()
        more: list[tuple[str, Span]] = []
        while self.is_punct(","):  # unpacking: ``q, k, v = split(x, 3)``
            self.advance()
            name = self.expect_name("a name to bind")
            more.append((name.text, name.span))
        self.expect_punct("=", "after the names to bind")
        value = self.parse_expr()
        self.expect_line_end()
        span = target.span.to(value.span)
        return Assign(target.text, value, span, target.span, tuple(more))

    def parse_return(self) -> Return:
        ret_tok = self.advance()
        values = [self.parse_expr()]
        while self.is_punct(","):
            self.advance()
            values.append(self.parse_expr())
        self.expect_line_end()
        return Return(tuple(values), ret_tok.span.to(values[-1].span))

    def expect_line_end(self) -> None:
        if self.tok.kind is not TokenKind.NEWLINE:
            raise self.error(f"expected end of line, found {self.tok.describe()}")
        self.advance()

    # ------------------------------------------------------------------ expressions

    def parse_expr(self) -> Expr:
        """Parse binary operators by precedence, with explicit stacks (no recursion)."""
        operands = [self.parse_operand()]
        operators: list[Token] = []

        def reduce() -> None:
            op = operators.pop()
            rhs = operands.pop()
            lhs = operands.pop()
            operands.append(BinOp(op.text, lhs, rhs, lhs.span.to(rhs.span), op.span))

        while self.tok.kind is TokenKind.PUNCT and self.tok.text in _PRECEDENCE:
            op = self.advance()
            while operators and _PRECEDENCE[operators[-1].text] >= _PRECEDENCE[op.text]:
                if operators[-1].text in COMPARISONS and op.text in COMPARISONS:
                    first = operators[-1].text
                    raise self.error(
                        f"comparisons do not chain: `a {first} b {op.text} c` would mean "
                        f"`(a {first} b) & (b {op.text} c)` in Python; write that",
                        op.span,
                    )
                reduce()
            operators.append(op)
            operands.append(self.parse_operand())
        while operators:
            reduce()
        return operands[0]

    def parse_operand(self) -> Expr:
        """Unary ``-`` and ``~``, then a power ``primary ("**" operand)?``: ``-2**2`` is
        ``-(2**2)``, ``**`` is right-associative and its exponent may be negated, as in
        Python.  (One function: the parser's stack depth per nesting level is bounded.)"""
        prefix: list[Token] = []
        while self.is_punct("-") or self.is_punct("~"):
            prefix.append(self.advance())
            self.enter(prefix[-1])
        expr = self.parse_primary()
        while self.is_punct(".T") or self.is_punct("["):
            if self.is_punct("["):  # NumPy's basic indexing: ``x[1:, 0]``
                expr = parse_subscript(self, expr)
                continue
            attr = self.advance()  # NumPy's transpose attribute: ``k.T``
            expr = Call("transpose", (expr,), (), expr.span.to(attr.span), attr.span)
        if self.is_punct("**"):
            op = self.advance()
            self.enter(op)
            exponent = self.parse_operand()
            self.depth -= 1
            expr = BinOp("**", expr, exponent, expr.span.to(exponent.span), op.span)
        for token in reversed(prefix):
            node = Neg if token.text == "-" else Invert
            expr = node(expr, token.span.to(expr.span))
        self.depth -= len(prefix)
        return expr

    def parse_primary(self) -> Expr:
        token = self.tok
        if token.kind is TokenKind.NUMBER:
            self.advance()
            return Number(number_value(token.text), token.text, token.span)
        if token.kind is TokenKind.NAME:
            self.advance()
            if self.is_punct("("):
                return self.parse_call(token)
            return Name(unqualified(token.text), token.span)
        if self.is_punct("(") or self.is_punct("["):  # (expr), a tuple or a list
            return parse_bracketed(self)
        if token.kind is TokenKind.KEYWORD:
            raise self.error(f"expected an expression, found the keyword `{token.text}`")
        if token.kind is TokenKind.STRING:
            raise self.error(
                f"expected an expression, found the string {token.text}: the language's only "
                "strings are einsum's subscripts"
            )
        raise self.error(f"expected an expression, found {token.describe()}")

    def parse_call(self, name_tok: Token) -> Call:
        open_tok = self.advance()
        self.enter(open_tok)
        args: list[Expr] = []
        keywords: list[Keyword] = []
        positional = positional_params(name_tok.text)
        leading: Keyword | None = None
        by_position = 0  # parameters given by position (in keywords)
        while not self.is_punct(")"):
            start = self.pos
            if self.tok.kind is TokenKind.NAME and self.peek().text == "=":
                keyword = self.parse_keyword()
                self.constant_ends(start + 2, keyword.name, name_tok.text)
                if any(k.name == keyword.name for k in keywords):
                    raise self.error(
                        f"keyword argument `{keyword.name}` repeated"
                        if keyword.name not in positional.values()
                        else f"`{name_tok.text}` got two values for `{keyword.name}`",
                        keyword.span,
                    )
                keywords.append(keyword)
            elif positional.get(len(args) + len(keywords)) == "dtype" and (
                self.tok.kind in (TokenKind.NAME, TokenKind.STRING)
            ):
                # NumPy's positional dtype: eye(3, 3, 0, np.float32)
                if keywords and by_position != len(keywords):
                    raise self.error("positional argument follows keyword argument")
                keywords.append(self.parse_value("dtype", self.tok))
                by_position += 1
            elif self.tok.kind is TokenKind.STRING:
                # einsum("ij,jk->ik", a, b): a leading string is the subscripts
                name = leading_string_param(name_tok.text)
                if name is None or args or keywords or leading is not None:
                    raise self.error(
                        "a string is not a value here: the language's only strings are "
                        "einsum's subscripts, its first argument"
                    )
                token = self.advance()
                leading = Keyword(name, token.text[1:-1], token.span)
            elif len(args) + len(keywords) in positional and self.starts_constant():
                # NumPy's positional parameters: ``transpose(x, (1, 0))``, ``sum(x, 0)``
                if keywords and not all(k.name in positional.values() for k in keywords):
                    raise self.error("positional argument follows keyword argument")
                name = positional[len(args) + len(keywords)]
                keywords.append(self.parse_value(name, self.tok))
                self.constant_ends(start, name, name_tok.text)
                by_position += 1
            else:
                slot = positional.get(len(args) + len(keywords))
                arg = self.parse_expr()
                if keywords and by_position == len(keywords):
                    raise self.error(
                        f"`{slot}` of `{name_tok.text}` takes a constant (a number, a tuple, "
                        "true, false or None), not an expression: write its value"
                        if slot is not None  # full((2,), -(2)): a parameter's place
                        else f"`{name_tok.text}` takes {len(args) + by_position} positional "
                        "arguments, and more are given",
                        arg.span,
                    )
                if keywords:
                    raise self.error("positional argument follows keyword argument", arg.span)
                args.append(arg)
            if not self.is_punct(")"):
                self.expect_punct(
                    ",",
                    f"or `)` in the call to `{name_tok.text}` "
                    f"(opened at {open_tok.span.line}:{open_tok.span.column})",
                    self.is_punct(":") and self.starts_line(name_tok),
                )
        close = self.advance()
        self.depth -= 1
        if leading is not None:
            keywords.insert(0, leading)
        return Call(
            unqualified(name_tok.text),
            tuple(args),
            tuple(keywords),
            name_tok.span.to(close.span),
            name_tok.span,
        )

    def constant_ends(self, start: int, name: str, function: str) -> None:
        """An error where the constant of parameter ``name`` that starts at token
        ``start`` goes on as an expression (``arange(2 * 2)``): a parameter takes a value
        written out."""
        if self.is_punct(",") or self.is_punct(")") or self.tok.kind is TokenKind.EOF:
            return
        if self.tok.kind is not TokenKind.PUNCT or self.tok.text in ("(", "=", ":"):
            return  # (not an operator: the caller's `,` or `)` error)
        end = self.pos
        self.pos = start
        try:
            span = self.parse_expr().span
        except TdslSyntaxError:
            self.pos = end
            return
        raise self.error(
            f"`{name}` of `{function}` takes a constant (a number, a tuple, true, false or "
            "None), not an expression: write its value",
            span,
        )

    def starts_constant(self) -> bool:
        """Whether a keyword's kind of value starts here: a number, ``-`` and a number, a
        tuple, true, false or None."""
        token = self.tok
        if token.kind is TokenKind.NUMBER or self.is_punct("("):
            return True
        if self.is_punct("-"):
            after = self.peek()
            number = after.kind is TokenKind.NUMBER or unqualified(after.text) in _FLOAT_NAMES
            return number and self.peek(2).text in (",", ")")
        if token.kind is TokenKind.NAME and unqualified(token.text) in _FLOAT_NAMES:
            return self.peek().text in (",", ")")
        return token.kind is TokenKind.NAME and token.text in _KEYWORD_CONSTANTS

    def parse_keyword(self) -> Keyword:
        name_tok = self.advance()
        self.advance()  # "="
        return self.parse_value(name_tok.text, name_tok)

    def parse_value(self, name: str, start: Token) -> Keyword:
        """The value of parameter ``name`` (a keyword's, or a positional one's), as a
        :class:`Keyword` spanning from ``start``."""
        name_tok = Token(TokenKind.NAME, name, start.span)
        token = self.tok
        if (
            name == "dtype"
            and token.kind in (TokenKind.NAME, TokenKind.STRING)
            and token.text not in _KEYWORD_CONSTANTS
        ):
            # dtype=np.float32, dtype=f32, dtype="float32": the name, checked when lowered
            self.advance()
            text = token.text[1:-1] if token.kind is TokenKind.STRING else unqualified(token.text)
            return Keyword(name, text, name_tok.span.to(token.span))
        if token.kind is TokenKind.STRING:
            raise self.error(
                f"a string is not a value of `{name}`: the language's only strings are "
                "einsum's subscripts, given first: einsum('ij,jk->ik', a, b)"
            )
        if token.kind is TokenKind.NAME and token.text in _KEYWORD_CONSTANTS:
            self.advance()
            constant = _KEYWORD_CONSTANTS[token.text]
            return Keyword(name_tok.text, constant, name_tok.span.to(token.span))
        if self.is_punct("("):
            return self.parse_int_tuple(name_tok)
        negative = self.is_punct("-")
        if negative:
            self.advance()
        number = self.tok
        if number.kind is TokenKind.NAME and unqualified(number.text) in _FLOAT_NAMES:
            self.advance()  # inf, nan (np.inf, -np.inf): a fill value, a bound
            value = _FLOAT_NAMES[unqualified(number.text)]
            return Keyword(
                name_tok.text, -value if negative else value, name_tok.span.to(number.span)
            )
        if number.kind is not TokenKind.NUMBER:
            raise self.error(
                f"expected a number, inf, nan, true, false or None as the value of "
                f"`{name_tok.text}`, found {number.describe()}"
            )
        value: int | float
        if number.text.isdigit():
            if len(number.text) > _MAX_INT_DIGITS:
                raise self.error(f"integer `{number.text}` is too large")
            value = int(number.text)
        else:
            value = float(number.text)
            if not math.isfinite(value):
                raise self.error(f"number `{number.text}` is too large for a float64")
        self.advance()
        return Keyword(name_tok.text, -value if negative else value, name_tok.span.to(number.span))

    def parse_int_tuple(self, name_tok: Token) -> Keyword:
        """``(0, -1)``, ``(2,)`` or ``()``: a tuple of integers as a keyword's value."""
        open_tok = self.advance()
        values: list[int] = []
        while not self.is_punct(")"):
            negative = self.is_punct("-")
            if negative:
                self.advance()
            number = self.tok
            if number.kind is not TokenKind.NUMBER or not number.text.isdigit():
                raise self.error(
                    f"expected an integer in the tuple of `{name_tok.text}`, found "
                    f"{number.describe()}"
                )
            if len(number.text) > _MAX_INT_DIGITS:
                raise self.error(f"integer `{number.text}` is too large")
            values.append(-int(number.text) if negative else int(number.text))
            self.advance()
            if not self.is_punct(")"):
                self.expect_punct(
                    ",",
                    f"or `)` in the tuple of `{name_tok.text}` "
                    f"(opened at {open_tok.span.line}:{open_tok.span.column})",
                )
        close = self.advance()
        return Keyword(name_tok.text, tuple(values), name_tok.span.to(close.span))


__all__ = ["DTYPES", "MAX_NESTING", "parse"]
