"""The functions of the expression language: the table (:data:`FUNCTIONS`, one
:class:`FunctionInfo` per ``FUNCTION`` an op of the ``tensordsl`` dialect declares,
and the op of each binary operator), and :func:`check_call`, which checks a call's
function name, arity and keyword names before anything is lowered, suggesting the
nearest name.
"""

from __future__ import annotations

import difflib
import math
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
    for op in [*td.TensorDSL.operations, *td.LANGUAGE_ONLY]:
        if issubclass(op, LanguageFunction) and op.FUNCTION is not None:
            table[op.FUNCTION] = FunctionInfo(op.FUNCTION, op)
    return table


FUNCTIONS: dict[str, FunctionInfo] = _function_table()
"""Every function of the language, by name."""

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}
"""NumPy's constants (``np.pi``, ``np.e``, ``np.inf``, ``np.nan``) by their bare names:
literals, like ``3.14``, unless an argument, a binding or an input of that name shadows
them."""

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


def unknown_name_hint(name: str) -> str:
    """What to add to "unknown name" for ``name``: a function's call, a keyword value's
    use (``True``, ``False`` and ``None`` are keyword values only), or nothing."""
    if name in FUNCTIONS:
        return f"; `{name}` is a function: call it as `{name}(...)`"
    if name in ("True", "False", "None"):
        return (
            f"; `{name}` is only a keyword's value (`keepdims=True`, `axis=None`): as a "
            "value write a number, or a comparison for a mask (`x > 0`)"
        )
    return ""


def show_keyword_value(value: int | float | bool | tuple[int, ...] | str | None) -> str:
    if isinstance(value, str):
        return value  # a dtype's name, as written
    if isinstance(value, tuple):
        return "(" + ", ".join(map(str, value)) + ("," if len(value) == 1 else "") + ")"
    return str(value).lower() if isinstance(value, bool) else str(value)


NUMPY_ALIASES: dict[str, str] = {
    "amax": "`max`",
    "amin": "`min`",
    "absolute": "`abs`",
    "fabs": "`abs`",
    "negative": "`neg` (or `-x`)",
    "add": "`+`",
    "subtract": "`-`",
    "multiply": "`*`",
    "divide": "`/`",
    "true_divide": "`/`",
    "mod": "`remainder` (or `%`)",
    "pow": "`power` (or `**`)",
    "asin": "`arcsin`",
    "acos": "`arccos`",
    "atan": "`arctan`",
    "atan2": "`arctan2`",
    "asinh": "`arcsinh`",
    "acosh": "`arccosh`",
    "atanh": "`arctanh`",
    "rint": "`round`",
    "around": "`round`",
    "bitwise_not": "`invert` (or `~`)",
    "bitwise_invert": "`invert` (or `~`)",
    "bitwise_left_shift": "`left_shift` (or `<<`)",
    "bitwise_right_shift": "`right_shift` (or `>>`)",
    "logical_xor": "`not_equal` (on booleans)",
    "dot": "`matmul` (or `@`; the same for 1-d and 2-d operands)",
    "average": "`mean`",
    "square_root": "`sqrt`",
}
"""NumPy functions the language has under another spelling: what to write, as messages
and docs/from-numpy.md show it."""

NUMPY_MISSING: dict[str, str] = {
    "argsort": "sorting is not in the language",
    "sort": "sorting is not in the language",
    "median": "sorting is not in the language",
    "percentile": "sorting is not in the language",
    "quantile": "sorting is not in the language",
    "unique": "data-dependent shapes are not in the language",
    "nonzero": "data-dependent shapes are not in the language",
    "tensordot": "write the einsum or matmul it stands for",
    "outer": "use expand_dims(a, 1) * b for 1-d a and b",
    "diff": "write `x[..., 1:] - x[..., :-1]`",
    "linspace": "pass the array as an input",
    "zeros_like": "use 0.0 * ones_like(x)",
    "full_like": "use value * ones_like(x)",
    "nansum": "use sum(where(isnan(x), 0.0, x))",
    "nanmean": "use sum(where(isnan(x), 0.0, x)) / sum(where(isnan(x), 0.0, 1.0))",
    "nanmax": "use max(where(isnan(x), -inf, x))",
    "nanmin": "use min(where(isnan(x), inf, x))",
    "divmod": "use the quotient `x // d` and the remainder `x % d`",
    "heaviside": "use where(x < 0, 0.0, where(x > 0, 1.0, h)), nan where isnan(x)",
}
"""NumPy functions the language lacks: why, and the nearest way to write it."""


def check_call(source: Source, node: Call) -> None:
    """Check the function name, arity and keyword names of a call (not its arguments)."""
    info = FUNCTIONS.get(node.func)
    if info is None:
        raise TdslNameError(unknown_function(node.func), source.location(node.func_span))
    fewest = info.op.MIN_ARITY or info.arity
    if not fewest <= len(node.args) <= info.arity:
        noun = "argument" if info.arity == 1 else "arguments"
        if info.keywords:
            noun = "positional " + noun
        given = len(node.args)
        count = f"{fewest} or {info.arity}" if fewest < info.arity else f"{info.arity}"
        if info.op.MIN_ARITY is not None:
            noun = "tensor " + noun.removeprefix("positional ")
        message = (
            f"`{info.name}` takes {count} {noun} but {given} "
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


def unknown_function(name: str) -> str:
    """What is wrong with a call of ``name``, which the language lacks, and what to
    write: NumPy's other spelling of a function it has, NumPy's function it lacks (why,
    and the nearest way), or a misspelling of one it has."""
    alias = NUMPY_ALIASES.get(name)
    if alias is not None:
        return f"unknown function `{name}`: the language spells NumPy's `{name}` as {alias}"
    missing = NUMPY_MISSING.get(name)
    if missing is not None:
        return (
            f"unknown function `{name}`: NumPy's `{name}` is not in the language ({missing}; "
            "docs/from-numpy.md lists what is)"
        )
    message = f"unknown function `{name}`"
    near = nearest_name(name, list(FUNCTIONS))
    if near is not None:
        return message + f"; did you mean `{near}`?"
    return message + " (the functions are listed in docs/language.md#functions)"


def unqualified(name: str) -> str:
    """``exp`` for NumPy's ``np.exp`` (the lexer makes it one name), else ``name``."""
    return name.partition(".")[2] or name


def leading_string_param(func: str) -> str | None:
    """The parameter of ``func`` given as a leading string (``einsum``'s subscripts)."""
    info = FUNCTIONS.get(unqualified(func))
    if info is None:
        return None
    return next((p.name for p in info.params if p.kind == "subscripts"), None)


def positional_params(func: str) -> dict[int, str]:
    """Position -> name of the parameters of ``func`` a call may give positionally, after
    its operands, as NumPy does (``np.transpose(x, (1, 0))``, ``np.sum(x, 0)``)."""
    info = FUNCTIONS.get(unqualified(func))
    if info is None:
        return {}
    names = [p.name for p in info.params[: info.op.POSITIONAL]]
    return {info.arity + k: name for k, name in enumerate(names)}
