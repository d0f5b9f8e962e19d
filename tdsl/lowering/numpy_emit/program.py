"""tensordsl ops lowered to NumPy calls that write into ``out=`` operands.

A group body becomes a list of :class:`Instr`: one NumPy call each, reading
:class:`Var` operands and writing one result :class:`Var`.  Buffers are not
chosen here (see :mod:`.alloc`); an instruction only says whether its result
may overwrite a same-shaped operand that dies there (``elementwise``).

Composite ops expand into several instructions, each chosen for speed on
large arrays (see ``/work/shared/PERF_NOTES.md`` in the project history):

- ``relu(x)`` is ``np.maximum(x, zeros)`` against a zero *block* of x's tile
  shape (a Python scalar or 0-d zero takes a slow non-SIMD path);
- ``softmax`` subtracts the max, exponentiates in place, and (on large
  arrays) multiplies by the reciprocal of the sum rather than dividing by it;
- ``sigmoid(x)`` is ``max(x >= 0, e) / (1 + e)`` with ``e = exp(-|x|)``,
  exact for every dtype and free of overflow;
- on large arrays, a division by a broadcast operand multiplies by its
  reciprocal (below :data:`RECIPROCAL_MIN_SIZE` one ``np.divide`` is faster);
- ``sum(a * b, axis=-1)`` where ``a * b`` is used nowhere else is one
  ``np.einsum('...i,...i->...')`` (no product temporary).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from xdsl.ir import Block, Operation, SSAValue

from tdsl.dialects import tensordsl as td
from tdsl.dialects.kernel import YieldOp
from tdsl.errors import TdslIRError
from tdsl.lowering.numpy_emit import layout as lay
from tdsl.lowering.numpy_emit.layout import Layout

VarKind = Literal["input", "const", "fill", "temp", "view"]

RECIPROCAL_MIN_SIZE = 1 << 15
"""Below this many elements a broadcast division stays one ``np.divide``: the extra
``np.reciprocal`` call costs more than multiplying saves."""


@dataclass(eq=False)
class Var:
    """A value of a group body.

    ``input``: a group operand (``name`` is its parameter); ``const``: a
    module-level constant (``name``); ``fill``: a constant block of
    ``fill_value`` in the value's tile shape, made by the code generator;
    ``temp``: computed by an :class:`Instr` into a buffer; ``view``: a view
    of ``base`` (``view`` formats the base expression as ``{0}``).
    """

    layout: Layout
    dtype: np.dtype[np.floating]
    kind: VarKind
    name: str = ""
    base: Var | None = None
    view: str = ""
    fill_value: float = 0.0

    def root(self) -> Var:
        """The value whose memory this one reads (itself unless a view)."""
        v = self
        while v.base is not None:
            v = v.base
        return v

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(ax.extent for ax in self.layout)


@dataclass(eq=False)
class Instr:
    """One NumPy call: ``code`` formats operands as ``{0}, {1}, ...`` and the result as ``{out}``."""

    code: str
    result: Var
    operands: tuple[Var, ...]
    elementwise: bool = False
    note: str = ""
    is_matmul: bool = False


@dataclass
class ConstPool:
    """Module-level constant arrays, deduplicated; the code generator emits them."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])
    _keys: dict[tuple[str, tuple[int, ...], bytes], str] = field(
        default_factory=dict[tuple[str, tuple[int, ...], bytes], str]
    )

    def add(self, array: np.ndarray) -> str:
        """The name of a module constant holding ``array``."""
        key = (array.dtype.str, array.shape, array.tobytes())
        name = self._keys.get(key)
        if name is None:
            name = f"_C{len(self.arrays)}"
            self._keys[key] = name
            self.arrays[name] = array
        return name


@dataclass
class Program:
    """A lowered group body: its instructions, and the values it yields."""

    instrs: list[Instr]
    yields: list[Var]
    pinned: set[int]


def _letters(rank: int) -> str:
    return "abcdefghijklmnopqrstuvwxyz"[:rank]


@dataclass
class _Lowering:
    consts: ConstPool
    env: dict[SSAValue, Var]
    pinned: set[int] = field(default_factory=set[int])
    instrs: list[Instr] = field(default_factory=list[Instr])
    fused_products: dict[td.SumOp, td.MulOp] = field(default_factory=dict[td.SumOp, td.MulOp])

    # -- helpers -------------------------------------------------------------

    def temp(self, layout: Layout, dtype: np.dtype[np.floating]) -> Var:
        return Var(layout, dtype, "temp")

    def emit(
        self,
        code: str,
        result: Var,
        *operands: Var,
        elementwise: bool = False,
        note: str = "",
    ) -> Var:
        self.instrs.append(Instr(code, result, operands, elementwise, note))
        return result

    def ufunc(self, name: str, *operands: Var, layout: Layout | None = None, note: str = "") -> Var:
        """``np.<name>(operands..., out=result)``, element-wise."""
        if layout is None:
            layout = operands[0].layout
            for v in operands[1:]:
                layout = lay.broadcast(layout, v.layout, self.pinned)
        args = ", ".join(f"{{{i}}}" for i in range(len(operands)))
        out = self.temp(layout, operands[0].dtype)
        return self.emit(
            f"np.{name}({args}, out={{out}})", out, *operands, elementwise=True, note=note
        )

    def const(self, value: float, dtype: np.dtype[np.floating]) -> Var:
        name = self.consts.add(np.array(value, dtype))
        return Var((), dtype, "const", name=name)

    def fill(self, like: Var, value: float) -> Var:
        return Var(like.layout, like.dtype, "fill", fill_value=value)

    def view(self, base: Var, fmt: str, layout: Layout) -> Var:
        return Var(layout, base.dtype, "view", base=base, view=fmt)

    # -- ops -----------------------------------------------------------------

    def lower(self, op: Operation) -> None:
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise TdslIRError(f"numpy target: cannot emit '{op.name}' inside a group")
        if isinstance(op, td.MulOp) and op in self.fused_products.values():
            return  # computed by the einsum of the sum that consumes it
        self.env[op.results[0]] = handler(self, op)

    def arg(self, value: SSAValue) -> Var:
        return self.env[value]


def _dtype(value: SSAValue) -> np.dtype[np.floating]:
    return td.numpy_dtype(td.element_type(value))


def _lower_constant(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.ConstantOp)
    arr = op.as_numpy()
    return Var(lay.whole(arr.shape), arr.dtype, "const", name=lw.consts.add(arr))


def _lower_relu(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.ReluOp)
    x = lw.arg(op.input)
    return lw.ufunc("maximum", x, lw.fill(x, 0.0), layout=x.layout)


def _lower_simple_unary(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.UnaryOp)
    return lw.ufunc(op.NUMPY_UFUNC, lw.arg(op.input))


def _lower_sigmoid(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.SigmoidOp)
    x = lw.arg(op.input)
    note = "sigmoid: max(x >= 0, e) / (1 + e) with e = exp(-|x|), no overflow"
    e = lw.ufunc("absolute", x, note=note)
    e = lw.ufunc("negative", e)
    e = lw.ufunc("exp", e)
    num = lw.ufunc("greater_equal", x, lw.fill(x, 0.0), layout=x.layout)
    num = lw.ufunc("maximum", num, e)
    den = lw.ufunc("add", e, lw.const(1.0, x.dtype), layout=x.layout)
    return lw.ufunc("divide", num, den)


def _lower_binary(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.BinaryOp)
    a, b = lw.arg(op.lhs), lw.arg(op.rhs)
    name = op.NUMPY_UFUNC
    if isinstance(op, td.MaximumOp | td.MinimumOp):
        # a 0-d or size-1 constant operand would take NumPy's slow scalar path
        a, b = _fill_splat(lw, a, b), _fill_splat(lw, b, a)
    size = lay.full_size(lay.broadcast(a.layout, b.layout, set()))
    if isinstance(op, td.DivOp) and lay.full_size(b.layout) < size and size >= RECIPROCAL_MIN_SIZE:
        # dividing by a broadcast operand: multiply by its reciprocal instead
        if b.kind == "const":
            with np.errstate(divide="ignore"):
                recip = np.reciprocal(_const_value(lw, b))
            r = Var(b.layout, b.dtype, "const", name=lw.consts.add(recip))
        else:
            r = lw.ufunc("reciprocal", b)
        return lw.ufunc("multiply", a, r)
    return lw.ufunc(name, a, b)


def _const_value(lw: _Lowering, v: Var) -> np.ndarray:
    return lw.consts.arrays[v.name]


def _fill_splat(lw: _Lowering, v: Var, other: Var) -> Var:
    """A splat constant ``v`` as a fill block shaped like the broadcast result, if that is ``other``."""
    if v.kind != "const" or lay.full_size(v.layout) != 1:
        return v
    result = lay.broadcast(v.layout, other.layout, set())
    if result != other.layout:
        return v
    value = float(_const_value(lw, v).reshape(()))
    return Var(result, v.dtype, "fill", fill_value=value)


def _lower_cast(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.CastOp)
    x = lw.arg(op.input)
    dtype = _dtype(op.result)
    if dtype == x.dtype:
        return lw.view(x, "{0}", x.layout)
    out = Var(x.layout, dtype, "temp")
    return lw.emit("np.copyto({out}, {0})", out, x)


def _lower_matmul(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.MatmulOp)
    a, b = lw.arg(op.lhs), lw.arg(op.rhs)
    out = lw.temp(lay.matmul(a.layout, b.layout, lw.pinned), a.dtype)
    lw.emit("np.matmul({0}, {1}, out={out})", out, a, b)
    lw.instrs[-1].is_matmul = True
    return out


def _lower_transpose(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.TransposeOp)
    x = lw.arg(op.input)
    return lw.view(x, "{0}.T", lay.transpose(x.layout))


def _lower_softmax(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.SoftmaxOp)
    x = lw.arg(op.input)
    axis = op.axis_value
    lay.pin_axis(x.layout, axis, lw.pinned)
    if lay.full_size(x.layout) == 0:
        return lw.view(x, "{0}", x.layout)  # nothing to compute: the result is empty too
    row = lay.reduce(x.layout, axis, True, lw.pinned)
    note = f"softmax along axis {axis}: exp(x - max) / sum"
    m = lw.emit(
        f"np.maximum.reduce({{0}}, axis={axis}, keepdims=True, out={{out}})",
        lw.temp(row, x.dtype),
        x,
        note=note,
    )
    t = lw.ufunc("subtract", x, m, layout=x.layout)
    t = lw.ufunc("exp", t)
    s = lw.emit(
        f"np.add.reduce({{0}}, axis={axis}, keepdims=True, out={{out}})",
        lw.temp(row, x.dtype),
        t,
    )
    if lay.full_size(x.layout) < RECIPROCAL_MIN_SIZE:
        return lw.ufunc("divide", t, s, layout=x.layout)
    s = lw.ufunc("reciprocal", s)
    return lw.ufunc("multiply", t, s, layout=x.layout)


def _reduce_args(axis: int | None, keepdims: bool) -> str:
    return f"axis={axis}" + (", keepdims=True" if keepdims else "")


def _lower_reduction(lw: _Lowering, op: Operation) -> Var:
    assert isinstance(op, td.ReductionOp)
    axis, keepdims = op.axis_value, op.keepdims_value
    product = lw.fused_products.get(op) if isinstance(op, td.SumOp) else None
    if product is not None:
        a = lw.arg(product.lhs)
        out = lw.temp(lay.reduce(a.layout, axis, keepdims, lw.pinned), a.dtype)
        return _lower_rowdot(lw, product, out, keepdims)
    x = lw.arg(op.input)
    out = lw.temp(lay.reduce(x.layout, axis, keepdims, lw.pinned), x.dtype)
    args = _reduce_args(axis, keepdims)
    if isinstance(op, td.SumOp):
        return lw.emit(f"np.add.reduce({{0}}, {args}, out={{out}})", out, x)
    if isinstance(op, td.MaxOp):
        return lw.emit(f"np.maximum.reduce({{0}}, {args}, out={{out}})", out, x)
    assert isinstance(op, td.MeanOp)
    if x.dtype == np.float16:
        # np.mean accumulates float16 in float32: keep NumPy's numerics
        return lw.emit(f"np.mean({{0}}, {args}, out={{out}})", out, x)
    count = lay.full_size(x.layout) if axis is None else x.layout[axis].extent
    total = lw.emit(f"np.add.reduce({{0}}, {args}, out={{out}})", out, x, note="mean")
    return lw.ufunc("divide", total, lw.const(float(count), x.dtype), layout=out.layout)


def _lower_rowdot(lw: _Lowering, product: td.MulOp, out: Var, keepdims: bool) -> Var:
    a, b = lw.arg(product.lhs), lw.arg(product.rhs)
    letters = _letters(len(a.layout))
    target = "{out}[..., 0]" if keepdims else "{out}"
    return lw.emit(
        f'np.einsum("{letters},{letters}->{letters[:-1]}", {{0}}, {{1}}, out={target})',
        out,
        a,
        b,
        note="sum(a * b) along the last axis as one einsum",
    )


_HANDLERS: dict[type[Operation], Callable[[_Lowering, Operation], Var]] = {
    td.ConstantOp: _lower_constant,
    td.ReluOp: _lower_relu,
    td.SigmoidOp: _lower_sigmoid,
    **{cls: _lower_simple_unary for cls in td.UNARY_OPS if cls not in (td.ReluOp, td.SigmoidOp)},
    **{cls: _lower_binary for cls in td.BINARY_OPS},
    td.CastOp: _lower_cast,
    td.MatmulOp: _lower_matmul,
    td.TransposeOp: _lower_transpose,
    td.SoftmaxOp: _lower_softmax,
    **{cls: _lower_reduction for cls in td.REDUCTION_OPS},
}


def _find_row_products(ops: Sequence[Operation]) -> dict[td.SumOp, td.MulOp]:
    """``sum(a * b)`` over the last axis where the product has no other use and no broadcast."""
    found: dict[td.SumOp, td.MulOp] = {}
    in_body = set(ops)
    for op in ops:
        if not isinstance(op, td.SumOp):
            continue
        mul = op.input.owner
        if not isinstance(mul, td.MulOp) or mul not in in_body:
            continue
        rank = len(td.tensor_shape(mul.result))
        if rank == 0 or not mul.result.has_one_use():
            continue
        if op.axis_value != rank - 1 and not (op.axis_value is None and rank == 1):
            continue
        shapes = {td.tensor_shape(mul.lhs), td.tensor_shape(mul.rhs)}
        if len(shapes) != 1:
            continue
        found[op] = mul
    return found


def lower_ops(
    ops: Sequence[Operation], env: dict[SSAValue, Var], consts: ConstPool
) -> tuple[list[Instr], set[int], dict[SSAValue, Var]]:
    """Lower straight-line tensordsl ops; ``env`` maps the values they read to vars."""
    lw = _Lowering(consts, dict(env))
    lw.fused_products = _find_row_products(ops)
    for op in ops:
        lw.lower(op)
    return lw.instrs, lw.pinned, lw.env


def lower_block(block: Block, args: Sequence[Var], consts: ConstPool) -> Program:
    """Lower a group body whose block arguments are ``args``; it ends in ``kernel.yield``."""
    env: dict[SSAValue, Var] = dict(zip(block.args, args, strict=True))
    ops = list(block.ops)
    term = ops.pop()
    if not isinstance(term, YieldOp):
        raise TdslIRError("numpy target: a group body must end in kernel.yield")
    instrs, pinned, env = lower_ops(ops, env, consts)
    return Program(instrs, [env[v] for v in term.values], pinned)
