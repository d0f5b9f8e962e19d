"""Lowering of the tdsl AST to the ``tensordsl`` dialect.

One ``func.func`` per kernel; a bare expression becomes ``func.func @main``
whose arguments are the names it uses, in order of first appearance.  Every
op carries the source location of the text it came from.

Typing follows NumPy 2 (NEP 50):

* array operands promote as ``np.result_type`` does (f16 < f32 < f64); the
  promotion is an explicit ``tensordsl.cast``;
* numeric literals are *weak* Python floats: arithmetic between literals only
  (``2 * 3``, ``-1``, ``1 / 3``) is folded in double precision, as Python would,
  and the result takes the dtype of the tensor it meets, as a 0-d
  ``tensordsl.constant``.  A literal that meets no tensor (one returned alone,
  or the only argument of a function, as in ``exp(2)``) is a float64, and the
  function's result is then a strong float64, as ``np.exp(2)`` is.
* an input of a bare expression declared with the dtype ``float`` (the Python
  type) is a *weak scalar input*: a Python float given at run time, typed
  like a literal.  It is a 0-d ``f64`` argument of the function; where it
  meets a tensor it is converted to that tensor's element type with a
  ``tensordsl.cast`` (one per element type, at its first such use), so
  ``A * s`` is float32 for a float32 ``A``.  Arithmetic between weak values and
  literals only (``s + 1``, ``-s``, ``s * t``) is computed in float64 and stays
  weak, as Python computes on floats; a result made of weak values and
  literals only is float64.

Shapes, axes, arities and keywords are checked here, before any op is built,
so each error points at the user's span.
"""

from __future__ import annotations

import difflib
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import BOOL, ELEMENT_TYPES, LanguageFunction, Param, element_of
from tdsl.dtypes import PROMOTION_RANK, SHORT_NAMES
from tdsl.errors import (
    SourceLocation,
    TdslIRError,
    TdslNameError,
    TdslOptionError,
    TdslTypeError,
)
from tdsl.frontend.ast import (
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
    Program,
    Return,
    Source,
    Span,
    children,
    walk,
)
from tdsl.frontend.parser import MAX_DIM, parse

FloatType: TypeAlias = Float16Type | Float32Type | Float64Type
DTypeLike: TypeAlias = str | np.dtype[Any] | type[Any]
"""A dtype as a user may spell it: ``"f32"``, ``"float32"``, ``np.float32``, ``np.dtype("f4")``."""


# --------------------------------------------------------------------------- functions


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

_BINARY_OPS: dict[str, type[td.BinaryOp]] = {
    op.OPERATOR: op
    for op in td.TensorDSL.operations
    if issubclass(op, td.BinaryOp) and op.OPERATOR is not None
}


# --------------------------------------------------------------------------- dtypes


def element_type_of(dtype: DTypeLike) -> Attribute:
    """The element type for a dtype spelled ``"f32"``, ``"float32"``, ``np.float32``, ...

    Raises :class:`TdslTypeError` for anything but bool, float16, float32 and float64.
    """
    if isinstance(dtype, str) and dtype in ELEMENT_TYPES:
        return ELEMENT_TYPES[dtype]
    resolved = _numpy_dtype(dtype)
    short = None if resolved is None else SHORT_NAMES.get(resolved.name)
    if short is None:
        raise TdslTypeError(
            f"unsupported dtype {_show_dtype(cast(Any, dtype))}; expected bool, float16, float32 "
            "or float64 (also spelled f16, f32, f64)"
        )
    return ELEMENT_TYPES[short]


def _is_dtype_class(dtype: object) -> bool:
    return isinstance(dtype, type) and issubclass(dtype, np.dtype)


def _numpy_dtype(dtype: Any) -> np.dtype[Any] | None:
    """``np.dtype(dtype)``, also for a dtype class such as ``np.dtypes.Float32DType``."""
    spec: Any = getattr(dtype, "type", None) if _is_dtype_class(dtype) else dtype
    try:
        return np.dtype(spec)
    except Exception:  # NumPy raises TypeError, ValueError, ... for what is no dtype
        return None


def _show_dtype(dtype: object) -> str:
    if isinstance(dtype, type):
        return f"`{dtype.__module__}.{dtype.__qualname__}`"
    return f"`{dtype}`"


def dtype_name(element: Attribute) -> str:
    """``f16``, ``f32`` or ``f64``."""
    for name, candidate in ELEMENT_TYPES.items():
        if element == candidate:
            return name
    raise AssertionError(f"not a tensordsl element type: {element}")


def format_type(element: Attribute, shape: Sequence[int]) -> str:
    """A type in the language's own syntax: ``f32[4, 8]``, ``f64[]``."""
    return f"{dtype_name(element)}[{', '.join(str(d) for d in shape)}]"


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class _Tensor:
    """A strongly typed value: an SSA value with its static shape and element type."""

    value: SSAValue
    shape: tuple[int, ...]
    element: Attribute
    """A float type, or ``i1`` for booleans."""


@dataclass(frozen=True)
class _Literal:
    """A weak scalar: a literal, or arithmetic between literals, folded like Python."""

    value: float
    span: Span


@dataclass(frozen=True)
class _Weak:
    """A weak scalar known at run time: an ``f64[]`` value typed like a Python float.

    A weak scalar input, or arithmetic between weak values and literals only.
    """

    value: SSAValue


_Value: TypeAlias = _Tensor | _Literal | _Weak

WEAK: type[float] = float
"""The dtype that declares a weak scalar input (``dtypes={"s": float}``): a Python float."""


def _fold(op: str, a: float, b: float) -> float:
    """``a <op> b`` of two literals, as the op's NumPy ufunc computes it in float64 (IEEE
    rules, never ZeroDivisionError)."""
    name = _BINARY_OPS[op].NUMPY_UFUNC
    if name is None:  # every operator's op names its NumPy counterpart
        raise TdslIRError(f"cannot fold the literals of '{op}': its op names no NumPy ufunc")
    with np.errstate(all="ignore"):
        return float(getattr(np, name)(np.float64(a), np.float64(b)))


# --------------------------------------------------------------------------- lowering


def _nearest(name: str, candidates: Sequence[str]) -> str | None:
    """The candidate closest to ``name``: equal but for case, else by difflib."""
    same_but_case = [c for c in candidates if c.lower() == name.lower()]
    if same_but_case:
        return same_but_case[0]
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _name_list(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def _show_keyword_value(value: int | float | bool | None) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_call(source: Source, node: Call) -> None:
    """Check the function name, arity and keyword names of a call (not its arguments)."""
    info = FUNCTIONS.get(node.func)
    if info is None:
        message = f"unknown function `{node.func}`"
        near = _nearest(node.func, list(FUNCTIONS))
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
            near = _nearest(keyword.name, info.keywords)
            if near is not None:
                message += f"; did you mean `{near}`?"
        message += f" (signature: {info.signature})"
        raise TdslNameError(message, source.location(keyword.span))


def _check_calls(source: Source, expr: Expr) -> None:
    """Check every call in ``expr``, in source order, before any name or shape."""
    for node in walk(expr):
        if isinstance(node, Call):
            check_call(source, node)


class _FunctionLowering:
    """Lowers the expressions of one function body into one block."""

    def __init__(self, source: Source, block: Block) -> None:
        self.source = source
        self.builder = Builder(InsertPoint.at_end(block))
        self.env: dict[str, _Value] = {}
        self.casts: dict[tuple[SSAValue, str], _Tensor] = {}

    # ---------------------------------------------------------------- helpers

    def location(self, span: Span) -> FileLineColLoc:
        return FileLineColLoc(
            StringAttr(self.source.filename), IntAttr(span.line), IntAttr(span.column)
        )

    def where(self, span: Span) -> SourceLocation:
        return self.source.location(span)

    def emit(self, op: Operation, span: Span) -> _Tensor:
        """Locate, verify and insert ``op``; return its (single) result."""
        op.location = self.location(span)
        try:
            op.verify()
        except VerifyException as err:
            raise TdslTypeError(str(err), self.where(span)) from None
        self.builder.insert(op)
        result = op.results[0]
        return _Tensor(result, td.tensor_shape(result), td.element_type(result))

    def to_element(self, value: _Value, element: Attribute, span: Span) -> _Tensor:
        """``value`` as a tensor of ``element``: a constant, a cast, or itself."""
        if isinstance(value, _Literal):
            with np.errstate(over="ignore"):
                data = np.array(value.value, dtype=np.float64).astype(td.numpy_dtype(element))
            return self.emit(td.ConstantOp(td.dense_from_numpy(data, element)), value.span)
        if isinstance(value, _Weak):
            value = _Tensor(value.value, (), f64)
        if value.element == element:
            return value
        key = (value.value, dtype_name(element))
        if key not in self.casts:
            self.casts[key] = self.emit(td.CastOp(value.value, element), span)
        return self.casts[key]

    def unify(
        self,
        operands: Sequence[tuple[_Value, Span]],
        op: type[LanguageFunction] | None = None,
        what: str = "",
        span: Span | None = None,
    ) -> list[_Tensor]:
        """Promote ``operands`` to one element type, as ``np.result_type`` (NEP 50): a
        boolean meets a float as that float, a literal makes booleans float64.

        Booleans all through go to ``op`` as :meth:`bool_inputs_as` says: as they are,
        converted to a float type, or refused (at ``span``) with a suggestion.
        """
        elements = [v.element for v, _ in operands if isinstance(v, _Tensor)]
        rank = PROMOTION_RANK
        element = max(elements, key=lambda e: rank[dtype_name(e)]) if elements else f64
        if element == BOOL and len(elements) < len(operands):
            element = f64  # a Python float with booleans is a float64, as in NumPy
        if element == BOOL and op is not None:
            as_dtype = op.bool_inputs_as()
            if as_dtype is None:
                shown = ", ".join(self.describe(v) for v, _ in operands)
                raise TdslTypeError(
                    f"{what} of booleans ({shown}) is not a float in NumPy; tdsl computes on "
                    "booleans only with comparisons, `&`, `|`, `~` and `where`: convert "
                    "first, e.g. `where(x, 1.0, 0.0)` or `1.0 * x`",
                    self.where(span or operands[0][1]),
                )
            element = element_of(as_dtype)
        return [self.to_element(v, element, s) for v, s in operands]

    def tensor(self, value: _Value, span: Span) -> _Tensor:
        """``value`` as a tensor; a lone literal or weak scalar is a float64."""
        return value if isinstance(value, _Tensor) else self.to_element(value, f64, span)

    def weak(
        self, op_class: type[td.BinaryOp], args: Sequence[_Value], spans: Sequence[Span], span: Span
    ) -> _Weak:
        """``a <op> b`` of weak values and literals: computed in float64, still weak."""
        a, b = (self.to_element(v, f64, s) for v, s in zip(args, spans, strict=True))
        return _Weak(self.emit(op_class(a.value, b.value), span).value)

    @staticmethod
    def describe(value: _Value) -> str:
        if isinstance(value, _Literal):
            return f"f64[] (the number {value.value:g})"
        if isinstance(value, _Weak):
            return "f64[] (a weak scalar)"
        return format_type(value.element, value.shape)

    @staticmethod
    def shape_of(value: _Value) -> tuple[int, ...]:
        return value.shape if isinstance(value, _Tensor) else ()

    # ---------------------------------------------------------------- expressions

    def lower(self, root: Expr) -> _Value:
        """Lower ``root`` bottom-up with an explicit stack (no recursion)."""
        results: dict[int, _Value] = {}
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if ready:
                args = [results.pop(id(child)) for child in children(node)]
                results[id(node)] = self.lower_node(node, args)
                continue
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children(node)))
        return results[id(root)]

    def lower_node(self, node: Expr, args: list[_Value]) -> _Value:
        match node:
            case Number(value=value, span=span):
                return _Literal(value, span)
            case Name():
                return self.lookup(node)
            case Neg():
                (arg,) = args
                if isinstance(arg, _Literal):
                    return _Literal(-arg.value, node.span)
                if isinstance(arg, _Weak):
                    return _Weak(self.emit(td.NegOp(arg.value), node.span).value)
                return self.emit(td.NegOp(arg.value), node.span)
            case BinOp(op="@"):
                return self.matmul("`@`", args, (node.lhs.span, node.rhs.span), node.op_span)
            case Invert():
                (arg,) = args
                self.booleans("`~`", args, (node.operand.span,))
                assert isinstance(arg, _Tensor)
                return self.emit(td.NotOp(arg.value), node.span)
            case BinOp(op=op, lhs=lhs, rhs=rhs):
                a, b = args
                arithmetic = not issubclass(_BINARY_OPS[op], td.CompareOp | td.LogicalOp)
                if arithmetic and isinstance(a, _Literal) and isinstance(b, _Literal):
                    return _Literal(_fold(op, a.value, b.value), node.span)
                if arithmetic and not isinstance(a, _Tensor) and not isinstance(b, _Tensor):
                    return self.weak(_BINARY_OPS[op], args, (lhs.span, rhs.span), node.op_span)
                return self.binary(
                    _BINARY_OPS[op], f"`{op}`", args, (lhs.span, rhs.span), node.op_span
                )
            case Call():
                return self.call(node, args)

    def lookup(self, node: Name) -> _Value:
        value = self.env.get(node.id)
        if value is not None:
            return value
        scope = list(self.env)
        message = f"unknown name `{node.id}`"
        near = _nearest(node.id, scope)
        if near is not None:
            message += f"; did you mean `{near}`?"
        message += f" (names in scope: {_name_list(scope)})"
        if node.id in FUNCTIONS:
            message += f"; `{node.id}` is a function: call it as `{node.id}(...)`"
        raise TdslNameError(message, self.where(node.span))

    def binary(
        self,
        op_class: type[td.BinaryOp],
        what: str,
        args: Sequence[_Value],
        spans: tuple[Span, Span],
        span: Span,
    ) -> _Tensor:
        a, b = args
        try:
            td.broadcast_shapes(self.shape_of(a), self.shape_of(b))
        except td.ShapeError:
            raise TdslTypeError(
                f"operands of {what} do not broadcast: {self.describe(a)} and {self.describe(b)}",
                self.where(span),
            ) from None
        if issubclass(op_class, td.LogicalOp):
            self.booleans(what, args, spans)
        lhs, rhs = self.unify(list(zip(args, spans, strict=True)), op_class, what, span)
        return self.emit(op_class(lhs.value, rhs.value), span)

    def booleans(self, what: str, args: Sequence[_Value], spans: Sequence[Span]) -> None:
        """Refuse a non-boolean operand of a logical operator (``&``, ``|``, ``~``)."""
        for value, at in zip(args, spans, strict=True):
            if not isinstance(value, _Tensor) or value.element != BOOL:
                raise TdslTypeError(
                    f"{what} takes booleans, not {self.describe(value)}: compare first, "
                    "e.g. `(a > 0) & (b < 1)`",
                    self.where(at),
                )

    def matmul(
        self, what: str, args: Sequence[_Value], spans: tuple[Span, Span], span: Span
    ) -> _Tensor:
        a, b = args
        sa, sb = self.shape_of(a), self.shape_of(b)
        try:
            td.matmul_shape(sa, sb)
        except td.ShapeError:
            shown = f"{self.describe(a)} and {self.describe(b)}"
            if not sa or not sb:
                reason = f"{what} needs operands of rank 1 or more, got {shown}"
            elif sa[-1] != sb[max(0, len(sb) - 2)]:
                inner = f"{sa[-1]} vs {sb[max(0, len(sb) - 2)]}"
                reason = f"inner dimensions of {what} differ ({inner}): {shown}"
            else:
                reason = f"batch dimensions of {what} do not broadcast: {shown}"
            raise TdslTypeError(reason, self.where(span)) from None
        lhs, rhs = self.unify(list(zip(args, spans, strict=True)), td.MatmulOp, what, span)
        return self.emit(td.MatmulOp(lhs.value, rhs.value), span)

    # ---------------------------------------------------------------- calls

    def keyword(self, node: Call, name: str) -> Keyword | None:
        return next((k for k in node.keywords if k.name == name), None)

    def axis(self, node: Call, operand: _Value, default: int | None) -> int | None:
        """The ``axis`` keyword of ``node``, checked against the rank of ``operand``."""
        keyword = self.keyword(node, "axis")
        if keyword is None:
            rank = len(self.shape_of(operand))
            if default is not None and rank == 0:
                raise TdslTypeError(
                    f"`{node.func}` needs an operand of rank 1 or more (it works along "
                    f"axis {default}), got {self.describe(operand)}",
                    self.where(node.span),
                )
            return default
        if keyword.value is None and default is None:
            return None
        if keyword.value is None or isinstance(keyword.value, bool | float):
            raise TdslTypeError(
                f"`axis` of `{node.func}` must be an integer, "
                f"not `{_show_keyword_value(keyword.value)}`",
                self.where(keyword.span),
            )
        rank = len(self.shape_of(operand))
        try:
            td.normalize_axis(keyword.value, rank)
        except td.ShapeError:
            valid = (
                "a 0-d tensor has no axes" if rank == 0 else f"expected {-rank} <= axis < {rank}"
            )
            raise TdslTypeError(
                f"axis {keyword.value} is out of range for `{node.func}` of "
                f"{self.describe(operand)} (rank {rank}; {valid})",
                self.where(keyword.span),
            ) from None
        return keyword.value

    def flag(self, node: Call, param: Param) -> bool:
        keyword = self.keyword(node, param.name)
        if keyword is None:
            return bool(param.default)
        if not isinstance(keyword.value, bool):
            raise TdslTypeError(
                f"`{param.name}` must be true or false, not `{_show_keyword_value(keyword.value)}`",
                self.where(keyword.span),
            )
        return keyword.value

    def number(self, node: Call, param: Param) -> float:
        keyword = self.keyword(node, param.name)
        if keyword is None:
            assert isinstance(param.default, float | int)
            return float(param.default)
        if keyword.value is None or isinstance(keyword.value, bool):
            raise TdslTypeError(
                f"`{param.name}` of `{node.func}` must be a number, "
                f"not `{_show_keyword_value(keyword.value)}`",
                self.where(keyword.span),
            )
        return float(keyword.value)

    def where_call(self, node: Call, args: list[_Value], spans: Sequence[Span]) -> _Tensor:
        """``where(c, a, b)``: a float condition means ``c != 0``, as in NumPy; ``a`` and
        ``b`` promote together, booleans staying booleans."""
        cond_value, a, b = args
        cond = self.tensor(cond_value, spans[0])
        if cond.element != BOOL:
            zero = self.to_element(_Literal(0.0, spans[0]), cond.element, spans[0])
            cond = self.emit(td.NotEqualOp(cond.value, zero.value), spans[0])
        shapes = [cond.shape, self.shape_of(a), self.shape_of(b)]
        try:
            td.broadcast_shapes(td.broadcast_shapes(shapes[0], shapes[1]), shapes[2])
        except td.ShapeError:
            shown = ", ".join(self.describe(v) for v in (cond, a, b))
            raise TdslTypeError(
                f"operands of `where` do not broadcast: {shown}", self.where(node.span)
            ) from None
        lhs, rhs = self.unify(list(zip((a, b), spans[1:], strict=True)), td.WhereOp)
        return self.emit(td.WhereOp(cond.value, lhs.value, rhs.value), node.span)

    def call(self, node: Call, args: list[_Value]) -> _Value:
        info = FUNCTIONS[node.func]
        spans = tuple(arg.span for arg in node.args)
        op = info.op
        if issubclass(op, td.BinaryOp):
            return self.binary(op, f"`{info.name}`", args, (spans[0], spans[1]), node.span)
        if op is td.MatmulOp:
            return self.matmul("`matmul`", args, (spans[0], spans[1]), node.span)
        params: dict[str, object] = {}
        for param in info.params:
            match param.kind:
                case "axis":
                    default = param.default
                    assert default is None or isinstance(default, int)
                    params[param.name] = self.axis(node, args[0], default)
                case "bool":
                    params[param.name] = self.flag(node, param)
                case "float":
                    params[param.name] = self.number(node, param)
        if issubclass(op, td.ReductionOp):
            axis, keepdims = params["axis"], params["keepdims"]
            assert axis is None or isinstance(axis, int)
            try:
                op.result_shape(self.shape_of(args[0]), axis, bool(keepdims))
            except td.ShapeError as err:
                raise TdslTypeError(err.message, self.where(node.span)) from None
        if op is td.WhereOp:
            return self.where_call(node, args, spans)
        tensors = [self.tensor(arg, span) for arg, span in zip(args, spans, strict=True)]
        unified = self.unify(
            list(zip(tensors, spans, strict=True)), op, f"`{info.name}`", node.span
        )
        operands = [t.value for t in unified]
        try:
            built = op.from_call(operands, params)
        except td.ShapeError as err:
            raise TdslTypeError(err.message, self.where(node.span)) from None
        return self.emit(built, node.span)


# --------------------------------------------------------------------------- functions and modules


_HINT_SUFFIX = re.compile(r"_\d+$")


def _name_hint(value: SSAValue, name: str) -> None:
    """Name ``value`` after a binding, when xDSL would print that name."""
    if value.name_hint is None and _HINT_SUFFIX.sub("", name):
        value.name_hint = name


def _build_function(
    lowering: _FunctionLowering,
    name: str,
    block: Block,
    results: Sequence[_Tensor],
    span: Span,
    return_span: Span,
) -> func.FuncOp:
    ret = func.ReturnOp(*(r.value for r in results))
    ret.location = lowering.location(return_span)
    lowering.builder.insert(ret)
    inputs = [arg.type for arg in block.args]
    outputs = [r.value.type for r in results]
    function = func.FuncOp(name, (inputs, outputs), Region(block))
    function.location = lowering.location(span)
    # The body's ops were verified one by one as they were built (see `emit`).
    try:
        ret.verify()
        function.verify(verify_nested_ops=False)
    except VerifyException as err:
        raise TdslIRError(f"generated IR does not verify: {err}", lowering.where(span)) from None
    return function


def _block(source: Source, args: Sequence[tuple[str, Attribute, tuple[int, ...], Span]]) -> Block:
    block = Block(arg_types=[TensorType(element, shape) for _, element, shape, _ in args])
    for arg, (name, _, _, span) in zip(block.args, args, strict=True):
        _name_hint(arg, name)
        arg.location = FileLineColLoc(
            StringAttr(source.filename), IntAttr(span.line), IntAttr(span.column)
        )
    return block


def _lower_kernel(source: Source, kernel: Kernel) -> func.FuncOp:
    seen: dict[str, Span] = {}
    for param in kernel.params:
        if param.name in seen:
            raise TdslNameError(
                f"duplicate argument `{param.name}` in kernel `{kernel.name}`",
                source.location(param.span),
            )
        seen[param.name] = param.span
    for statement in (*kernel.body, kernel.ret):
        values = statement.values if isinstance(statement, Return) else (statement.value,)
        for value in values:
            _check_calls(source, value)
    block = _block(
        source,
        [(p.name, ELEMENT_TYPES[p.dtype], p.shape, p.span) for p in kernel.params],
    )
    lowering = _FunctionLowering(source, block)
    for param, arg in zip(kernel.params, block.args, strict=True):
        lowering.env[param.name] = _Tensor(arg, param.shape, ELEMENT_TYPES[param.dtype])
    for assign in kernel.body:
        value = lowering.lower(assign.value)
        if isinstance(value, _Tensor) and isinstance(value.value.owner, Operation):
            _name_hint(value.value, assign.target)
        lowering.env[assign.target] = value
    results = [lowering.tensor(lowering.lower(v), v.span) for v in kernel.ret.values]
    return _build_function(lowering, kernel.name, block, results, kernel.span, kernel.ret.span)


def _input_shape(name: str, shape: Sequence[int], where: SourceLocation) -> tuple[int, ...]:
    try:
        items = tuple(shape)
        dims = tuple(operator.index(d) for d in items if not isinstance(d, bool))
        valid = len(dims) == len(items) and all(0 <= d <= MAX_DIM for d in dims)
    except TypeError:
        dims, valid = (), False
    if not valid:
        raise TdslTypeError(
            f"invalid shape {shape!r} for input `{name}`: expected a tuple of "
            "integers from 0 to 2**62",
            where,
        )
    return dims


def _lower_expression(
    expression: Expression,
    shapes: Mapping[str, Sequence[int]] | None,
    dtypes: DTypeLike | Mapping[str, DTypeLike] | None,
) -> func.FuncOp:
    source = expression.source
    first_use: dict[str, Span] = {}
    _check_calls(source, expression.body)
    for node in walk(expression.body):
        if isinstance(node, Name) and node.id not in first_use:
            first_use[node.id] = node.span
    given = dict(shapes or {})
    args: list[tuple[str, Attribute, tuple[int, ...], Span]] = []
    weak: set[str] = set()
    for name, span in first_use.items():
        where = source.location(span)
        if _dtype_spec(name, dtypes) is WEAK:
            shape = _input_shape(name, given.get(name, ()), where)
            if shape:
                raise TdslTypeError(
                    f"input `{name}` is declared a weak scalar (dtype `float`, a Python "
                    f"float) and must be 0-d, but its shape is given as {shape}; for a "
                    'float64 tensor write `np.float64` or `"f64"`',
                    where,
                )
            weak.add(name)
            args.append((name, f64, (), span))
            continue
        if name not in given:
            message = f"no shape given for input `{name}`"
            near = _nearest(name, list(given))
            if near is not None:
                message += f"; did you mean `{near}`?"
            message += f" (shapes were given for: {_name_list(list(given))})"
            if name in FUNCTIONS:
                message += f"; `{name}` is a function: call it as `{name}(...)`"
            raise TdslNameError(message, where)
        element = _input_element(name, dtypes, where)
        args.append((name, element, _input_shape(name, given[name], where), span))
    block = _block(source, args)
    lowering = _FunctionLowering(source, block)
    for (name, element, shape, _), arg in zip(args, block.args, strict=True):
        lowering.env[name] = _Weak(arg) if name in weak else _Tensor(arg, shape, element)
    body = expression.body
    result = lowering.tensor(lowering.lower(body), body.span)
    return _build_function(lowering, "main", block, [result], body.span, body.span)


def _dtype_spec(name: str, dtypes: DTypeLike | Mapping[str, DTypeLike] | None) -> DTypeLike | None:
    """The dtype given for input ``name`` (``None``: none given, float64)."""
    if isinstance(dtypes, Mapping):
        return dtypes.get(name)
    return dtypes


def _input_element(
    name: str, dtypes: DTypeLike | Mapping[str, DTypeLike] | None, where: SourceLocation
) -> Attribute:
    spec = _dtype_spec(name, dtypes)
    if spec is None:
        return f64
    try:
        return element_type_of(spec)
    except TdslTypeError as err:
        raise TdslTypeError(f"input `{name}`: {err.message}", where) from None


def lower(
    tree: Expression | Program,
    shapes: Mapping[str, Sequence[int]] | None = None,
    dtypes: DTypeLike | Mapping[str, DTypeLike] | None = None,
) -> ModuleOp:
    """Lower a parsed expression or program to a verified ``tensordsl`` module.

    ``shapes`` and ``dtypes`` type the inputs of a bare expression; a program
    types its kernels in their signatures and ignores both.
    """
    if isinstance(tree, Program):
        functions: list[Operation] = []
        defined: dict[str, Span] = {}
        for kernel in tree.kernels:
            if kernel.name in defined:
                first = defined[kernel.name]
                raise TdslNameError(
                    f"kernel `{kernel.name}` is already defined at line {first.line}",
                    tree.source.location(kernel.name_span),
                )
            defined[kernel.name] = kernel.name_span
            functions.append(_lower_kernel(tree.source, kernel))
    else:
        functions = [_lower_expression(tree, shapes, dtypes)]
    module = ModuleOp(functions)
    # Every op inside was verified as it was built, each function when it was closed.
    try:
        module.verify(verify_nested_ops=False)
    except VerifyException as err:
        raise TdslIRError(f"generated IR does not verify: {err}") from None
    return module


def to_tensordsl(
    source: str | Expression | Program,
    shapes: Mapping[str, Sequence[int]] | None = None,
    dtypes: DTypeLike | Mapping[str, DTypeLike] | None = None,
    filename: str = "<expr>",
) -> ModuleOp:
    """Parse ``source`` (an expression or a ``.tdsl`` program) and lower it to tensordsl.

    ``shapes`` maps each input name of an expression to its shape;
    ``dtypes`` is one dtype for all inputs or a dict by name (default float64),
    spelled as a NumPy dtype, a dtype class or a string (``"float32"``, ``"f32"``).
    The Python type ``float`` declares a weak scalar input (see the module
    docstring): 0-d, its shape may be left out; for a strong float64 input
    write ``np.float64`` or ``"f64"``.
    For a program, the signatures give shapes and dtypes and both are ignored.
    Raises a :class:`~tdsl.errors.TdslError` subclass on any bad input.
    """
    tree = source if isinstance(source, Expression | Program) else parse(source, filename)
    return lower(tree, shapes, dtypes)


# --------------------------------------------------------------------------- command line

_SPEC_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\S+)\s*")


def parse_shape_spec(spec: str) -> tuple[str, tuple[int, ...], Attribute]:
    """Parse ``NAME=4x4xf32`` (``NAME=f32`` for 0-d; no dtype means f64).

    Raises :class:`~tdsl.errors.TdslOptionError` on a malformed spec.
    """
    usage = "expected NAME=DIMSxDTYPE, e.g. `A=4x4xf32`, or `A=f32` for a 0-d tensor"
    match = _SPEC_RE.fullmatch(spec)
    if match is None:
        raise TdslOptionError(f"invalid shape spec `{spec}`: {usage}")
    name, body = match.groups()
    parts = body.split("x")
    element: Attribute = f64
    if not parts[-1].isdigit():
        try:
            element = element_type_of(parts[-1])
        except TdslTypeError:
            raise TdslOptionError(
                f"invalid shape spec `{spec}`: unknown dtype `{parts[-1]}` "
                "(expected bool, f16, f32 or f64)"
            ) from None
        parts = parts[:-1]
    if not all(p.isdigit() and len(p) <= 18 for p in parts):
        raise TdslOptionError(f"invalid shape spec `{spec}`: {usage}")
    return name, tuple(int(p) for p in parts), element


def lower_expression_cli(expr: str, shape_specs: list[str]) -> ModuleOp:
    """Lower ``expr`` typed by ``--shape`` specs such as ``A=4x4xf32`` (for ``tdsl-opt --expr``).

    Raises :class:`~tdsl.errors.TdslError` on a bad spec or a bad expression.
    """
    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, DTypeLike] = {}
    for spec in shape_specs:
        name, shape, element = parse_shape_spec(spec)
        if name in shapes:
            raise TdslOptionError(f"input `{name}` is given more than one shape")
        shapes[name] = shape
        dtypes[name] = dtype_name(element)
    return to_tensordsl(expr, shapes=shapes, dtypes=dtypes)


__all__ = [
    "FUNCTIONS",
    "WEAK",
    "DTypeLike",
    "FunctionInfo",
    "element_type_of",
    "format_type",
    "lower",
    "lower_expression_cli",
    "parse_shape_spec",
    "to_tensordsl",
]
