"""Reading the parameters of a call (``axis=``, ``keepdims=``, ``axes=`` and the
others an op's :class:`~tdsl.dialects.op_interfaces.Param` declares), each checked
against its kind and the rank of the call's first argument, errors located at the
keyword: the part of :class:`~tdsl.frontend.lower_expr.FunctionLowering` that reads
calls' parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Attribute

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import Param
from tdsl.errors import SourceLocation, TdslTypeError, internal_error
from tdsl.frontend.ast import Call, Keyword, Span
from tdsl.frontend.dtype_names import element_type_of
from tdsl.frontend.functions import FunctionInfo, show_keyword_value

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import Value


class CallParams:
    """Reads a call's parameters; the lowering supplies where a span is, and the shape
    and description of a value."""

    def where(self, span: Span) -> SourceLocation:
        raise NotImplementedError

    @staticmethod
    def shape_of(value: Value) -> tuple[int, ...]:
        raise NotImplementedError

    @staticmethod
    def describe(value: Value) -> str:
        raise NotImplementedError

    def keyword(self, node: Call, name: str) -> Keyword | None:
        return next((k for k in node.keywords if k.name == name), None)

    def params(self, node: Call, info: FunctionInfo, operand: Value | None) -> dict[str, object]:
        """The parameters of call ``node`` of ``info``'s function, each checked against
        its kind (axes against the rank of ``operand``, its first argument), defaults
        filled in; a missing required one is an error."""
        params: dict[str, object] = {}
        for param in info.params:
            if param.required and self.keyword(node, param.name) is None:
                raise TdslTypeError(
                    f"`{info.name}` needs `{param.name}` (signature: {info.signature})",
                    self.where(node.span),
                )
            match param.kind:
                case "int_axis" | "int_axes" | "new_axes":
                    operand = self.operand_for(node, param, operand)
                    params[param.name] = self.axes_param(node, operand, param)
                case "axis" | "axes":
                    operand = self.operand_for(node, param, operand)
                    default = param.default
                    if default is not None and not isinstance(default, int):
                        raise internal_error(
                            f"frontend: the default `{param.name}` of `{info.name}` is "
                            f"{default!r}, not an integer",
                            location=self.where(node.span),
                        )
                    params[param.name] = self.axis(node, operand, default, param.kind == "axes")
                case "perm":
                    operand = self.operand_for(node, param, operand)
                    params[param.name] = self.permutation(node, operand)
                case "bool":
                    params[param.name] = self.flag(node, param)
                case "float":
                    params[param.name] = self.number(node, param)
                case "shape" | "new_shape" | "sections" | "size" | "int" | "number":
                    params[param.name] = self.literal_param(node, param)
                case "dtype":
                    params[param.name] = self.dtype_param(node, param)
                case "subscripts":
                    keyword = self.keyword(node, param.name)
                    if keyword is not None and not isinstance(keyword.value, str):
                        raise TdslTypeError(
                            f"`{param.name}` of `{node.func}` is a string, given first: "
                            f"{node.func}('ij,jk->ik', a, b)",
                            self.where(keyword.span),
                        )
        return params

    def operand_for(self, node: Call, param: Param, operand: Value | None) -> Value:
        """The operand whose axes ``param`` names (every such function takes one: its
        arity was checked before its parameters)."""
        if operand is None:
            raise internal_error(
                f"frontend: `{param.name}` of `{node.func}` names axes of no operand",
                location=self.where(node.span),
            )
        return operand

    def axis(
        self, node: Call, operand: Value, default: int | None, tuples: bool = False
    ) -> int | tuple[int, ...] | None:
        """The ``axis`` keyword of ``node``, checked against the rank of ``operand``; with
        ``tuples`` a tuple of axes too (made non-negative; a repeated one is an error, as
        in NumPy)."""
        keyword = self.keyword(node, "axis")
        if tuples and keyword is not None and isinstance(keyword.value, tuple):
            axes = self.axes(node, operand, keyword)
            return axes[0] if len(axes) == 1 else axes
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
        if keyword.value is None or isinstance(keyword.value, bool | float | tuple | str):
            what = "an integer or a tuple of integers" if tuples else "an integer"
            raise TdslTypeError(
                f"`axis` of `{node.func}` must be {what}, "
                f"not `{show_keyword_value(keyword.value)}`",
                self.where(keyword.span),
            )
        rank = len(self.shape_of(operand))
        self.checked_axes(node, keyword, (keyword.value,), rank, self.describe(operand))
        return keyword.value

    def axes(self, node: Call, operand: Value, keyword: Keyword) -> tuple[int, ...]:
        if not isinstance(keyword.value, tuple):
            raise internal_error(
                f"frontend: `axis` of `{node.func}` read as a tuple of axes, but it is "
                f"`{show_keyword_value(keyword.value)}`",
                location=self.where(keyword.span),
            )
        rank = len(self.shape_of(operand))
        return self.checked_axes(node, keyword, keyword.value, rank, self.describe(operand))

    def checked_axes(
        self, node: Call, keyword: Keyword, axes: tuple[int, ...], rank: int, of: str
    ) -> tuple[int, ...]:
        """``axes`` (given as ``keyword``) of a tensor of ``rank`` described as ``of``, made
        non-negative; an axis out of range or named twice is an error at the keyword."""
        out: list[int] = []
        for axis in axes:
            try:
                normal = td.normalize_axis(axis, rank)
            except td.ShapeError:
                valid = (
                    "a 0-d tensor has no axes"
                    if rank == 0
                    else f"expected {-rank} <= axis < {rank}"
                )
                raise TdslTypeError(
                    f"{keyword.name} {axis} is out of range for `{node.func}` of {of} (rank "
                    f"{rank}; {valid})",
                    self.where(keyword.span),
                ) from None
            if normal in out:
                raise TdslTypeError(
                    f"`{keyword.name}` of `{node.func}` names axis {normal} twice "
                    f"({show_keyword_value(keyword.value)}); name each axis once, as NumPy "
                    "requires",
                    self.where(keyword.span),
                )
            out.append(normal)
        return tuple(out)

    def dtype_param(self, node: Call, param: Param) -> Attribute | None:
        """The element type a ``dtype`` parameter names (None where not given): NumPy's
        names (``float32``, ``float``: float64, ``bool``) or the language's (``f32``)."""
        keyword = self.keyword(node, param.name)
        if keyword is None or keyword.value is None:
            return None
        value = keyword.value
        aliases = {"float": "float64", "double": "float64", "bool_": "bool", "int": "int64"}
        name = aliases.get(str(value), value)
        try:
            if not isinstance(name, str):
                raise TdslTypeError("")
            return element_type_of(name)
        except TdslTypeError:
            raise TdslTypeError(
                f"`dtype` of `{node.func}` must name bool, float16, float32, float64, int32, "
                f"int64, uint8 or uint64 (np.float32, f32 or 'float32'), not "
                f"`{show_keyword_value(value)}`",
                self.where(keyword.span),
            ) from None

    def literal_param(self, node: Call, param: Param) -> object:
        """A ``shape`` (a tuple of extents), ``size`` (an extent), ``int`` or ``number``
        (an int or a float, as given), checked; the default where it is not given."""
        keyword = self.keyword(node, param.name)
        if keyword is None:
            return param.default
        value = keyword.value
        if value is None and param.default is None and not param.required:
            return None
        ok: bool
        match param.kind:
            case "shape" | "new_shape":
                what = "an extent or a tuple of extents (integers >= 0)"
                least = 0
                if param.kind == "new_shape":
                    what = "an extent or a tuple of extents (integers >= 0, at most one -1)"
                    least = -1
                extents = (value,) if isinstance(value, int) else value
                ok = isinstance(extents, tuple) and all(
                    type(n) is int and n >= least for n in extents
                )
                value = extents
            case "sections":
                what = "a number of equal sections (an integer >= 1) or a tuple of indices"
                ok = (type(value) is int and value >= 1) or (
                    isinstance(value, tuple) and all(type(n) is int for n in value)
                )
            case "size":
                what = "an integer >= 0"
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            case "int":
                what = "an integer"
                ok = isinstance(value, int) and not isinstance(value, bool)
            case _:
                what = "a number"
                ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok:
            raise TdslTypeError(
                f"`{param.name}` of `{node.func}` must be {what}, not "
                f"`{show_keyword_value(value)}`",
                self.where(keyword.span),
            )
        return value

    def axes_param(self, node: Call, operand: Value, param: Param) -> int | tuple[int, ...] | None:
        """An axis (``int_axis``), or one or a tuple of axes (``int_axes``: of ``operand``,
        made non-negative, a tuple; ``new_axes``: of the result, as given), checked."""
        keyword = self.keyword(node, param.name)
        if keyword is None or keyword.value is None:
            return None
        value = keyword.value
        single = param.kind == "int_axis"
        if isinstance(value, bool | float | str) or (single and isinstance(value, tuple)):
            what = "an integer" if single else "an integer or a tuple of integers"
            raise TdslTypeError(
                f"`{param.name}` of `{node.func}` must be {what}, not "
                f"`{show_keyword_value(value)}`",
                self.where(keyword.span),
            )
        axes = (value,) if isinstance(value, int) else value
        rank = len(self.shape_of(operand))
        of = self.describe(operand)
        if param.kind == "new_axes":
            rank += len(axes)
            of = "its result"
        out = self.checked_axes(node, keyword, axes, rank, of)
        if single:
            return out[0]
        return value if param.kind == "new_axes" else tuple(out)

    def permutation(self, node: Call, operand: Value) -> tuple[int, ...] | None:
        """The ``axes`` keyword of ``transpose``: a permutation of the operand's axes
        (negative ones count from the end), or None (the axes reversed)."""
        keyword = self.keyword(node, "axes")
        if keyword is None or keyword.value is None:
            return None
        if not isinstance(keyword.value, tuple):
            raise TdslTypeError(
                f"`axes` of `{node.func}` must be a tuple of integers, "
                f"not `{show_keyword_value(keyword.value)}`",
                self.where(keyword.span),
            )
        try:
            return td.check_permutation(keyword.value, len(self.shape_of(operand)))
        except td.ShapeError as err:
            raise TdslTypeError(
                f"{err.message} ({self.describe(operand)})", self.where(keyword.span)
            ) from None

    def flag(self, node: Call, param: Param) -> bool:
        keyword = self.keyword(node, param.name)
        if keyword is None:
            return bool(param.default)
        if not isinstance(keyword.value, bool):
            raise TdslTypeError(
                f"`{param.name}` must be true or false, not `{show_keyword_value(keyword.value)}`",
                self.where(keyword.span),
            )
        return keyword.value

    def number(self, node: Call, param: Param) -> float:
        keyword = self.keyword(node, param.name)
        if keyword is None:
            if not isinstance(param.default, float | int):
                raise internal_error(
                    f"frontend: the default `{param.name}` of `{node.func}` is "
                    f"{param.default!r}, not a number",
                    location=self.where(node.span),
                )
            return float(param.default)
        if keyword.value is None or isinstance(keyword.value, bool | tuple | str):
            raise TdslTypeError(
                f"`{param.name}` of `{node.func}` must be a number, "
                f"not `{show_keyword_value(keyword.value)}`",
                self.where(keyword.span),
            )
        return float(keyword.value)


__all__ = ["CallParams"]
