"""``arith`` (and ``tdslmath.remf``) to xDSL's ``llvm`` dialect, one op at a time.

xDSL 0.75 has no ``convert-arith-to-llvm``; these patterns are it, for scalar
(non-vector) operands:

- constants of integer, ``index`` and float type -> ``llvm.mlir.constant``;
- ``addf``/``subf``/``mulf``/``divf``/``negf``/``remf`` -> ``fadd``/... keeping the
  op's fast-math flags (``#arith.fastmath<...>`` -> ``#llvm.fastmath<...>``);
- ``maximumf``/``minimumf`` -> the ``llvm.maximum``/``llvm.minimum`` intrinsics
  (nan-propagating, -0 < +0), ``maxnumf``/``minnumf`` -> ``llvm.maxnum``/``minnum``;
- ``cmpf`` -> ``llvm.fcmp`` (``false``/``true`` -> an ``i1`` constant), ``cmpi`` ->
  ``llvm.icmp``, ``select`` -> ``llvm.select``;
- integer arithmetic, bitwise ops and shifts -> their ``llvm`` ops; ``minsi``/
  ``maxsi``/``minui``/``maxui`` -> ``icmp`` + ``select``;
- ``index_cast``, ``extsi``/``extui``/``trunci`` -> ``sext``/
  ``zext``/``trunc`` (nothing when the widths agree, as for ``index`` <-> ``i64``);
- ``extf``/``truncf`` -> ``fpext``/``fptrunc``; ``sitofp`` -> ``sitofp``;
  ``uitofp`` from ``i1`` -> a select of 1.0 and 0.0, from narrower than ``i64``
  -> ``zext`` to ``i64`` then ``sitofp`` (exact); ``bitcast`` -> ``bitcast``.

- ``fptosi`` -> the ``llvm.fptosi.sat`` intrinsic (the same on in-range values).

Not lowered (left in place, so the pass reports them): ``fptoui`` and
``uitofp`` from ``i64`` (xDSL's ``llvm`` dialect has no such casts), dense
(vector or tensor) constants, and the remaining ``arith`` ops.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.utils.hints import isa

from tdsl.backend.llvm.llvm_types import (
    FLOAT_TYPES,
    float_constant,
    insert,
    integer_width,
    llvm_type,
    numpys_created_nan,
    replace_op,
    to_llvm,
)
from tdsl.backend.llvm.numpy_nans import numpy_type
from tdsl.dialects import tdslmath
from tdsl.errors import TdslIRError


def float_suffix(t: Attribute) -> str:
    """The overload suffix of an LLVM intrinsic on scalar float type ``t``: ``f32``..."""
    if not isinstance(t, FLOAT_TYPES):
        raise ValueError(f"not a float type: {t}")
    return f"f{t.bitwidth}"


def fast_math(flags: arith.FastMathFlagsAttr) -> llvm.FastMathAttr:
    """The ``llvm`` dialect spelling of ``arith`` fast-math flags."""
    return llvm.FastMathAttr(tuple(flags.data))


class ConstantToLLVM(RewritePattern):
    """``arith.constant`` of a scalar integer, ``index`` or float -> ``llvm.mlir.constant``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        value = op.value
        result_type = llvm_type(op.result.type)
        if isa(value, IntegerAttr):
            width = integer_width(result_type)
            if not -(1 << (width - 1)) <= value.value.data < 1 << width:
                raise TdslIRError(
                    f"tdsl-convert-to-llvm: the constant {value.value.data} does not fit in "
                    f"{width} bits (an {op.result.type} is {width} bits in LLVM: a value in "
                    f"[-2**{width - 1}, 2**{width}))",
                    op=op,
                )
            new_value: Attribute = IntegerAttr(value.value.data, width)
        elif isinstance(value, FloatAttr):
            new_value = value
        else:
            return
        replace_op(rewriter, op, [insert(rewriter, llvm.ConstantOp(new_value, result_type))])


_FLOAT_BINARY: dict[type[Operation], type[llvm.AbstractFloatArithOp]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}


class FloatArithToLLVM(RewritePattern):
    """``addf``/``subf``/``mulf``/``divf`` -> ``llvm.fadd``/... with the same flags."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.FloatingPointLikeBinaryOperation, rewriter: PatternRewriter
    ) -> None:
        target = _FLOAT_BINARY.get(type(op))
        if target is None:
            return
        new = target(op.lhs, op.rhs, fast_math(op.fastmath))
        replace_op(rewriter, op, [insert(rewriter, new)])


class RemFToLLVM(RewritePattern):
    """``tdslmath.remf`` -> ``llvm.frem`` (C's ``fmod``); a nan it creates
    (``fmod(inf, y)``, ``fmod(x, 0)``) is NumPy's, however LLVM computes it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tdslmath.RemFOp, rewriter: PatternRewriter) -> None:
        result = insert(rewriter, llvm.FRemOp(op.lhs, op.rhs))
        args = [op.lhs, op.rhs]
        t = op.result.type
        nan = numpys_created_nan(rewriter, result, args, t, "fmod", numpy_type(op))
        replace_op(rewriter, op, [nan])


class NegFToLLVM(RewritePattern):
    """``arith.negf`` -> ``llvm.fneg`` (flips the sign bit, also of nan and 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter) -> None:
        new = llvm.FNegOp(op.operand, fast_math(op.fastmath))
        replace_op(rewriter, op, [insert(rewriter, new)])


class MinMaxFToLLVM(RewritePattern):
    """``maximumf``/``minimumf`` -> ``llvm.maximum``/``llvm.minimum`` (a nan operand
    gives nan, as NumPy's ``maximum``); ``maxnumf``/``minnumf`` -> ``llvm.maxnum``/
    ``llvm.minnum`` (a nan operand is ignored, as C's ``fmax``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.FloatingPointLikeBinaryOperation, rewriter: PatternRewriter
    ) -> None:
        t = op.result.type
        match op:
            case arith.MaximumfOp() | arith.MinimumfOp():
                kind = "maximum" if isinstance(op, arith.MaximumfOp) else "minimum"
                new: Operation = llvm.CallIntrinsicOp(
                    f"llvm.{kind}.{float_suffix(t)}", [op.lhs, op.rhs], [t]
                )
            case arith.MaxnumfOp() | arith.MinnumfOp():
                # type-mangled by name: xDSL's llvm.intr.maxnum declares it untyped
                kind = "maxnum" if isinstance(op, arith.MaxnumfOp) else "minnum"
                new = llvm.CallIntrinsicOp(f"llvm.{kind}.{float_suffix(t)}", [op.lhs, op.rhs], [t])
            case _:
                return
        replace_op(rewriter, op, [insert(rewriter, new)])


class CmpFToLLVM(RewritePattern):
    """``arith.cmpf`` -> ``llvm.fcmp`` with the same predicate; the constant
    predicates ``false`` and ``true`` -> an ``i1`` constant."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter) -> None:
        predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        if predicate in ("false", "true"):
            new: Operation = llvm.ConstantOp(IntegerAttr(int(predicate == "true"), i1), i1)
        else:
            new = llvm.FCmpOp(op.lhs, op.rhs, predicate)
        replace_op(rewriter, op, [insert(rewriter, new)])


def icmp(lhs: SSAValue, rhs: SSAValue, predicate: str) -> llvm.ICmpOp:
    """``llvm.icmp`` with ``predicate`` named as in ``arith.cmpi`` (``slt``...)."""
    code = llvm.ICmpPredicateFlag(predicate).to_int()
    return llvm.ICmpOp(lhs, rhs, IntegerAttr(code, i64))


class CmpIToLLVM(RewritePattern):
    """``arith.cmpi`` -> ``llvm.icmp`` with the same predicate (``index`` as ``i64``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter) -> None:
        predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        lhs, rhs = to_llvm(rewriter, op.lhs), to_llvm(rewriter, op.rhs)
        replace_op(rewriter, op, [insert(rewriter, icmp(lhs, rhs, predicate))])


class SelectToLLVM(RewritePattern):
    """``arith.select`` -> ``llvm.select``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = to_llvm(rewriter, op.lhs), to_llvm(rewriter, op.rhs)
        new = llvm.SelectOp(op.cond, lhs, rhs)
        replace_op(rewriter, op, [insert(rewriter, new)])


_INTEGER_BINARY: dict[type[Operation], type[IRDLOperation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}

_INTEGER_MIN_MAX: dict[type[Operation], str] = {
    arith.MinSIOp: "slt",
    arith.MaxSIOp: "sgt",
    arith.MinUIOp: "ult",
    arith.MaxUIOp: "ugt",
}


class IntegerArithToLLVM(RewritePattern):
    """Integer arithmetic, bitwise ops and shifts -> the ``llvm`` op of the same
    name; integer min/max -> ``icmp`` + ``select``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.SignlessIntegerBinaryOperation, rewriter: PatternRewriter
    ) -> None:
        lhs, rhs = op.lhs, op.rhs
        if (target := _INTEGER_BINARY.get(type(op))) is not None:
            lhs, rhs = to_llvm(rewriter, lhs), to_llvm(rewriter, rhs)
            new = target.build(operands=[lhs, rhs], result_types=[lhs.type])
            replace_op(rewriter, op, [insert(rewriter, new)])
        elif (predicate := _INTEGER_MIN_MAX.get(type(op))) is not None:
            lhs, rhs = to_llvm(rewriter, lhs), to_llvm(rewriter, rhs)
            pick_lhs = insert(rewriter, icmp(lhs, rhs, predicate))
            replace_op(rewriter, op, [insert(rewriter, llvm.SelectOp(pick_lhs, lhs, rhs))])


class IntegerCastToLLVM(RewritePattern):
    """``index_cast``/``extsi`` -> ``sext`` or ``trunc``; ``extui`` -> ``zext``;
    ``trunci`` -> ``trunc``; equal widths (``index`` and ``i64``) -> nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.IndexCastOp | arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp,
        rewriter: PatternRewriter,
    ) -> None:
        match op:
            case arith.IndexCastOp() | arith.ExtSIOp():
                signed = True
            case arith.ExtUIOp() | arith.TruncIOp():
                signed = False
            case _:
                return
        value = to_llvm(rewriter, op.operands[0])
        target = llvm_type(op.results[0].type)
        source_width, target_width = integer_width(value.type), integer_width(target)
        if source_width > target_width:
            value = insert(rewriter, llvm.TruncOp(value, target))
        elif source_width < target_width:
            ext = llvm.SExtOp(value, target) if signed else llvm.ZExtOp(value, target)
            value = insert(rewriter, ext)
        replace_op(rewriter, op, [value])


class FloatCastToLLVM(RewritePattern):
    """``extf``/``truncf`` -> ``fpext``/``fptrunc``; ``sitofp`` -> ``sitofp``; ``fptosi``
    -> the ``llvm.fptosi.sat`` intrinsic;
    ``uitofp`` (from ``i1``: a select of 1.0 and 0.0; from a narrower integer than
    ``i64``: ``zext`` then ``sitofp``); ``bitcast`` -> ``bitcast``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.ExtFOp
        | arith.TruncFOp
        | arith.SIToFPOp
        | arith.FPToSIOp
        | arith.UIToFPOp
        | arith.BitcastOp,
        rewriter: PatternRewriter,
    ) -> None:
        match op:
            case arith.ExtFOp():
                new: Operation = llvm.FPExtOp(op.input, op.result.type)
            case arith.TruncFOp():
                new = llvm.FPTruncOp(op.input, op.result.type)
            case arith.SIToFPOp():
                new = llvm.SIToFPOp(to_llvm(rewriter, op.input), op.result.type)
            case arith.FPToSIOp():
                # xDSL's llvm dialect has no fptosi: the saturating intrinsic, which
                # agrees with it on every value tdsl converts (the body selects NumPy's
                # result for nan and out-of-range values)
                target = llvm_type(op.result.type)
                name = f"llvm.fptosi.sat.i{integer_width(target)}.{float_suffix(op.input.type)}"
                new = llvm.CallIntrinsicOp(name, [op.input], [target])
            case arith.UIToFPOp():
                replace_op(rewriter, op, [_unsigned_to_float(rewriter, op)])
                return
            case arith.BitcastOp():
                new = llvm.BitcastOp(op.input, op.result.type)
            case _:
                return
        replace_op(rewriter, op, [insert(rewriter, new)])


def _unsigned_to_float(rewriter: PatternRewriter, op: arith.UIToFPOp) -> SSAValue:
    value = to_llvm(rewriter, op.input)
    t = op.result.type
    width = integer_width(value.type)
    if width == 1:
        one = insert(rewriter, float_constant(1.0, t))
        zero = insert(rewriter, float_constant(0.0, t))
        return insert(rewriter, llvm.SelectOp(value, one, zero))
    if width < 64:
        wide = insert(rewriter, llvm.ZExtOp(value, i64))
        return insert(rewriter, llvm.SIToFPOp(wide, t))
    # a uint64 (LLVM's uitofp is not in xDSL's llvm dialect): below 2**63 it is its
    # signed value; above, half of it with the lowest bit kept (sticky, so that the
    # rounding is the same), converted and doubled, as compilers expand uitofp
    zero = insert(rewriter, llvm.ConstantOp(IntegerAttr(0, i64), i64))
    one = insert(rewriter, llvm.ConstantOp(IntegerAttr(1, i64), i64))
    small = insert(rewriter, icmp(value, zero, "sge"))
    half = insert(rewriter, llvm.LShrOp(value, one))
    sticky = insert(rewriter, llvm.OrOp(half, insert(rewriter, llvm.AndOp(value, one))))
    halved = insert(rewriter, llvm.SIToFPOp(sticky, t))
    doubled = insert(rewriter, llvm.FAddOp(halved, halved))
    direct = insert(rewriter, llvm.SIToFPOp(value, t))
    return insert(rewriter, llvm.SelectOp(small, direct, doubled))


ARITH_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    ConstantToLLVM(),
    FloatArithToLLVM(),
    RemFToLLVM(),
    NegFToLLVM(),
    MinMaxFToLLVM(),
    CmpFToLLVM(),
    CmpIToLLVM(),
    SelectToLLVM(),
    IntegerArithToLLVM(),
    IntegerCastToLLVM(),
    FloatCastToLLVM(),
)
"""Every pattern of this module."""
