"""Lowering one expression to ``tensordsl`` ops: how dtypes are spelled and shown, the
values an expression computes (a tensor, a weak literal folded like Python, a weak
scalar known at run time) and the lowering of each AST node, with NEP 50 promotion,
broadcasting checks, axes and keyword arguments, every op located at its source span."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects.builtin import FileLineColLoc, Float16Type, IntAttr, StringAttr, f64, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import (
    BOOL,
    INT_TYPES,
    LanguageFunction,
    element_of,
    is_int,
    numpy_dtype,
)
from tdsl.dtypes import promote
from tdsl.errors import SourceLocation, TdslNameError, TdslTypeError, internal_error
from tdsl.frontend.arg_reductions import lower_arg_reduction
from tdsl.frontend.ast import (
    BinOp,
    Call,
    Expr,
    Invert,
    Name,
    Neg,
    Number,
    Source,
    Span,
    Subscript,
    TupleExpr,
    children,
)
from tdsl.frontend.axes import reduce_over_axes
from tdsl.frontend.call_params import CallParams
from tdsl.frontend.creation import lower_broadcast_to, lower_creation
from tdsl.frontend.einsum import lower_einsum
from tdsl.frontend.functions import (
    CONSTANTS,
    FUNCTIONS,
    OPERATOR_OPS,
    name_list,
    nearest_name,
    unknown_name_hint,
)
from tdsl.frontend.integer_power import integer_power
from tdsl.frontend.joins import JOINS, SPLITS, lower_join, lower_split, lower_take
from tdsl.frontend.literals import fold, python_int_bitwise, python_unary, weak_arithmetic
from tdsl.frontend.mixed_compare import (
    booleans_with_int,
    clip_operands,
    compare_mixed,
    compare_python_int,
    refuse_non_booleans,
)
from tdsl.frontend.subscripts import lower_subscript
from tdsl.frontend.values import (
    LiteralValue,
    TensorValue,
    TupleValue,
    Value,
    WeakValue,
    check_rank,
    describe,
    dtype_name,
    is_bool,
    is_number,
    is_python_bool,
    mixes_uint64,
)

# --------------------------------------------------------------------------- values


WEAK: type[float] = float
"""The dtype that declares a weak scalar input (``dtypes={"s": float}``): a Python float."""
WEAK_INT: type[int] = int
"""The dtype that declares a weak integer input (``dtypes={"n": int}``): a Python int."""


BOOLEAN_FORMS: dict[type[Any], type[Any]] = {
    td.AddOp: td.OrOp,
    td.MaximumOp: td.OrOp,
    td.MulOp: td.AndOp,
    td.MinimumOp: td.AndOp,
    td.MaxOp: td.AnyOp,
    td.MinOp: td.AllOp,
}
"""What NumPy computes of booleans, keeping booleans: ``+`` and ``maximum`` are ``|``,
``*`` and ``minimum`` are ``&``, ``max`` is ``any`` and ``min`` is ``all``."""


class FunctionLowering(CallParams):
    """Lowers the expressions of one function body into one block."""

    def __init__(self, source: Source, block: Block) -> None:
        self.source = source
        self.builder = Builder(InsertPoint.at_end(block))
        self.env: dict[str, Value] = {}
        self.casts: dict[tuple[SSAValue, str], TensorValue] = {}
        self.literals: dict[tuple[str, bytes], TensorValue] = {}

    # ---------------------------------------------------------------- helpers

    def location(self, span: Span) -> FileLineColLoc:
        line, column = IntAttr(span.line), IntAttr(span.column)
        return FileLineColLoc(StringAttr(self.source.filename), line, column)

    def where(self, span: Span) -> SourceLocation:
        return self.source.location(span)

    def emit(self, op: Operation, span: Span) -> TensorValue:
        """Locate, verify and insert ``op``; return its (single) result."""
        op.location = self.location(span)
        try:
            op.verify()
            check_rank(op)
        except VerifyException as err:
            raise TdslTypeError(str(err), self.where(span)) from None
        self.builder.insert(op)
        result = op.results[0]
        return TensorValue(result, td.tensor_shape(result), td.element_type(result))

    def to_element(
        self, value: Value, element: Attribute, span: Span, wrap: bool = False
    ) -> TensorValue:
        """``value`` as a tensor of ``element``: a constant, a cast, or itself.  An integer
        literal out of an integer type's range is NumPy 2's error, or with ``wrap`` (as
        NumPy 2's ``where`` casts: -1 is 255 in uint8) wraps, within 64 bits."""
        if isinstance(value, LiteralValue):
            dtype = numpy_dtype(element)
            if dtype.kind in "iu" and isinstance(value.value, int):
                info = np.iinfo(dtype)
                if wrap and -(2**63) <= value.value < 2**64:
                    data = np.array(value.value % 2 ** (8 * dtype.itemsize)).astype(dtype)
                elif not info.min <= value.value <= info.max:
                    raise TdslTypeError(
                        f"the integer {value.value} is out of bounds for {dtype} "
                        f"([{info.min}, {info.max}]), as in NumPy 2: convert the other "
                        "operand first, e.g. `astype(x, int64)`, or write a float",
                        self.where(value.span),
                    )
                else:
                    data = np.array(value.value, dtype=dtype)
            else:
                try:
                    with np.errstate(over="ignore"):
                        data = np.array(value.value, dtype=np.float64).astype(dtype)
                except OverflowError:  # an int beyond float64's range
                    raise TdslTypeError(
                        f"an integer of {len(str(abs(value.value)))} digits is too large to "
                        f"convert to {dtype}, "
                        "as in NumPy (OverflowError): write it as a float (`1e400` is inf)",
                        self.where(value.span),
                    ) from None
            literal = (dtype_name(element), data.tobytes())
            if literal not in self.literals:  # one constant per value and type, as casts
                constant = td.ConstantOp(td.dense_from_numpy(data, element))
                self.literals[literal] = self.emit(constant, value.span)
            return self.literals[literal]
        weak_int = isinstance(value, WeakValue) and value.integer
        if isinstance(value, WeakValue) and value.boolean and element == BOOL:
            return self.truth(TensorValue(value.value, (), i64), span)  # (its 0 or 1)
        if isinstance(value, WeakValue):
            value = TensorValue(value.value, (), i64 if value.integer else f64)
        if value.element == element:
            return value
        if weak_int and numpy_dtype(element).kind == "f" and numpy_dtype(element).itemsize < 8:
            value = self.to_element(value, f64, span)  # (NumPy's int to f32 is via a double)
        key = (value.value, dtype_name(element))
        if key not in self.casts:
            self.casts[key] = self.emit(td.CastOp(value.value, element), span)
        return self.casts[key]

    def unify(
        self,
        operands: Sequence[tuple[Value, Span]],
        op: type[LanguageFunction] | None = None,
        what: str = "",
        span: Span | None = None,
        wrap: bool = False,
    ) -> list[TensorValue]:
        """Promote ``operands`` to one element type, as ``np.result_type`` (NEP 50): a
        boolean meets a float as that float, an integer literal keeps an integer tensor's
        type, a float literal makes integers float64, ``int32`` with ``float32`` is
        ``float64``.

        Booleans all through go to ``op`` as :meth:`bool_inputs_as` says: as they are,
        converted to a float type, or refused (at ``span``) with a suggestion; integers
        as :meth:`int_inputs_as` says; floats as narrow as ``op``'s ``LEAST_FLOAT``."""
        dtypes = [numpy_dtype(v.element) for v, _ in operands if isinstance(v, TensorValue)]
        weak = [self.weak_kind(v) for v, _ in operands if not isinstance(v, TensorValue)]
        element = element_of(promote(*dtypes, weak=weak))

        def refused(kind: str, advice: str) -> TdslTypeError:
            shown = ", ".join(self.describe(v) for v, _ in operands)
            return TdslTypeError(
                f"{what} of {kind} ({shown}) is not supported: {advice}",
                self.where(span or operands[0][1]),
            )

        integral = (BOOL, *INT_TYPES.values())
        if op is not None and issubclass(op, td.NO_FLOATS) and element not in integral:
            raise refused(
                "floats",
                "it takes integers (and booleans), as in NumPy; convert first, e.g. "
                "`astype(x, int64)`",
            )
        if is_int(element) and op is not None:
            as_dtype = op.int_inputs_as(numpy_dtype(element))
            if as_dtype is None:
                advice = "convert first, e.g. `astype(x, float64)`"
                raise refused("integers", getattr(op, "INTEGERS_ADVICE", advice))
            element = element_of(as_dtype)
        if element == BOOL and op is not None:
            as_dtype = op.bool_inputs_as()
            if as_dtype is None:
                why = "convert first, e.g. `astype(x, float32)`, `astype(x, int64)` or `1.0 * x`"
                raise refused("booleans", why)
            element = element_of(as_dtype)
        if op is not None and issubclass(op, td.BinaryOp) and op.LEAST_FLOAT:  # (float_power)
            element = element_of(np.promote_types(numpy_dtype(element), op.LEAST_FLOAT))
        return [self.to_element(v, element, s, wrap) for v, s in operands]

    def tensor(self, value: Value, span: Span) -> TensorValue:
        """``value`` as a tensor; a lone literal or weak scalar a float64 (or int64)."""
        if isinstance(value, TupleValue):
            raise TdslTypeError(
                "a tuple is not a result: return its items (`return a, b`), or join them",
                self.where(span),
            )
        if isinstance(value, TensorValue):
            return value
        kind = self.weak_kind(value)
        return self.to_element(value, {int: i64, bool: BOOL}.get(kind, f64), span)

    @staticmethod
    def weak_kind(value: Value) -> type:
        """``int`` for an integer literal or weak integer, ``bool`` for a Python bool,
        else ``float``."""
        if isinstance(value, LiteralValue):
            return int if isinstance(value.value, int) else float
        if isinstance(value, WeakValue) and value.integer:
            return bool if value.boolean else int
        return float

    describe = staticmethod(describe)

    @staticmethod
    def shape_of(value: Value) -> tuple[int, ...]:
        return value.shape if isinstance(value, TensorValue) else ()

    # ---------------------------------------------------------------- expressions

    def lower(self, root: Expr) -> Value:
        """Lower ``root`` bottom-up with an explicit stack (no recursion)."""
        results: dict[int, Value] = {}
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

    def lower_node(self, node: Expr, args: list[Value]) -> Value:
        self.no_tuples(node, args)
        match node:
            case Number(value=value, span=span):
                return LiteralValue(value, span)
            case Name():
                return self.lookup(node)
            case Neg():
                (arg,) = args
                if is_bool(arg):
                    raise TdslTypeError(
                        "the negative of booleans (`-`) is not supported, as in NumPy: use "
                        "`~` or `logical_not`",
                        self.where(node.span),
                    )
                if python := python_unary(self.emit, td.NegOp, arg, node.span, operator.neg):
                    return python
                return self.emit(td.NegOp(arg.value), node.span)
            case BinOp(op="@"):
                return self.matmul("`@`", args, (node.lhs.span, node.rhs.span), node.op_span)
            case Invert():
                (arg,) = args
                if isinstance(arg, LiteralValue) and type(arg.value) is int:
                    return LiteralValue(~arg.value, node.span)  # Python's: ~1 is -2
                if isinstance(arg, WeakValue) and arg.integer:
                    inverted = self.emit(td.InvertOp(arg.value), node.span)
                    return WeakValue(inverted.value, True)
                if isinstance(arg, TensorValue) and is_int(arg.element):
                    return self.emit(td.InvertOp(arg.value), node.span)
                refuse_non_booleans(self, "`~`", args, (node.operand.span,))
                if not isinstance(arg, TensorValue):  # (refused above)
                    raise internal_error(
                        "frontend: `~` of a non-tensor", location=self.where(node.span)
                    )
                return self.emit(td.NotOp(arg.value), node.span)
            case BinOp(op=op, lhs=lhs, rhs=rhs):
                a, b = args
                op_class = python_int_bitwise(op, args) or OPERATOR_OPS[op]  # (`s & 1`)
                arithmetic = not issubclass(op_class, td.CompareOp | td.LogicalOp)
                if arithmetic and isinstance(a, LiteralValue) and isinstance(b, LiteralValue):
                    try:
                        return LiteralValue(fold(op, a.value, b.value), node.span)
                    except OverflowError as err:
                        raise TdslTypeError(
                            f"`{op}` of these literals gives a number too large: {err}",
                            self.where(node.span),
                        ) from None
                    except TypeError:  # NumPy's ufunc refuses floats (`>>`, `<<`, `^`)
                        raise TdslTypeError(
                            f"`{op}` takes integers, as in NumPy, not a float: "
                            f"`{a.value!r} {op} {b.value!r}`",
                            self.where(node.span),
                        ) from None
                if not isinstance(a, TensorValue) and not isinstance(b, TensorValue):
                    spans = (lhs.span, rhs.span)
                    if arithmetic:
                        return weak_arithmetic(self, op_class, args, spans, node.op_span)
                    if issubclass(op_class, td.CompareOp):  # (a Python bool: 0 or 1)
                        truth = self.binary(op_class, f"`{op}`", args, spans, node.op_span)
                        return WeakValue(self.to_element(truth, i64, node.span).value, True, True)
                if (
                    op == "**"
                    and isinstance(a, TensorValue)
                    and isinstance(a.element, Float16Type)
                    and isinstance(b, LiteralValue)
                    and isinstance(b.value, float)
                    and b.value == 0.5
                ):
                    # NumPy's `**` of float16 by a Python 0.5 is sqrt, its `power` pow's
                    return self.emit(td.SqrtOp(a.value), node.op_span)
                return self.binary(
                    OPERATOR_OPS[op], f"`{op}`", args, (lhs.span, rhs.span), node.op_span
                )
            case Call():
                return self.call(node, args)
            case Subscript():
                return lower_subscript(node, args, self.emit, self.where)
            case TupleExpr(items=items):
                values = [a for a in args if not isinstance(a, TupleValue)]
                return TupleValue(tuple(values), tuple(i.span for i in items))

    def no_tuples(self, node: Expr, args: Sequence[Value]) -> None:
        """Refuse a tuple where ``node`` takes none: only joins take one (a subscript picks)."""
        if isinstance(node, Subscript) or (isinstance(node, Call) and node.func in JOINS):
            return
        for child, arg in zip(children(node), args, strict=True):
            if isinstance(arg, TupleValue):
                raise TdslTypeError(
                    "a tuple is not a value here: tuples and lists are the operands of "
                    "`concatenate`, `stack`, `hstack` and `vstack`",
                    self.where(child.span),
                )

    def lookup(self, node: Name) -> Value:
        value = self.env.get(node.id)
        if value is not None:
            return value
        constant = CONSTANTS.get(node.id)
        if constant is not None:  # a name in scope (an argument, a binding) shadows it
            return LiteralValue(constant, node.span)
        scope = list(self.env)
        message = f"unknown name `{node.id}`"
        near = nearest_name(node.id, scope)
        if near is not None:
            message += f"; did you mean `{near}`?"
        message += f" (names in scope: {name_list(scope)})"
        message += unknown_name_hint(node.id)
        raise TdslNameError(message, self.where(node.span))

    def truth(self, value: Value, span: Span) -> TensorValue:
        """``value`` as booleans: itself, or a number compared with zero (as NumPy: nan is true)."""
        tensor = self.tensor(value, span)
        if tensor.element == BOOL:
            return tensor
        zero = self.to_element(LiteralValue(0.0, span), tensor.element, span)
        return self.emit(td.NotEqualOp(tensor.value, zero.value), span)

    def binary(
        self,
        op_class: type[td.BinaryOp],
        what: str,
        args: Sequence[Value],
        spans: tuple[Span, Span],
        span: Span,
    ) -> TensorValue:
        if any(isinstance(v, TensorValue) for v in args):  # (a Python bool meets it as a bool)
            args = [
                self.tensor(v, at) if is_python_bool(v) else v
                for v, at in zip(args, spans, strict=True)
            ]
        a, b = args
        try:
            td.broadcast_shapes(self.shape_of(a), self.shape_of(b))
        except td.ShapeError:
            raise TdslTypeError(
                f"operands of {what} do not broadcast: {self.describe(a)} and {self.describe(b)}",
                self.where(span),
            ) from None
        if issubclass(op_class, td.CompareOp) and mixes_uint64(args):
            if not isinstance(a, TensorValue) or not isinstance(b, TensorValue):
                raise internal_error(
                    f"frontend: {what} of uint64 and a non-tensor", location=self.where(span)
                )
            return compare_mixed(self, op_class, a, b, span)  # exact, not as float64
        if issubclass(op_class, td.CompareOp) and (
            exact := compare_python_int(self, op_class, what, args, spans, span)
        ):
            return exact  # (a Python int beyond the dtype: exact, as NumPy 2)
        if op_class in BOOLEAN_FORMS and all(is_bool(v) for v in args):
            op_class = BOOLEAN_FORMS[op_class]  # `+` of booleans is `|`, as in NumPy
        if op_class is td.PowerOp:
            power = integer_power(self, args, spans, span)
            if power is not None:
                return power
        if issubclass(op_class, td.LogicalOp):
            args = booleans_with_int(self, args, spans) or args
            integers = [v for v in args if isinstance(v, TensorValue) and is_int(v.element)]
            if integers:  # `&`, `|` of integers: bitwise (logical_and's are booleans now)
                op_class = td.BitwiseAndOp if op_class is td.AndOp else td.BitwiseOrOp
            else:
                refuse_non_booleans(self, what, args, spans)
        lhs, rhs = self.unify(list(zip(args, spans, strict=True)), op_class, what, span)
        return self.emit(op_class(lhs.value, rhs.value), span)

    def check_elements(self, op: Any, node: Call, shape: tuple[int, ...], axis: Any) -> None:
        """Refuse ``op`` (``max``, ``min``) over ``axis`` (None, an int or a tuple) of
        ``shape`` where it reduces zero elements, as :meth:`result_shape` does."""
        for one in axis if isinstance(axis, tuple) else (axis,):
            try:
                op.result_shape(shape, one, False)
            except td.ShapeError as err:
                raise TdslTypeError(err.message, self.where(node.span)) from None

    def matmul(
        self, what: str, args: Sequence[Value], spans: tuple[Span, Span], span: Span
    ) -> TensorValue:
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

    def literal(self, value: float, element: Attribute, span: Span) -> TensorValue:
        """The number ``value`` as a 0-d tensor of ``element``."""
        return self.to_element(LiteralValue(value, span), element, span)

    def where_call(self, node: Call, args: list[Value], spans: Sequence[Span]) -> TensorValue:
        """``where(c, a, b)``: a float condition means ``c != 0``, as in NumPy; ``a`` and
        ``b`` promote together, booleans staying booleans."""
        cond_value, a, b = args
        cond = self.tensor(cond_value, spans[0])
        if cond.element != BOOL:
            zero = self.to_element(LiteralValue(0.0, spans[0]), cond.element, spans[0])
            cond = self.emit(td.NotEqualOp(cond.value, zero.value), spans[0])
        shapes = [cond.shape, self.shape_of(a), self.shape_of(b)]
        try:
            td.broadcast_shapes(td.broadcast_shapes(shapes[0], shapes[1]), shapes[2])
        except td.ShapeError:
            shown = ", ".join(self.describe(v) for v in (cond, a, b))
            raise TdslTypeError(
                f"operands of `where` do not broadcast: {shown}", self.where(node.span)
            ) from None
        pair = list(zip((a, b), spans[1:], strict=True))
        lhs, rhs = self.unify(pair, td.WhereOp, wrap=True)  # (NumPy wraps an int literal)
        return self.emit(td.WhereOp(cond.value, lhs.value, rhs.value), node.span)

    def call(self, node: Call, args: list[Value]) -> Value | TupleValue:
        info = FUNCTIONS[node.func]
        spans = tuple(arg.span for arg in node.args)
        op = info.op
        if op is not td.AbsOp:  # (NumPy's functions take a Python bool as a bool, not Python's)
            args = [
                self.tensor(a, at) if is_python_bool(a) else a
                for a, at in zip(args, spans, strict=True)
            ]
        if issubclass(op, td.LogicalOp | td.NotOp):  # NumPy's truth of a number: nonzero
            args = [
                self.truth(a, at) if is_number(a) else a for a, at in zip(args, spans, strict=True)
            ]
        if issubclass(op, td.BinaryOp):
            return self.binary(op, f"`{info.name}`", args, (spans[0], spans[1]), node.span)
        if op is td.MatmulOp:
            return self.matmul("`matmul`", args, (spans[0], spans[1]), node.span)
        if node.func in JOINS:
            return lower_join(self, node, args, spans)
        if node.func in SPLITS:
            return lower_split(self, node, args, spans)
        if op is td.BroadcastTo:
            return lower_broadcast_to(self, node, args, spans)
        if op is td.TakeOp:
            return lower_take(self, node, args, spans)
        if issubclass(op, td.ArgReduction):
            return lower_arg_reduction(self, node, args, spans, self.params(node, info, args[0]))
        params = self.params(node, info, args[0] if args else None)
        if op in BOOLEAN_FORMS and args and is_bool(args[0]):
            if op.NEEDS_ELEMENTS:  # `max` of no booleans is NumPy's error, `any`'s False
                self.check_elements(op, node, self.shape_of(args[0]), params["axis"])
            op = BOOLEAN_FORMS[op]  # `max` of booleans is `any`, as in NumPy
        if op is td.AbsOp and (python := python_unary(self.emit, op, args[0], node.span, abs)):
            return python  # (Python's `abs` of a Python number: one, weak; of a bool an int)
        if op is td.AbsOp and args and is_bool(args[0]):
            return args[0]  # NumPy's absolute value of a boolean is itself
        if op is td.InvertOp and args and is_bool(args[0]) and isinstance(args[0], TensorValue):
            return self.emit(td.NotOp(args[0].value), node.span)  # np.invert of booleans: not
        if issubclass(op, td.CREATION):
            return lower_creation(self, node, args, spans, params)
        if op is td.Einsum:
            return lower_einsum(self, node, args, spans)
        if issubclass(op, td.ReductionOp) and isinstance(params["axis"], tuple):
            return reduce_over_axes(self, op, node, args[0], spans[0], params)
        if issubclass(op, td.ReductionOp):
            axis, keepdims = params["axis"], params["keepdims"]
            if axis is not None and not isinstance(axis, int):
                raise internal_error(
                    f"frontend: `axis` of `{node.func}` is {axis!r}", None, self.where(node.span)
                )
            try:
                op.result_shape(self.shape_of(args[0]), axis, bool(keepdims))
            except td.ShapeError as err:
                raise TdslTypeError(err.message, self.where(node.span)) from None
        if op is td.WhereOp:
            return self.where_call(node, args, spans)
        if issubclass(op, td.LogicalReductionOp):
            args = [self.truth(args[0], spans[0])]
        if issubclass(op, td.ScanOp) and params["axis"] is None and len(self.shape_of(args[0])) > 1:
            flat = self.tensor(args[0], spans[0])  # NumPy scans the flattened tensor
            args = [self.emit(td.ReshapeOp(flat.value, (-1,)), spans[0])]
        shaped: tuple[int, ...] | None = None  # (the result reshaped to it)
        if op is td.ProdOp and params["axis"] is None and len(self.shape_of(args[0])) > 1:
            # NumPy multiplies in memory order, the flattened tensor's: the order its
            # tiles keep (a product over tiles of several dims would reassociate)
            flat = self.tensor(args[0], spans[0])
            args = [self.emit(td.ReshapeOp(flat.value, (-1,)), spans[0])]
            shaped = (1,) * len(flat.shape) if params["keepdims"] else None
            params = {**params, "axis": 0, "keepdims": False}
        if op is td.CastOp:
            element, tensor = params["dtype"], self.tensor(args[0], spans[0])
            if element == BOOL:
                return self.truth(tensor, spans[0])
            if element == tensor.element:
                return tensor
            return self.emit(td.CastOp(tensor.value, cast(Attribute, element)), node.span)
        if issubclass(op, td.RoundingOp):
            (arg,) = args
            if isinstance(arg, TensorValue) and is_int(arg.element):
                return arg  # an integer is its own rounding, and stays an integer
            if not isinstance(arg, TensorValue) and self.weak_kind(arg) is int:
                return self.tensor(arg, spans[0])  # `np.round(3)`: a strong np.int64(3)
        if op is td.ClipOp and args:  # (a Python number first; Python-int bounds)
            args = clip_operands(self, args, spans)
        # literals and weak scalars take the element type of the tensors they meet
        # (``clip(x, 0, 6)`` of a float32 ``x`` is float32), as with operators; not the
        # first of ``clip``: ``np.clip(2, x, 3)`` makes an array of it (float64 or int64)
        unified = self.unify(list(zip(args, spans, strict=True)), op, f"`{info.name}`", node.span)
        operands = [t.value for t in unified]
        try:
            built = op.from_call(operands, params)
        except td.ShapeError as err:
            raise TdslTypeError(err.message, self.where(node.span)) from None
        result = self.emit(built, node.span)
        return (
            result if shaped is None else self.emit(td.ReshapeOp(result.value, shaped), node.span)
        )
