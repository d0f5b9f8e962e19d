"""The type mapping of the LLVM lowering, and the casts that keep IR typed while it runs.

``index`` becomes ``i64``; every ``memref`` becomes an opaque ``!llvm.ptr`` to its
element at index 0 (shapes and strides are static, so the type carries all the
rest); integer and float types stay.  In memory, ``i1`` elements are bytes
(:func:`storage_type`), as NumPy stores booleans.

Patterns convert one op at a time.  An operand whose type changes is read
through a ``builtin.unrealized_conversion_cast`` to its LLVM type, and a result
whose type changes is cast back to the original type, so the IR stays well
typed after every rewrite; once every op and block signature is converted, the
casts form chains ``A -> B -> A`` that xDSL's ``reconcile-unrealized-casts``
removes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from xdsl.dialects import arith, func, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
    i1,
    i8,
    i64,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    TypeConversionPattern,
    op_type_rewrite_pattern,
)

from tdsl.backend.llvm.numpy_nans import created_nan_negative

FLOAT_TYPES = (Float16Type, Float32Type, Float64Type)


def llvm_type(t: Attribute) -> Attribute:
    """The LLVM dialect type of a value of type ``t``: ``index`` -> ``i64``,
    ``memref<...>`` -> ``!llvm.ptr``, anything else itself."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return llvm.LLVMPointerType()
    return t


def is_bool(t: Attribute) -> bool:
    """Whether ``t`` is ``i1``."""
    return t == i1


def integer_width(t: Attribute) -> int:
    """The width of the LLVM integer type of ``t`` (``index``: 64)."""
    t = llvm_type(t)
    if not isinstance(t, IntegerType):
        raise ValueError(f"not an integer type: {t}")
    return cast(IntegerType, t).bitwidth


def memref_element(t: Attribute) -> Attribute:
    """The element type of the memref type ``t``."""
    if not isinstance(t, MemRefType):  # not isa(t, MemRefType[Attribute]): 20x slower
        raise ValueError(f"not a memref type: {t}")
    return cast(MemRefType[Attribute], t).get_element_type()


def storage_type(element: Attribute) -> Attribute:
    """How a memref element of type ``element`` is stored: ``i1`` as a byte
    (``i8``, 0 or 1), ``index`` as ``i64``, others as themselves."""
    if is_bool(element):
        return i8
    return llvm_type(element)


def to_llvm(rewriter: PatternRewriter, value: SSAValue) -> SSAValue:
    """``value`` with its LLVM type: itself, the value a cast made it from (an op
    already converted casts its LLVM result back to the type its users expect), or a
    cast inserted at the rewriter's insertion point."""
    target = llvm_type(value.type)
    if target == value.type:
        return value
    made = value.owner
    if (
        isinstance(made, UnrealizedConversionCastOp)
        and len(made.inputs) == 1
        and made.inputs[0].type == target
    ):
        return made.inputs[0]
    cast, result = UnrealizedConversionCastOp.cast_one(value, target)
    rewriter.insert(cast)
    return result


def replace_op(
    rewriter: PatternRewriter, op: Operation, new_results: Sequence[SSAValue | None]
) -> None:
    """Replace ``op`` by values already inserted before it, casting each result
    whose LLVM type differs back to ``op``'s result type."""
    results: list[SSAValue | None] = []
    for old, new in zip(op.results, new_results, strict=True):
        if new is not None and new.type != old.type:
            cast, new = UnrealizedConversionCastOp.cast_one(new, old.type)
            rewriter.insert(cast)
        results.append(new)
    rewriter.replace(op, [], results)


def float_constant(value: float, t: Attribute) -> llvm.ConstantOp:
    """``llvm.mlir.constant`` of the float type ``t``."""
    if not isinstance(t, FLOAT_TYPES):
        raise ValueError(f"not a float type: {t}")
    return llvm.ConstantOp(FloatAttr(value, cast(AnyFloat, t)), t)


def insert(rewriter: PatternRewriter, op: Operation) -> SSAValue:
    """Insert ``op`` at the rewriter's insertion point; its single result."""
    rewriter.insert(op)
    return op.results[0]


def numpys_created_nan(
    rewriter: PatternRewriter,
    result: SSAValue,
    args: list[SSAValue],
    t: Attribute,
    function: str,
    nan_type: str,
) -> SSAValue:
    """``result``, with a nan that none of ``args`` was made NumPy's nan for C library
    ``function`` (the sign its loop gives on this CPU:
    :func:`~tdsl.backend.llvm.numpy_nans.created_nan_negative`; the C library returns
    ``+nan`` for some domain errors where NumPy's loops give ``-nan``, and the reverse),
    asked about ``nan_type``: :func:`~tdsl.backend.llvm.numpy_nans.numpy_type` of the op."""
    created = insert(rewriter, llvm.FCmpOp(result, result, "uno"))
    for a in args:
        ordered = insert(rewriter, llvm.FCmpOp(a, a, "ord"))
        created = insert(rewriter, llvm.AndOp(created, ordered))
    negative = created_nan_negative(function, nan_type)
    nan = insert(rewriter, float_constant(float("-nan" if negative else "nan"), t))
    return insert(rewriter, llvm.SelectOp(created, nan, result))


def _signless(t: Attribute) -> bool:
    return t == IntegerType(cast(IntegerType, t).bitwidth)


@dataclass
class UnsignedToSignless(TypeConversionPattern):
    """``ui8`` -> ``i8`` and ``ui64`` -> ``i64`` in every type (recursively:
    ``memref<4xui8>`` becomes ``memref<4xi8>``).  The ops of a body already say how they
    read their integers (``divui``, ``cmpi ult``, ``extui``, ``uitofp``), so the sign of
    a type tells nothing more, and ``arith.constant`` and LLVM take signless integers
    only.

    It recurses itself (use it with ``recursive=False``), remembering each attribute's
    answer: xDSL's recursive conversion rebuilds every parametrized attribute of every
    op, unsigned in it or not (150 ms for a kernel of a few hundred ops)."""

    _unsigned: dict[Attribute, bool] = field(default_factory=dict[Attribute, bool], init=False)
    _converted: dict[Attribute, Attribute] = field(
        default_factory=dict[Attribute, Attribute], init=False
    )

    def convert_type(self, typ: Attribute, /) -> Attribute | None:
        if not _unsigned_in(typ, self._unsigned):
            return None
        found = self._converted.get(typ)
        if found is None:
            found = self._converted[typ] = self._convert(typ)
        return found

    def _convert(self, typ: Attribute) -> Attribute:
        if isinstance(typ, IntegerType):
            return IntegerType(cast(IntegerType, typ).bitwidth)
        if isinstance(typ, ParametrizedAttribute):
            return type(typ).new([self.convert_type(p) or p for p in typ.parameters])
        if isinstance(typ, ArrayAttr):
            items = cast(ArrayAttr[Attribute], typ).data
            return ArrayAttr([self.convert_type(p) or p for p in items])
        return typ  # pragma: no cover - _unsigned_in finds unsigned in no other attribute


class SignlessConstant(RewritePattern):
    """``arith.constant 200 : ui8`` -> ``arith.constant -56 : i8`` (the same bits).
    Constants are rewritten here, not by :class:`UnsignedToSignless`: xDSL's type
    conversion keeps an attribute that converts to a zero (``converted or attribute``),
    and would rewrite ``0 : ui8`` for ever."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        value = op.value
        if not isinstance(value, IntegerAttr) or not isinstance(value.type, IntegerType):
            return
        t = value.type
        if _signless(t):
            return
        bits, data = t.bitwidth, value.value.data
        signed = data - (1 << bits) if data >= 1 << (bits - 1) else data
        rewriter.replace(op, arith.ConstantOp(IntegerAttr(signed, IntegerType(bits))))


UNSIGNED_ARGS_ATTR = "tdsl.unsigned_args"
"""A function attribute: the positions of its memref arguments whose elements were
unsigned (``ui8``, ``ui64``) before :func:`make_signless`, for the runtime that reads
its arguments' dtypes."""


def _unsigned_in(t: Attribute, seen: dict[Attribute, bool]) -> bool:
    known = seen.get(t)
    if known is None:
        if isinstance(t, IntegerType):
            known = not _signless(cast(Attribute, t))
        elif isinstance(t, ParametrizedAttribute):
            known = any(_unsigned_in(p, seen) for p in t.parameters)
        elif isinstance(t, ArrayAttr):
            known = any(_unsigned_in(p, seen) for p in cast(ArrayAttr[Attribute], t).data)
        else:
            known = False
        seen[t] = known
    return known


def _mentions_unsigned(module: ModuleOp) -> bool:
    """Whether a result, block argument or attribute of ``module`` has an unsigned
    integer type in it (most modules have none: their walk is skipped)."""
    seen: dict[Attribute, bool] = {}
    for op in module.walk():
        for t in op.result_types:
            if _unsigned_in(t, seen):
                return True
        for a in (*op.properties.values(), *op.attributes.values()):
            if _unsigned_in(a, seen):
                return True
        for region in op.regions:
            for block in region.blocks:
                if any(_unsigned_in(arg.type, seen) for arg in block.args):
                    return True
    return False


def make_signless(module: ModuleOp) -> None:
    """Rewrite every unsigned integer type of ``module`` to its signless type
    (:class:`UnsignedToSignless`), recording which arguments of each function held
    unsigned elements (:data:`UNSIGNED_ARGS_ATTR`)."""
    for fn in module.ops:
        if isinstance(fn, func.FuncOp) and fn.body.blocks:
            types: list[Attribute] = [a.type for a in fn.args]
            elements = [
                memref_element(cast(Attribute, t)) if isinstance(t, MemRefType) else None
                for t in types
            ]
            unsigned = [
                k
                for k, e in enumerate(elements)
                if isinstance(e, IntegerType) and not _signless(cast(Attribute, e))
            ]
            if unsigned:
                fn.attributes[UNSIGNED_ARGS_ATTR] = DenseArrayBase.from_list(i64, unsigned)
    if not _mentions_unsigned(module):
        return
    PatternRewriteWalker(
        GreedyRewritePatternApplier([SignlessConstant(), UnsignedToSignless()])
    ).rewrite_module(module)
