"""The functions of the expression language: the table (:data:`FUNCTIONS`, one
:class:`FunctionInfo` per ``FUNCTION`` an op of the ``tensordsl`` dialect declares,
and the op of each binary operator), and :func:`check_call`, which checks a call's
function name, arity and keyword names before anything is lowered, suggesting the
nearest name.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import LanguageFunction, Param
from tdsl.errors import TdslNameError, TdslTypeError
from tdsl.frontend.ast import Call, Expr, Source, walk


@dataclass(frozen=True)
class FunctionInfo:
    """What the language knows about one function: the op declaring it.

    The table is made of the ``FUNCTION`` each op of the tensordsl dialect that is a
    :class:`~tdsl.dialects.op_interfaces.LanguageFunction` declares, with its arity and
    keyword parameters: adding such an op with a ``FUNCTION`` adds the function.
    """

    name: str
    op: type[LanguageFunction]

    @property
    def arity(self) -> int:
        return self.op.ARITY

    @property
    def params(self) -> tuple[Param, ...]:
        return self.op.PARAMS

    @property
    def keywords(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.op.PARAMS)

    @property
    def signature(self) -> str:
        return self.op.signature()


def _function_table() -> dict[str, FunctionInfo]:
    table: dict[str, FunctionInfo] = {}
    for op in td.TensorDSL.operations:
        if issubclass(op, LanguageFunction) and op.FUNCTION is not None:
            table[op.FUNCTION] = FunctionInfo(op.FUNCTION, op)
    return table


FUNCTIONS: dict[str, FunctionInfo] = _function_table()
"""Every function of the language, by name."""

OPERATOR_OPS: dict[str, type[td.BinaryOp]] = {
    op.OPERATOR: op
    for op in td.TensorDSL.operations
    if issubclass(op, td.BinaryOp) and op.OPERATOR is not None
}


# --------------------------------------------------------------------------- calls


def nearest_name(name: str, candidates: Sequence[str]) -> str | None:
    """The candidate closest to ``name``: equal but for case, else by difflib."""
    same_but_case = [c for c in candidates if c.lower() == name.lower()]
    if same_but_case:
        return same_but_case[0]
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def name_list(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def show_keyword_value(value: int | float | bool | None) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_call(source: Source, node: Call) -> None:
    """Check the function name, arity and keyword names of a call (not its arguments)."""
    info = FUNCTIONS.get(node.func)
    if info is None:
        message = f"unknown function `{node.func}`"
        near = nearest_name(node.func, list(FUNCTIONS))
        if near is not None:
            message += f"; did you mean `{near}`?"
        else:
            message += " (the functions are listed in docs/language.md#functions)"
        raise TdslNameError(message, source.location(node.func_span))
    if len(node.args) != info.arity:
        noun = "argument" if info.arity == 1 else "arguments"
        if info.keywords:
            noun = "positional " + noun
        given = len(node.args)
        message = (
            f"`{info.name}` takes {info.arity} {noun} but {given} "
            f"{'was' if given == 1 else 'were'} given (signature: {info.signature})"
        )
        if info.name == "max" and given == 2:
            message += "; for the element-wise maximum use `maximum(a, b)`"
        raise TdslTypeError(message, source.location(node.span))
    for keyword in node.keywords:
        if keyword.name in info.keywords:
            continue
        if not info.keywords:
            message = f"`{info.name}` takes no keyword arguments"
        else:
            message = f"unknown keyword argument `{keyword.name}` for `{info.name}`"
            near = nearest_name(keyword.name, info.keywords)
            if near is not None:
                message += f"; did you mean `{near}`?"
        message += f" (signature: {info.signature})"
        raise TdslNameError(message, source.location(keyword.span))


def check_calls(source: Source, expr: Expr) -> None:
    """Check every call in ``expr``, in source order, before any name or shape."""
    for node in walk(expr):
        if isinstance(node, Call):
            check_call(source, node)
